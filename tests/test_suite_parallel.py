"""The suite on several workers (tests/_parallel.py): serial tests run alone, one line of
progress per file, a failing test named at once, one kernel cache per worker.

Each test but the last runs pytest-xdist (``-n 2``) in a fresh interpreter on a small suite
written into ``tmp_path`` that loads ``tests._parallel`` as the project's conftest does.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pysycl._core.cachefs import cache_root
from tests import _parallel
from tests.testing._userrun import ROOT

# pytest-xdist is in the test extra (make test runs on it); a machine set up without the
# extra (tools/gpu_suite.sh's offline GPU host) has none, as with Sphinx in test_docs.py.
pytest.importorskip("xdist", reason="pytest-xdist is not installed (pip install -e .[test])")

RECORD = """
    import json, os, time
    import pytest

    def record(name, seconds=0.4):
        start = time.monotonic()
        time.sleep(seconds)
        with open(os.path.join(os.environ["SPANS"], f"{name}.json"), "w") as f:
            json.dump([start, time.monotonic(), os.environ["PYTEST_XDIST_WORKER"]], f)
"""


def _run(tmp_path: Path, files: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "spans").mkdir()
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["tests._parallel"]\n')
    (tmp_path / "record.py").write_text(textwrap.dedent(RECORD))
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    env = {k: v for k, v in os.environ.items()
           if k != "PYTEST_ADDOPTS" and not k.startswith("PYTEST_XDIST")}  # a fresh controller
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(tmp_path),
                                         *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]])
    env["SPANS"] = str(tmp_path / "spans")
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                           "-p", "no:_pysycl_pytestplugin", "-n", "2", *args],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


def _spans(tmp_path: Path) -> dict[str, tuple[float, float, str]]:
    return {p.stem: tuple(json.loads(p.read_text()))  # type: ignore[misc]
            for p in (tmp_path / "spans").iterdir()}


def _overlap(a: tuple[float, float, str], b: tuple[float, float, str]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def test_a_serial_test_runs_alone_and_the_others_in_parallel(tmp_path: Path) -> None:
    r = _run(tmp_path, {
        "test_many.py": """
            import pytest
            from record import record

            @pytest.mark.parametrize("i", range(6))
            def test_par(i):
                record(f"par{i}")
        """,
        "test_alone.py": """
            import pytest
            from record import record

            @pytest.mark.serial
            @pytest.mark.parametrize("i", range(2))
            def test_ser(i):
                record(f"ser{i}", 0.8)
        """,
    })
    assert r.returncode == 0, r.stdout + r.stderr
    spans = _spans(tmp_path)
    assert len(spans) == 8 and {s[2] for s in spans.values()} == {"gw0", "gw1"}
    par = [s for n, s in spans.items() if n.startswith("par")]
    # the control: tests without the marker did run side by side
    assert any(_overlap(a, b) for a in par for b in par if a is not b)
    for n, s in spans.items():
        if n.startswith("ser"):
            beside = [m for m, t in spans.items() if m != n and _overlap(s, t)]
            assert beside == [], f"{n} ran beside {beside}"


def test_progress_is_a_line_per_file_and_a_failure_is_named_at_once(tmp_path: Path) -> None:
    r = _run(tmp_path, {
        "test_one.py": """
            import pytest

            @pytest.mark.parametrize("i", range(5))
            def test_ok(i):
                pass

            @pytest.mark.skip(reason="shown in the line")
            def test_skipped():
                pass
        """,
        "test_two.py": """
            def test_fails():
                assert 1 == 2

            def test_passes():
                pass
        """,
    })
    assert r.returncode == 1, r.stdout + r.stderr
    out = r.stdout
    assert "8 tests in 2 files: a line per file as its last test ends" in out
    assert re.search(r"^\[ *\d+%\] +\d+:\d\d test_one\.py: 5 passed, 1 skipped$", out, re.M), out
    assert re.search(r"^\[ *\d+%\] +\d+:\d\d test_two\.py: 1 failed, 1 passed$", out, re.M), out
    assert re.search(r"^FAILED test_two\.py::test_fails$", out, re.M), out
    assert re.search(r"^\[100%\] ", out, re.M), out  # the last file's line says all are done
    assert not re.search(r"^[.sF]+ *(\[ *\d+%\])?$", out, re.M), out  # no dots
    # -v keeps xdist's own line per test
    (tmp_path / "spans").rmdir()
    v = _run(tmp_path, {}, "-v")
    assert re.search(r"^\[gw\d\] \[ *\d+%\] PASSED test_one\.py::test_ok\[0\]", v.stdout, re.M), v.stdout
    assert "a line per file" not in v.stdout


def test_auto_is_one_worker_per_cpu_within_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "3")
    assert _parallel.pytest_xdist_auto_num_workers(None) == 3  # type: ignore[arg-type]
    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS")
    cpus = len(os.sched_getaffinity(0))
    avail = _parallel._available_memory()
    want = min(cpus, avail // _parallel.WORKER_BYTES) if avail else cpus
    assert _parallel.pytest_xdist_auto_num_workers(None) == max(1, want)  # type: ignore[arg-type]
    monkeypatch.setattr(_parallel, "_available_memory", lambda: 3 * _parallel.WORKER_BYTES // 2)
    assert _parallel.pytest_xdist_auto_num_workers(None) == 1  # type: ignore[arg-type]


CACHE_CHILD = """
import os, sys
sys.path.insert(0, {root!r})
import tests.conftest
from pysycl._core.cachefs import cache_root
print(os.environ["PYSYCL_CACHE_DIR"])
print(cache_root())
"""


@pytest.mark.parametrize("case", ["controller-set", "user-set", "unset"])
def test_each_worker_has_its_own_kernel_cache(tmp_path: Path, case: str) -> None:
    """A worker does not inherit the folder the controller's conftest made; a folder the user
    gave gets a sub-folder per worker; pysycl uses the folder chosen."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYSYCL_CACHE_DIR", "_PYSYCL_TEST_CACHE_DIR", "PYTEST_XDIST_WORKER")}
    env["PYTEST_XDIST_WORKER"] = "gw1"
    controller = str(tmp_path / "controller")
    if case == "controller-set":
        env["PYSYCL_CACHE_DIR"] = env["_PYSYCL_TEST_CACHE_DIR"] = controller
    elif case == "user-set":
        env["PYSYCL_CACHE_DIR"] = str(tmp_path / "mine")
    r = subprocess.run([sys.executable, "-c", CACHE_CHILD.format(root=str(ROOT))], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    chosen, used = r.stdout.split()[-2:]
    assert Path(used) == Path(chosen).resolve()
    if case == "user-set":
        assert chosen == str(tmp_path / "mine" / "gw1")
    else:
        assert chosen != controller and "pysycl-test-cache-gw1-" in chosen


def test_this_process_uses_its_own_kernel_cache() -> None:
    chosen = os.environ["PYSYCL_CACHE_DIR"]
    assert cache_root() == Path(chosen).resolve()
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker and chosen == os.environ.get("_PYSYCL_TEST_CACHE_DIR"):
        assert f"pysycl-test-cache-{worker}-" in chosen

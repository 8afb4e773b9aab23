"""``assert`` in kernels across processes: ``python -O``, the disk cache, modules pytest does
not rewrite.

Each case runs a small program in a child process (its own interpreter flags and kernel
caches); the cache folder is shared where a test says so.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PROGRAM = textwrap.dedent('''
    import numpy as np
    import pysycl as sycl

    devs = [d for d in sycl.device.get_devices() if d.image_targets]
    q = sycl.queue(max(devs, key=sycl.default_selector_v))
    a = np.arange(8, dtype=np.int32)
    try:
        with sycl.buffer(a) as A:
            def cg(h):
                r = A.get_access(h, sycl.access_mode.read_write)

                def k(i):
                    assert r[i] < 5, f"r = {r[i]}"
                    r[i] = r[i] * 2

                h.parallel_for(sycl.range(8), k)

            q.submit(cg)
        print("RESULT", a.tolist())
    except AssertionError as e:
        print("ASSERT", str(e).splitlines()[0])
    s = sycl.ext.kernel_cache_stats()
    print("CACHE", s["compiles"], s["disk_hits"])
''')


def _run(program: Path, cache: Path, *flags: str) -> tuple[str, str, tuple[int, int]]:
    env = dict(os.environ, PYSYCL_CACHE_DIR=str(cache))
    r = subprocess.run([sys.executable, *flags, str(program)], capture_output=True, text=True,
                       timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    lines = dict(ln.split(" ", 1) for ln in r.stdout.splitlines() if " " in ln)
    compiles, hits = map(int, lines["CACHE"].split())
    kind = "ASSERT" if "ASSERT" in lines else "RESULT"
    return kind, lines[kind], (compiles, hits)


@pytest.fixture
def program(tmp_path: Path) -> Path:
    p = tmp_path / "assert_program.py"
    p.write_text(PROGRAM)
    return p


@pytest.mark.slow
def test_python_dash_o_strips_kernel_asserts_and_never_shares_a_cached_kernel(
        program: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    kind, text, (compiles, _) = _run(program, cache)
    assert kind == "ASSERT" and text.startswith(f"r = 5 -- {program}:14, work-item (5,)")
    assert compiles == 1
    # -O: the same source without its assert; the kernel cached above must not serve it
    kind, text, (compiles, hits) = _run(program, cache, "-O")
    assert kind == "RESULT" and text == str([0, 2, 4, 6, 8, 10, 12, 14])
    assert (compiles, hits) == (1, 0)
    # and the other way round: each finds its own kernel in the cache now
    kind, _, (compiles, hits) = _run(program, cache)
    assert kind == "ASSERT" and (compiles, hits) == (0, 1)
    kind, _, (compiles, hits) = _run(program, cache, "-O")
    assert kind == "RESULT" and (compiles, hits) == (0, 1)


MODULE = textwrap.dedent('''
    """A module pytest leaves alone.

    PYTEST_DONT_REWRITE
    """
    import numpy as np
    import pysycl as sycl


    def run(q, n):
        a = np.arange(n, dtype=np.int32)
        with sycl.buffer(a) as A:
            def cg(h):
                r = A.get_access(h, sycl.access_mode.read_write)

                def k(i):
                    assert r[i] < 5, f"r = {r[i]}"
                    r[i] = r[i] * 2

                h.parallel_for(sycl.range(n), k)

            q.submit(cg)
        return a
''')


def test_a_module_pytest_does_not_rewrite(tmp_path: Path, any_kernel_queue: object,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "no_rewrite_kernels.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    import no_rewrite_kernels as m

    assert list(m.run(any_kernel_queue, 5)) == [0, 2, 4, 6, 8]
    with pytest.raises(AssertionError) as ei:
        m.run(any_kernel_queue, 8)
    first = str(ei.value).splitlines()[0]
    assert first == f"r = 5 -- {m.__file__}:17, work-item (5,)"

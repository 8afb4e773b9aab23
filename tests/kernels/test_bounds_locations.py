"""Where a bounds report points: the submitting program's file:line (issue 21, item 24).

docs/debugging.md promises that a bounds-checked report names ``file:line``. Two defects:

* an out-of-bounds access inside a helper that captures the accessor was reported "at
  line 0" with no file (helpers were lowered without source locations);
* the line (and file) baked into a compiled kernel were those of the program that compiled
  it first: a second file with the same kernel code -- equal code objects in one process,
  the same disk-cache digest in another -- was told the first file's line.

A compiled kernel now carries its sites as instructions of its code objects
(``CompiledKernel.sites``), resolved with the code of the program that submits it. The
programs that could corrupt memory run in child processes; each prints its reports.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import pysycl as sycl
from pysycl._core.abi import CompiledKernel, IndexSpace
from pysycl._core.abi_plain import kernel_from_plain, kernel_to_plain
from pysycl._core.sites import code_table, site_location, site_of
from pysycl._kernels import bounds as _bounds

ROOT = str(Path(__file__).resolve().parents[2])  # this checkout's pysycl, for the children


def _line(marker: str) -> int:
    """The line of this file that ends with ``# <marker>``."""
    rows = Path(__file__).read_text().splitlines()
    return next(n for n, r in enumerate(rows, 1) if r.rstrip().endswith(f"# {marker}"))


@pytest.fixture
def checked() -> Iterator[None]:
    sycl.ext.set_bounds_check(True)
    try:
        yield
    finally:
        sycl.ext.set_bounds_check(None)
        _bounds.watching.clear()


@pytest.mark.parametrize("through", ["closure", "argument"])
def test_an_out_of_bounds_store_in_a_helper_names_the_helpers_line(kq: sycl.queue, checked: None,
                                                                   through: str) -> None:
    a = np.zeros(4, np.float32)
    with sycl.buffer(a) as A:
        def cg(h: sycl.handler) -> None:
            w = A.get_access(h, sycl.access_mode.write)

            def store(i, v):        # captures w: a helper with hidden parameters
                w[i + 1] = v  # closure store

            def store_into(acc, i, v):  # takes it as an argument: a plain device function
                acc[i + 1] = v  # argument store

            h.parallel_for(sycl.range(4), (lambda i: store(i, 1.0)) if through == "closure"
                           else (lambda i: store_into(w, i, 2.0)))

        kq.submit(cg)
        with pytest.raises(sycl.exception) as e:
            kq.wait()
    line = _line(f"{through} store")
    assert f"out-of-bounds write of accessor 'w' at {__file__}:{line}:" in str(e.value), e.value
    assert "line 0" not in str(e.value)


def test_a_nested_function_and_an_atomic_name_their_lines(kq: sycl.queue, checked: None) -> None:
    out = np.zeros(4, np.int32)
    with sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            o = O.get_access(h, sycl.access_mode.read_write)

            def k(i):
                bump = lambda j: sycl.atomic_ref(o, j + 1, sycl.memory_order.relaxed,  # noqa: E731
                                                 sycl.memory_scope.device).fetch_add(1)  # atom
                bump(i[0])

            h.parallel_for(sycl.range(4), k)

        kq.submit(cg)
        with pytest.raises(sycl.exception, match="out-of-bounds atomic_ref") as e:
            kq.wait()
    assert f"{__file__}:{_line('atom') - 1}:" in str(e.value), e.value


KERNELS = '''
import numpy as np
import pysycl as sycl

SHIFT = 1


def store(w, i):
    w[i + SHIFT] = 1.0


def run(q, mode):
    sycl.ext.set_bounds_check(mode != "static")
    m = ("helper", "atomic", "static").index(mode)  # a number: a kernel argument
    a = np.zeros(4, np.float32)
    with sycl.buffer(a) as A:
        def cg(h):
            w = A.get_access(h, sycl.access_mode.read_write)

            def k(i):
                if m == 0:
                    store(w, i){blank_inside}
                if m == 1:
                    sycl.atomic_ref(w, i[0] + 2, sycl.memory_order.relaxed,
                                    sycl.memory_scope.device).fetch_add(0.0)
                w[i] = 2.0

            h.parallel_for(sycl.range(5 if m == 2 else 4), k)
        try:
            q.submit(cg)
            q.wait()
        except sycl.exception as e:
            return str(e)
    return "no error"
'''

DRIVER = '''
import sys
import importlib
import pysycl as sycl
sys.path.insert(0, sys.argv[1])
q = sycl.queue()
for name in sys.argv[2:]:
    m = importlib.import_module(name)
    for mode in ("helper", "atomic", "static"):
        print(name, mode, m.run(q, mode))
s = sycl.ext.kernel_cache_stats()
print("stats", s["compiles"], s["disk_hits"])
'''


def _programs(tmp_path: Path) -> dict[str, dict[str, int]]:
    """Modules with the same kernels: ``second`` at other lines (and a blank line inside
    its kernel: the same bytecode, another disk-cache hit), ``third`` at the same lines in
    another file (equal code objects: a memory-cache hit); the lines to name, by module."""
    lines = {}
    for name, lead, inside in (("first", "", ""), ("second", "\n" * 7, "\n"),
                               ("third", "", "")):
        text = lead + KERNELS.format(blank_inside=inside)
        (tmp_path / f"{name}.py").write_text(text)
        rows = text.splitlines()
        at = {what: next(n for n, r in enumerate(rows, 1) if r.strip().startswith(what))
              for what in ("w[i + SHIFT]", "sycl.atomic_ref(w", "w[i] = 2.0")}
        lines[name] = at
    (tmp_path / "driver.py").write_text(DRIVER)
    return lines


def _run(tmp_path: Path, *names: str) -> list[str]:
    env = {**os.environ, "PYSYCL_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)}
    env.pop("PYSYCL_BOUNDS_CHECK", None)
    p = subprocess.run([sys.executable, str(tmp_path / "driver.py"), str(tmp_path), *names],
                       capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout.splitlines()


def _check(out: list[str], name: str, lines: dict[str, int], tmp_path: Path) -> None:
    report = {mode: next(r for r in out if r.startswith(f"{name} {mode} "))
              for mode in ("helper", "atomic", "static")}
    f = tmp_path / f"{name}.py"
    assert f"write of accessor 'w' at {f}:{lines['w[i + SHIFT]']}:" in report["helper"], report
    assert f"atomic_ref of accessor 'w' at {f}:{lines['sycl.atomic_ref(w']}:" in report["atomic"]
    assert f"its own id at {f}:{lines['w[i] = 2.0']}," in report["static"], report


def test_two_files_with_the_same_kernel_report_their_own_lines_in_one_process(
        tmp_path: Path) -> None:
    lines = _programs(tmp_path)
    out = _run(tmp_path, "first", "second", "third")
    for name in ("first", "second", "third"):
        _check(out, name, lines[name], tmp_path)
    assert out[-1] == "stats 2 2", out  # one compile per mode: the other files reuse them


def test_two_processes_sharing_the_disk_cache_report_their_own_lines(tmp_path: Path) -> None:
    lines = _programs(tmp_path)
    first = _run(tmp_path, "first")
    second = _run(tmp_path, "second")
    _check(first, "first", lines["first"], tmp_path)
    _check(second, "second", lines["second"], tmp_path)
    assert first[-1] == "stats 2 0" and second[-1] == "stats 0 2", (first, second)


def test_a_site_is_an_instruction_resolved_in_the_submitting_code() -> None:
    def k(i):
        return i + 1

    codes = code_table([k])
    site = site_of(codes, __file__, k.__code__.co_firstlineno + 1)
    assert site[0] == 0 and site[2] == ""
    assert site_location(site, codes) == f"{__file__}:{k.__code__.co_firstlineno + 1}"
    assert site_of(codes, "elsewhere.py", 3) == (-1, 3, "elsewhere.py")
    ck = CompiledKernel(binary=b"", format="spirv", entry="e", captures=(),
                        index=IndexSpace("range", 1), direct_index=((0, 0, 0, 0, 1),),
                        sites=(site, (-1, 3, "elsewhere.py")))
    assert kernel_from_plain(kernel_to_plain(ck), b"") == ck
    bad = kernel_to_plain(ck)
    bad["direct_index"] = [[0, 0, 0, 0, 2]]
    with pytest.raises(ValueError, match="names no site"):
        kernel_from_plain(bad, b"")

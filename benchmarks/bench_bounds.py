"""The cost of bounds-checked mode (``PYSYCL_BOUNDS_CHECK=1``): checked vs normal kernels.

The same command groups run alternately as normal and as bounds-checked kernels
(``sycl.ext.set_bounds_check``), in one process on one device, each call
including ``wait()`` (which is where a bounds-checked launch's error buffer is
inspected); the results of both are compared with numpy.

Run: ``make bench`` (or ``.venv/bin/python benchmarks/bench_bounds.py [--quick]``).
Prints a markdown table; ``--write`` also replaces the bounds-check section of
``docs/performance.md``.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

import pysycl as sycl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import paired, paired_table, setup, write_section

# The kernels are the other benchmarks' own: the checked mode's cost is measured on
# exactly the code whose speed docs/performance.md compares with OpenCL C.
from bench_kernels import _matmul_cg, _vadd_cg
from bench_ndrange import TS
from bench_ndrange import _matmul_cg as _tiled_cg


def _in_mode(q: sycl.queue, cg: Callable[[sycl.handler], None],
             checked: bool) -> Callable[[], None]:
    def run() -> None:
        sycl.ext.set_bounds_check(checked)
        q.submit(cg).wait()
    return run


def _compare(q: sycl.queue, cg: Callable[[sycl.handler], None], out: sycl.buffer,
             want: np.ndarray, reps: int, warmup: int = 2) -> tuple[float, float]:
    """(normal, checked) median seconds; both results checked against ``want``."""
    results = []
    for checked in (False, True):
        _in_mode(q, cg, checked)()
        with sycl.host_accessor(out, sycl.access_mode.read) as ho:
            results.append(np.array(ho))
    for r in results:
        np.testing.assert_allclose(r, want, rtol=1e-3)
    try:
        return paired(_in_mode(q, cg, False), _in_mode(q, cg, True), reps, warmup)
    finally:
        sycl.ext.set_bounds_check(None)


def bench(q: sycl.queue, quick: bool) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    rng = np.random.default_rng(0)
    reps = 5 if quick else 25

    n = 1 << (22 if quick else 24)
    a = rng.random(n, dtype=np.float32)
    b = rng.random(n, dtype=np.float32)
    c = np.empty_like(a)
    A, B, C = sycl.buffer(a), sycl.buffer(b), sycl.buffer(c)
    t0, t1 = _compare(q, _vadd_cg(A, B, C, n), C, a + b, reps)
    rows.append({"name": f"vector add 2^{int(math.log2(n))} f32", "unit": "GB/s",
                 "work": 3 * 4 * n / 1e9, "t": (t0, t1)})
    del A, B, C

    m = 512 if quick else 1024
    am = rng.random((m, m), dtype=np.float32)
    bm = rng.random((m, m), dtype=np.float32)
    cm = np.empty_like(am)
    A, B, C = sycl.buffer(am), sycl.buffer(bm), sycl.buffer(cm)
    want = am @ bm
    mreps = 3 if quick else 5
    t0, t1 = _compare(q, _matmul_cg(A, B, C, m), C, want, mreps, warmup=1)
    rows.append({"name": f"naive matmul {m}^2 f32", "unit": "GFLOP/s", "work": 2 * m ** 3 / 1e9,
                 "t": (t0, t1)})
    t0, t1 = _compare(q, _tiled_cg(A, B, C, m), C, want, mreps, warmup=1)
    rows.append({"name": f"tiled matmul {m}^2 f32 ({TS}x{TS} local tiles)", "unit": "GFLOP/s",
                 "work": 2 * m ** 3 / 1e9, "t": (t0, t1)})
    del A, B, C

    k = 16
    x = np.ones(k, np.float32)
    y = np.empty_like(x)
    X, Y, Z = sycl.buffer(x), sycl.buffer(x.copy()), sycl.buffer(y)
    t0, t1 = _compare(q, _vadd_cg(X, Y, Z, k), Z, 2 * x, 300 if quick else 3000, warmup=50)
    rows.append({"name": f"launch latency: vector add of {k} (submit + wait)", "unit": "µs",
                 "t": (t0, t1)})
    return rows


def render(rows: list[dict[str, object]], dev: str) -> str:
    return paired_table(rows, dev,
                        "One run of `benchmarks/bench_bounds.py`; the same command group alternately "
                        "normal and bounds-checked (`sycl.ext.set_bounds_check`), medians, each call "
                        "including `wait()`; both results compared with numpy.",
                        ("normal", "bounds-checked", "checked / normal time"))


def main() -> None:
    args, q, dev = setup()
    text = render(bench(q, args.quick), dev)
    print(text)
    if args.write:
        write_section("bench_bounds", text)


if __name__ == "__main__":
    main()

"""Where a sum's time goes: wall time against GPU time, pysycl (CUDA backend) and ``cupy.sum``.

    python benchmarks/bench_reduce_wait.py [--log2 28] [--rounds 9]

A sample is five back-to-back sums of ``2^log2`` float32 and a wait, timed twice: by the
host clock around the calls and the wait (*wall*), and by CUDA events recorded on the
queue's stream before the first and after the last (*GPU*: what the kernels took). Rounds
interleave pysycl (after CuPy ran, and again after itself) with ``cupy.sum`` of the same
data and of another array; medians, GB/s of the input. A wall rate well below the GPU rate
is host time on the critical path: the first launch, and how late the wait notices the end
(docs/performance.md, "Range reductions"). Every result is checked against numpy first.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import pysycl as sycl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import gpu_queue

REPS = 5


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--log2", type=int, default=28)
    ap.add_argument("--rounds", type=int, default=9)
    a = ap.parse_args()
    import cupy as cp

    q = gpu_queue(sycl.backend.ext_oneapi_cuda)
    if q is None:
        sys.exit("no CUDA device")
    n = 1 << a.log2
    rng = np.random.default_rng(7)
    x = rng.random(n, np.float32)
    want = float(x.sum(dtype=np.float64))
    p = sycl.malloc_device(n, q, dtype=np.float32)
    q.memcpy(p, x, x.nbytes).wait()
    out = sycl.malloc_device(1, q, dtype=np.float32)
    init = [sycl.property.reduction.initialize_to_identity()]
    stream = cp.cuda.ExternalStream(int(sycl.get_native(q, sycl.backend.ext_oneapi_cuda)))
    cx, cy, cs = cp.asarray(x), cp.asarray(rng.random(n, np.float32)), cp.zeros((), np.float32)

    def pysycl_sum() -> Any:
        return q.parallel_for(sycl.range(n), sycl.reduction(out, sycl.plus(), init),
                              lambda i, r: r.combine(p[i]))

    pysycl_sum().wait()
    got = np.zeros(1, np.float32)
    q.memcpy(got, out, 4).wait()
    cp.sum(cx, out=cs)
    for name, v in (("pysycl", float(got[0])), ("cupy", float(cs))):
        if not abs(v - want) <= 2e-4 * abs(want):
            sys.exit(f"{name}: sum {v!r}, numpy {want!r}")

    def sample(fn: Callable[[], Any], strm: Any, mine: bool) -> tuple[float, float]:
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        cp.cuda.Device().synchronize()
        q.wait()
        t = time.perf_counter()
        e0.record(strm)
        for _ in range(REPS):
            fn()
        e1.record(strm)
        if mine:
            q.wait()
        e1.synchronize()
        wall = time.perf_counter() - t
        gpu = cp.cuda.get_elapsed_time(e0, e1) / 1e3
        return x.nbytes * REPS / wall / 1e9, x.nbytes * REPS / gpu / 1e9

    cur = cp.cuda.get_current_stream()
    sides = (("pysycl (after CuPy)", pysycl_sum, stream, True),
             ("cupy.sum", lambda: cp.sum(cx, out=cs), cur, False),
             ("cupy.sum, another array", lambda: cp.sum(cy, out=cs), cur, False),
             ("pysycl (after CuPy)", pysycl_sum, stream, True),
             ("pysycl (after itself)", pysycl_sum, stream, True))
    res: dict[str, list[tuple[float, float]]] = {}
    for _ in range(a.rounds):
        for name, fn, strm, mine in sides:
            res.setdefault(name, []).append(sample(fn, strm, mine))
    dev = q.get_device().get_info(sycl.info.device.name)
    print(f"{dev}: sum of 2^{a.log2} float32, {REPS} back to back and a wait, medians of "
          f"{a.rounds} rounds (GB/s)\n\n| side | wall | GPU (CUDA events) | wall / GPU |\n"
          "|---|---:|---:|---:|")
    for name, v in res.items():
        w, g = statistics.median(s[0] for s in v), statistics.median(s[1] for s in v)
        print(f"| {name} | {w:.0f} | {g:.0f} | {w / g:.3f} |")


if __name__ == "__main__":
    main()

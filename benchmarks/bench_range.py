"""Range kernels on one device, to compare two checkouts (the launch sizing of issue 27).

    PYTHONPATH=<checkout> python benchmarks/bench_range.py [--device cpu|gpu] [--reps 15]

Run it from each checkout in turn, several times alternately (``for r in 1 2 3; do for c in
old new; do ...; done; done``): one line per run, each kernel's median time in ms, every
result checked against numpy first. Kernels, on USM device memory, each launched
``q.parallel_for(sycl.range(...), k).wait()``:

* ``triad 2^24``: ``z[i] = x[i] + a * y[i]``, float32;
* ``add2d 4096^2``: a 2-D range, ``z[i*M + j] = x[..] + y[..]``;
* ``matmul 512^2``: the naive 2-D matrix product (a loop of 512 per item);
* ``triad prime``: the triad over 1000003 items (a prime: no work-group size divides it);
* ``mathy 2^20``: ``sin(v)cos(v) + sqrt|v| exp(-v^2) + tanh(v)`` (compute-bound).
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections.abc import Callable

import numpy as np

import pysycl as sycl


def _kernels(q: sycl.queue) -> dict[str, tuple[Callable[[], object], Callable[[], None]]]:
    """name -> (run, check)."""
    n, m, kk, p = 1 << 24, 4096, 512, 1_000_003
    rng = np.random.default_rng(0)
    xh = rng.random(n, np.float32)
    yh = rng.random(n, np.float32)
    mh = ((rng.random(1 << 20) - 0.5) * 4).astype(np.float32)
    x, y, z, xm = (sycl.malloc_device(c, q, dtype=np.float32) for c in (n, n, n, 1 << 20))
    q.memcpy(x, xh, xh.nbytes).wait()
    q.memcpy(y, yh, yh.nbytes).wait()
    q.memcpy(xm, mh, mh.nbytes).wait()
    a = np.float32(2.0)

    def triad() -> None:
        q.parallel_for(sycl.range(n), lambda i: z.__setitem__(i[0], x[i[0]] + a * y[i[0]])).wait()

    def add2d() -> None:
        def k(it):  # type: ignore[no-untyped-def]
            i = it[0] * m + it[1]
            z[i] = x[i] + y[i]
        q.parallel_for(sycl.range(m, m), k).wait()

    def matmul() -> None:
        def k(it):  # type: ignore[no-untyped-def]
            r, c = it[0], it[1]
            s = np.float32(0)
            for t in range(kk):
                s += x[r * kk + t] * y[t * kk + c]
            z[r * kk + c] = s
        q.parallel_for(sycl.range(kk, kk), k).wait()

    def prime() -> None:
        q.parallel_for(sycl.range(p), lambda i: z.__setitem__(i[0], x[i[0]] + a * y[i[0]])).wait()

    def mathy() -> None:
        def k(i):  # type: ignore[no-untyped-def]
            v = xm[i]
            z[i] = (math.sin(v) * math.cos(v) + math.sqrt(abs(v)) * math.exp(-v * v)
                    + math.tanh(v))
        q.parallel_for(sycl.range(1 << 20), k).wait()

    def result(count: int) -> np.ndarray:
        out = np.empty(count, np.float32)
        q.memcpy(out, z, out.nbytes).wait()
        return out

    def check(want: Callable[[], np.ndarray], count: int, rtol: float = 1e-5) -> Callable[[], None]:
        return lambda: np.testing.assert_allclose(result(count), want(), rtol=rtol, atol=1e-5)

    xa, ya = xh[:kk * kk].reshape(kk, kk), yh[:kk * kk].reshape(kk, kk)
    return {
        "triad 2^24": (triad, check(lambda: xh + a * yh, n)),
        "add2d 4096^2": (add2d, check(lambda: xh + yh, n)),
        "matmul 512^2": (matmul, check(lambda: (xa @ ya).ravel(), kk * kk, 1e-3)),
        "triad prime 1000003": (prime, check(lambda: xh[:p] + a * yh[:p], p)),
        "mathy 2^20": (mathy, check(lambda: np.sin(mh) * np.cos(mh) + np.sqrt(np.abs(mh))
                                    * np.exp(-mh * mh) + np.tanh(mh), 1 << 20, 1e-4)),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    ap.add_argument("--reps", type=int, default=15)
    a = ap.parse_args()
    q = sycl.queue(sycl.cpu_selector_v if a.device == "cpu" else sycl.gpu_selector_v)
    res = {}
    for name, (run, check) in _kernels(q).items():
        run()
        check()
        run()
        ts = []
        for _ in range(a.reps):
            t = time.perf_counter()
            run()
            ts.append(time.perf_counter() - t)
        res[name] = statistics.median(ts) * 1e3
    print(" | ".join(f"{k} {v:.2f} ms" for k, v in res.items()))


if __name__ == "__main__":
    main()

"""Issue 24's benchmarks: pysycl's CUDA backend beside its OpenCL path and CuPy, one process,
peers interleaved round by round (these machines drift), every result checked first.

    python benchmarks/bench_cuda.py [--rounds 7] [--json out.json]

Rows:

* ``b2b``: back-to-back launches of a one-pointer kernel over 1024 work-items
  (``q.parallel_for(sycl.range(1024), k)`` on USM device memory, ``--launches`` of them,
  then one wait), µs per launch; CuPy: ``RawKernel`` of the same body on its stream.
* ``launch+wait``: the same launch followed by its wait (``.wait()``; CuPy: stream
  synchronize), µs.
* ``triad``: ``a[i] = b[i] + s * c[i]`` over 2^28 float32 (12 bytes per element), GB/s;
  CuPy: an ``ElementwiseKernel``.
* ``sum``: ``sycl.reduction`` (``plus``) over 2^28 float32 through buffers, GB/s of the input;
  CuPy: ``cupy.sum(x, out=s)`` (issue 27: pysycl >= 1.0x).
* ``matmul``: 4096^2 float32 with 16x16 local tiles (bench_gpu.py's kernel), GFLOP/s; only
  pysycl's two views (issue 24: CUDA not slower than the OpenCL path).
* ``fresh``: a new process to its checked first result (import, queue, kernel, copy back),
  warm (second process, same cache folder) and cold (empty folder), s; CuPy: ``RawKernel``
  (its own kernel cache warm and cold). As a ``pip install`` has them, the modules'
  bytecode caches are there: the children run without ``PYTHONDONTWRITEBYTECODE`` and an
  untimed child of each peer writes them first (without them every process compiles numpy,
  Numba and pysycl from source: ``bench_startup.py --bytecode source`` measures that).

Columns: ``cuda`` (pysycl, ``backend.ext_oneapi_cuda``), ``opencl`` (pysycl through
NVIDIA's OpenCL), ``cupy``; ratios are to CuPy (time: lower is better; GB/s: higher).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import pysycl as sycl


def _queue(backend: sycl.backend) -> sycl.queue | None:
    for d in sycl.device.get_devices(sycl.info.device_type.gpu):
        if d.get_backend() is backend:
            return sycl.queue(d)
    return None


def _pysycl_launcher(q: sycl.queue, n: int) -> tuple[Callable[[], Any], Callable[[], None],
                                                      Callable[[], np.ndarray]]:
    p = sycl.malloc_device(n, q, dtype=np.float32)
    q.memset(p, 0, n * 4).wait()

    def k(i):  # type: ignore[no-untyped-def]
        p[i] = p[i] + np.float32(1.0)

    def go() -> Any:
        return q.parallel_for(sycl.range(n), k)

    def result() -> np.ndarray:
        out = np.empty(n, np.float32)
        q.memcpy(out, p, n * 4).wait()
        return out
    return go, q.wait, result


def _cupy_launcher(n: int) -> tuple[Callable[[], Any], Callable[[], None],
                                    Callable[[], np.ndarray]] | None:
    try:
        import cupy as cp
    except Exception:
        return None
    rk = cp.RawKernel(r'''extern "C" __global__ void k(float* p, int n)
        { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) p[i] += 1.0f; }''', "k")
    a = cp.zeros(n, cp.float32)
    s = cp.cuda.Stream(non_blocking=True)
    args = (a, np.int32(n))
    grid, block = ((n + 255) // 256,), (256,)

    def go() -> Any:
        rk(grid, block, args, stream=s)
    return go, s.synchronize, lambda: cp.asnumpy(a)


def _b2b(go: Callable[[], Any], wait: Callable[[], None], launches: int) -> float:
    wait()
    t = time.perf_counter()
    for _ in range(launches):
        go()
    wait()
    return (time.perf_counter() - t) / launches * 1e6


def _lw(go: Callable[[], Any], wait: Callable[[], None], launches: int) -> float:
    t = time.perf_counter()
    for _ in range(launches):
        go()
        wait()
    return (time.perf_counter() - t) / launches * 1e6


def _triad_kernel(a: Any, b: Any, c: Any, s: np.float32) -> Callable[[Any], None]:
    def k(i):  # type: ignore[no-untyped-def]
        a[i] = b[i] + s * c[i]
    return k


def _triads(nlog2: int) -> dict[str, Callable[[], float]]:
    n = 1 << nlog2
    s = np.float32(3.0)
    rng = np.random.default_rng(1)
    b_h, c_h = rng.random(n, np.float32), rng.random(n, np.float32)
    want = b_h + s * c_h
    out: dict[str, Callable[[], float]] = {}
    for name, be in (("cuda", sycl.backend.ext_oneapi_cuda), ("opencl", sycl.backend.opencl)):
        q = _queue(be)
        if q is None:
            continue
        a, b, c = (sycl.malloc_device(n, q, dtype=np.float32) for _ in range(3))
        q.memcpy(b, b_h, b_h.nbytes).wait()
        q.memcpy(c, c_h, c_h.nbytes).wait()

        k = _triad_kernel(a, b, c, s)
        q.parallel_for(sycl.range(n), k).wait()
        got = np.empty(n, np.float32)
        q.memcpy(got, a, got.nbytes).wait()
        np.testing.assert_allclose(got, want, rtol=1e-6)

        def run(q=q, k=k) -> float:
            t = time.perf_counter()
            for _ in range(10):
                q.parallel_for(sycl.range(n), k)
            q.wait()
            return 12 * n * 10 / (time.perf_counter() - t) / 1e9
        out[name] = run
    try:
        import cupy as cp
        ek = cp.ElementwiseKernel("float32 b, float32 c, float32 s", "float32 a", "a = b + s * c",
                                  "triad")
        cb, cc = cp.asarray(b_h), cp.asarray(c_h)
        ca = cp.empty_like(cb)
        ek(cb, cc, s, ca)
        np.testing.assert_allclose(cp.asnumpy(ca), want, rtol=1e-6)

        def run_cp() -> float:
            cp.cuda.Device().synchronize()
            t = time.perf_counter()
            for _ in range(10):
                ek(cb, cc, s, ca)
            cp.cuda.Device().synchronize()
            return 12 * n * 10 / (time.perf_counter() - t) / 1e9
        out["cupy"] = run_cp
    except Exception as e:
        print("cupy triad n/a:", e, file=sys.stderr)
    return out


def _buffer_rows(sum_log2: int, mm_n: int) -> dict[str, dict[str, Callable[[], float]]]:
    """``sum`` (``sycl.reduction`` over 2^sum_log2 float32, GB/s of the input; and
    ``cupy.sum``) and ``matmul`` (the 16x16 local-tile kernel of bench_gpu.py on mm_n^2
    float32, GFLOP/s) through buffers, on each pysycl view of the GPU; checked against
    numpy first."""
    sys.path.insert(0, os.path.dirname(__file__))
    from bench_gpu import _matmul_cg, _reduction_cg

    n = 1 << sum_log2
    x = np.random.default_rng(2).random(n, np.float32)
    want = float(x.astype(np.float64).sum())
    a = np.random.default_rng(3).random((mm_n, mm_n), np.float32)
    b = np.random.default_rng(4).random((mm_n, mm_n), np.float32)
    rows: dict[str, dict[str, Callable[[], float]]] = {"sum": {}, "matmul": {}}
    for name, be in (("cuda", sycl.backend.ext_oneapi_cuda), ("opencl", sycl.backend.opencl)):
        q = _queue(be)
        if q is None:
            continue
        X, S = sycl.buffer(x), sycl.buffer(np.zeros(1, np.float32))
        q.submit(_reduction_cg(X, S, n)).wait()
        with S.get_host_access() as hs:
            assert abs(float(hs[0]) - want) <= 2e-4 * want, (name, hs[0], want)
        A, B, C = sycl.buffer(a), sycl.buffer(b), sycl.buffer(np.zeros((mm_n, mm_n), np.float32))
        q.submit(_matmul_cg(A, B, C, mm_n)).wait()
        with C.get_host_access() as hc:
            rows_i = [0, mm_n // 2, mm_n - 1]
            ref = a[rows_i].astype(np.float64) @ b.astype(np.float64)
            np.testing.assert_allclose(np.asarray(hc)[rows_i], ref, rtol=1e-3)

        def run_sum(q=q, X=X, S=S) -> float:
            t = time.perf_counter()
            for _ in range(5):
                q.submit(_reduction_cg(X, S, n))
            q.wait()
            return 4 * n * 5 / (time.perf_counter() - t) / 1e9

        def run_mm(q=q, A=A, B=B, C=C) -> float:
            t = time.perf_counter()
            for _ in range(3):
                q.submit(_matmul_cg(A, B, C, mm_n))
            q.wait()
            return 2 * mm_n ** 3 * 3 / (time.perf_counter() - t) / 1e9
        rows["sum"][name], rows["matmul"][name] = run_sum, run_mm
    try:
        rows["sum"]["cupy"] = _cupy_sum(x, want)
    except Exception as e:
        print("cupy sum n/a:", e, file=sys.stderr)
    return rows


def _cupy_sum(x: np.ndarray, want: float) -> Callable[[], float]:
    """``cupy.sum`` of ``x`` into a preallocated scalar, 5 back to back, GB/s of the input;
    checked against ``want`` first."""
    import cupy as cp

    cx, cs = cp.asarray(x), cp.zeros((), cp.float32)
    cp.sum(cx, out=cs)
    assert abs(float(cs) - want) <= 2e-4 * want, ("cupy", float(cs), want)

    def run() -> float:
        cp.cuda.Device().synchronize()
        t = time.perf_counter()
        for _ in range(5):
            cp.sum(cx, out=cs)
        cp.cuda.Device().synchronize()
        return 4 * x.size * 5 / (time.perf_counter() - t) / 1e9
    return run


_FRESH = {
    "cuda": """
        import numpy as np, pysycl as sycl
        q = sycl.queue(sycl.device.get_devices(sycl.info.device_type.gpu)[0])
        assert q.get_backend() is sycl.backend.ext_oneapi_cuda
        p = sycl.malloc_shared(1024, q, dtype=np.float32)
        q.parallel_for(sycl.range(1024), lambda i: p.__setitem__(i, i * 2.0)).wait()
        assert (np.asarray(p) == np.arange(1024) * 2.0).all()
    """,
    "opencl": """
        import numpy as np, pysycl as sycl
        q = sycl.queue(sycl.device.get_devices(sycl.info.device_type.gpu)[0])
        assert q.get_backend() is sycl.backend.opencl
        p = sycl.malloc_device(1024, q, dtype=np.float32)
        q.parallel_for(sycl.range(1024), lambda i: p.__setitem__(i, i * 2.0)).wait()
        out = np.empty(1024, np.float32); q.memcpy(out, p, 4096).wait()
        assert (out == np.arange(1024) * 2.0).all()
    """,
    "cupy": """
        import numpy as np, cupy as cp
        k = cp.RawKernel(r'extern "C" __global__ void k(float* p)'
                         r'{int i=blockIdx.x*256+threadIdx.x; p[i]=i*2.0f;}', "k")
        a = cp.empty(1024, cp.float32); k((4,), (256,), (a,))
        assert (cp.asnumpy(a) == np.arange(1024) * 2.0).all()
    """,
}


def _fresh(name: str, cache: str) -> float:
    env = {**os.environ, "PYSYCL_CACHE_DIR": cache, "CUPY_CACHE_DIR": cache,
           "PYSYCL_DEVICE_FILTER": {"cuda": "cuda:gpu", "opencl": "opencl:gpu"}.get(name, "")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # the .pyc files a pip install has (docstring)
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(_FRESH[name])], env=env,
                       capture_output=True, text=True, timeout=300)
    dt = time.perf_counter() - t
    if r.returncode:
        raise RuntimeError(f"{name}: {r.stderr[-800:]}")
    return dt


# long: one benchmark driver, rows in order, peers interleaved.
def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--launches", type=int, default=2000)
    ap.add_argument("--triad-log2", type=int, default=28)
    ap.add_argument("--json")
    ap.add_argument("--sum-log2", type=int, default=28)
    ap.add_argument("--matmul-n", type=int, default=4096)
    ap.add_argument("--rows", default="b2b,launch+wait,triad,sum,matmul,fresh",
                    help="comma-separated rows to run")
    a = ap.parse_args()
    n = 1024
    launchers: dict[str, Any] = {}
    for name, be in (("cuda", sycl.backend.ext_oneapi_cuda), ("opencl", sycl.backend.opencl)):
        q = _queue(be)
        if q is not None:
            launchers[name] = _pysycl_launcher(q, n)
    cpl = _cupy_launcher(n)
    if cpl is not None:
        launchers["cupy"] = cpl
    for name, (go, wait, result) in launchers.items():  # check first: 3 launches add 3
        before = result()
        for _ in range(3):
            go()
        wait()
        assert (result() == before + 3).all(), name
    res: dict[str, dict[str, list[float]]] = {"b2b": {}, "launch+wait": {}, "triad": {},
                                               "sum": {}, "matmul": {},
                                               "fresh warm": {}, "fresh cold": {}}
    rows = set(a.rows.split(","))
    triads = _triads(a.triad_log2) if "triad" in rows else {}
    brows = _buffer_rows(a.sum_log2, a.matmul_n) if rows & {"sum", "matmul"} else {}
    for _ in range(a.rounds):
        for name, (go, wait, _r) in launchers.items():
            if "b2b" in rows:
                res["b2b"].setdefault(name, []).append(_b2b(go, wait, a.launches))
            if "launch+wait" in rows:
                res["launch+wait"].setdefault(name, []).append(_lw(go, wait, a.launches // 4))
        for name, run in triads.items():
            res["triad"].setdefault(name, []).append(run())
        for row, runs in brows.items():
            if row in rows:
                for name, run in runs.items():
                    res[row].setdefault(name, []).append(run())
    fresh = [n for n in _FRESH if n == "cupy" or n in launchers] if "fresh" in rows else []
    for name in fresh:  # untimed: writes the modules' bytecode caches
        with tempfile.TemporaryDirectory() as cache:
            _fresh(name, cache)
    for _ in range(3 if fresh else 0):
        for name in fresh:
            with tempfile.TemporaryDirectory() as cache:
                res["fresh cold"].setdefault(name, []).append(_fresh(name, cache))
                res["fresh warm"].setdefault(name, []).append(_fresh(name, cache))
    gpus = sycl.device.get_devices(sycl.info.device_type.gpu)
    dev = gpus[0].get_info(sycl.info.device.name) if gpus else "no GPU"
    print(f"device: {dev}; {a.rounds} rounds, medians\n")
    print("| row | cuda | opencl | cupy | cuda / cupy | cuda / opencl |")
    print("|---|---|---|---|---|---|")
    for row, cols in res.items():
        if not cols:
            continue
        med = {k: statistics.median(v) for k, v in cols.items()}
        unit = {"triad": "GB/s", "sum": "GB/s", "matmul": "GFLOP/s"}.get(
            row, "s" if "fresh" in row else "µs")
        cells = [f"{med[c]:.2f} {unit}" if c in med else "n/a" for c in ("cuda", "opencl", "cupy")]
        r1 = f"{med['cuda'] / med['cupy']:.2f}x" if "cuda" in med and "cupy" in med else "n/a"
        r2 = f"{med['cuda'] / med['opencl']:.2f}x" if "cuda" in med and "opencl" in med else "n/a"
        print(f"| {row} | {' | '.join(cells)} | {r1} | {r2} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": dev, "samples": res}, f, indent=1)


if __name__ == "__main__":
    main()

"""Compiler I benchmarks: pysycl kernels side by side with their peers, in one run.

Peers, on the same machine and (for OpenCL) the same device:
hand-written OpenCL C through pyopencl, Numba ``@njit(parallel=True)``, numpy.

Run: ``make bench`` (or ``.venv/bin/python benchmarks/bench_kernels.py [--quick]``).
Prints a markdown table; ``--write`` also replaces the Compiler I section of
``docs/performance.md``.
"""

from __future__ import annotations

import math
import os
import platform as _platform
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

import pysycl as sycl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import OpenCLPeer, median_time, paired, setup, write_section

# ---------------------------------------------------------------- OpenCL C peer
OPENCL_C = """
__kernel void vadd(__global const float *a, __global const float *b, __global float *c) {
    size_t i = get_global_id(0); c[i] = a[i] + b[i];
}
__kernel void saxpy(float alpha, __global const float *x, __global float *y) {
    size_t i = get_global_id(0); y[i] = alpha * x[i] + y[i];
}
__kernel void matmul(__global const float *A, __global const float *B, __global float *C, long n) {
    size_t i = get_global_id(1), j = get_global_id(0);
    float acc = 0.0f;
    for (long k = 0; k < n; ++k) acc += A[i * n + k] * B[k * n + j];
    C[i * n + j] = acc;
}
__kernel void mathy(__global const float *a, __global float *c) {
    size_t i = get_global_id(0); float x = a[i];
    c[i] = sin(x) * cos(x) + sqrt(fabs(x)) * exp(-x * x) + tanh(x);
}
__kernel void tiny(__global int *out) { out[0] = 1; }
"""


def _peer(q: sycl.queue) -> OpenCLPeer:
    return OpenCLPeer(q, OPENCL_C, {"vadd": None, "saxpy": [np.float32, None, None],
                                    "matmul": [None, None, None, np.int64], "mathy": None,
                                    "tiny": None})


# ------------------------------------------------------------------- pysycl side
def _vadd_cg(A: sycl.buffer, B: sycl.buffer, C: sycl.buffer, n: int) -> Callable[[sycl.handler], None]:
    def cg(h: sycl.handler) -> None:
        ra = A.get_access(h, sycl.access_mode.read)
        rb = B.get_access(h, sycl.access_mode.read)
        wc = C.get_access(h, sycl.access_mode.write, properties=[sycl.no_init])
        h.parallel_for(sycl.range(n), lambda i: wc.__setitem__(i, ra[i] + rb[i]))
    return cg


def _saxpy_cg(alpha: np.float32, X: sycl.buffer, Y: sycl.buffer, n: int) -> Callable[[sycl.handler], None]:
    def cg(h: sycl.handler) -> None:
        x = X.get_access(h, sycl.access_mode.read)
        y = Y.get_access(h, sycl.access_mode.read_write)

        def saxpy(i: sycl.item) -> None:
            y[i] = alpha * x[i] + y[i]
        h.parallel_for(sycl.range(n), saxpy)
    return cg


def _matmul_cg(A: sycl.buffer, B: sycl.buffer, C: sycl.buffer, n: int) -> Callable[[sycl.handler], None]:
    def cg(h: sycl.handler) -> None:
        a = A.get_access(h, sycl.access_mode.read)
        b = B.get_access(h, sycl.access_mode.read)
        c = C.get_access(h, sycl.access_mode.write, properties=[sycl.no_init])

        def matmul(it: sycl.item) -> None:
            i, j = it[0], it[1]
            acc = np.float32(0.0)
            for k in range(n):
                acc += a[i, k] * b[k, j]
            c[i, j] = acc
        h.parallel_for(sycl.range(n, n), matmul)
    return cg


def _mathy_cg(A: sycl.buffer, C: sycl.buffer, n: int) -> Callable[[sycl.handler], None]:
    def cg(h: sycl.handler) -> None:
        a = A.get_access(h, sycl.access_mode.read)
        c = C.get_access(h, sycl.access_mode.write, properties=[sycl.no_init])

        def mathy(i: sycl.item) -> None:
            x = a[i]
            c[i] = (math.sin(x) * math.cos(x) + math.sqrt(abs(x)) * math.exp(-x * x)
                    + math.tanh(x))
        h.parallel_for(sycl.range(n), mathy)
    return cg


# ------------------------------------------------------------------ numba peer
def _numba_peers() -> dict[str, Callable[..., None]]:
    import numba

    @numba.njit(parallel=True, fastmath=False)
    def vadd(a, b, c):  # type: ignore[no-untyped-def]
        for i in numba.prange(a.size):
            c[i] = a[i] + b[i]

    @numba.njit(parallel=True)
    def saxpy(alpha, x, y):  # type: ignore[no-untyped-def]
        for i in numba.prange(x.size):
            y[i] = alpha * x[i] + y[i]

    @numba.njit(parallel=True)
    def matmul(a, b, c, n):  # type: ignore[no-untyped-def]
        for i in numba.prange(n):
            for j in range(n):
                acc = np.float32(0.0)
                for k in range(n):
                    acc += a[i, k] * b[k, j]
                c[i, j] = acc

    @numba.njit(parallel=True)
    def mathy(a, c):  # type: ignore[no-untyped-def]
        for i in numba.prange(a.size):
            x = a[i]
            c[i] = math.sin(x) * math.cos(x) + math.sqrt(abs(x)) * math.exp(-x * x) + math.tanh(x)

    return {"vadd": vadd, "saxpy": saxpy, "matmul": matmul, "mathy": mathy}


# ------------------------------------------------------------------ benchmarks
def bench_throughput(q: sycl.queue, peer: OpenCLPeer, quick: bool) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    numba_k = _numba_peers()
    reps = 5 if quick else 25
    sizes = [1 << 22] if quick else [1 << 24, 1 << 25]
    rng = np.random.default_rng(0)
    for n in sizes:
        a = rng.random(n, dtype=np.float32)
        b = rng.random(n, dtype=np.float32)
        c = np.empty_like(a)
        A, B, C = sycl.buffer(a), sycl.buffer(b), sycl.buffer(c)
        cg = _vadd_cg(A, B, C, n)
        da, db, dc = peer.buf(a), peer.buf(b), peer.buf(c)
        t_sycl, t_cl = paired(lambda: q.submit(cg).wait(),
                               lambda: peer.run("vadd", (n,), da, db, dc), reps)
        t_nb = median_time(lambda: numba_k["vadd"](a, b, c), reps)
        t_np = median_time(lambda: np.add(a, b, out=c), reps)
        with sycl.host_accessor(C, sycl.access_mode.read) as hc:
            assert np.array_equal(np.asarray(hc), a + b)
        rows.append(_row(f"vector add 2^{int(math.log2(n))} f32", 3 * 4 * n, t_sycl, t_cl, t_nb, t_np))
        del A, B, C

        alpha = np.float32(2.5)
        x, y = a, b.copy()
        X, Y = sycl.buffer(x), sycl.buffer(y.copy())
        cg = _saxpy_cg(alpha, X, Y, n)
        dx, dy = peer.buf(x), peer.buf(y.copy())
        t_sycl, t_cl = paired(lambda: q.submit(cg).wait(),
                               lambda: peer.run("saxpy", (n,), alpha, dx, dy), reps)
        yy = y.copy()
        t_nb = median_time(lambda: numba_k["saxpy"](alpha, x, yy), reps)
        t_np = median_time(lambda: np.add(alpha * x, yy, out=yy), reps)
        rows.append(_row(f"SAXPY 2^{int(math.log2(n))} f32", 3 * 4 * n, t_sycl, t_cl, t_nb, t_np))
        del X, Y

    n = 512 if quick else 1024
    am = rng.random((n, n), dtype=np.float32)
    bm = rng.random((n, n), dtype=np.float32)
    cm = np.empty_like(am)
    A, B, C = sycl.buffer(am), sycl.buffer(bm), sycl.buffer(cm)
    cg = _matmul_cg(A, B, C, n)
    mreps = 3 if quick else 5
    da, db, dc = peer.buf(am), peer.buf(bm), peer.buf(cm)
    t_sycl, t_cl = paired(lambda: q.submit(cg).wait(),
                           lambda: peer.run("matmul", (n, n), da, db, dc, np.int64(n)), mreps,
                           warmup=1)
    with sycl.host_accessor(C, sycl.access_mode.read) as hc:
        np.testing.assert_allclose(np.asarray(hc), am @ bm, rtol=1e-3)
    t_nb = median_time(lambda: numba_k["matmul"](am, bm, cm, n), mreps, warmup=1)
    t_np = median_time(lambda: np.matmul(am, bm, out=cm), mreps, warmup=1)
    rows.append(_row(f"naive matmul {n}^2 f32", 2 * n ** 3, t_sycl, t_cl, t_nb, t_np, unit="GFLOP/s",
                     np_note="BLAS sgemm"))
    del A, B, C

    n = 1 << (20 if quick else 24)
    a = (rng.random(n, dtype=np.float32) - 0.5) * 4
    c = np.empty_like(a)
    A, C = sycl.buffer(a), sycl.buffer(c)
    cg = _mathy_cg(A, C, n)
    da, dc = peer.buf(a), peer.buf(c)
    t_sycl, t_cl = paired(lambda: q.submit(cg).wait(), lambda: peer.run("mathy", (n,), da, dc),
                           reps)
    with sycl.host_accessor(C, sycl.access_mode.read) as hc:
        ref = np.sin(a) * np.cos(a) + np.sqrt(np.abs(a)) * np.exp(-a * a) + np.tanh(a)
        np.testing.assert_allclose(np.asarray(hc), ref, rtol=1e-4, atol=1e-5)
    t_nb = median_time(lambda: numba_k["mathy"](a, c), reps)
    t_np = median_time(lambda: np.add(np.sin(a) * np.cos(a) + np.sqrt(np.abs(a)) * np.exp(-a * a),
                                       np.tanh(a), out=c), reps)
    rows.append(_row(f"math-heavy 2^{int(math.log2(n))} f32", n, t_sycl, t_cl, t_nb, t_np,
                     unit="Gelem/s"))
    return rows


def _row(name: str, work: float, t_sycl: float, t_cl: float, t_nb: float, t_np: float,
         unit: str = "GB/s", np_note: str = "") -> dict[str, object]:
    scale = 1e9
    return {
        "name": name, "unit": unit,
        "pysycl": work / t_sycl / scale, "opencl_c": work / t_cl / scale,
        "numba": work / t_nb / scale, "numpy": work / t_np / scale,
        "ratio": t_cl / t_sycl, "np_note": np_note,
        "t": (t_sycl, t_cl, t_nb, t_np),
    }


def bench_latency(q: sycl.queue, peer: OpenCLPeer, quick: bool) -> dict[str, float]:
    """submit+wait of a 1-work-item kernel vs pyopencl enqueue+wait of the same kernel."""
    out = np.zeros(1, np.int32)
    out_buf = sycl.buffer(out)

    def cg(h: sycl.handler) -> None:
        o = out_buf.get_access(h, sycl.access_mode.write)
        h.single_task(lambda: o.__setitem__(0, 1))

    reps = 300 if quick else 3000
    d = peer.buf(out)
    t_sycl, t_cl = paired(lambda: q.submit(cg).wait(), lambda: peer.run("tiny", (1,), d), reps,
                           warmup=50)
    return {"pysycl_us": t_sycl * 1e6, "pyopencl_us": t_cl * 1e6, "ratio": t_sycl / t_cl}


_COLD = textwrap.dedent("""
    import time, numpy as np
    t0 = time.perf_counter()
    import pysycl as sycl
    q = sycl.queue()
    a = np.arange(1024, dtype=np.float32); c = np.empty_like(a)
    t1 = time.perf_counter()
    with sycl.buffer(a) as A, sycl.buffer(c) as C:
        def cg(h):
            ra = A.get_access(h, sycl.access_mode.read)
            wc = C.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.range(1024), lambda i: wc.__setitem__(i, ra[i] + ra[i]))
        q.submit(cg).wait()
    t2 = time.perf_counter()
    from pysycl import ext
    s = ext.kernel_cache_stats()
    assert np.array_equal(c, a + a)
    print(f"{t1 - t0:.4f} {t2 - t1:.4f} {t2 - t0:.4f} {s['compiles']} {s['disk_hits']}")
""")


def bench_cold(quick: bool) -> dict[str, float]:
    """Fresh processes: cold compile, then warm disk cache (time to first result)."""
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, PYSYCL_CACHE_DIR=d)
        res = []
        for _ in range(2 if quick else 3):
            for label in ("cold", "warm"):
                if label == "cold":  # every kernel and built binary (kernels/binaries/...)
                    for p in Path(d, "kernels").rglob("*"):
                        if p.is_file():
                            p.unlink()
                out = subprocess.run([sys.executable, "-c", _COLD], env=env, check=True,
                                     capture_output=True, text=True).stdout.split()
                res.append((label, *map(float, out)))
    cold = [r for r in res if r[0] == "cold"]
    warm = [r for r in res if r[0] == "warm"]
    assert all(r[4] == 1 for r in cold) and all(r[4] == 0 and r[5] == 1 for r in warm)
    return {
        "import_queue_s": statistics.median(r[1] for r in res),
        "cold_first_kernel_s": statistics.median(r[2] for r in cold),
        "cold_total_s": statistics.median(r[3] for r in cold),
        "warm_first_kernel_s": statistics.median(r[2] for r in warm),
        "warm_total_s": statistics.median(r[3] for r in warm),
    }


def render(rows: list[dict[str, object]], lat: dict[str, float], cold: dict[str, float],
           dev: str) -> str:
    lines = [
        f"Measured {time.strftime('%Y-%m-%d')} on `{_platform.node() or 'host'}`: "
        f"{os.cpu_count()} CPU cores, device **{dev}** (the default device), "
        f"Python {_platform.python_version()}, numpy {np.__version__}. "
        "All columns come from one run of `benchmarks/bench_kernels.py`; medians of repeated "
        "runs; pysycl and OpenCL C are measured alternately, with the data already on the "
        "device (no transfers). Numba and numpy run on the same 2 cores.",
        "",
        "| kernel | unit | pysycl | OpenCL C (pyopencl) | pysycl / OpenCL C | Numba parallel | numpy |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        note = f" ({r['np_note']})" if r["np_note"] else ""
        lines.append(f"| {r['name']} | {r['unit']} | {r['pysycl']:.2f} | {r['opencl_c']:.2f} | "
                     f"**{r['ratio']:.2f}x** | {r['numba']:.2f} | {r['numpy']:.2f}{note} |")
    lines += [
        "",
        "| launch latency (1 work-item, submit + wait) | µs |",
        "| --- | ---: |",
        f"| pysycl `q.submit(cg).wait()` | {lat['pysycl_us']:.1f} |",
        f"| pyopencl `kernel(queue, ...).wait()` | {lat['pyopencl_us']:.1f} |",
        f"| ratio pysycl / pyopencl (target ≤ 2) | **{lat['ratio']:.2f}** |",
        "",
        "| fresh process, vector-add lambda | seconds |",
        "| --- | ---: |",
        f"| `import pysycl` + `sycl.queue()` | {cold['import_queue_s']:.3f} |",
        f"| first kernel, cold (Numba + LLVM SPIR-V + OpenCL build) | {cold['cold_first_kernel_s']:.3f} |",
        f"| first kernel, warm disk cache (no Numba) | {cold['warm_first_kernel_s']:.3f} |",
        f"| time to first result, cold / warm | {cold['cold_total_s']:.3f} / {cold['warm_total_s']:.3f} |",
    ]
    return "\n".join(lines)


def main() -> None:
    args, q, dev = setup()
    peer = _peer(q)
    rows = bench_throughput(q, peer, args.quick)
    lat = bench_latency(q, peer, args.quick)
    cold = bench_cold(args.quick)
    text = render(rows, lat, cold, dev)
    print(text)
    if args.write:
        write_section("bench_kernels", text)


if __name__ == "__main__":
    main()

"""Compiler II benchmarks: nd_range kernels, local memory and reductions, side by side in one run.

Peers, on the same device: the same algorithms hand-written in OpenCL C through
pyopencl, and numpy. pysycl and OpenCL C are timed alternately (``_paired``).

* tiled matmul 1024^2 (16x16 work-groups, two 16x16 local tiles, barriers);
* work-group tree reduction of 2^24 float32 in local memory (one partial per
  work-group of 256; the partials are checked against numpy);
* ``sycl.reduction`` sum of 2^24 float32 (a range kernel with one reducer)
  versus numpy.sum and the hand-written OpenCL C two-kernel reduction.

Run: ``make bench`` (or ``.venv/bin/python benchmarks/bench_ndrange.py [--quick]``).
Prints a markdown table; ``--write`` also replaces the Compiler II section of
``docs/performance.md``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

import pysycl as sycl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import OpenCLPeer, median_time, paired, setup, write_section

WG = 256  # work-group size of the reductions
TS = 16  # matmul tile






# ---------------------------------------------------------------- OpenCL C peer
OPENCL_C = """
#define TS 16
__kernel void matmul_tiled(__global const float *A, __global const float *B, __global float *C,
                           long n) {
    __local float As[TS][TS];
    __local float Bs[TS][TS];
    size_t li = get_local_id(1), lj = get_local_id(0);
    size_t i = get_global_id(1), j = get_global_id(0);
    float acc = 0.0f;
    for (long t = 0; t < n; t += TS) {
        As[li][lj] = A[i * n + t + lj];
        Bs[li][lj] = B[(t + li) * n + j];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TS; ++k) acc += As[li][k] * Bs[k][lj];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    C[i * n + j] = acc;
}
__kernel void wg_reduce(__global const float *x, __global float *partial, __local float *tmp) {
    size_t lid = get_local_id(0);
    tmp[lid] = x[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t s = get_local_size(0) / 2; s > 0; s >>= 1) {
        if (lid < s) tmp[lid] += tmp[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) partial[get_group_id(0)] = tmp[0];
}
__kernel void sum_partials(__global const float *partial, __global float *out, long n,
                           __local float *tmp) {
    size_t lid = get_local_id(0), L = get_local_size(0);
    float a = 0.0f;
    for (long i = lid; i < n; i += L) a += partial[i];
    tmp[lid] = a;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t s = L / 2; s > 0; s >>= 1) {
        if (lid < s) tmp[lid] += tmp[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) out[0] = tmp[0];
}
"""


def _peer(q: sycl.queue) -> OpenCLPeer:
    return OpenCLPeer(q, OPENCL_C, {"matmul_tiled": [None, None, None, np.int64],
                                    "wg_reduce": None, "sum_partials": [None, None, np.int64, None]})


# ------------------------------------------------------------------- pysycl side
def _matmul_cg(A: sycl.buffer, B: sycl.buffer, C: sycl.buffer, n: int) -> Callable[..., None]:
    def cg(h: sycl.handler) -> None:
        a = A.get_access(h, sycl.access_mode.read)
        b = B.get_access(h, sycl.access_mode.read)
        c = C.get_access(h, sycl.access_mode.write)
        at = sycl.local_accessor(np.float32, sycl.range(TS, TS), h)
        bt = sycl.local_accessor(np.float32, sycl.range(TS, TS), h)
        nn = n

        def matmul_tiled(it: sycl.nd_item) -> None:
            li, lj = it.get_local_id(0), it.get_local_id(1)
            i, j = it.get_global_id(0), it.get_global_id(1)
            acc = np.float32(0)
            for t in range(0, nn, 16):
                at[li, lj] = a[i, t + lj]
                bt[li, lj] = b[t + li, j]
                it.barrier(sycl.access.fence_space.local_space)
                for k in range(16):
                    acc += at[li, k] * bt[k, lj]
                it.barrier(sycl.access.fence_space.local_space)
            c[i, j] = acc

        h.parallel_for(sycl.nd_range(sycl.range(n, n), sycl.range(TS, TS)), matmul_tiled)

    return cg


def _wg_reduce_cg(X: sycl.buffer, P: sycl.buffer, n: int) -> Callable[..., None]:
    def cg(h: sycl.handler) -> None:
        x = X.get_access(h, sycl.access_mode.read)
        part = P.get_access(h, sycl.access_mode.write, properties=[sycl.no_init])
        tmp = sycl.local_accessor(np.float32, sycl.range(WG), h)

        def wg_reduce(it: sycl.nd_item) -> None:
            lid = it.get_local_id(0)
            tmp[lid] = x[it.get_global_id(0)]
            it.barrier(sycl.access.fence_space.local_space)
            s = it.get_local_range(0) // 2
            while s > 0:
                if lid < s:
                    tmp[lid] += tmp[lid + s]
                it.barrier(sycl.access.fence_space.local_space)
                s >>= 1
            if lid == 0:
                part[it.get_group_linear_id()] = tmp[0]

        h.parallel_for(sycl.nd_range(sycl.range(n), sycl.range(WG)), wg_reduce)

    return cg


def _reduction_cg(X: sycl.buffer, S: sycl.buffer, n: int) -> Callable[..., None]:
    init = [sycl.property.reduction.initialize_to_identity()]

    def cg(h: sycl.handler) -> None:
        x = X.get_access(h, sycl.access_mode.read)
        h.parallel_for(sycl.range(n), sycl.reduction(S, h, sycl.plus(), properties=init),
                       lambda i, r: r.combine(x[i]))

    return cg


# ------------------------------------------------------------------ benchmarks
def bench(q: sycl.queue, peer: OpenCLPeer, quick: bool) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    rng = np.random.default_rng(0)
    cl = peer.cl

    n = 512 if quick else 1024
    am = rng.random((n, n), dtype=np.float32)
    bm = rng.random((n, n), dtype=np.float32)
    cm = np.zeros_like(am)
    A, B, C = sycl.buffer(am), sycl.buffer(bm), sycl.buffer(cm)
    cg = _matmul_cg(A, B, C, n)
    da, db, dc = peer.buf(am), peer.buf(bm), peer.buf(cm)
    k = peer.k["matmul_tiled"]
    t_sycl, t_cl = paired(lambda: q.submit(cg).wait(),
                           lambda: k(peer.q, (n, n), (TS, TS), da, db, dc, np.int64(n)).wait(),
                           3 if quick else 7, warmup=1)
    t_np = median_time(lambda: np.matmul(am, bm), 3, warmup=1)
    ref = am @ bm
    with sycl.host_accessor(C, sycl.access_mode.read) as hc:
        np.testing.assert_allclose(np.asarray(hc), ref, rtol=1e-3)
    np.testing.assert_allclose(peer.read(np.empty_like(cm), dc), ref, rtol=1e-3)
    flop = 2 * n ** 3
    rows.append({"name": f"tiled matmul {n}^2 f32 (16x16 tiles)", "unit": "GFLOP/s",
                 "sycl": flop / t_sycl / 1e9, "cl": flop / t_cl / 1e9, "np": flop / t_np / 1e9,
                 "np_note": "BLAS sgemm", "ratio": t_cl / t_sycl, "target": 0.9})
    del A, B, C

    n = 1 << (20 if quick else 24)
    reps = 7 if quick else 25
    x = rng.standard_normal(n).astype(np.float32)
    groups = n // WG
    part = np.zeros(groups, np.float32)
    X, P = sycl.buffer(x), sycl.buffer(part)
    cg = _wg_reduce_cg(X, P, n)
    dx, dp = peer.buf(x), peer.buf(part)
    k = peer.k["wg_reduce"]
    t_sycl, t_cl = paired(
        lambda: q.submit(cg).wait(),
        lambda: k(peer.q, (n,), (WG,), dx, dp, cl.LocalMemory(WG * 4)).wait(), reps)
    ref = x.reshape(groups, WG).astype(np.float64).sum(axis=1)
    with sycl.host_accessor(P, sycl.access_mode.read) as hp:
        np.testing.assert_allclose(np.asarray(hp), ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(peer.read(np.empty_like(part), dp), ref, rtol=1e-4, atol=1e-4)
    t_np = median_time(lambda: x.reshape(groups, WG).sum(axis=1), reps)
    gb = 4 * n
    rows.append({"name": f"work-group tree reduction 2^{n.bit_length() - 1} f32 (partials)",
                 "unit": "GB/s", "sycl": gb / t_sycl / 1e9, "cl": gb / t_cl / 1e9,
                 "np": gb / t_np / 1e9, "np_note": "reshape.sum(axis=1)",
                 "ratio": t_cl / t_sycl, "target": 0.9})
    del P

    s = np.zeros(1, np.float32)
    S = sycl.buffer(s)
    cg = _reduction_cg(X, S, n)
    out = peer.buf(np.zeros(1, np.float32))
    ks, kf = peer.k["wg_reduce"], peer.k["sum_partials"]

    def cl_sum() -> None:
        ks(peer.q, (n,), (WG,), dx, dp, cl.LocalMemory(WG * 4))
        kf(peer.q, (WG,), (WG,), dp, out, np.int64(groups), cl.LocalMemory(WG * 4)).wait()

    t_sycl, t_cl = paired(lambda: q.submit(cg).wait(), cl_sum, reps)
    t_np = median_time(lambda: np.sum(x), reps)
    want = x.astype(np.float64).sum()
    tol = 1e-5 * np.abs(x).sum()
    with sycl.host_accessor(S, sycl.access_mode.read) as hs:
        assert abs(float(hs[0]) - want) <= tol, (float(hs[0]), want)
    assert abs(float(peer.read(np.zeros(1, np.float32), out)[0]) - want) <= tol
    rows.append({"name": f"sycl.reduction sum 2^{n.bit_length() - 1} f32", "unit": "GB/s",
                 "sycl": gb / t_sycl / 1e9, "cl": gb / t_cl / 1e9, "np": gb / t_np / 1e9,
                 "np_note": "numpy.sum", "ratio": t_cl / t_sycl, "target": None})
    return rows


def render(rows: list[dict[str, object]], dev: str) -> str:
    lines = [f"Device: {dev}. Medians; pysycl and OpenCL C timed alternately, each call "
             "including `wait()`.", "",
             "| kernel | unit | pysycl | OpenCL C | pysycl / OpenCL C | numpy |",
             "| --- | --- | ---: | ---: | ---: | ---: |"]
    for r in rows:
        tgt = "" if r["target"] is None else f" (target ≥ {r['target']})"
        lines.append(f"| {r['name']} | {r['unit']} | {r['sycl']:.1f} | {r['cl']:.1f} | "
                     f"{r['ratio']:.2f}×{tgt} | {r['np']:.1f} ({r['np_note']}) |")  # noqa: RUF001
    return "\n".join(lines)


def main() -> None:
    args, q, dev = setup()
    text = render(bench(q, _peer(q), args.quick), dev)
    print(text)
    if args.write:
        write_section("bench_ndrange", text)


if __name__ == "__main__":
    main()

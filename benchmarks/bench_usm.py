"""USM, the fast path: launch latency, PRK nstream, memcpy bandwidth (issue #12).

Side by side in one process, medians of alternating repetitions:

* ``q.parallel_for(sycl.range(1), kernel).wait()`` of a kernel that captures a USM
  pointer, on the default queue and on an in-order queue, against pyopencl's
  enqueue + wait of the same tiny OpenCL C kernel with an SVM argument (target ≤ 1.3x);
* PRK nstream (``A[i] += B[i] + s * C[i]``) with USM device allocations, with
  buffers and accessors, and in OpenCL C (pyopencl buffers) (target ≥ 0.95x);
* host → device and device → host copies: ``q.memcpy`` against pyopencl's
  ``enqueue_copy`` to/from a ``cl.Buffer``.

    python benchmarks/bench_usm.py [--quick] [--write]
"""

from __future__ import annotations

import platform

import numpy as np
from _common import OpenCLPeer, paired, setup, write_section

import pysycl as sycl

_SRC = """
__kernel void one(__global int *o) { o[0] = 1; }
__kernel void nstream(__global float *a, __global const float *b, __global const float *c,
                      float s) {
    size_t i = get_global_id(0); a[i] += b[i] + s * c[i]; }
"""


def _latency(q: sycl.queue, peer: OpenCLPeer, reps: int) -> list[str]:
    """Tiny-kernel submit + wait rows: default and in-order queue vs pyopencl."""
    cl = peer.cl
    rows = []
    for label, qq in (("default queue", q),
                      ("in-order queue", sycl.queue(q.get_context(), q.get_device(),
                                                    properties=[sycl.property.queue.in_order()]))):
        p = sycl.malloc_device(1, qq, dtype=np.int32)

        def one(i: sycl.item) -> None:
            p[0] = 1

        r1 = sycl.range(1)
        svm = cl.SVMAllocation(peer.ctx, 4, 0, cl.svm_mem_flags.READ_WRITE)
        k = peer.k["one"]
        t_s, t_c = paired(lambda: qq.parallel_for(r1, one).wait(),
                          lambda: k(peer.q, (1,), None, svm).wait(), reps, warmup=200)
        got = np.zeros(1, np.int32)
        qq.memcpy(got, p, 4).wait()
        assert got[0] == 1
        sycl.free(p, qq)
        rows.append(f"| `q.parallel_for(range(1), k).wait()`, USM capture, {label} | µs | "
                    f"{t_s * 1e6:.2f} | | {t_c * 1e6:.2f} | **{t_s / t_c:.2f}x** (≤ 1.3) |")
        print(rows[-1])
    return rows


def _nstream(q: sycl.queue, peer: OpenCLPeer, n: int, reps: int) -> list[str]:
    """PRK nstream with USM, with buffers, in OpenCL C: GB/s (4 x 4 bytes per element)."""
    s = np.float32(3.0)
    b_h, c_h = np.full(n, 2.0, np.float32), np.full(n, 2.0, np.float32)
    a_h = np.zeros(n, np.float32)
    A, B, C = (sycl.malloc_device(n, q, dtype=np.float32) for _ in range(3))
    for ptr, h in ((A, a_h), (B, b_h), (C, c_h)):
        q.memcpy(ptr, h, h.nbytes)
    q.wait()

    def usm_k(i: sycl.item) -> None:
        A[i] += B[i] + s * C[i]

    a_b, b_b, c_b = sycl.buffer(a_h.copy()), sycl.buffer(b_h), sycl.buffer(c_h)

    def buf_cg(h: sycl.handler) -> None:
        a = a_b.get_access(h, sycl.access_mode.read_write)
        b = b_b.get_access(h, sycl.access_mode.read)
        c = c_b.get_access(h, sycl.access_mode.read)
        h.parallel_for(sycl.range(n), lambda i: a.__setitem__(i, a[i] + b[i] + s * c[i]))

    da, db, dc = peer.buf(a_h), peer.buf(b_h), peer.buf(c_h)
    rng = sycl.range(n)
    usm_run = lambda: q.parallel_for(rng, usm_k).wait()  # noqa: E731
    buf_run = lambda: q.submit(buf_cg).wait()  # noqa: E731
    cl_run = lambda: peer.run("nstream", (n,), da, db, dc, s)  # noqa: E731
    t_u, t_c = paired(usm_run, cl_run, reps)
    t_b, t_c2 = paired(buf_run, cl_run, reps)
    # every variant ran the same number of times (warm-up included): one check for all
    runs = 2 * (reps + 2)
    got = np.empty(n, np.float32)
    q.memcpy(got, A, got.nbytes).wait()
    want = np.float32(runs // 2 * (2.0 + 3.0 * 2.0))
    assert got[0] == want and got[-1] == want, (got[0], want)
    gbs = lambda t: 16 * n / t / 1e9  # noqa: E731
    rows = [f"| PRK nstream 2^{n.bit_length() - 1} f32, USM device allocations | GB/s | "
            f"{gbs(t_u):.1f} | | {gbs(t_c):.1f} | **{t_c / t_u:.2f}x** (≥ 0.95) |",
            f"| PRK nstream 2^{n.bit_length() - 1} f32, buffers + accessors | GB/s | "
            f"{gbs(t_b):.1f} | | {gbs(t_c2):.1f} | **{t_c2 / t_b:.2f}x** |"]
    for ptr in (A, B, C):
        sycl.free(ptr, q)
    print(*rows, sep="\n")
    return rows


def _memcpy(q: sycl.queue, peer: OpenCLPeer, nbytes: int, reps: int) -> list[str]:
    """Host <-> device copies: q.memcpy (SVM) vs pyopencl enqueue_copy (cl.Buffer)."""
    cl = peer.cl
    host = np.ones(nbytes, np.uint8)
    back = np.zeros(nbytes, np.uint8)
    d = sycl.malloc_device(nbytes, q)
    buf = cl.Buffer(peer.ctx, cl.mem_flags.READ_WRITE, nbytes)
    rows = []
    for label, f_s, f_c in (
            ("host → device", lambda: q.memcpy(d, host, nbytes).wait(),
             lambda: cl.enqueue_copy(peer.q, buf, host).wait()),
            ("device → host", lambda: q.memcpy(back, d, nbytes).wait(),
             lambda: cl.enqueue_copy(peer.q, back, buf).wait())):
        t_s, t_c = paired(f_s, f_c, reps)
        rows.append(f"| `q.memcpy` {label}, {nbytes >> 20} MiB | GB/s | {nbytes / t_s / 1e9:.1f} "
                    f"| | {nbytes / t_c / 1e9:.1f} | **{t_c / t_s:.2f}x** |")
        print(rows[-1])
    assert (back == 1).all()
    sycl.free(d, q)
    return rows


def main() -> None:
    args, q, dev = setup()
    peer = OpenCLPeer(q, _SRC, {"one": None, "nstream": [None, None, None, np.float32]})
    n = 1 << (20 if args.quick else 25)
    rows = [*_latency(q, peer, 300 if args.quick else 5000),
            *_nstream(q, peer, n, 5 if args.quick else 15),
            *_memcpy(q, peer, 1 << (22 if args.quick else 27), 5 if args.quick else 15)]
    text = "\n".join([
        f"Measured on `{platform.node()}`, device **{dev}**, Python "
        f"{platform.python_version()}; one run of `benchmarks/bench_usm.py`, medians of "
        "alternating repetitions (each timed call includes its wait). Ratios are pysycl's "
        "speed over the peer's (latency: time over time).",
        "",
        "| case | unit | pysycl | | OpenCL C / pyopencl | ratio (target) |",
        "| --- | --- | ---: | --- | ---: | ---: |",
        *rows,
    ])
    if args.write:
        write_section("bench_usm", text)


if __name__ == "__main__":
    main()

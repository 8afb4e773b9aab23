"""The submit hot path: ``q.submit(cg).wait()`` of tiny kernels against pyopencl's enqueue + wait.

Issue #10's target: a 1-work-item kernel through pysycl costs at most 1.5x pyopencl's
``kernel(queue, ...).wait()`` of the same OpenCL C kernel on the same device. Both are
timed alternately in one process (``paired``), medians of many repetitions.

    python benchmarks/bench_submit.py [--quick] [--write]
"""

from __future__ import annotations

import platform

import numpy as np
from _common import OpenCLPeer, paired, setup, write_section

import pysycl as sycl

_SRC = """
__kernel void one(__global int *o) { o[0] = 1; }
__kernel void axpy(__global float *y, __global const float *x, float a) {
    size_t i = get_global_id(0); y[i] = a * x[i] + y[i]; }
"""


def _cases(q: sycl.queue, peer: OpenCLPeer) -> list[tuple[str, object, object]]:
    """(label, pysycl call, pyopencl call) per case."""
    out = np.zeros(1, np.int32)
    ob = sycl.buffer(out)

    def single(h: sycl.handler) -> None:
        o = ob.get_access(h, sycl.access_mode.write)
        h.single_task(lambda: o.__setitem__(0, 1))

    n = 16
    y, x = np.ones(n, np.float32), np.arange(n, dtype=np.float32)
    yb, xb = sycl.buffer(y), sycl.buffer(x)
    a = np.float32(2.0)

    def axpy(h: sycl.handler) -> None:
        wy = yb.get_access(h, sycl.access_mode.read_write)
        rx = xb.get_access(h, sycl.access_mode.read)
        h.parallel_for(sycl.range(n), lambda i: wy.__setitem__(i, a * rx[i] + wy[i]))

    d_out, d_y, d_x = peer.buf(out), peer.buf(y), peer.buf(x)
    return [
        ("single_task, 1 accessor", lambda: q.submit(single).wait(),
         lambda: peer.run("one", (1,), d_out)),
        ("parallel_for(range(16)), 2 accessors + 1 scalar", lambda: q.submit(axpy).wait(),
         lambda: peer.run("axpy", (n,), d_y, d_x, a)),
    ]


def main() -> None:
    args, q, dev = setup()
    peer = OpenCLPeer(q, _SRC, {"one": None, "axpy": [None, None, np.float32]})
    reps = 500 if args.quick else 5000
    rows = []
    for label, f_sycl, f_cl in _cases(q, peer):
        t_s, t_c = paired(f_sycl, f_cl, reps, warmup=200)
        rows.append(f"| {label} | {t_s * 1e6:.2f} | {t_c * 1e6:.2f} | **{t_s / t_c:.2f}x** |")
        print(rows[-1])
    text = "\n".join([
        f"Measured on `{platform.node()}`, device **{dev}**, Python "
        f"{platform.python_version()}; one run of `benchmarks/bench_submit.py`, medians of "
        f"{reps} alternating repetitions.",
        "",
        "| submit + wait | pysycl µs | pyopencl µs | pysycl / pyopencl (target ≤ 1.5) |",
        "| --- | ---: | ---: | ---: |",
        *rows,
    ])
    if args.write:
        write_section("bench_submit", text)


if __name__ == "__main__":
    main()

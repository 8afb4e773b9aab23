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


class _LeanAccessor:
    __slots__ = ("mem", "tail")


class _LeanHandler:
    """The least a SYCL-shaped command group can record: accessors and one kernel."""

    __slots__ = ("fn", "reqs")

    def __init__(self) -> None:
        self.reqs: list[_LeanAccessor] = []
        self.fn = None

    def get_access(self, mem: object) -> _LeanAccessor:
        a = _LeanAccessor()
        a.mem, a.tail = mem, ()
        self.reqs.append(a)
        return a

    def single_task(self, fn: object) -> None:
        self.fn = fn


def _lean_floor(peer: OpenCLPeer, mem: object) -> object:
    """``submit(cg).wait()`` with none of pysycl's work: no checks, no capture typing,
    no coherence, no events of its own — a lower bound of this API shape in Python.

    Per submit: a handler, the command-group function (one accessor, one lambda),
    reading the closure, one dictionary lookup for the kernel, its arguments set only
    when they changed, the enqueue, the wait.
    """
    k = peer.cl.Kernel(peer.prg, "one")
    q = peer.cl.CommandQueue(peer.ctx, peer.q.device)
    enqueue = peer.cl.enqueue_nd_range_kernel
    kernels: dict[object, object] = {}
    bound: dict[object, list[object]] = {}

    def cg(h: _LeanHandler) -> None:
        o = h.get_access(mem)
        h.single_task(lambda: o.__setitem__(0, 1))

    def submit_wait() -> None:
        h = _LeanHandler()
        cg(h)
        fn = h.fn
        values = [c.cell_contents for c in fn.__closure__]  # type: ignore[attr-defined]
        kk = kernels.get(fn.__code__)  # type: ignore[attr-defined]
        if kk is None:
            kk = kernels[fn.__code__] = k  # type: ignore[attr-defined]
        args = [v.mem for v in values]
        if bound.get(kk) != args:
            kk.set_args(*args)  # type: ignore[attr-defined]
            bound[kk] = args
        enqueue(q, kk, (1,), None, None, None).wait()

    return submit_wait


def main() -> None:
    args, q, dev = setup()
    peer = OpenCLPeer(q, _SRC, {"one": None, "axpy": [None, None, np.float32]})
    reps = 500 if args.quick else 5000
    rows = []
    for label, f_sycl, f_cl in _cases(q, peer):
        t_s, t_c = paired(f_sycl, f_cl, reps, warmup=200)
        rows.append(f"| {label} | {t_s * 1e6:.2f} | {t_c * 1e6:.2f} | **{t_s / t_c:.2f}x** |")
        print(rows[-1])
    out = np.zeros(1, np.int32)
    lean = _lean_floor(peer, peer.buf(out))
    d = peer.buf(out)
    t_l, t_c = paired(lean, lambda: peer.run("one", (1,), d), reps, warmup=200)
    rows.append(f"| lower bound: the same single_task with none of pysycl's per-submit work "
                f"(no checks, capture typing, coherence or events) | {t_l * 1e6:.2f} | "
                f"{t_c * 1e6:.2f} | {t_l / t_c:.2f}x |")
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

"""Command graphs (issue 27): a 100-kernel sequence replayed as a graph, per kernel.

One process, the three interleaved round by round (``interleaved``), medians; every result
checked once before timing. The sequence: ``K`` = 100 kernels, kernel ``j`` computing
``y[i] = y[i] * 0.5 + c_j`` over a ``malloc_device`` array of ``N`` floats (one Python
kernel function, ``c_j`` captured: 100 closures), each after the previous.

* **graph replay** -- ``q.ext_oneapi_graph(exec_g)`` of the graph recorded from the 100
  submits;
* **eager** -- the 100 ``q.parallel_for(range(N), k_j)``;
* **pyopencl raw enqueue** -- ``cl.enqueue_nd_range_kernel`` of the same OpenCL C kernel
  100 times, each with its own ``cl_kernel`` whose arguments were set once (what a
  replay of pre-bound launches can at best be), on a queue of its own.

A round runs the sequence ``R`` = 10 times, then waits once (each side its usual wait).
The table gives per kernel the time to issue the work (the calls; the target's measure)
and the time to completion (the calls and the wait: the CPU device runs the kernels on
the cores the host thread shares, so how each side waits weighs in).

Target (issue 27, on the CPU device): replay per kernel <= 1.1x pyopencl's raw enqueue.
Informational: the same sequence on a buffer accessor, replay against eager ``q.submit``.
``--runs N`` (default 3) repeats the measurement; the table gives each run.

    python benchmarks/bench_graph.py [--quick] [--write] [--runs N]
"""

from __future__ import annotations

import datetime
import os
import platform
import statistics
import time

import numpy as np
from _common import OpenCLPeer, setup, write_section

import pysycl as sycl
import pysycl.ext.oneapi.experimental as syclex

_SRC = """
__kernel void step(__global float *y, float c) { size_t i = get_global_id(0); y[i] = y[i] * 0.5f + c; }
"""
K = 100
N = 64
R = 10  # sequences per round, then one wait: the wait's cost spread over 1000 kernels


def _expected(cs: list[float]) -> np.ndarray:
    y = np.zeros(N, np.float32)
    for _ in range(R):
        for c in cs:
            y = y * np.float32(0.5) + np.float32(c)
    return y


def _kernels(y: sycl.usm_pointer, cs: list[float]) -> list:
    def make(c: float):
        c32 = np.float32(c)

        def step(i: sycl.id) -> None:
            y[i] = y[i] * np.float32(0.5) + c32
        return step
    return [make(c) for c in cs]


def _measure(q: sycl.queue, peer: OpenCLPeer, reps: int) -> tuple[float, float, float]:
    cl = peer.cl
    cs = [float(j % 7) for j in range(K)]
    want = _expected(cs)
    r = sycl.range(N)
    y = sycl.malloc_device(N, q, dtype=np.float32)
    ks = _kernels(y, cs)
    zero, got = np.zeros(N, np.float32), np.zeros(N, np.float32)

    g = syclex.command_graph(q.get_context(), q.get_device())
    g.begin_recording(q)
    for k in ks:
        q.parallel_for(r, k)
    g.end_recording()
    ex = g.finalize()

    def replay() -> object:
        for _ in range(R):
            ev = q.ext_oneapi_graph(ex)
        return ev

    def eager() -> object:
        for _ in range(R):
            for k in ks:
                ev = q.parallel_for(r, k)
        return ev

    yb = cl.Buffer(peer.ctx, cl.mem_flags.READ_WRITE, N * 4)
    rq = cl.CommandQueue(peer.ctx, peer.q.device)
    clks = []
    for c in cs:
        kk = cl.Kernel(peer.prg, "step")
        kk.set_args(yb, np.float32(c))
        clks.append(kk)
    enqueue = cl.enqueue_nd_range_kernel

    def raw() -> object:
        for _ in range(R):
            for kk in clks:
                ev = enqueue(rq, kk, (N,), None)
        return ev

    for name, run in (("replay", replay), ("eager", eager)):
        q.memcpy(y, zero, N * 4).wait()
        run().wait()
        q.memcpy(got, y, N * 4).wait()
        np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=name)
    cl.enqueue_copy(rq, yb, zero).wait()
    raw().wait()
    cl.enqueue_copy(rq, got, yb).wait()
    np.testing.assert_allclose(got, want, rtol=1e-6, err_msg="pyopencl")
    issue, total = _timed([replay, eager, raw], reps)
    sycl.free(y, q)
    return [t / (K * R) for t in issue], [t / (K * R) for t in total]


def _measure_buffer(q: sycl.queue, reps: int) -> tuple[list[float], list[float]]:
    """The same sequence on a buffer: 100 command groups with a read-write accessor,
    replayed as a graph and submitted eagerly (``q.submit``)."""
    cs = [float(j % 7) for j in range(K)]
    a = np.zeros(N, np.float32)
    with sycl.buffer(a) as buf:
        def group(c: float):
            c32 = np.float32(c)

            def cg(h: sycl.handler) -> None:
                acc = buf.get_access(h)
                h.parallel_for(sycl.range(N), lambda i: acc.__setitem__(
                    i, acc[i] * np.float32(0.5) + c32))
            return cg

        cgs = [group(c) for c in cs]
        g = syclex.command_graph(q.get_context(), q.get_device(), properties=[
            syclex.property.graph.assume_buffer_outlives_graph()])
        for cg in cgs:
            g.add(cg)
        ex = g.finalize()

        def replay() -> object:
            for _ in range(R):
                ev = q.ext_oneapi_graph(ex)
            return ev

        def eager() -> object:
            for _ in range(R):
                for cg in cgs:
                    ev = q.submit(cg)
            return ev

        issue, total = _timed([replay, eager], reps)
    got = a  # written back at the end of the with block
    # the warm-up and the timed rounds ran the sequence (5 + reps) * 2 * R times
    want = np.zeros(N, np.float32)
    for _ in range((5 + reps) * 2 * R):
        for c in cs:
            want = want * np.float32(0.5) + np.float32(c)
    np.testing.assert_allclose(got, want, rtol=1e-5, err_msg="buffer graph")
    return [t / (K * R) for t in issue], [t / (K * R) for t in total]


def _timed(fns: list, reps: int, warmup: int = 5) -> tuple[list[float], list[float]]:
    """Medians per function, round by round (the order rotating): the time to issue (the
    call) and the time to completion (the call and its event's wait)."""
    for _ in range(warmup):
        for f in fns:
            f().wait()
    issue: list[list[float]] = [[] for _ in fns]
    total: list[list[float]] = [[] for _ in fns]
    now = time.perf_counter
    trio = list(zip(fns, issue, total, strict=True))
    for r in range(reps):
        k = r % len(trio)
        for f, ti, tt in trio[k:] + trio[:k]:  # who goes first rotates
            t0 = now()
            ev = f()
            t1 = now()
            ev.wait()
            t2 = now()
            ti.append(t1 - t0)
            tt.append(t2 - t0)
    return ([statistics.median(t) for t in issue], [statistics.median(t) for t in total])


def main() -> None:
    args, q, dev = setup(runs=3)
    peer = OpenCLPeer(q, _SRC, {"step": None})
    reps = 20 if args.quick else 100
    rows = []
    for run in range(args.runs):
        (ig, ie, ir), (tg, te, tr) = _measure(q, peer, reps)
        rows.append(f"| {run + 1} | {ig * 1e6:.2f} | {ie * 1e6:.2f} | {ir * 1e6:.2f} | "
                    f"**{ig / ir:.2f}×** | {ie / ir:.2f}× | "  # noqa: RUF001
                    f"{tg * 1e6:.2f} | {te * 1e6:.2f} | {tr * 1e6:.2f} |")
        print(rows[-1])
    brows = []
    for run in range(args.runs):
        (ig, ie), (tg, te) = _measure_buffer(q, reps)
        brows.append(f"| {run + 1} | {ig * 1e6:.2f} | {ie * 1e6:.2f} | **{ie / ig:.1f}×** | "  # noqa: RUF001
                     f"{tg * 1e6:.2f} | {te * 1e6:.2f} |")
        print(brows[-1])
    text = "\n".join([
        f"Measured {datetime.date.today().isoformat()} on `{platform.node() or '?'}`: "
        f"{os.cpu_count()} CPU cores, device **{dev}**, Python {platform.python_version()}. "
        f"{K} kernels of {N} work-items in sequence, {R} sequences then one wait per round, "
        f"µs per kernel, medians of {reps} rounds, the three interleaved round by round "
        "(who goes first rotates). "
        "*Issue*: the calls that enqueue the work; *to completion*: with the wait (each "
        "side its own: pysycl polls, then blocks in a waiter thread; pyopencl blocks).", "",
        "| run | issue: graph replay | eager | pyopencl raw enqueue | replay / raw | "
        "eager / raw | to completion: replay | eager | raw |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |", *rows, "",
        "The same sequence on a buffer (each kernel a command group with a read-write "
        "accessor; no pyopencl peer): the graph replay against eager `q.submit`.", "",
        "| run | issue: graph replay | eager submit | eager / replay | to completion: replay "
        "| eager |",
        "| ---: | ---: | ---: | ---: | ---: | ---: |", *brows])
    print(text)
    if args.write:
        write_section("bench_graph", text)


if __name__ == "__main__":
    main()

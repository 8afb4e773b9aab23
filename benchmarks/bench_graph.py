r"""Command graphs (issue 27): a 100-kernel sequence replayed as a graph, per kernel.

One process, every side interleaved round by round (``interleaved``), medians; every result
checked once before timing. The sequence: ``K`` = 100 kernels, kernel ``j`` computing
``y[i] = y[i] * 0.5 + c_j`` over a ``malloc_device`` array of ``N`` floats, each after the
previous.

Python kernels (on a device that runs them: one Python kernel function, ``c_j`` captured,
100 closures):

* **command buffer** -- ``q.ext_oneapi_graph(exec_g)`` of the graph recorded from the 100
  submits, where the device has ``cl_khr_command_buffer`` (``PYSYCL_OPENCL_COMMAND_BUFFER=1``
  when it was finalized): one ``clEnqueueCommandBufferKHR``;
* **pre-bound replay** -- the same graph without command buffers (``=0``): its nodes' own
  ``cl_kernel``\ s, arguments set at ``finalize``, enqueued by one call of the C extension
  (``pysycl/_backends/opencl/_native.c``; one pyopencl call a node without it) -- what a
  CPU device's kernels-only graph replays as by default;
* **eager** -- the 100 ``q.parallel_for(range(N), k_j)``;
* **pyopencl raw enqueue** -- ``cl.enqueue_nd_range_kernel`` of the same OpenCL C kernel
  100 times, each with its own ``cl_kernel`` whose arguments were set once (what a
  replay of pre-bound launches can at best be), on a queue of its own.

OpenCL C kernel objects (every device that compiles OpenCL C -- PoCL, which runs no Python
kernel, included): the same OpenCL C kernel as a ``sycl.kernel`` of a bundle from source,
each node ``h.set_args(y, c_j); h.parallel_for(range(N), k)``: command buffer, pre-bound
replay (each node a clone of the kernel with its arguments, as above), eager ``q.submit``
of the 100 command groups, pyopencl raw enqueue.

A round runs the sequence ``R`` = 10 times, then waits once (each side its usual wait).
The tables give per kernel the time to issue the work (the calls; the target's measure)
and the time to completion (the calls and the wait: the CPU device runs the kernels on
the cores the host thread shares, so how each side waits weighs in).

Target (issue 27, on the CPU device): replay per kernel <= 1.1x pyopencl's raw enqueue.
Informational: the same sequence on a buffer accessor, replay against eager ``q.submit``.
``--runs N`` (default 3) repeats the measurement; the tables give each run. ``--device
NAME``: the device whose platform or device name contains NAME (``--device pocl``).

    python benchmarks/bench_graph.py [--quick] [--write] [--runs N] [--device NAME]
"""

from __future__ import annotations

import datetime
import os
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from _common import OpenCLPeer, setup, write_section

import pysycl as sycl
import pysycl.ext.oneapi.experimental as syclex

_SRC = """
__kernel void chain(__global float *y, float c) { size_t i = get_global_id(0); y[i] = y[i] * 0.5f + c; }
"""
K = 100
N = 64
_ENV = "PYSYCL_OPENCL_COMMAND_BUFFER"  # 0: graphs replay node by node
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


def _prepared(g: syclex.command_graph, q: sycl.queue, native: bool) -> tuple[object, str]:
    """``g`` finalized and planned for ``q``, with command buffers (``native``) or without
    (``PYSYCL_OPENCL_COMMAND_BUFFER=0``): the executable graph and how it replays."""
    old = os.environ.get(_ENV)
    os.environ[_ENV] = "1" if native else "0"  # 1: command buffers on CPU devices too
    try:
        ex = g.finalize()
        kind = ex.ext_pysycl_replay_kind(q)  # the plan for q is made (and kept) now
    finally:
        if old is None:
            del os.environ[_ENV]
        else:
            os.environ[_ENV] = old
    return ex, kind


def _raw(peer: OpenCLPeer, cs: list[float]) -> tuple[object, object, object]:
    """pyopencl's raw enqueue: a ``cl_kernel`` per kernel, arguments set once."""
    cl = peer.cl
    yb = cl.Buffer(peer.ctx, cl.mem_flags.READ_WRITE, N * 4)
    rq = cl.CommandQueue(peer.ctx, peer.q.device)
    clks = []
    for c in cs:
        kk = cl.Kernel(peer.prg, "chain")
        kk.set_args(yb, np.float32(c))
        clks.append(kk)
    enqueue = cl.enqueue_nd_range_kernel

    def raw() -> object:
        for _ in range(R):
            for kk in clks:
                ev = enqueue(rq, kk, (N,), None)
        return ev
    return raw, yb, rq


def _check(q: sycl.queue, peer: OpenCLPeer, y: sycl.usm_pointer, sides: dict, raw: tuple,
           want: np.ndarray) -> None:
    """Run each side once from zeros and compare with ``want``."""
    cl = peer.cl
    zero, got = np.zeros(N, np.float32), np.zeros(N, np.float32)
    for name, run in sides.items():
        q.memcpy(y, zero, N * 4).wait()
        run().wait()
        q.memcpy(got, y, N * 4).wait()
        np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=name)
    fn, yb, rq = raw
    cl.enqueue_copy(rq, yb, zero).wait()
    fn().wait()
    cl.enqueue_copy(rq, got, yb).wait()
    np.testing.assert_allclose(got, want, rtol=1e-6, err_msg="pyopencl")


def _replays(q: sycl.queue, g: syclex.command_graph) -> tuple[list, list[str]]:
    """The command-buffer and node-by-node replays of ``g`` on ``q`` and how each runs."""
    out, kinds = [], []
    for native in (True, False):
        ex, kind = _prepared(g, q, native)

        def replay(ex: object = ex) -> object:
            for _ in range(R):
                ev = q.ext_oneapi_graph(ex)
            return ev
        out.append(replay)
        kinds.append(kind)
    return out, kinds


def _four_ways(q: sycl.queue, peer: OpenCLPeer, y: Any, cs: list[float], once: Callable[[], object],
               reps: int) -> tuple[list, list, list[str]]:
    """``once()`` submits the sequence once to ``q``: recorded as a graph, its command-buffer
    and node-by-node replays, ``R`` eager runs and pyopencl's raw enqueue of the same
    kernels, results checked, then timed (per kernel); ``y`` freed."""
    g = syclex.command_graph(q.get_context(), q.get_device())
    g.begin_recording(q)
    once()
    g.end_recording()
    (native, nodes), kinds = _replays(q, g)

    def eager() -> object:
        for _ in range(R):
            ev = once()
        return ev

    raw = _raw(peer, cs)
    _check(q, peer, y, {"command buffer": native, "node by node": nodes, "eager": eager},
           raw, _expected(cs))
    issue, total = _timed([native, nodes, eager, raw[0]], reps)
    sycl.free(y, q)
    return [t / (K * R) for t in issue], [t / (K * R) for t in total], kinds


def _measure(q: sycl.queue, peer: OpenCLPeer, reps: int) -> tuple[list, list, list[str]]:
    """Python kernels: command buffer, pre-bound replay, eager, raw (per kernel)."""
    cs = [float(j % 7) for j in range(K)]
    r = sycl.range(N)
    y = sycl.malloc_device(N, q, dtype=np.float32)
    ks = _kernels(y, cs)

    def once() -> object:
        for k in ks:
            ev = q.parallel_for(r, k)
        return ev

    return _four_ways(q, peer, y, cs, once, reps)


def _measure_objects(q: sycl.queue, peer: OpenCLPeer, reps: int) -> tuple[list, list, list[str]]:
    """OpenCL C kernel objects: command buffer, node-by-node replay, eager, raw."""
    cs = [float(j % 7) for j in range(K)]
    k = syclex.build(syclex.create_kernel_bundle_from_source(
        q.get_context(), syclex.source_language.opencl, _SRC)).ext_oneapi_get_kernel("chain")
    y = sycl.malloc_device(N, q, dtype=np.float32)
    r = sycl.range(N)

    def group(c: np.float32) -> object:
        return lambda h: (h.set_args(y, c), h.parallel_for(r, k))
    cgs = [group(np.float32(c)) for c in cs]

    def once() -> object:
        for cg in cgs:
            ev = q.submit(cg)
        return ev

    return _four_ways(q, peer, y, cs, once, reps)


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


def _row(run: int, issue: list[float], total: list[float]) -> str:
    """One run's row: issue times, ratios to raw, times to completion (µs per kernel)."""
    ic, inn, ie, ir = (t * 1e6 for t in issue)
    tc, tn, te, tr = (t * 1e6 for t in total)
    return (f"| {run} | {ic:.2f} | {inn:.2f} | {ie:.2f} | {ir:.2f} | {ic / ir:.2f}× | "  # noqa: RUF001
            f"**{inn / ir:.2f}×** | {ie / ir:.2f}× | {tc:.2f} | {tn:.2f} | {te:.2f} | {tr:.2f} |")  # noqa: RUF001


_HEAD = ("| run | issue: command buffer | pre-bound | eager | pyopencl raw enqueue | "
         "buffer / raw | pre-bound / raw | eager / raw | to completion: command buffer | "
         "pre-bound | eager | raw |", "| ---: " * 12 + "|")


def _table(name: str, measure: object, q: sycl.queue, peer: OpenCLPeer, runs: int,
           reps: int) -> list[str]:
    rows, kinds = [], []
    for run in range(runs):
        issue, total, kinds = measure(q, peer, reps)  # type: ignore[operator]
        rows.append(_row(run + 1, issue, total))
        print(rows[-1])
    how = (f"{name}; the graph replays as *{kinds[0]}* (command buffer column) and as "
           f"*{kinds[1]}* (pre-bound column).")
    return [how, "", *_HEAD, *rows, ""]


def main() -> None:
    args, q, dev = setup(runs=3, device=True)
    peer = OpenCLPeer(q, _SRC, {"chain": None})
    reps = 20 if args.quick else 100
    d = q.get_device()
    parts = [
        f"Measured {datetime.date.today().isoformat()} on `{platform.node() or '?'}`: "
        f"{os.cpu_count()} CPU cores, device **{dev}**, Python {platform.python_version()}. "
        f"{K} kernels of {N} work-items in sequence, {R} sequences then one wait per round, "
        f"µs per kernel, medians of {reps} rounds, the four interleaved round by round "
        "(who goes first rotates). *Issue*: the calls that enqueue the work; *to completion*: "
        "with the wait (each side its own: pysycl polls, then blocks in a waiter thread; "
        "pyopencl blocks).", ""]
    if d.image_targets:
        parts += _table("Python kernels (100 closures of one kernel)", _measure, q, peer,
                        args.runs, reps)
    if d.ext_oneapi_can_compile(syclex.source_language.opencl):
        parts += _table("OpenCL C kernel objects (`h.set_args(y, c_j)`, a bundle from "
                        "source)", _measure_objects, q, peer, args.runs, reps)
    if d.image_targets:
        brows = []
        for run in range(args.runs):
            (ig, ie), (tg, te) = _measure_buffer(q, reps)
            brows.append(f"| {run + 1} | {ig * 1e6:.2f} | {ie * 1e6:.2f} | "
                         f"**{ie / ig:.1f}×** | {tg * 1e6:.2f} | {te * 1e6:.2f} |")  # noqa: RUF001
            print(brows[-1])
        parts += [
            "The same sequence on a buffer (each kernel a command group with a read-write "
            "accessor; no pyopencl peer): the graph replay against eager `q.submit`.", "",
            "| run | issue: graph replay | eager submit | eager / replay | to completion: "
            "replay | eager |", "| ---: | ---: | ---: | ---: | ---: | ---: |", *brows]
    text = "\n".join(parts).rstrip()
    print(text)
    if args.write:
        write_section("bench_graph", text)


if __name__ == "__main__":
    main()

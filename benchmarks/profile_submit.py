"""Where a command group's submit + wait goes, stage by stage, against pyopencl's floor.

Issue 23 asks, where a launch-cost target is out of reach in pure Python, for the profile
that shows it. This script times ``q.submit(cg).wait()`` of bench_submit's one-accessor
``single_task`` in its stages, in one process, the floor's enqueue and wait interleaved
round by round (``perf_counter`` around each stage; each stage's mean over the rounds):

* the user's command group function with a fresh handler (accessor, ``single_task``);
* ``resolve`` (capture walk, kernel-cache look-up) and the rest of the backend's
  ``prepare`` (built kernel, sizes, the queue's ``Launch``);
* the requirements (``Coherence.is_ready``);
* ``Launch.run``: arguments flattened, compared with the last ones, the driver's enqueue;
* the coherence record and the ``sycl.event``;
* ``event.wait()``: the driver's wait and the executor's bookkeeping.

``--stub`` replaces the driver's enqueue by an already-complete user event, so the
stages are Python alone: what a native ``submit`` could at most remove.

    python benchmarks/profile_submit.py [--rounds N] [--stub]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _common import OpenCLPeer

import pysycl as sycl
from pysycl._backends.opencl import launch as _launch
from pysycl._bundles.resolve import resolve
from pysycl._commands.event import event
from pysycl._commands.handler import handler

STAGES = ("command group function", "resolve", "prepare (rest)", "requirements",
          "Launch.run (enqueue)", "record + event", "wait")


def _stub(cl: object) -> None:
    """The driver's enqueue replaced by a complete user event (Python cost alone)."""
    ctx = None

    def enqueue(q: object, k: object, g: object, lo: object, off: object, wait_for: object,
                ) -> object:
        nonlocal ctx
        ctx = ctx or q.context  # type: ignore[attr-defined]
        ev = cl.UserEvent(ctx)  # type: ignore[attr-defined]
        ev.set_status(cl.command_execution_status.COMPLETE)  # type: ignore[attr-defined]
        return ev

    _launch._enqueue = enqueue  # type: ignore[assignment]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=20000)
    ap.add_argument("--stub", action="store_true")
    a = ap.parse_args()
    q = sycl.queue()
    peer = OpenCLPeer(q, "__kernel void one(__global int *o) { o[0] = 1; }", {"one": None})
    cl = peer.cl
    fq = cl.CommandQueue(peer.ctx, peer.q.device)
    fbuf = cl.Buffer(peer.ctx, cl.mem_flags.READ_WRITE, 4)
    fk = cl.Kernel(peer.prg, "one")
    fk.set_args(fbuf)
    out = np.zeros(1, np.int32)
    B = sycl.buffer(out)

    def cg(h: sycl.handler) -> None:
        acc = B.get_access(h, sycl.access_mode.write)
        h.single_task(lambda: acc.__setitem__(0, 1))

    for _ in range(500):
        q.submit(cg).wait()
    if a.stub:
        _stub(cl)
    ex, pc = q.executor, time.perf_counter
    t = [0.0] * len(STAGES)
    fe = fw = 0.0
    for _ in range(a.rounds):
        t0 = pc()
        h = handler(q)
        cg(h)
        sub = h.submission()
        t1 = pc()
        resolve(sub, sub.command, ex.context, ex.device)
        t2 = pc()
        ln, values, watch = _launch.prepare(ex, sub, sub.command)
        t3 = pc()  # prepare resolves again: its rest is (t3 - t2) - (t2 - t1)
        key = ex.key
        for acc in sub.requirements:
            acc.coherence.is_ready(key, ex, acc.writes, not acc.no_init)
        t4 = pc()
        ev = ln.run(values, None, watch)
        t5 = pc()
        for acc in sub.requirements:
            acc.coherence.record(key, ex, ev, acc.writes)
        h.release()
        e = event._make(q, ev, None, h.dependencies)
        t6 = pc()
        e.wait()
        t7 = pc()
        for i, d in enumerate((t1 - t0, t2 - t1, (t3 - t2) - (t2 - t1), t4 - t3, t5 - t4,
                               t6 - t5, t7 - t6)):
            t[i] += d
        f0 = pc()
        fev = cl.enqueue_nd_range_kernel(fq, fk, (1,), None)
        f1 = pc()
        fev.wait()
        f2 = pc()
        fe += f1 - f0
        fw += f2 - f1
    n = a.rounds
    print(f"{'stage':<26} {'µs':>7}")
    for name, x in zip(STAGES, t, strict=True):
        print(f"{name:<26} {x / n * 1e6:7.2f}")
    print(f"{'total':<26} {sum(t) / n * 1e6:7.2f}")
    print(f"{'floor: enqueue':<26} {fe / n * 1e6:7.2f}")
    print(f"{'floor: wait':<26} {fw / n * 1e6:7.2f}")
    print(f"device: {q.get_device().display_name}; {'stub enqueue' if a.stub else 'driver'}")


if __name__ == "__main__":
    main()

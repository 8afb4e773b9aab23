"""Launch cost: pysycl's tiny-kernel launches against pyopencl's floor and its usual call.

Issue 23's three cases (docs/design/launch.md §4), each timed in one process with its
peers interleaved round by round (``interleaved``: every function once per round),
medians; every result is checked once before timing:

* **floor** -- ``cl.enqueue_nd_range_kernel(queue, kernel, (1,), None)`` with the
  kernel's arguments set once: the least any Python launch can cost;
* **usual pyopencl** -- ``kernel(queue, (1,), None, *args)``, which sets the
  arguments on every call.

Rows: ``q.parallel_for(range(1), k).wait()`` with ``k`` capturing a ``malloc_device``
pointer (target ≤ 1.3x the floor); 200 back-to-back ``q.parallel_for`` then one wait,
per launch (≤ 1.5x); a command group with one write accessor and a ``single_task``,
``q.submit(cg).wait()`` (≤ 2.0x). Informational: a command group with two accessors
and a scalar, and a USM launch and a command group alternating on one queue (their
floor: the two floors one after the other). The peers use the pysycl queue's context
and device, each with an OpenCL queue of its own; the OpenCL C kernels write what the
Python kernels write. ``--runs N`` (default 3) repeats the whole measurement; the table
gives, per row, the run with the median ratio and the ratios' range.

    python benchmarks/bench_submit.py [--quick] [--write] [--runs N]
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable

import numpy as np
from _common import OpenCLPeer, interleaved, setup, write_section

import pysycl as sycl

_SRC = """
__kernel void one(__global int *o) { o[0] = 1; }
__kernel void axpy(__global float *y, __global const float *x, float a) {
    size_t i = get_global_id(0); y[i] = a * x[i] + y[i]; }
"""
BURST = 200  # launches per back-to-back round
Fn = Callable[[], None]


class _Floor:
    """pyopencl's floor and usual call of one kernel, each on a queue of its own."""

    def __init__(self, peer: OpenCLPeer, name: str, args: list[object],
                 gsize: tuple[int, ...] = (1,)) -> None:
        cl = peer.cl
        self.cl, self.args, self.gsize = cl, args, gsize
        self.fq = cl.CommandQueue(peer.ctx, peer.q.device)
        self.uq = cl.CommandQueue(peer.ctx, peer.q.device)
        self.fk = cl.Kernel(peer.prg, name)  # arguments set once, never again
        self.fk.set_args(*args)
        self.uk = peer.k[name]
        self.enqueue = cl.enqueue_nd_range_kernel

    def floor(self) -> None:
        self.enqueue(self.fq, self.fk, self.gsize, None).wait()

    def usual(self) -> None:
        self.uk(self.uq, self.gsize, None, *self.args).wait()

    def floor_burst(self) -> None:
        enqueue, q, k = self.enqueue, self.fq, self.fk
        for _ in range(BURST):
            ev = enqueue(q, k, (1,), None)
        ev.wait()

    def usual_burst(self) -> None:
        q, k, args = self.uq, self.uk, self.args
        for _ in range(BURST):
            ev = k(q, (1,), None, *args)
        ev.wait()


def _check(what: str, run: Fn, read: Callable[[], int], reset: Fn) -> None:
    """Run ``run`` once on zeroed memory and read back the 1 its kernel writes."""
    reset()
    run()
    got = read()
    assert got == 1, f"{what}: the kernel wrote {got}, not 1"


def _usm(q: sycl.queue, peer: OpenCLPeer) -> tuple[Fn, Fn, _Floor, object]:
    """The USM launch, single and back-to-back, with its floor (an SVM argument)."""
    cl = peer.cl
    p = sycl.malloc_device(1, q, dtype=np.int32)
    zero, got = np.zeros(1, np.int32), np.zeros(1, np.int32)

    def one(i: sycl.item) -> None:
        p[0] = 1

    r1 = sycl.range(1)

    def launch() -> None:
        q.parallel_for(r1, one).wait()

    def burst() -> None:
        for _ in range(BURST):
            ev = q.parallel_for(r1, one)
        ev.wait()

    svm = cl.SVMAllocation(peer.ctx, 4, 0, cl.svm_mem_flags.READ_WRITE)
    fl = _Floor(peer, "one", [svm])

    def read_svm() -> int:
        cl.enqueue_copy(fl.fq, got, svm).wait()
        return int(got[0])

    def reset_svm() -> None:
        cl.enqueue_copy(fl.fq, svm, zero).wait()

    def read_usm() -> int:
        q.memcpy(got, p, 4).wait()
        return int(got[0])

    _check("pysycl USM", launch, read_usm, lambda: q.memcpy(p, zero, 4).wait())
    _check("floor (SVM)", fl.floor, read_svm, reset_svm)
    _check("pyopencl (SVM)", fl.usual, read_svm, reset_svm)
    return launch, burst, fl, p


def _cg(q: sycl.queue, peer: OpenCLPeer) -> tuple[Fn, _Floor, object]:
    """The one-accessor command group, with its floor (a ``cl.Buffer`` argument)."""
    out = np.zeros(1, np.int32)
    ob = sycl.buffer(out)

    def single(h: sycl.handler) -> None:
        o = ob.get_access(h, sycl.access_mode.write)
        h.single_task(lambda: o.__setitem__(0, 1))

    def submit() -> None:
        q.submit(single).wait()

    def reset() -> None:
        with ob.get_host_access() as a:
            a[0] = 0

    def read() -> int:
        with ob.get_host_access() as a:
            return int(a[0])

    d = peer.buf(np.zeros(1, np.int32))
    fl = _Floor(peer, "one", [d])
    host = np.zeros(1, np.int32)

    def read_d() -> int:
        return int(peer.read(host, d)[0])

    def reset_d() -> None:
        peer.cl.enqueue_copy(peer.q, d, np.zeros(1, np.int32)).wait()

    _check("pysycl command group", submit, read, reset)
    _check("floor (buffer)", fl.floor, read_d, reset_d)
    _check("pyopencl (buffer)", fl.usual, read_d, reset_d)
    return submit, fl, ob


def _axpy(q: sycl.queue, peer: OpenCLPeer) -> tuple[Fn, _Floor, object]:
    """Two accessors and a scalar, over range(16) (informational)."""
    n = 16
    y, x = np.ones(n, np.float32), np.arange(n, dtype=np.float32)
    yb, xb = sycl.buffer(y), sycl.buffer(x)
    a = np.float32(2.0)

    def axpy(h: sycl.handler) -> None:
        wy = yb.get_access(h, sycl.access_mode.read_write)
        rx = xb.get_access(h, sycl.access_mode.read)
        h.parallel_for(sycl.range(n), lambda i: wy.__setitem__(i, a * rx[i] + wy[i]))

    fl = _Floor(peer, "axpy", [peer.buf(y), peer.buf(x), a], (n,))
    q.submit(axpy).wait()
    with yb.get_host_access() as got:
        assert np.array_equal(got, 1 + a * x), "axpy: wrong result"
    return (lambda: q.submit(axpy).wait()), fl, (yb, xb)


Row = tuple[str, str, float, float, float | None]  # label, target, pysycl, floor, usual


def _row(label: str, target: str, t_s: float, t_f: float, t_u: float | None,
         spread: str = "") -> str:
    usual = "" if t_u is None else f"{t_u * 1e6:.2f} ({t_u / t_f:.2f}x)"
    return (f"| {label} | {t_s * 1e6:.2f} | {t_f * 1e6:.2f} | {usual} | "
            f"**{t_s / t_f:.2f}x** | {spread} | {target} |")


def _measure(q: sycl.queue, peer: OpenCLPeer, reps: int) -> list[Row]:
    """One run: every case, its peers interleaved round by round."""
    launch, burst, ufl, mem = _usm(q, peer)
    cg, cfl, _keep = _cg(q, peer)
    axpy, afl, _keep2 = _axpy(q, peer)
    rows: list[Row] = []

    def add(label: str, target: str, t: list[float], per: int = 1) -> None:
        t_s, t_f, *t_u = (x / per for x in t)
        rows.append((label, target, t_s, t_f, t_u[0] if t_u else None))
        print(_row(*rows[-1]), flush=True)

    add("`q.parallel_for(range(1), usm_k).wait()`", "≤ 1.3x",
        interleaved([launch, ufl.floor, ufl.usual], reps, warmup=200))
    add(f"{BURST} x `q.parallel_for(range(1), usm_k)`, one wait, per launch", "≤ 1.5x",
        interleaved([burst, ufl.floor_burst, ufl.usual_burst], max(reps // 20, 20), warmup=3),
        BURST)
    add("`q.submit(cg).wait()`, one write accessor, `single_task`", "≤ 2.0x",
        interleaved([cg, cfl.floor, cfl.usual], reps, warmup=200))
    add("`q.submit(cg).wait()`, 2 accessors + 1 scalar, `range(16)`", "",
        interleaved([axpy, afl.floor, afl.usual], reps, warmup=200))

    def both() -> None:
        launch()
        cg()

    def floors() -> None:
        ufl.floor()
        cfl.floor()

    add("USM launch + wait, then the one-accessor command group + wait "
        "(alternating on one queue; floor: both floors)", "",
        interleaved([both, floors], reps, warmup=200))
    sycl.free(mem, q)
    return rows


def _summary(runs: list[list[Row]]) -> list[str]:
    """Per row: the run with the median pysycl / floor ratio, and the ratios' range."""
    out = []
    for per_run in zip(*runs, strict=True):
        ranked = sorted(per_run, key=lambda r: r[2] / r[3])
        lo, hi = ranked[0][2] / ranked[0][3], ranked[-1][2] / ranked[-1][3]
        out.append(_row(*ranked[len(ranked) // 2], spread=f"{lo:.2f}-{hi:.2f}x"))
    return out


def main() -> None:
    args, q, dev = setup(runs=3)
    peer = OpenCLPeer(q, _SRC, {"one": None, "axpy": [None, None, np.float32]})
    reps = 300 if args.quick else 5000
    runs = []
    for i in range(args.runs):
        print(f"run {i + 1} of {args.runs}", flush=True)
        runs.append(_measure(q, peer, reps))
    text = "\n".join([
        f"Measured {time.strftime('%Y-%m-%d')} on `{platform.node()}` ({_cores()} CPU cores, "
        f"shared with other work: ratios within one run are what counts), device **{dev}**, Python "
        f"{platform.python_version()}; `benchmarks/bench_submit.py`, {args.runs} runs in one "
        f"process, each of {reps} rounds (back-to-back: {max(reps // 20, 20)} rounds of "
        f"{BURST}) with pysycl, the floor and pyopencl's usual call interleaved round by "
        "round; per row the run with the median pysycl / floor ratio, and the ratios' range "
        "over the runs.",
        "",
        "| launch | pysycl µs | floor µs | usual pyopencl µs (/ floor) | pysycl / floor | "
        "range | target |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        *_summary(runs),
    ])
    print(text)
    if args.write:
        write_section("bench_submit", text)


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 0


if __name__ == "__main__":
    main()

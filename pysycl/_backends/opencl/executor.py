"""The OpenCL executor: runs one queue's command groups as OpenCL commands.

It owns the dependencies between command groups on the same buffers
(read-after-write, write-after-read, write-after-write) and the data movement,
through each buffer's :class:`~pysycl._memory.coherence.Coherence`.

* Every SYCL queue has one in-order OpenCL queue. Commands on the same queue
  are therefore already ordered; only dependencies on *other* queues become
  OpenCL wait lists. That keeps the submit path free of event bookkeeping in
  the common single-queue case.
* Data moves only when the copy a command needs is stale, and never for
  ``no_init``.
* Everything that can fail for a user mistake (kernel compilation, argument
  checks, accessor/context mismatches) happens in :meth:`OpenCLExecutor.submit`
  *before* the first OpenCL command is enqueued, so a failed command group
  leaves buffers and host data as they were.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from pysycl._backends.opencl import exec as x
from pysycl._commands.commands import (
    CopyCommand,
    FillCommand,
    HostTaskCommand,
    KernelCommand,
    UpdateHostCommand,
)
from pysycl._commands.event import event
from pysycl._commands.host_task import run_host_task
from pysycl._core.exceptions import errc, exception
from pysycl._kernels import bounds as _bounds
from pysycl._kernels import launch as _launch
from pysycl._memory import coherence
from pysycl._memory.accessor import accessor


def _before_host_sees(st: coherence.Coherence) -> None:
    if _bounds.watching:  # bounds-checked kernels that used st: report before the host sees it
        _bounds.sync(storage=st)


coherence.hooks.before_host_sees = _before_host_sees


class OpenCLEvents:
    """Waiting for and asking about native OpenCL events (no queue needed)."""

    __slots__ = ()

    def wait_events(self, natives: Sequence[Any]) -> None:
        x.wait([e for e in natives if e is not None])

    def status(self, native: Any) -> str:
        st = x.status(native)
        if st < 0:
            raise exception(errc.event, f"the command failed with OpenCL status {st}", cl_error=st)
        return "complete" if st == x.COMPLETE else "running" if st == x.RUNNING else "submitted"

    def profile(self, native: Any, which: str) -> int:
        return x.profile(native, which)


#: The event operations of events made by ``make_event`` (they have no queue).
EVENTS = OpenCLEvents()


class OpenCLExecutor(OpenCLEvents):
    """The executor of one ``sycl.queue`` on an OpenCL device: one in-order OpenCL queue."""

    __slots__ = ("__weakref__", "cl_context", "native")

    def __init__(self, ctx: Any, dev: Any, *, profiling: bool, native: Any = None) -> None:
        self.cl_context = ctx.native
        # ``native``: an application's own OpenCL queue (``make_queue``)
        self.native = native if native is not None else x.create_queue(ctx.native, dev.native,
                                                                       profiling)

    def submit(self, q: Any, h: Any) -> event:
        return submit(self, q, h)

    def wait(self) -> None:
        x.finish(self.native)
        if _bounds.watching:  # bounds-checked launches: report violations
            _bounds.sync(self.native)

    def read(self, host: np.ndarray, mem: Any, wait_for: Sequence[Any] | None) -> None:
        x.read(self.native, host, mem, wait_for=wait_for, blocking=True)

    def alloc(self, nbytes: int) -> Any:
        return x.alloc(self.cl_context, nbytes)

    def write(self, mem: Any, host: np.ndarray, wait_for: Sequence[Any] | None) -> Any:
        return x.write(self.native, mem, host, wait_for=wait_for)


# -------------------------------------------------------------------- submit
def submit(ex: OpenCLExecutor, q: Any, h: Any) -> event:
    """Execute the command group recorded in handler ``h`` on queue ``q`` (executor ``ex``)."""
    cmd = h._cmd
    ctx = q._ctx
    clq = ex.native
    launch = None
    if type(cmd) is KernelCommand:
        launch = _launch.prepare(q, h, cmd)     # may compile; may raise: nothing moved yet
    wait_for: list[Any] = []
    for e in h._deps:
        if e._cl is None:
            continue
        if e._queue is not None and e._queue._ctx == ctx:
            if e._queue is not q:
                wait_for.append(e._cl)
        else:
            e.wait()
    if type(cmd) is HostTaskCommand:
        if wait_for:
            x.wait(wait_for)
        return run_host_task(q, h, cmd)
    # Requirements: allocate, move data, collect cross-queue dependencies.
    reqs = h._reqs
    key = ctx._handle
    for acc in reqs:
        st = acc._buf._storage
        writes = acc._ktype.mode != "read"
        if not st.is_ready(key, ex, writes, not acc._no_init):
            st.prepare_device(key, ex, writes, not acc._no_init, wait_for)
    match cmd:
        case KernelCommand():
            ev = launch(wait_for or None)  # type: ignore[misc]
        case FillCommand():
            ev = _fill(q, cmd, wait_for)
        case CopyCommand():
            ev = _copy(q, cmd, wait_for)
        case UpdateHostCommand(acc=acc):
            acc._buf._storage.acquire_host(writes=False)
            return event._make(q, None, deps=h._deps)
        case _:  # an empty command group: a barrier on its dependencies
            ev = x.marker(clq, wait_for=wait_for or None) if wait_for else None
            if ev is None:
                return event._make(q, None, deps=h._deps)
    for acc in reqs:
        acc._buf._storage.record(key, ex, ev, acc._ktype.mode != "read")
    return event._make(q, ev, deps=h._deps)


def _fill(q: Any, cmd: FillCommand, wait_for: list[Any]) -> Any:
    acc, value = cmd.dest, cmd.value
    st = acc._buf._storage
    pattern = np.asarray(value, dtype=st.dtype).reshape(1)
    segments = _segments(acc)
    ev = None
    buf = st.dev[q._ctx._handle]
    isz = st.dtype.itemsize
    for off, n in segments:
        ev = x.fill(q._clq, buf, pattern, off * isz, n * isz, wait_for=wait_for or None)
        wait_for = []
    return ev


def _segments(acc: Any) -> list[tuple[int, int]]:
    """Contiguous (element offset, count) runs covered by a (ranged) accessor."""
    rng = tuple(acc._range)
    mem = tuple(acc._buf._root_range())
    base = acc._tail[0]
    if len(rng) == 1 or rng[1:] == mem[1:]:
        return [(base, acc.size())]
    out = []
    strides = [int(np.prod(mem[d + 1:])) for d in range(len(mem))]
    for outer in itertools.product(*(range(r) for r in rng[:-1])):
        off = base + sum(i * s for i, s in zip(outer, strides, strict=False))
        out.append((off, rng[-1]))
    return out


def _copy(q: Any, cmd: CopyCommand, wait_for: list[Any]) -> Any:
    src, dst = cmd.src, cmd.dest
    if isinstance(src, accessor) and isinstance(dst, accessor):
        ss, ds = _segments(src), _segments(dst)
        if len(ss) == 1 and len(ds) == 1 and src.dtype == dst.dtype:
            isz = src.dtype.itemsize
            return x.copy_buffer(q._clq, dst._buf._storage.dev[q._ctx._handle],
                                 src._buf._storage.dev[q._ctx._handle], ss[0][1] * isz,
                                 ds[0][0] * isz, ss[0][0] * isz, wait_for=wait_for or None)
        raise exception(errc.feature_not_supported,
                        "pysycl: accessor-to-accessor copy of non-contiguous regions or "
                        "different dtypes is not supported")
    if isinstance(src, accessor):  # device -> host array
        segs = _segments(src)
        dst_arr = dst
        if len(segs) == 1 and dst_arr.flags.c_contiguous and dst_arr.dtype == src.dtype:
            off, n = segs[0]
            if _bounds.watching:  # bounds-checked launches: report before results reach the host
                x.wait([e for e in wait_for if e is not None])
                x.finish(q._clq)
                _bounds.sync(q._clq, src._buf._storage)
            return x.read(q._clq, dst_arr.reshape(-1)[:n], src._buf._storage.dev[q._ctx._handle],
                          off * src.dtype.itemsize, wait_for=wait_for or None, blocking=True)
        raise exception(errc.invalid, "copy(accessor, array): the destination must be a "
                        f"C-contiguous {src.dtype} array covering a contiguous accessor region")
    # host array -> device
    segs = _segments(dst)
    src_arr = np.ascontiguousarray(src, dtype=dst.dtype).reshape(-1)
    if len(segs) != 1 or src_arr.size < segs[0][1]:
        raise exception(errc.invalid, "copy(array, accessor): the source must have at least as "
                        "many elements as the (contiguous) accessor region")
    off, n = segs[0]
    return x.write(q._clq, dst._buf._storage.dev[q._ctx._handle], src_arr[:n].copy(),
                   off * dst.dtype.itemsize, wait_for=wait_for or None)

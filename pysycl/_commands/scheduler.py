"""The scheduler: turns one recorded command group into OpenCL commands.

It owns the dependencies between command groups on the same buffers
(read-after-write, write-after-read, write-after-write) and the data movement.

* Every SYCL queue has one in-order OpenCL queue. Commands on the same queue
  are therefore already ordered; only dependencies on *other* queues become
  OpenCL wait lists. That keeps the submit path free of event bookkeeping in
  the common single-queue case.
* A buffer's ``_Storage.valid`` says which copies are current. Data moves only
  when the copy a command needs is stale, and never for ``no_init``.
* Everything that can fail for a user mistake (kernel compilation, argument
  checks, accessor/context mismatches) happens in :func:`submit` *before* the
  first OpenCL command is enqueued, so a failed command group leaves buffers
  and host data as they were.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pysycl._commands.commands import (
    CopyCommand,
    FillCommand,
    HostTaskCommand,
    KernelCommand,
    UpdateHostCommand,
)
from pysycl._commands.event import event
from pysycl._core.exceptions import errc, exception
from pysycl._kernels import bounds as _bounds
from pysycl._memory.buffer import HOST, _Storage, host_view

_mods: dict[str, Any] = {}


def _cl() -> Any:
    """The OpenCL layer, imported on first use (keeps ``import pysycl`` light)."""
    x = _mods.get("cl")
    if x is None:
        from pysycl._backends.opencl import exec as x

        _mods["cl"] = x
    return x


def _launcher() -> Any:
    m = _mods.get("launch")
    if m is None:
        from pysycl._kernels import launch as m  # circular at import time: resolved on first use

        _mods["launch"] = m
    return m


# --------------------------------------------------------------------- buffers
def pending_events(st: _Storage, writes: bool) -> list[tuple[Any, Any]]:
    """(cl queue, cl event) pairs a new access must wait for."""
    deps = [] if st.last_write is None else [st.last_write]
    if writes:
        deps.extend(st.reads.items())
    return deps


def wait_all(st: _Storage) -> None:
    """Block until every command using ``st`` has completed."""
    evs = st.pending()
    if evs:
        _cl().wait(evs)
        st.reads.clear()
        st.last_write = None
    if _bounds.watching:  # bounds-checked kernels that used st: report before write-back
        _bounds.sync(storage=st)


def sync_to_host(st: _Storage) -> None:
    """Make the host copy current (blocking read from a device holding the data)."""
    if HOST in st.valid or not st.valid:
        if not st.valid:
            st.valid.add(HOST)  # never initialized: the host copy is as good as any
        return
    ctx = next(iter(st.valid))  # a context handle
    clq = st.queue_of[ctx]
    wait_for = [e for q, e in pending_events(st, writes=False) if q is not clq]
    _cl().read(clq, st.host, st.dev[ctx], wait_for=wait_for or None, blocking=True)
    st.valid.add(HOST)


def acquire_host(st: _Storage, writes: bool, no_init: bool = False) -> None:
    """Prepare ``st`` for host access (``host_accessor``, write-back, host copies)."""
    if writes:
        wait_all(st)
    else:
        if st.last_write is not None:
            _cl().wait([st.last_write[1]])
        if _bounds.watching:  # bounds-checked kernels that used st: report first
            _bounds.sync(storage=st)
    if not no_init:
        sync_to_host(st)
    if writes:
        st.valid = {HOST}


def _prepare_device(st: _Storage, ctx: Any, clq: Any, writes: bool, needs_data: bool,
                    wait_for: list[Any]) -> Any:
    """Allocate/copy ``st`` for a command on ``clq``; collect cross-queue deps."""
    lw = st.last_write
    if lw is not None and lw[0] is not clq:
        wait_for.append(lw[1])
    if writes and st.reads:
        for q, e in st.reads.items():
            if q is not clq:
                wait_for.append(e)
    key = ctx._handle
    buf = st.dev.get(key)
    if buf is None:
        buf = _cl().alloc(ctx._cl, st.nbytes)
        st.dev[key] = buf
    if needs_data and key not in st.valid and st.valid:
        if HOST not in st.valid:
            sync_to_host(st)
        _cl().write(clq, buf, st.host, wait_for=wait_for or None)
        st.valid.add(key)
    st.queue_of[key] = clq
    return buf


def _record(st: _Storage, key: int, clq: Any, ev: Any, writes: bool) -> None:
    if writes:
        st.last_write = (clq, ev)
        if st.reads:
            st.reads.clear()
        valid = st.valid
        if len(valid) != 1 or key not in valid:
            st.valid = {key}
    else:
        # In-order queues: the newest read event of a queue covers the older ones.
        st.reads[clq] = ev
        st.valid.add(key)


# -------------------------------------------------------------------- submit
def submit(q: Any, h: Any) -> event:
    """Execute the command group recorded in handler ``h`` on queue ``q``."""
    if q._clq is None:  # the host_debuggable device: the interpreter runs it
        from pysycl._backends.host import executor as _host_exec

        return _host_exec.submit(q, h)
    cmd = h._cmd
    ctx = q._ctx
    clq = q._clq
    launch = None
    if type(cmd) is KernelCommand:
        launch = _launcher().prepare(q, h, cmd)     # may compile; may raise: nothing moved yet
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
        return _host_task(q, h, cmd, wait_for)
    # Requirements: allocate, move data, collect cross-queue dependencies.
    reqs = h._reqs
    key = ctx._handle
    for acc in reqs:
        st = acc._buf._storage
        writes = acc._ktype.mode != "read"
        lw = st.last_write
        # Fast path: allocated here, current here (or not needed), and every
        # earlier command on it ran on this (in-order) queue: nothing to do.
        if (key in st.dev and (key in st.valid or acc._no_init or not st.valid)
                and (lw is None or lw[0] is clq)
                and (not writes or not st.reads or (len(st.reads) == 1 and clq in st.reads))
                and st.queue_of.get(key) is clq):
            continue
        _prepare_device(st, ctx, clq, writes, not acc._no_init, wait_for)
    match cmd:
        case KernelCommand():
            ev = launch(wait_for or None)  # type: ignore[misc]
        case FillCommand():
            ev = _fill(q, cmd, wait_for)
        case CopyCommand():
            ev = _copy(q, cmd, wait_for)
        case UpdateHostCommand(acc=acc):
            acquire_host(acc._buf._storage, writes=False)
            return event._make(q, None, deps=h._deps)
        case _:  # an empty command group: a barrier on its dependencies
            ev = _cl().marker(clq, wait_for=wait_for or None) if wait_for else None
            if ev is None:
                return event._make(q, None, deps=h._deps)
    for acc in reqs:
        _record(acc._buf._storage, key, clq, ev, acc._ktype.mode != "read")
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
        ev = _cl().fill(q._clq, buf, pattern, off * isz, n * isz, wait_for=wait_for or None)
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
    import itertools

    strides = [int(np.prod(mem[d + 1:])) for d in range(len(mem))]
    for outer in itertools.product(*(range(r) for r in rng[:-1])):
        off = base + sum(i * s for i, s in zip(outer, strides, strict=False))
        out.append((off, rng[-1]))
    return out


def _copy(q: Any, cmd: CopyCommand, wait_for: list[Any]) -> Any:
    src, dst = cmd.src, cmd.dest
    from pysycl._memory.accessor import accessor

    x = _cl()
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


def _host_task(q: Any, h: Any, cmd: HostTaskCommand, wait_for: list[Any]) -> event:
    fn = cmd.fn
    if wait_for:
        _cl().wait(wait_for)
    q.wait()  # in-order semantics for the queue's earlier commands
    for acc in h._reqs:
        acquire_host(acc._buf._storage, writes=acc._ktype.mode != "read", no_init=acc._no_init)
        acc._hostview = host_view(acc._buf)
    try:
        fn(*cmd.args)
    except Exception as e:
        q._async_errors.append(e)
    finally:
        for acc in h._reqs:
            acc._hostview = None
    return event._make(q, None, deps=h._deps)

"""Launch steps: what a launch does besides setting arguments and enqueuing (backend-neutral).

Written against the executor's memory methods (``alloc``, ``alloc_visible``,
``write``, ``read``, ``read_back``, ``status``), so every backend's launch uses them unchanged
(docs/design/launch.md §2.5). The decoding halves stay in :mod:`.bounds`
(violations, failed asserts) and :mod:`.kprint`/:mod:`.kstream` (output).

**PrintStep**: the output buffers of ``print`` and ``sycl.stream`` in kernels, fresh
per launch and read back behind it.

**BoundsStep**: the error buffer of a bounds-checked kernel or one with asserts
(layout in :mod:`pysycl._core.abi`). Each ``(kernel, context)`` has one persistent,
zeroed :class:`ErrorSlot`, bound as the kernel's last argument: the argument stays
set between launches, so a clean launch costs the append of its :class:`~.bounds.Watch`
to the slot. Where the device has memory the host sees with no copy
(``alloc_visible``: fine-grained SVM on OpenCL) the slot is read in place once its
launches completed; elsewhere one blocking read at the synchronization point. A slot
that reported is zeroed (or, with launches still running on it, replaced) only then.

Launches share a slot only when a failure of either would report the same thing -- the
same queue, submit site, buffers and accessor ranges (the launch's record,
:func:`pysycl._kernels.bounds.record`): the device records the first failing work-item
of all of them (``atomic_cmpxchg`` on the flag) and counts the failing work-items of
all of them, and the report names what they have in common. A launch with another
record takes another slot of its kernel (a free one, whose launches were all read, or
a new one), so a report never names a launch the failure did not come from.

:func:`settle` is the synchronization point's half: the executors' ``wait`` and
``event.wait`` call it when :data:`active` is not empty (one truth test on the hot path).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from pysycl._core.abi import ASSERT_FLAG_INT, BOUNDS_ERR_BYTES
from pysycl._core.exceptions import hidden_in_tracebacks
from pysycl._kernels import bounds as _bounds
from pysycl._kernels import kprint as _kprint

#: pytest leaves this module's frames out of a kernel's reported failure (a failed assert,
#: a bounds violation): the user's synchronizing line shows where it surfaced.
__tracebackhide__ = hidden_in_tracebacks

_ZEROS = np.zeros(BOUNDS_ERR_BYTES // 4, dtype=np.int32)
_MAX_LAUNCHES = 256  # launches of one slot kept before their completed ones are read
_lock = threading.Lock()


class MemoryExecutor(Protocol):
    """What the steps use of an executor (``pysycl._core.backends.Executor``)."""

    native: Any

    def alloc(self, nbytes: int) -> Any: ...
    def alloc_visible(self, nbytes: int) -> tuple[Any, Any, np.ndarray] | None: ...
    def write(self, mem: Any, host: np.ndarray, wait_for: Any) -> Any: ...
    def read(self, host: np.ndarray, mem: Any, wait_for: Any) -> None: ...
    def read_back(self, host: np.ndarray, mem: Any, after: Any) -> Any: ...
    def wait_event(self, native: Any) -> None: ...
    def status(self, native: Any) -> str: ...


class ErrorSlot:
    """The persistent error buffer of one kernel in one context.

    ``arg`` is the kernel argument (the same object at every launch, so the bound
    arguments compare equal and are not set again); ``host`` the int32 words the host
    reads; ``launches`` the ``(native event, record)`` of launches not inspected yet (a
    record holds its queue while it is pending; the slot holds no executor, so that
    contexts can go).
    """

    __slots__ = ("arg", "host", "launches", "listed", "mem", "owner", "reserved", "retired",
                 "visible", "words")

    def __init__(self, ex: MemoryExecutor) -> None:
        self.launches: list[tuple[Any, tuple[Any, ...]]] = []
        self.listed = False  # in :data:`active` (changed under the lock)
        self.owner: tuple[Any, ...] | None = None  # the record its launches report
        self.reserved = 0  # launches between error_slot and add (changed under the lock)
        self.retired: list[Any] = []  # memory replaced while launches still used it
        self._fresh(ex)

    def _fresh(self, ex: MemoryExecutor) -> None:
        """New zeroed memory (host-visible where the executor has it)."""
        vis = ex.alloc_visible(BOUNDS_ERR_BYTES)
        if vis is not None:
            self.mem, self.arg, raw = vis
            self.host = raw.view(np.int32)[:BOUNDS_ERR_BYTES // 4]
            self.host[:] = 0
            self.visible = True
        else:
            self.mem = self.arg = ex.alloc(BOUNDS_ERR_BYTES)
            ex.write(self.mem, _ZEROS, None)
            self.host = np.empty_like(_ZEROS)
            self.visible = False
        self.words = memoryview(self.host)  # its flags as Python ints, no numpy scalar

    def add(self, ev: Any, w: tuple[Any, ...]) -> None:
        """Record a launch that used this slot (``ev``: its native event; ``w``: what its
        failure reports, :func:`pysycl._kernels.bounds.record`)."""
        launches = self.launches
        with _lock:
            launches.append((ev, w))
            self.reserved -= 1
            if not self.listed:  # (settle unlists a slot before it looks at its launches)
                self.listed = True
                active.append(self)
            elif len(launches) > _MAX_LAUNCHES:  # long without synchronization: fewer events
                self._compress()

    def release(self) -> None:
        """A launch that took this slot (:func:`error_slot`) was not enqueued after all."""
        with _lock:
            self.reserved -= 1

    def _compress(self) -> None:
        """Keep the first launch (whose record a failure reports) and each queue's newest
        (on an in-order queue it completes after the others), not every native event."""
        launches = self.launches
        newest = {id(rec[0]): (ev, rec) for ev, rec in launches[1:]}
        launches[1:] = list(newest.values())

    def inspect(self, finished_queue: Any = None, waited: Any = None) -> list[_bounds.Watch] | None:
        """Read the slot if its launches completed: None while they run, else the
        launches that failed (the first of them, read; empty: all clean).

        ``finished_queue``: a native queue whose commands all completed; ``waited``: a
        native event that completed (with the commands before it on its in-order queue).
        """
        batch = self.launches[:]
        if not batch:
            return []
        done = None  # the executor of ``waited``: its earlier launches completed too
        for ev, w in reversed(batch):
            ex = w[0].executor
            if ex is done or (ex.native is finished_queue and finished_queue is not None):
                continue
            if ev is waited:
                done = ex
                continue
            try:
                if ex.status(ev) != "complete":
                    return None
            except Exception:  # a launch failed (the wait that sees it raises that): its
                del self.launches[:len(batch)]  # slot's words mean nothing, start again
                self._clear(batch[-1][1][0].executor)
                return []
        ex = batch[-1][1][0].executor
        if not self.visible:
            ex.read(self.host, self.mem, None)
        words = self.words
        failed = words[0] or words[ASSERT_FLAG_INT]
        del self.launches[:len(batch)]
        if not failed:
            if self.retired:
                self.retired.clear()
            return []
        w = _bounds.Watch(batch[0][1], self.host.copy())
        self._clear(ex)
        return [w]

    def _clear(self, ex: MemoryExecutor) -> None:
        """Zero the slot after it reported (``ex``: an executor of its context)."""
        if self.launches:  # launches started after the check use the memory: replace it
            self.retired.append(self.mem)
            self._fresh(ex)
        elif self.visible:
            self.host[:] = 0
        else:
            ex.write(self.mem, _ZEROS, None)


class PrintStep:
    """The output buffers of a kernel that calls ``print`` or writes a ``sycl.stream``:
    fresh ones per launch (:meth:`before`), read back behind it (:meth:`after`) and
    written to ``sys.stdout`` at the next synchronization point (:func:`settle`)."""

    __slots__ = ("ex", "name", "where")

    def __init__(self, ex: MemoryExecutor, name: str, where: str) -> None:
        self.ex, self.name, self.where = ex, name, where

    def before(self, values: list[Any]) -> tuple[list[Any], list[tuple[np.ndarray, Any, Any]]]:
        """``values`` with the print slot and each ``sycl.stream`` replaced by a fresh
        buffer (one per object: the kernel and its helpers capture them separately), and
        the launch's outputs ``(host words, buffer, render)``."""
        ex = self.ex
        bound: list[Any] = []
        outs: list[tuple[np.ndarray, Any, Any]] = []
        seen: dict[int, Any] = {}
        for v in values:
            if id(v) in seen:
                bound.append(seen[id(v)])
                continue
            out = _kprint.output_of(v, self.name, self.where)
            if out is None:
                bound.append(v)
                continue
            host, render = out
            buf = ex.alloc(host.nbytes)
            ex.write(buf, host[:_kprint.PRINT_HEADER_WORDS], None)
            bound.append(buf)
            seen[id(v)] = buf
            outs.append((host, buf, render))
        return bound, outs

    def after(self, ev: Any, outs: list[tuple[np.ndarray, Any, Any]]) -> None:
        """Read the buffers back behind the launch (``ev``); their text waits for a
        synchronization point."""
        ex = self.ex
        _kprint.add_pending(ex, ev, [(ex.read_back(host, buf, ev), host, render)
                                     for host, buf, render in outs])


#: Slots with launches not inspected yet (empty: nothing to do at a synchronization point).
active: list[ErrorSlot] = []
#: (kernel id, context key) -> (the kernel, its slots).
_slots: dict[tuple[int, Any], tuple[Any, list[ErrorSlot]]] = {}


def error_slot(ex: MemoryExecutor, kernel: Any, context_key: Any,
               record: tuple[Any, ...]) -> ErrorSlot:
    """A persistent error slot of ``kernel`` in the context of ``ex`` for a launch whose
    failure reports ``record``: the slot of the launches with the same record, else a free
    one (no launch unread or about to be added), else a new one. The launch then calls
    the slot's :meth:`~ErrorSlot.add` (or :meth:`~ErrorSlot.release` if it was not
    enqueued)."""
    key = (id(kernel), context_key)
    with _lock:
        got = _slots.get(key)
        if got is None or got[0] is not kernel:
            got = _slots[key] = (kernel, [])
        free = None
        for slot in got[1]:
            if slot.owner == record:
                break
            if free is None and not slot.launches and not slot.reserved:
                free = slot
        else:
            if free is None:
                free = ErrorSlot(ex)
                got[1].append(free)
            slot = free
            slot.owner = record
        slot.reserved += 1
    return slot


def enqueue_checked(ex: MemoryExecutor, kernel: Any, context_key: Any, record: tuple[Any, ...],
                    args: list[Any], enqueue: Callable[[list[Any]], Any]) -> Any:
    """``enqueue(args)`` of a launch of ``kernel`` with its error slot as the last argument:
    the slot is released if the launch was not enqueued, else it records the launch's event
    and what its failure reports (``record``). The launch's native event."""
    slot = error_slot(ex, kernel, context_key, record)
    args.append(slot.arg)
    try:
        ev = enqueue(args)
    except BaseException:
        slot.release()
        raise
    slot.add(ev, record)
    return ev


def forget_context(key: Any) -> None:
    """Context ``key`` is gone: its kernels' slots go too."""
    for k in [k for k in _slots if k[1] == key]:
        del _slots[k]


def settle(finished_queue: Any = None, storage: Any = None, waited: Any = None) -> None:
    """A synchronization point: print output, then report the first failed launch.

    Args:
        finished_queue: a native queue known to be finished (``queue.wait``), or None.
        storage: a buffer's storage whose data the host is about to see: only launches
            that used it report here.
        waited: a native event just waited for (``event.wait``).
    """
    if _kprint.pending:
        _kprint.flush()
    if active:
        bad: list[_bounds.Watch] = []
        with _lock:
            keep = []
            for slot in active:
                got = slot.inspect(finished_queue, waited)
                slot.listed = False  # before the test: an add from now on lists it again
                if got is None or slot.launches:
                    slot.listed = True
                    keep.append(slot)
                if got:
                    bad.extend(got)
            active[:] = keep
        if bad:  # reported by the sync below, or kept for a later synchronization point
            _bounds.keep_failed(bad)
    if _bounds.watching:
        _bounds.sync(storage)

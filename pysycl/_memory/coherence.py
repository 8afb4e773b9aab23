"""Where a buffer's current data is: the one class that owns the coherence state.

A root buffer and its sub-buffers share one :class:`Coherence`. It knows the
host copy, one device allocation per context, which copies are current
(``valid``), and the commands still using the data (the last writer and, per
executor, the newest reader). Executors (``pysycl._backends``) ask it to
prepare a device copy before a command and record the command afterwards;
host access (host accessors, write-back) asks it to bring the host copy up to
date. It reaches devices only through the executor that made each copy
(``Executor.alloc/read/write/free/wait_events`` of :mod:`pysycl._core.backends`), so
this module knows no backend.

Contexts: a command waits for commands of its own context through its wait list,
for commands of another context on the host (``Executor.wait_events``): a native
event of one context is never put in another context's wait list -- unless both
executors name the same ``event_domain`` (CUDA: any stream waits for any event of the
process). Data moves between two copies (two contexts, or two devices of one context)
through the host copy (read back from the copy holding the current data, then written
into the other), as between the host and a device -- or directly where the executor
can take it from the other's memory (``Executor.copy_from``: CUDA GPUs with peer
access). :data:`moves` counts the bytes of each way.
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

import numpy as np

from pysycl._core.exceptions import errc, exception, hidden_in_tracebacks

if TYPE_CHECKING:
    from pysycl._core.backends import Executor

#: pytest leaves this module's frames out of a kernel's reported failure (a failed assert,
#: a bounds violation): the user's synchronizing line shows where it surfaced.
__tracebackhide__ = hidden_in_tracebacks

#: The key of the host copy in ``Coherence.valid`` (device copies are keyed by their
#: executors' ``key``: the context's, or (context, device) in a context of several devices).
HOST = "host"


#: Bytes of device copies brought up to date from another device copy (another context,
#: or another device of the context): ``"direct"`` device to device
#: (``Executor.copy_from``), ``"through_host"`` read back into the host copy and written
#: from there
moves: dict[str, int] = {"direct": 0, "through_host": 0}


def _order(dep: Executor, ev: Any, ex: Executor, wait_for: list[Any]) -> None:
    """Order a command of executor ``ex`` after event ``ev`` of executor ``dep``.

    In the same context (equal keys) the event goes in the command's wait list, and
    between executors of one ``event_domain`` (CUDA); an event of another context
    cannot (OpenCL: ``CL_INVALID_CONTEXT``), so the host waits for it instead.
    """
    if dep.key == ex.key:
        wait_for.append(ev)
        return
    domain = getattr(ex, "event_domain", None)
    if domain is not None and getattr(dep, "event_domain", None) == domain:
        wait_for.append(ev)
    else:
        dep.wait_events((ev,))


class Coherence:
    """State shared by a root buffer and its sub-buffers."""

    __slots__ = (
        "_host", "closed", "dev", "dtype", "final", "host_accessors", "last_write", "nbytes",
        "origin", "queue_of", "reads", "size", "user", "valid", "write_back",
    )

    def __init__(self, host: np.ndarray | None, user: np.ndarray | list[Any] | None, write_back: bool,
                 dtype: np.dtype | None = None, size: int = 0) -> None:
        self._host = host           # flat, contiguous host copy (allocated lazily if None)
        self.user = user            # where write-back goes, if not `host` itself
        self.dtype: np.dtype = host.dtype if host is not None else dtype  # type: ignore[assignment]
        self.size = host.size if host is not None else size
        self.nbytes = self.size * self.dtype.itemsize
        self.write_back = write_back
        self.origin = write_back    # built from writable host data: write-back is possible
        self.final: np.ndarray | None = None  # set_final_data target
        self.dev: dict[Hashable, Any] = {}   # copy key -> the backend's memory object
        self.queue_of: dict[Hashable, Executor] = {}  # copy key -> the last executor using it
        self.valid: set[Hashable] = set()   # {HOST, copy key, ...}
        self.last_write: tuple[Executor, Any] | None = None  # (executor, native event)
        self.reads: dict[Executor, Any] = {}  # executor -> its newest reading event since the write
        self.host_accessors = 0
        self.closed: str | None = None  # where the root buffer was closed (written back)

    @property
    def host(self) -> np.ndarray:
        """The host copy; a ``buffer(range)`` allocates it on first host use."""
        if self._host is None:
            try:
                self._host = np.empty(self.size, dtype=self.dtype)
            except MemoryError as e:
                raise exception(errc.memory_allocation, f"cannot allocate {self.nbytes} bytes "
                                "of host memory for a buffer") from e
        return self._host

    # ------------------------------------------------------------ host side
    def _wait(self, writes: bool) -> None:
        """Block until the commands a new access would depend on (:meth:`pending`) completed."""
        for ex, ev in self.pending(writes):
            ex.wait_events((ev,))

    def wait_all(self) -> None:
        """Block until every command using the data has completed."""
        self._wait(writes=True)
        self.reads.clear()
        self.last_write = None
        self._before_host_sees()

    def _before_host_sees(self) -> None:
        """The host is about to see the data: the executors that used it report what their
        launches left for this point (``Executor.before_host_sees``: kernel output,
        failed asserts, bounds violations)."""
        for ex in self.queue_of.values():
            ex.before_host_sees(self)

    def sync_to_host(self) -> None:
        """Make the host copy current (a blocking read from a device holding the data)."""
        valid = self.valid
        if HOST in valid or not valid:
            if not valid:
                valid.add(HOST)  # never initialized: the host copy is as good as any
            return
        key = next(iter(valid))  # a context key
        ex = self.queue_of[key]
        wait_for: list[Any] = []
        for q, e in self.pending(writes=False):
            if q is not ex:
                _order(q, e, ex, wait_for)
        ex.read(self.host, self.dev[key], wait_for or None)
        valid.add(HOST)

    def acquire_host(self, writes: bool, no_init: bool = False) -> None:
        """Prepare for host access (``host_accessor``, write-back, host tasks)."""
        if writes:
            self.wait_all()
        else:
            self._wait(writes=False)  # the last writer
            self._before_host_sees()
        if not no_init:
            self.sync_to_host()
        if writes:
            self.valid = {HOST}

    # ---------------------------------------------------------- device side
    def pending(self, writes: bool) -> list[tuple[Executor, Any]]:
        """(executor, native event) pairs a new access must wait for."""
        deps = [] if self.last_write is None else [self.last_write]
        if writes:
            deps.extend(self.reads.items())
        return deps

    def is_ready(self, key: Hashable, ex: Executor, writes: bool, needs_data: bool) -> bool:
        """Nothing to do for a command of executor ``ex`` (context ``key``).

        True when the copy is allocated there, current there (or not needed),
        and every earlier command on the data ran on ``ex`` (an in-order queue).
        """
        lw = self.last_write
        reads = self.reads
        return (key in self.dev and (key in self.valid or not needs_data or not self.valid)
                and (lw is None or lw[0] is ex)
                and (not writes or not reads or (len(reads) == 1 and ex in reads))
                and self.queue_of.get(key) is ex)

    def prepare_device(self, key: Hashable, ex: Executor, writes: bool, needs_data: bool,
                       wait_for: list[Any]) -> Any:
        """Allocate and update the copy of context ``key`` for a command of ``ex``.

        Appends the events of other executors of the same context the command must
        wait for to ``wait_for`` and waits for those of other contexts on the host;
        returns the device memory object. Data current only in another context
        comes from it directly where ``ex`` can take it (``copy_from``), else through
        the host copy. The upload is the copy's last write, so that other queues of the
        context wait for it too.
        """
        lw = self.last_write
        if lw is not None and lw[0] is not ex:
            _order(lw[0], lw[1], ex, wait_for)
        if writes and self.reads:
            for q, e in list(self.reads.items()):
                if q is not ex:
                    _order(q, e, ex, wait_for)
        mem = self.dev.get(key)
        if mem is None:
            mem = self.dev[key] = ex.alloc(self.nbytes)
        valid = self.valid
        if needs_data and key not in valid and valid:
            ev = None if HOST in valid else self._copy_direct(ex, mem, wait_for)
            if ev is None:
                if HOST not in valid:
                    self.sync_to_host()
                    moves["through_host"] += self.nbytes
                ev = ex.write(mem, self.host, wait_for or None)
            self.last_write = (ex, ev)
            self.valid.add(key)
        self.queue_of[key] = ex
        return mem

    def _copy_direct(self, ex: Executor, mem: Any, wait_for: list[Any]) -> Any:
        """Bring ``mem`` (``ex``'s copy) up to date from a current device copy without the
        host, where ``ex`` can (``copy_from``): its native event, or None."""
        copy_from = getattr(ex, "copy_from", None)
        if copy_from is None:
            return None
        for key in self.valid:
            src = self.queue_of.get(key)
            if src is None or key not in self.dev:
                continue
            ev = copy_from(mem, src, self.dev[key], self.nbytes, wait_for or None)
            if ev is not None:
                moves["direct"] += self.nbytes
                return ev
        return None

    def record(self, key: Hashable, ex: Executor, ev: Any, writes: bool) -> None:
        """A command of ``ex`` (context ``key``) finishing with event ``ev`` used the data.

        The events it replaces are not dropped here but held by ``ex`` until ``ev``
        completes (its ``inflight`` deque): a host-to-device copy's event is a pyopencl
        ``NannyEvent``, whose destructor waits for the copy -- which the driver may finish
        only with the kernel behind it, so dropping it made a submit wait for its kernel.
        """
        old = self.replace(key, ex, ev, writes)
        if ev is not None and old is not None:
            inflight = getattr(ex, "inflight", None)
            if isinstance(inflight, deque):
                inflight.append((ev, old))

    def replace(self, key: Hashable, ex: Executor, ev: Any, writes: bool) -> Any:
        """:meth:`record` but the hold: the events ``ev`` replaces (None if none), for the
        caller to hold until ``ev`` completes (a command group's submit holds those of all
        its accessors in one ``inflight`` entry)."""
        if writes:
            old: Any = ((self.last_write, self.reads.copy() if self.reads else None)
                        if self.last_write is not None or self.reads else None)
            self.last_write = (ex, ev)
            if self.reads:
                self.reads.clear()
            valid = self.valid
            if len(valid) != 1 or key not in valid:
                self.valid = {key}
            return old
        # In-order queues: the newest read event of an executor covers the older ones.
        old = self.reads.get(ex)
        self.reads[ex] = ev
        self.valid.add(key)
        return old

    def record_done(self, key: int, writes: bool) -> None:
        """Work of context ``key`` that has already completed used the data: the native
        work of a host task through an ``interop_handle`` (its executor waited for it, and
        :meth:`prepare_device` made it wait for every earlier command on the data). After
        a write, the copy of context ``key`` is the only current one."""
        if writes:
            self.last_write = None
            self.reads.clear()
            self.valid = {key}
        else:
            self.valid.add(key)

    # ------------------------------------------------------------ lifetime
    def release_device(self, force: bool = False) -> None:
        """Free the device copies (the root buffer was closed, or this state is going).

        Unless ``force``, only when they hold nothing the host copy lacks (after a
        write-back); a closed buffer without write-back whose data is only on a
        device keeps it until its last reference goes (:meth:`__del__`). Each
        copy goes back through the executor that used it last
        (``Executor.free``: the OpenCL backend also forgets it in the arguments
        its kernels remember, which must never keep memory alive).
        """
        dev = self.dev
        if not dev or (not force and self.valid and HOST not in self.valid):
            return
        for key, mem in list(dev.items()):
            ex = self.queue_of.get(key)  # None: allocated, but no command got to use it
            if ex is not None:
                ex.free(mem)
        dev.clear()
        self.queue_of.clear()
        self.valid &= {HOST}
        self.last_write = None
        self.reads.clear()

    def __del__(self) -> None:
        if self.dev and not sys.is_finalizing():
            self.release_device(force=True)

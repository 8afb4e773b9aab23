"""``sycl::event`` (SYCL 2020 §4.6.6)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from pysycl import property as _prop
from pysycl._core.backend import backend
from pysycl._core.exceptions import errc, exception, hidden_in_tracebacks
from pysycl._kernels import bounds as _bounds
from pysycl._kernels import kprint as _kprint
from pysycl._kernels import steps as _steps
from pysycl._objects.display import Rows, table
from pysycl._objects.info import info

if TYPE_CHECKING:
    from pysycl._commands.refs import QueueLike
    from pysycl._core.backends import Executor
    from pysycl._objects.info import _event_info, _event_profiling, event_command_status

#: pytest leaves this module's frames out of a kernel's reported failure (a failed assert,
#: a bounds violation): the user's synchronizing line shows where it surfaced.
__tracebackhide__ = hidden_in_tracebacks


class event:  # noqa: N801 - the spec's spelling
    """The status of one submitted command group.

    ``event()`` is an already-complete event. Events from queues built with
    ``sycl.property.queue.enable_profiling()`` answer ``get_profiling_info``.
    """

    __slots__ = ("_cl", "_deps", "_exec", "_first", "_queue")

    def __init__(self) -> None:
        self._cl: Any = None     # the command's last native event (None: done on the host)
        self._first: Any = None  # its first native event (for command_start)
        self._queue: QueueLike | None = None    # the pysycl.queue that made it
        # what waits for and reports on ``_cl`` (the queue's executor; a backend's native
        # event operations for an interop event)
        self._exec: Executor | None = None
        self._deps: tuple[event, ...] = ()

    @classmethod
    def _make(cls, q: QueueLike | None, cl_event: Any, first: Any = None,
              deps: Sequence[event] = (), ops: Executor | None = None) -> event:
        """An event of queue ``q`` for its executor's native event ``cl_event`` (None: done
        on the host) -- or, with ``q`` None, of the native-event operations ``ops`` (the
        event half of an ``Executor``: ``wait_event``, ``status``, ``profile``)."""
        self = cls.__new__(cls)
        self._cl = cl_event
        self._first = first if first is not None else cl_event
        self._queue = q
        self._exec = q.executor if q is not None else ops
        self._deps = deps if type(deps) is tuple else tuple(deps)
        return self

    def wait(self) -> None:
        """Block until the command has completed (``event::wait``)."""
        cl_ev = self._cl
        if cl_ev is not None:
            self._exec.wait_event(cl_ev)
            if _steps.active or _kprint.pending or _bounds.watching:
                _steps.settle(waited=cl_ev)  # launch steps: output, failed asserts, violations

    def wait_and_throw(self) -> None:
        """Wait, then hand any asynchronous errors to the queue's async_handler."""
        self.wait()
        if self._queue is not None:
            self._queue.throw_asynchronous()

    @staticmethod
    def wait_all(events: Iterable[event]) -> None:
        """Wait for every event (the spec's static ``event::wait(std::vector<event>)``)."""
        for e in events:
            e.wait()

    @staticmethod
    def wait_and_throw_all(events: Iterable[event]) -> None:
        """Static ``event::wait_and_throw`` over a list."""
        for e in events:
            e.wait_and_throw()

    @property
    def native(self) -> Any:
        """The backend's event of the command's last operation (None: complete on the host)."""
        return self._cl

    @property
    def queue(self) -> QueueLike | None:
        """The queue that made the event (None for ``event()`` and ``make_event``)."""
        return self._queue

    def get_wait_list(self) -> list[event]:
        """Events this command depended on explicitly (``depends_on``)."""
        return list(self._deps)

    def get_backend(self) -> backend:
        """The backend of the queue that made the event (OpenCL for ``event()``)."""
        return self._queue.get_backend() if self._queue is not None else backend.opencl

    def get_info(self, param: _event_info) -> event_command_status | int:
        """``info::event::command_execution_status`` (or ``reference_count``)."""
        from pysycl._objects.info import info as _info

        if param is _info.event.command_execution_status:
            if self._cl is None:
                return _info.event_command_status.complete
            return getattr(_info.event_command_status, self._exec.status(self._cl))
        if getattr(_info.event, "reference_count", None) is param:
            return 1 if self._cl is None else int(self._cl.reference_count)
        raise exception(errc.invalid, f"{param!r} is not an info::event descriptor")

    def get_profiling_info(self, param: _event_profiling) -> int:
        """Nanosecond timestamps: ``info.event_profiling.command_submit/start/end``.

        Raises:
            pysycl.exception: ``errc.invalid`` if the queue was not built with
                ``property.queue.enable_profiling`` (§4.6.6).
        """
        from pysycl._objects.info import info as _info

        q = self._queue
        if q is None or not q.has_property(_prop.queue.enable_profiling):
            raise exception(errc.invalid, "get_profiling_info needs a queue constructed with "
                            "properties=[sycl.property.queue.enable_profiling()]")
        if self._cl is None:
            raise exception(errc.invalid, "this command ran on the host and has no device "
                            "profiling information")
        self.wait()
        profile = self._exec.profile
        if param is _info.event_profiling.command_submit:
            return profile(self._first, "submit")
        if param is _info.event_profiling.command_start:
            return profile(self._first, "start")
        if param is _info.event_profiling.command_end:
            return profile(self._cl, "end")
        raise exception(errc.invalid, f"{param!r} is not an info::event_profiling descriptor")

    def __eq__(self, other: object) -> bool:
        if isinstance(other, event):
            return self is other or (self._cl is not None and self._cl == other._cl)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._cl) if self._cl is not None else id(self)

    def _repr_html_(self) -> str:
        """The status, and profiling times when the queue profiles."""
        try:
            status = self.get_info(info.event.command_execution_status).name
        except exception as e:
            status = f"failed ({e.what()})"
        rows: Rows = [("status", status)]
        q = self._queue
        profiled = q is not None and q.has_property(_prop.queue.enable_profiling)
        if profiled and self._cl is not None and status == "complete":
            p = info.event_profiling
            start = self.get_profiling_info(p.command_start)
            end = self.get_profiling_info(p.command_end)
            submit = self.get_profiling_info(p.command_submit)
            rows += [("queued → start", f"{(start - submit) / 1e3:.1f} µs"),
                     ("duration", f"{(end - start) / 1e3:.1f} µs")]
        return table(rows, title="sycl.event")

    def __repr__(self) -> str:
        return "sycl.event(complete)" if self._cl is None else f"sycl.event({self._cl!r})"


def waits_of(deps: Sequence[event], q: QueueLike) -> list[tuple[Any, Executor]]:
    """``Submission.waits`` of a command of queue ``q`` that follows events ``deps``: each
    one's ``(native event, executor)``, leaving out events done on the host and ``q``'s own
    (its executor runs them in order). A loop, not a comprehension: one frame less."""
    out = []
    for e in deps:
        native = e._cl
        if native is not None and e._queue is not q:
            out.append((native, e._exec))
    return out  # type: ignore[return-value]

"""``handler.host_task`` and ``sycl::interop_handle`` (SYCL 2020 §4.10), on any backend.

A host task runs on the host once its dependencies are met. One that takes a
parameter gets an :class:`interop_handle`: the queue's native queue, context and
device, and, for each device accessor of its command group, the native memory
object of the queue's context holding the buffer's current data. What native code
writes there through a write accessor is the buffer's current data afterwards.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from pysycl._core import backends as _backends
from pysycl._core.backend import backend as _backend
from pysycl._core.exceptions import errc, exception
from pysycl._memory.accessor import accessor, host_view, target

if TYPE_CHECKING:
    from pysycl._commands.commands import HostTaskCommand
    from pysycl._commands.refs import QueueLike

_REQUIRED = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def takes_interop_handle(fn: Callable[..., Any]) -> bool:
    """Whether host task ``fn`` takes an ``interop_handle`` (one required parameter) or
    nothing (no required parameter: ``lambda k=k: ...`` stays nullary); TypeError else."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # no signature (a builtin): called without arguments
        return False
    required = [p for p in params if p.default is p.empty
                and (p.kind in _REQUIRED or p.kind is inspect.Parameter.KEYWORD_ONLY)]
    if len(required) > 1 or any(p.kind is inspect.Parameter.KEYWORD_ONLY for p in required):
        raise TypeError(f"host_task: {getattr(fn, '__qualname__', fn)} requires the parameters "
                        f"{[p.name for p in required]}; a host task takes no parameter, or one "
                        "positional parameter: the sycl.interop_handle (SYCL 2020 §4.10)")
    return len(required) == 1


class interop_handle:  # noqa: N801 - the spec's spelling
    """``sycl::interop_handle`` (SYCL 2020 §4.10.2): what a host task taking one parameter
    gets, valid while the task runs.

    C++'s template parameter ``Backend`` is the keyword ``backend=`` (default
    ``sycl.backend.opencl``); a backend other than the queue's raises
    ``errc.backend_mismatch``. On the OpenCL backend the native objects are
    pyopencl's: ``get_native_queue()`` → ``CommandQueue`` (the queue's own in-order
    queue), ``get_native_context()`` → ``Context``, ``get_native_device()`` →
    ``Device``, ``get_native_mem(acc)`` → ``[Buffer]`` (``std::vector<cl_mem>`` in the
    backend appendix: one memory object, of the queue's context, holding the whole
    root buffer's current data). The host_debuggable backend has no native objects.
    """

    __slots__ = ("_live", "_mems", "_queue", "_reqs")

    def __init__(self, q: QueueLike, mems: dict[accessor, Any] | None, reqs: Sequence[accessor]) -> None:
        self._queue = q
        self._mems = mems  # device accessor -> native memory; None: the backend has none
        self._reqs = reqs
        self._live = True

    def get_backend(self) -> _backend:
        """The backend of the host task's queue."""
        return self._queue.get_backend()

    def _check(self, be: object, what: str) -> None:
        if not isinstance(be, _backend):
            raise TypeError(f"interop_handle.{what}: backend must be a sycl.backend, not {be!r}")
        if not self._live:
            raise exception(errc.invalid, f"interop_handle.{what}: the handle is valid only "
                            "while its host task runs (SYCL 2020 §4.10.2)")
        own = self._queue.get_backend()
        if be is not own:
            raise exception(errc.backend_mismatch, f"interop_handle.{what}: the host task's "
                            f"queue belongs to {own!r}, not {be!r}")

    def get_native_queue(self, backend: _backend = _backend.opencl) -> Any:
        """The native queue of the host task's queue (in order: work enqueued on it
        runs after the data was made ready, and pysycl waits for it after the task)."""
        self._check(backend, "get_native_queue")
        return self._queue.executor.native

    def get_native_context(self, backend: _backend = _backend.opencl) -> Any:
        """The native context of the host task's queue."""
        self._check(backend, "get_native_context")
        ctx = self._queue.get_context()
        native = getattr(_backends.get(backend), "interop", None)  # CUDA: the CUcontext
        return ctx.native if native is None else native.get_native(ctx, backend)

    def get_native_device(self, backend: _backend = _backend.opencl) -> Any:
        """The native device of the host task's queue."""
        self._check(backend, "get_native_device")
        return self._queue.get_device().native

    def get_native_mem(self, acc: accessor, backend: _backend = _backend.opencl) -> list[Any]:
        """The native memory of device accessor ``acc``'s buffer in the queue's context,
        as a list (the backend's ``std::vector<cl_mem>``), holding the current data.

        Raises:
            exception: ``errc.backend_mismatch`` for another backend (and on a backend
                without native memory); ``errc.invalid`` when ``acc`` is not a
                ``target.device`` accessor of the host task's command group.
        """
        self._check(backend, "get_native_mem")
        if self._mems is None:
            raise exception(errc.backend_mismatch, f"interop_handle.get_native_mem: "
                            f"{self.get_backend()!r} has no native memory objects")
        mem = self._mems.get(acc) if isinstance(acc, accessor) else None
        if mem is None:
            why = ("a target.host_task accessor, whose data is on the host (index it)"
                   if any(a is acc for a in self._reqs) else
                   "not an accessor registered with the host task's command group")
            raise exception(errc.invalid, f"interop_handle.get_native_mem: {acc!r} is {why}; "
                            "pass a target.device accessor of this command group "
                            "(SYCL 2020 §4.10.2)")
        typed = getattr(self._queue.executor, "native_mem", None)  # CUDA: a CUdeviceptr
        return [typed(mem) if typed is not None else mem]

    def __repr__(self) -> str:
        return f"sycl.interop_handle(backend={self.get_backend()!r})"


def run_host_task(q: QueueLike, reqs: Sequence[accessor], cmd: HostTaskCommand,
                  native_memory: bool = False) -> None:
    """Run ``cmd`` of a command group requiring ``reqs`` once the queue's earlier commands are
    done (the caller waited for the rest); it is complete when this returns.

    Its accessors see the host copies, except the device accessors of a task taking an
    ``interop_handle`` on a backend with native memory (``native_memory``): those get
    the native memory of the queue's context, made current before the task runs. An
    exception is an asynchronous error of ``q``.
    """
    q.wait()  # in-order semantics for the queue's earlier commands
    mems = _native_memory(q, reqs) if cmd.interop and native_memory else None
    for acc in reqs:
        if mems is None or acc.target is target.host_task:
            acc.coherence.acquire_host(writes=acc.writes, no_init=acc.no_init)
            acc.host_view = host_view(acc.buffer)
    ih = interop_handle(q, mems, reqs) if cmd.interop else None
    try:
        if ih is None:
            cmd.fn()
        else:
            cmd.fn(ih)
    except Exception as e:
        q.add_async_error(e)
    finally:
        for acc in reqs:
            acc.host_view = None
        if ih is not None:
            ih._live = False
        if mems is not None:
            _native_done(q, mems)


def _native_memory(q: QueueLike, reqs: Sequence[accessor]) -> dict[accessor, Any]:
    """The native memory of each device accessor in ``q``'s context, holding the current
    data once this returns (uploads and other queues' commands on it completed)."""
    ex = q.executor
    key = ex.key  # per device in a context of several devices
    mems: dict[accessor, Any] = {}
    wait_for: list[Any] = []
    for acc in reqs:
        if acc.target is not target.host_task:
            mems[acc] = acc.coherence.prepare_device(key, ex, acc.writes, not acc.no_init,
                                                     wait_for)
    if wait_for:
        ex.wait_events(wait_for)
    ex.wait()  # the uploads: native code may read the memory from any queue, or the host
    return mems


def _native_done(q: QueueLike, mems: dict[accessor, Any]) -> None:
    """After the task: its native work on the queue completed; what it wrote through a
    write accessor is the current data (the host copy and other contexts' are stale)."""
    ex = q.executor
    ex.wait()  # work the task enqueued on get_native_queue() (the spec leaves it to the task)
    key = ex.key
    for acc in mems:
        acc.coherence.record_done(key, acc.writes)

"""``sycl::queue`` (SYCL 2020 §4.6.5)."""

from __future__ import annotations

import atexit
import logging
import sys
import warnings
import weakref
from collections.abc import Callable, Iterable, Sequence
from types import FunctionType
from typing import TYPE_CHECKING, Any

from pysycl import property as _prop
from pysycl._commands.event import event, waits_of
from pysycl._commands.handler import handler
from pysycl._commands.recording import RecordingExecutor, queue_state
from pysycl._core import backends as _backends
from pysycl._core.exceptions import (
    COMPILE_ERRORS,
    DeviceWarning,
    errc,
    exception,
    exception_list,
    hidden_in_tracebacks,
    user_frames,
)
from pysycl._core.sites import user_stacklevel
from pysycl._kernels.reduction import reduction as _reduction
from pysycl._memory.buffer import write_back_at_exit
from pysycl._memory.usm_api import track_executor
from pysycl._objects.discovery import no_python_kernels_note
from pysycl._objects.display import table
from pysycl._objects.info import info
from pysycl._objects.range import nd_range as _nd_range
from pysycl._objects.range import range as _range

_new_event = object.__new__

if TYPE_CHECKING:
    import numpy as np

    from pysycl._core.backend import backend
    from pysycl._core.backends import Executor
    from pysycl._memory.accessor import accessor
    from pysycl._objects.context import context
    from pysycl._objects.device import device
    from pysycl._objects.info import _queue_info
    from pysycl._objects.range import nd_range
    from pysycl._objects.range import range as range_
    from pysycl._objects.selector import Selector
    from pysycl.property import P

#: pytest leaves this module's frames out of a kernel's reported failure (a failed assert,
#: a bounds violation): the user's synchronizing line shows where it surfaced.
__tracebackhide__ = hidden_in_tracebacks


_log = logging.getLogger("pysycl.queue")


def _default_async_handler(errors: exception_list) -> None:
    # SYCL leaves the default handler implementation-defined (DPC++ terminates).
    # A Python program is better served by an exception at the synchronization point.
    errs = list(errors)
    if not errs:
        return
    first = errs[0]
    if isinstance(first, exception):
        raise first
    raise exception(errc.runtime, f"asynchronous error in a host_task: {first!r}") from first


class queue:  # noqa: N801 - the spec's spelling
    """A queue of command groups for one device.

    Constructors (SYCL 2020 Table 28), one Python signature::

        sycl.queue()                                  # default_selector_v
        sycl.queue(selector_or_device)
        sycl.queue(selector_or_device, async_handler)
        sycl.queue(context, selector_or_device[, async_handler])
        sycl.queue(async_handler=handler, properties=[...])

    Deviation from C++: the ``queue(asyncHandler)`` overload is spelled with the
    keyword ``async_handler=`` because a selector and an async handler are both
    Python callables.

    Args:
        properties: ``sycl.property.queue.enable_profiling()``, ``sycl.property.queue.in_order()``.
    """

    # ``executor``: the backend's executor of this queue (``pysycl._core.backends.Executor``;
    # pysycl's own), a plain slot: the submit path reads it on every command group.
    __slots__ = ("__weakref__", "_async_errors", "_async_handler", "_ctx", "_dev",
                 "_in_order", "_profiling", "_props", "executor")

    def __init__(self, *args: Any, async_handler: Callable[[exception_list], None] | None = None,
                 properties: Iterable[_prop._Property] = ()) -> None:
        from pysycl._objects.context import context, default_context_for
        from pysycl._objects.device import device
        from pysycl._objects.selector import default_selector_v, select_device

        args_l = list(args)
        ctx = None
        if args_l and isinstance(args_l[0], context):
            ctx = args_l.pop(0)
        target: device | Selector | None = args_l.pop(0) if args_l else None
        if args_l:
            if async_handler is not None:
                raise TypeError("async_handler given twice")
            async_handler = args_l.pop(0)
        if args_l:
            raise TypeError(f"sycl.queue: unexpected arguments {args_l!r}")
        if isinstance(async_handler, (_prop._Property, list, tuple)):
            raise TypeError("sycl.queue: properties are a keyword argument, "
                            "sycl.queue(dev, properties=[sycl.property.queue.in_order()])")
        if async_handler is not None and not callable(async_handler):
            raise TypeError("async_handler must be callable")
        if target is None:
            dev = ctx.get_devices()[0] if ctx is not None and len(ctx.get_devices()) == 1 \
                else device()
            if ctx is not None and dev not in ctx.get_devices():
                dev = select_device(default_selector_v, ctx.get_devices())
        elif isinstance(target, device):
            dev = target
        elif callable(target):
            if ctx is not None:
                dev = select_device(target, ctx.get_devices())
            else:
                dev = device(target)
        else:
            raise TypeError(f"sycl.queue: expected a device, a selector or a context, got "
                            f"{type(target).__name__}")
        if target is None or target is default_selector_v:
            _check_default(dev)
        if ctx is None:
            ctx = default_context_for(dev)
        elif dev not in ctx.get_devices():
            raise exception(errc.invalid, f"device {dev!r} is not in the queue's context {ctx!r}")
        props = _prop.checked(properties, _prop.QUEUE, "sycl.queue")
        self._props = props
        self._profiling = props.has_property(_prop.queue.enable_profiling)
        self._in_order = props.has_property(_prop.queue.in_order)
        if self._profiling:
            from pysycl._objects.aspects import aspect

            if not dev.has(aspect.queue_profiling):
                raise exception(errc.feature_not_supported,
                                f"device {dev.display_name!r} has no aspect.queue_profiling")
        self._setup(ctx, dev, _backends.get(dev.get_backend()).executor(
            ctx, dev, profiling=self._profiling), async_handler)

    def _setup(self, ctx: context, dev: device, executor: Executor,
               async_handler: Callable[[exception_list], None] | None) -> None:
        self._dev = dev
        self._ctx = ctx
        self._async_handler = async_handler
        self._async_errors: list[BaseException] = []
        self.executor: Executor = executor
        track_executor(ctx.key, executor)  # sycl.free waits for the context's queues

    @classmethod
    def _from_executor(cls, ctx: context, dev: device, executor: Executor,
                       async_handler: Callable[[exception_list], None] | None = None) -> queue:
        """A queue of ``dev`` in ``ctx`` over an existing executor, no properties (interop:
        ``make_queue`` wraps an application's own OpenCL queue)."""
        self = object.__new__(cls)
        self._props = _prop.property_list([])
        self._profiling = False
        self._in_order = False
        self._setup(ctx, dev, executor, async_handler)
        return self

    # ------------------------------------------------------------- queries
    @property
    def async_handler(self) -> Callable[[exception_list], None] | None:
        """The async_handler given to the constructor, or None (pysycl's own)."""
        return self._async_handler

    def add_async_error(self, err: BaseException) -> None:
        """Record an asynchronous error for the next ``wait_and_throw``/``throw_asynchronous``
        (pysycl's own: what executors and host tasks report)."""
        self._async_errors.append(err)
        _unreported.add(self)  # reported when the queue is destroyed, or at exit, if not before

    def __del__(self) -> None:
        # SYCL 2020 §4.6.5.5: asynchronous errors still to be processed when a queue is
        # destroyed go to its handler then.
        if getattr(self, "_async_errors", None) and not sys.is_finalizing():
            self._report_unconsumed()

    def _report_unconsumed(self) -> None:
        """Hand the errors no ``throw_asynchronous`` took to the async handler, at the queue's
        end; pysycl's default handler, with no caller left to raise in, logs them."""
        errs = exception_list(self._async_errors)
        self._async_errors = []
        h = self._async_handler or self._ctx.async_handler
        try:
            if h is not None:
                h(errs)
                return
        except Exception:
            _log.exception("pysycl: the async_handler of %r raised", self)
            return
        for i, err in enumerate(errs):
            _log.error("pysycl: %r ended with an asynchronous error no async_handler received "
                       "(%d of %d; call q.wait_and_throw() or pass async_handler= to handle "
                       "them): %r", self, i + 1, len(errs), err,
                       exc_info=(type(err), err, err.__traceback__))

    def get_device(self) -> device:
        """The queue's device."""
        return self._dev

    def get_context(self) -> context:
        """The queue's context."""
        return self._ctx

    def get_backend(self) -> backend:
        """The backend of the queue's device."""
        return self._dev.get_backend()

    def is_in_order(self) -> bool:
        """Whether the queue was built with ``property.queue.in_order``."""
        return self._in_order

    def has_property(self, kind: type) -> bool:
        """Whether a property of class ``kind`` was given."""
        return self._props.has_property(kind)

    def get_property(self, kind: type[P]) -> P:
        """The property of class ``kind`` (``errc.invalid`` when absent)."""
        return self._props.get_property(kind)

    def get_info(self, param: _queue_info) -> context | device:
        """``info.queue.context`` or ``info.queue.device``."""
        if param is info.queue.context:
            return self._ctx
        if param is info.queue.device:
            return self._dev
        raise exception(errc.invalid, f"{param!r} is not an info::queue descriptor")

    # ------------------------------------------------------------- submit
    def submit(self, cgf: Callable[[handler], Any], secondary_queue: queue | None = None) -> event:
        """Run command-group function ``cgf`` with a fresh handler and submit its command.

        If ``cgf`` raises, nothing is submitted and nothing changes. With a
        ``secondary_queue``, a command group that fails on this queue is
        submitted there instead (§4.6.5.1).
        """
        h = handler(self)
        try:
            cgf(h)
            deps = h.dependencies  # h.submission() and event._make, inlined (the hot path)
            h.waits = waits_of(deps, self) if deps else ()
            nat = self.executor.submit(h)
            ev = _new_event(event)
            ev._cl = ev._first = nat
            ev._queue, ev._exec, ev._deps = self, self.executor, deps
            return ev
        except COMPILE_ERRORS as e:
            if secondary_queue is None:
                raise user_frames(e) from e.__cause__  # the kernel's error: see the message
        except exception:
            if secondary_queue is None:
                raise
        finally:
            h.release()  # no handler <-> accessor cycle outlives the submit
        h2 = handler(secondary_queue)
        try:
            cgf(h2)
            return event._make(secondary_queue, secondary_queue.executor.submit(h2.submission()),
                               None, h2.dependencies)
        except COMPILE_ERRORS as e:
            raise user_frames(e) from e.__cause__  # the kernel's error: see the message
        finally:
            h2.release()

    # ------------------------------------------------ sycl_ext_oneapi_graph
    def ext_oneapi_graph(self, graph: Any, *deps: event | Sequence[event],
                         depends_on: event | Sequence[event] | None = None) -> event:
        """Run executable command graph ``graph`` (``g.finalize()``) on this queue[, after
        the events]; its event (``sycl_ext_oneapi_graph``)."""
        d = _deps(deps, depends_on, "ext_oneapi_graph")
        if not hasattr(graph, "_submit") or getattr(graph, "_subs", None) is None:
            raise exception(errc.invalid, f"q.ext_oneapi_graph takes an executable "
                            f"command_graph (g.finalize()), got {graph!r}")
        try:
            return graph._submit(self, (d,) if isinstance(d, event) else tuple(d or ()))
        except COMPILE_ERRORS as e:  # a kernel prepared for this queue's device
            raise user_frames(e) from e.__cause__

    def ext_oneapi_get_state(self) -> queue_state:
        """``queue_state.recording`` while a command graph records this queue, else
        ``queue_state.executing``."""
        return (queue_state.recording if type(self.executor) is RecordingExecutor
                else queue_state.executing)

    def ext_oneapi_get_graph(self) -> Any:
        """The command graph this queue is recording into (``errc.invalid`` if none)."""
        ex = self.executor
        if type(ex) is not RecordingExecutor:
            raise exception(errc.invalid, f"{self!r} is not recording a command graph")
        return ex.graph

    def wait(self) -> None:
        """Block until every command submitted to this queue has completed."""
        self.executor.wait()

    def wait_and_throw(self) -> None:
        """Wait, then pass asynchronous errors to the async_handler."""
        self.wait()
        self.throw_asynchronous()

    def throw_asynchronous(self) -> None:
        """Pass pending asynchronous errors to the queue's (or context's) async_handler."""
        if not self._async_errors:
            return
        errs = exception_list(self._async_errors)
        self._async_errors = []
        h = self._async_handler or self._ctx.async_handler or _default_async_handler
        h(errs)

    # ---------------------------------------------------- shortcut functions
    def _shortcut(self, deps: event | Sequence[event] | None,
                  record: Callable[[handler], None]) -> event:
        def cgf(h: handler) -> None:
            if deps is not None:
                h.depends_on(deps)
            record(h)

        return self.submit(cgf)

    def single_task(self, *args: Any, kernel_name: str | None = None,
                    depends_on: event | Sequence[event] | None = None) -> event:
        """``q.single_task(kernel)`` or ``q.single_task(dep_event(s), kernel)``."""
        try:
            if len(args) == 1 and depends_on is None and type(args[0]) is FunctionType:
                # no command group (as parallel_for's): the executor checks the kernel itself
                return event._make(self, self.executor.launch(self, "single_task", None,
                                                              args[0], kernel_name))
            deps, kernel = _split_deps(args, 1, "single_task", depends_on)
            return self._shortcut(deps, lambda h: h.single_task(kernel[0],
                                                                kernel_name=kernel_name))
        except COMPILE_ERRORS as e:
            raise user_frames(e) from e.__cause__  # the kernel's error: see the message

    def parallel_for(self, index_space: int | range_ | nd_range,
                     *rest: event | Sequence[event] | _reduction | Callable[..., Any],
                     kernel_name: str | None = None,
                     depends_on: event | Sequence[event] | None = None) -> event:
        """``q.parallel_for(range, [dep_event(s),] [reduction, ...,] kernel)`` (§4.6.5.2).

        The kernel captures USM pointers and numbers (a shortcut has no handler, so
        no accessors); ``depends_on=`` is the keyword form of the events. Reductions are
        the handler-less forms, ``sycl.reduction(ptr, op)`` and
        ``sycl.reduction(sycl.span(ptr, n), op)``.
        """
        try:
            fn = rest[-1] if rest else None
            t = type(index_space)
            if depends_on is None and type(fn) is FunctionType and (t is _range
                                                                   or t is _nd_range):
                # the USM fast path: no command group; the executor checks the kernel's
                # signature and name (and the reductions) itself
                ex = self.executor
                kind = "range" if t is _range else "nd_range"
                if len(rest) == 1:
                    nat = ex.launch(self, kind, index_space, fn, kernel_name)
                elif type(rest[0]) is _reduction:  # no events: reductions, then the kernel
                    nat = ex.launch_reductions(self, kind, index_space, rest[:-1], fn,
                                               kernel_name)
                else:
                    return self._shortcut_for(index_space, rest, kernel_name, depends_on)
                ev = _new_event(event)  # event._make, inlined: a launch-cost hot path
                ev._cl = ev._first = nat
                ev._queue, ev._exec, ev._deps = self, ex, ()
                return ev
            return self._shortcut_for(index_space, rest, kernel_name, depends_on)
        except COMPILE_ERRORS as e:
            raise user_frames(e) from e.__cause__  # the kernel's error: see the message

    def _shortcut_for(self, index_space: Any, rest: tuple[Any, ...], kernel_name: str | None,
                      depends_on: event | Sequence[event] | None) -> event:
        """``parallel_for``'s command group: ``h.parallel_for`` after the events."""
        deps, tail = _split_deps(rest, None, "parallel_for", depends_on)
        return self._shortcut(deps, lambda h: h.parallel_for(index_space, *tail,
                                                             kernel_name=kernel_name))

    def memcpy(self, dest: Any, src: Any, num_bytes: int, *deps: event | Sequence[event],
               depends_on: event | Sequence[event] | None = None) -> event:
        """``q.memcpy(dest, src, num_bytes[, dep_event(s)])``: USM pointers or host arrays."""
        return self._shortcut(_deps(deps, depends_on, "memcpy"),
                              lambda h: h.memcpy(dest, src, num_bytes))

    def memset(self, ptr: Any, value: int, num_bytes: int, *deps: event | Sequence[event],
               depends_on: event | Sequence[event] | None = None) -> event:
        """``q.memset(ptr, value, num_bytes[, dep_event(s)])``."""
        return self._shortcut(_deps(deps, depends_on, "memset"),
                              lambda h: h.memset(ptr, value, num_bytes))

    def prefetch(self, ptr: Any, num_bytes: int, *deps: event | Sequence[event],
                 depends_on: event | Sequence[event] | None = None) -> event:
        """``q.prefetch(ptr, num_bytes[, dep_event(s)])``."""
        return self._shortcut(_deps(deps, depends_on, "prefetch"),
                              lambda h: h.prefetch(ptr, num_bytes))

    def mem_advise(self, ptr: Any, num_bytes: int, advice: int, *deps: event | Sequence[event],
                   depends_on: event | Sequence[event] | None = None) -> event:
        """``q.mem_advise(ptr, num_bytes, advice[, dep_event(s)])``."""
        return self._shortcut(_deps(deps, depends_on, "mem_advise"),
                              lambda h: h.mem_advise(ptr, num_bytes, advice))

    def copy(self, src: Any, dest: Any, *rest: Any,
             depends_on: event | Sequence[event] | None = None) -> event:
        """``q.copy(src, dest)`` with an accessor (accessors are required for you), or
        ``q.copy(src, dest, count[, dep_event(s)])`` between USM pointers and arrays."""
        count, deps = _count_and_deps(rest, depends_on, "copy")
        if count is None:
            return self._shortcut(deps, lambda h: _require_all(h, src, dest) or h.copy(src, dest))
        return self._shortcut(deps, lambda h: h.copy(src, dest, count))

    def fill(self, dest: Any, value: Any, *rest: Any,
             depends_on: event | Sequence[event] | None = None) -> event:
        """``q.fill(accessor, value)``, or ``q.fill(ptr, pattern, count[, dep_event(s)])``."""
        count, deps = _count_and_deps(rest, depends_on, "fill")
        if count is None:
            return self._shortcut(deps, lambda h: _require_all(h, dest) or h.fill(dest, value))
        return self._shortcut(deps, lambda h: h.fill(dest, value, count))

    def update_host(self, acc: accessor,
                    depends_on: event | Sequence[event] | None = None) -> event:
        """Shortcut for ``handler.update_host``."""
        return self._shortcut(depends_on, lambda h: _require_all(h, acc) or h.update_host(acc))

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)

    def _repr_html_(self) -> str:
        dev = self._dev
        return table([("device", dev.get_info(info.device.name)),
                      ("platform", dev.get_platform().get_info(info.platform.name)),
                      ("in order", self.is_in_order()),
                      ("profiling", self.has_property(_prop.queue.enable_profiling))],
                     title="sycl.queue")

    def __repr__(self) -> str:
        return f"sycl.queue(device={self._dev.display_name!r})"


#: Whether a default device that cannot run Python kernels was warned about (once a process).
_default_warned: list[bool] = [False]


def _check_default(dev: device) -> None:
    """Warn (``pysycl.ext.DeviceWarning``, once a process) when the default device cannot run
    Python kernels: ``PYSYCL_DEVICE_FILTER=pocl`` picks a device whose first Python kernel
    would fail."""
    if _default_warned[0]:
        return
    note = no_python_kernels_note(dev)
    if note is not None:
        _default_warned[0] = True
        warnings.warn(note, DeviceWarning, stacklevel=user_stacklevel())


def _require_all(h: handler, *objs: accessor | np.ndarray) -> None:
    from pysycl._memory.accessor import accessor

    for o in objs:
        if isinstance(o, accessor):
            h.require(o)


def _is_deps(x: Any) -> bool:
    return isinstance(x, event) or (isinstance(x, (list, tuple))
                                    and all(isinstance(e, event) for e in x))


def _deps(args: Sequence[Any], kw: event | Sequence[event] | None,
          what: str) -> event | Sequence[event] | None:
    """The dependencies of a shortcut: one positional event (list) or ``depends_on=``."""
    if len(args) > 1 or (args and not _is_deps(args[0])):
        raise TypeError(f"q.{what}: after the arguments comes one sycl.event or a list of "
                        "them")
    if args and kw is not None:
        raise TypeError(f"q.{what}: the events are given twice (positionally and as "
                        "depends_on=)")
    return args[0] if args else kw


def _count_and_deps(rest: Sequence[Any], kw: event | Sequence[event] | None,
                    what: str) -> tuple[int | None, event | Sequence[event] | None]:
    if rest and not _is_deps(rest[0]):
        return rest[0], _deps(rest[1:], kw, what)
    return None, _deps(rest, kw, what)


def _split_deps(args: Sequence[Any], n_tail: int | None, what: str,
                kw: event | Sequence[event] | None = None
                ) -> tuple[event | Sequence[event] | None, tuple[Any, ...]]:
    if not args:
        raise TypeError(f"{what}: the kernel is missing")
    first = args[0]
    if isinstance(first, event) or (isinstance(first, (list, tuple)) and len(args) > 1
                                    and all(isinstance(e, event) for e in first)):
        if kw is not None:
            raise TypeError(f"q.{what}: the events are given twice (positionally and as "
                            "depends_on=)")
        return first, tuple(args[1:])
    return kw, tuple(args)


#: Queues holding asynchronous errors no ``throw_asynchronous`` took yet.
_unreported: weakref.WeakSet[queue] = weakref.WeakSet()


def _at_exit() -> None:
    """Before the interpreter finalizes: write back the buffers still open, then report the
    asynchronous errors of the queues still alive (as their destruction would)."""
    write_back_at_exit()
    for q in list(_unreported):
        if q._async_errors:
            q._report_unconsumed()


atexit.register(_at_exit)

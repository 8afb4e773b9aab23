"""``sycl::handler`` (SYCL 2020 §4.9.4): records exactly one command per command group.

The handler neither compiles nor enqueues: it validates its arguments and
records the command; the queue's executor runs it after the command-group
function returns, so an exception inside the command group changes nothing.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from pysycl._bundles.kernel import kernel as _sycl_kernel
from pysycl._bundles.kernel_id import check_kernel_name
from pysycl._commands.commands import (
    COMMAND_NAMES,
    Command,
    CopyCommand,
    FillCommand,
    GraphCommand,
    HostTaskCommand,
    KernelCommand,
    PrefetchCommand,
    UpdateHostCommand,
    USMCopyCommand,
    USMFillCommand,
)
from pysycl._commands.event import event, waits_of
from pysycl._commands.host_task import takes_interop_handle
from pysycl._core.exceptions import errc, exception
from pysycl._core.launch_types import Submission
from pysycl._core.vec_layout import FIELD, describe, vec_parts
from pysycl._kernels.reduction import reduction
from pysycl._kernels.signature import check_kernel as _check_kernel
from pysycl._kernels.signature import checked_params, offset_error
from pysycl._memory import tables as _tables
from pysycl._memory.accessor import accessor
from pysycl._memory.usm import usm_pointer
from pysycl._memory.usm_api import endpoint
from pysycl._objects.range import id as _id
from pysycl._objects.range import nd_range
from pysycl._objects.range import range as _range

if TYPE_CHECKING:
    from pysycl._bundles.kernel_bundle import kernel_bundle
    from pysycl._commands.refs import QueueLike
    from pysycl._kernels.kernel_api import local_accessor
    from pysycl._kernels.specconst import specialization_id

_FunctionType = types.FunctionType
_SUBMITTED = object()  # an accessor's handler once its command group has been submitted


class handler(Submission):  # noqa: N801 - the spec's spelling
    """The command-group handler passed to the function given to ``queue.submit``."""

    # What executors read once the command group function returned (pysycl's own, not the
    # spec's): plain slots of its ``Submission`` base, read on every submit (a property
    # call would cost more), besides ``dependencies``:
    #   command                the recorded command (None for an empty command group)
    #   requirements           the accessors the command group uses
    #   dependencies           the events given to ``depends_on`` (``waits``: their native
    #                          events, made by :meth:`submission`)
    #   kernel_bundle          the bundle given to ``use_kernel_bundle``, or None
    #   specialization_values  ``set_specialization_constant`` values, or None
    #   kernel_args            ``set_arg`` values by index (``sycl.kernel`` launches), or None
    #   context_key, queue     the queue's context's key, the queue
    __slots__ = ("_queue", "dependencies")

    def __init__(self, q: QueueLike) -> None:
        self._queue = self.queue = q
        self.context_key = q._ctx.key
        self.command: Command | None = None
        self.requirements: list[accessor] = []
        self.dependencies: tuple[event, ...] = ()  # a tuple: the event takes it as is
        self.kernel_bundle: kernel_bundle | None = None
        self.kernel_args: dict[int, accessor | local_accessor | np.generic | complex] | None = None
        self.specialization_values: dict[specialization_id, np.generic] | None = None

    def submission(self) -> Submission:
        """What the command-group function recorded, for ``Executor.submit``: the handler
        itself, its dependencies' native events in ``waits`` (pysycl's own: the queue calls
        it once the function returned)."""
        deps = self.dependencies
        self.waits = waits_of(deps, self._queue) if deps else ()
        return self

    # ---------------------------------------------------------- requirements
    def release(self) -> None:
        """Drop everything the command group referenced, once it is submitted (or failed).

        The queue calls it after submitting (pysycl's own, not the spec's). The recorded
        kernel's closure holds the accessors and they point back at
        their handler: without this, handler, accessors, buffers and the user's
        host arrays would form a reference cycle that only the cyclic garbage
        collector frees — and a buffer's write-back would wait for it (§4.7.2.3
        says destruction writes back; in CPython that must be reference counting).
        A group a command graph keeps as its node (:meth:`keep`) is left as it is.
        """
        if self._queue is None:  # a graph's node: the graph holds it
            return
        for acc in self.requirements:
            acc.handler = _SUBMITTED  # still "belongs to another command group"
        self.requirements = []
        self.dependencies = ()  # events made from this group keep their own reference
        self.waits = ()
        self.command = None
        self.kernel_args = None
        self.kernel_bundle = None
        self.specialization_values = None

    def keep(self) -> None:
        """The command group becomes a command graph's node (``sycl_ext_oneapi_graph``): it
        stays as recorded (:meth:`release` leaves it alone) and runs at each replay."""
        self._queue = None
        self.waits = ()

    def require(self, acc: accessor) -> None:
        """Bind a placeholder accessor to this command group (``handler::require``)."""
        if not isinstance(acc, accessor):
            raise TypeError(f"handler.require takes a sycl.accessor, got {type(acc).__name__}")
        buf = acc.buffer
        if acc.coherence.closed or buf.closed:
            raise exception(errc.invalid, buf.closed_message())
        acc.handler = self
        self.requirements.append(acc)

    def depends_on(self, events: event | Iterable[event]) -> None:
        """This command group runs after ``events`` (one event or a sequence)."""
        if isinstance(events, event):
            self.dependencies += (events,)
            return
        for e in events:
            if not isinstance(e, event):
                raise TypeError(f"depends_on takes sycl.event objects, got {type(e).__name__}")
            self.dependencies += (e,)

    def _set(self, cmd: Command) -> None:
        if self.command is not None:
            raise exception(errc.invalid, "a command group may contain only one command "
                            f"(already has {COMMAND_NAMES[type(self.command)]}, "
                            f"now {COMMAND_NAMES[type(cmd)]})")
        self.command = cmd

    # --------------------------------------------------------------- kernels
    def parallel_for(self, index_space: int | _range | nd_range,
                     *rest: reduction | Callable[..., Any] | _sycl_kernel,
                     kernel_name: str | None = None) -> None:
        """Run ``kernel`` once per work-item of ``index_space``.

        ``h.parallel_for(sycl.range(n), lambda i: ...)``,
        ``h.parallel_for(sycl.nd_range(g, l), kernel)``; an ``int`` means ``sycl.range(int)``.
        The kernel is the last positional argument; ``sycl.reduction`` objects come
        before it, and the kernel then takes ``(item, reducer, ...)``.
        """
        if not rest:
            raise TypeError("parallel_for(index_space, kernel): the kernel is missing")
        kernel = rest[-1]
        if type(index_space) is _range:  # the common case first (isinstance costs more)
            kind, ndim = "range", len(index_space.values)
        else:
            if isinstance(index_space, int):
                index_space = _range(index_space)
            if isinstance(index_space, nd_range):
                kind, ndim = "nd_range", index_space.dimensions
            elif isinstance(index_space, _range):
                kind, ndim = "range", index_space.dimensions
            else:
                raise TypeError(f"parallel_for takes a sycl.range or sycl.nd_range, got "
                                f"{type(index_space).__name__}")
        n = len(rest)
        reds = rest[:-1]
        if n > 1:
            if kind == "range" and isinstance(rest[0], _id):  # SYCL 1.2.1's offset form
                raise offset_error(kernel, rest[0])
            for r in reds:
                if type(r) is not reduction and not isinstance(r, reduction):
                    raise TypeError("parallel_for(index_space, *reductions, kernel): arguments "
                                    "between the index space and the kernel must be "
                                    f"sycl.reduction objects, not {type(r).__name__}")
        # a plain function whose code was checked for as many parameters: nothing to check
        if type(kernel) is not _FunctionType or checked_params.get(kernel.__code__) != n:
            if type(kernel) is not _sycl_kernel:
                _check_kernel(kernel, n, lambda: f"parallel_for over a {kind}"
                              + (f" with {n - 1} reduction(s)" if n > 1 else ""), kind)
        if kernel_name is not None:
            check_kernel_name(kernel_name, kernel)
        cmd = KernelCommand.record(kind, ndim, index_space, kernel, reds, kernel_name)
        if self.command is not None:
            self._set(cmd)  # raises: one command a group
        self.command = cmd

    def parallel_for_work_group(self, num_work_groups: int | _range,
                                *rest: _range | Callable[..., Any],
                                kernel_name: str | None = None) -> None:
        """Hierarchical parallelism (SYCL 2020 §4.9.4.2.3): ``kernel(g)`` once per work-group.

        ``h.parallel_for_work_group(sycl.range(G), sycl.range(L), k)`` or, leaving the
        work-group size to pysycl, ``h.parallel_for_work_group(sycl.range(G), k)``
        (:func:`~pysycl._kernels.hierarchical.default_group_size`). ``k`` receives a
        ``sycl.group``; its ``parallel_for_work_item`` calls run the work-items.
        """
        from pysycl._kernels.hierarchical import default_group_size

        if not rest or len(rest) > 2:
            raise TypeError("parallel_for_work_group(num_work_groups, [work_group_size,] "
                            f"kernel) takes 2 or 3 arguments, got {1 + len(rest)}")
        kernel = rest[-1]
        groups = _range(num_work_groups) if isinstance(num_work_groups, int) else num_work_groups
        if not isinstance(groups, _range):
            raise TypeError("parallel_for_work_group: the number of work-groups must be a "
                            f"sycl.range, not {type(num_work_groups).__name__}")
        if len(rest) == 2:
            size = _range(rest[0]) if isinstance(rest[0], int) else rest[0]
            if not isinstance(size, _range):
                raise TypeError("parallel_for_work_group: the work-group size must be a "
                                f"sycl.range, not {type(rest[0]).__name__}")
            if size.dimensions != groups.dimensions:
                raise exception(errc.nd_range, f"parallel_for_work_group: {groups.dimensions}-D "
                                f"work-groups of a {size.dimensions}-D size")
            if 0 in size.values:
                raise exception(errc.nd_range, f"parallel_for_work_group: the work-group size "
                                f"{tuple(size)} has an empty dimension")
        else:
            size = default_group_size(self._queue.get_device(), groups.dimensions)
        if type(kernel) is _sycl_kernel:
            raise exception(errc.invalid, "parallel_for_work_group runs Python kernels; a "
                            "sycl.kernel object launches with parallel_for(nd_range, ...)")
        _check_kernel(kernel, 1, "parallel_for_work_group", "hierarchical")
        if kernel_name is not None:
            check_kernel_name(kernel_name, kernel)
        space = nd_range(_range(*(g * e for g, e in zip(groups, size, strict=True))), size)
        self._set(KernelCommand.record("hierarchical", groups.dimensions, space, kernel, (),
                                       kernel_name))

    def single_task(self, kernel: Callable[[], Any], *, kernel_name: str | None = None) -> None:
        """Run ``kernel`` (a function of no arguments) once."""
        if type(kernel) is not _sycl_kernel:
            _check_kernel(kernel, 0, "single_task", "single_task")
        if kernel_name is not None:
            check_kernel_name(kernel_name, kernel)
        self._set(KernelCommand.record("single_task", 0, None, kernel, (), kernel_name))

    # ------------------------------------------------------ kernel bundles
    def use_kernel_bundle(self, kb: kernel_bundle) -> None:
        """Run this command group's kernel from executable bundle ``kb`` (no compiling).

        Raises:
            exception: ``errc.invalid`` when ``kb``'s context is not the queue's;
                at submit, ``errc.kernel_not_supported`` when ``kb`` lacks the kernel.
        """
        from pysycl._bundles.bundle import check_use

        check_use(kb, self._queue)
        if self.specialization_values:
            raise exception(errc.invalid, "use_kernel_bundle after set_specialization_constant: "
                            "a command group takes its specialization constants from the "
                            "handler or from a kernel bundle, not both", self._queue.get_context())
        self.kernel_bundle = kb

    def set_specialization_constant(self, spec_id: specialization_id, value: Any) -> None:
        """Set ``spec_id``'s value for this command group's kernel (§4.9.4.4).

        Raises:
            exception: ``errc.invalid`` after ``use_kernel_bundle`` (the bundle's
                values apply then).
            TypeError: ``spec_id`` is not a ``sycl.specialization_id`` or the value
                does not convert to its type.
        """
        from pysycl._kernels.specconst import check_spec_id

        if self.kernel_bundle is not None:
            raise exception(errc.invalid, "set_specialization_constant after use_kernel_bundle: "
                            "the kernel bundle's specialization constant values apply; set "
                            "them on the input bundle before building it", self._queue.get_context())
        check_spec_id(spec_id)
        if self.specialization_values is None:
            self.specialization_values = {}
        self.specialization_values[spec_id] = spec_id.convert(value)

    def get_specialization_constant(self, spec_id: specialization_id) -> np.generic:
        """``spec_id``'s value in this command group (its default unless set).

        Raises:
            exception: ``errc.invalid`` after ``use_kernel_bundle``.
        """
        from pysycl._kernels.specconst import check_spec_id

        if self.kernel_bundle is not None:
            raise exception(errc.invalid, "get_specialization_constant after use_kernel_bundle: "
                            "ask the kernel bundle (kb.get_specialization_constant)",
                            self._queue.get_context())
        check_spec_id(spec_id)
        return (self.specialization_values or {}).get(spec_id, spec_id.default_value)

    def set_arg(self, index: int, arg: accessor | local_accessor | np.generic | complex) -> None:
        """Set argument ``index`` of a ``sycl.kernel`` launched by this command group.

        ``arg``: an accessor (created with this handler), a ``local_accessor``, a
        USM pointer (an SVM argument: a ``__global T *`` parameter) or a numpy
        scalar (a Python number takes the kernel's declared argument type when the
        program has argument info).
        """
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise TypeError(f"set_arg: index must be a non-negative int, not {index!r}")
        if isinstance(arg, accessor) and arg.handler is None:
            self.require(arg)
        if self.kernel_args is None:
            self.kernel_args = {}
        self.kernel_args[index] = arg

    def set_args(self, *args: Any) -> None:
        """``set_arg(i, args[i])`` for every argument, in order."""
        for i, a in enumerate(args):
            self.set_arg(i, a)

    def ext_oneapi_graph(self, graph: Any) -> None:
        """Run executable command graph ``graph`` (``g.finalize()``) as this command group
        (``sycl_ext_oneapi_graph``; ``q.ext_oneapi_graph(graph)`` is the shortcut)."""
        if getattr(graph, "_subs", None) is None or not hasattr(graph, "run"):
            raise exception(errc.invalid, f"handler.ext_oneapi_graph takes an executable "
                            f"command_graph (g.finalize()), got {graph!r}")
        self._set(GraphCommand(graph))

    def host_task(self, fn: Callable[..., Any]) -> None:
        """Run ``fn`` on the host once this command group's dependencies are met.

        ``fn()`` when it requires no parameter; ``fn(ih)`` with a
        :class:`~pysycl.interop_handle` when it requires one (SYCL 2020 §4.10): the
        native queue, context, device and the native memory of its device accessors.
        Exceptions raised by ``fn`` are asynchronous errors: they reach the
        queue's async_handler at ``wait_and_throw``/``throw_asynchronous``.
        """
        if not callable(fn):
            raise TypeError("host_task takes a callable")
        self._set(HostTaskCommand(fn, takes_interop_handle(fn)))

    # ------------------------------------------------------- memory commands
    def copy(self, src: Any, dest: Any, count: int | None = None) -> None:
        """Copy accessor→array, array→accessor or accessor→accessor (§4.9.4.3), or
        ``count`` elements between USM pointers and host arrays (``h.copy(src, dest,
        count)``, C++'s ``copy<T>(src, dest, count)``: the count is in elements of
        the source)."""
        s_acc, d_acc = isinstance(src, accessor), isinstance(dest, accessor)
        if not (s_acc or d_acc):
            self._usm_copy(src, dest, count)
            return
        if count is not None:
            raise TypeError("handler.copy with an accessor takes no count: it copies the "
                            "accessor's range")
        if d_acc and not dest.writes:
            raise exception(errc.invalid, "copy destination accessor has access_mode.read")
        if s_acc and src.kernel_type.mode == "write":
            raise exception(errc.invalid, "copy source accessor has access_mode.write")
        if s_acc and not d_acc:
            dest = _vector_records(dest, src, "copy(accessor, dest)")
        elif d_acc and not s_acc:
            src = _vector_records(src, dest, "copy(src, accessor)")
        if s_acc and d_acc:
            if src.size() > dest.size():
                raise exception(errc.invalid, f"copy: source has {src.size()} elements, the "
                                f"destination only {dest.size()}")
        elif s_acc:
            if not isinstance(dest, np.ndarray):
                raise TypeError("copy(accessor, dest): dest must be a numpy array")
            if dest.size < src.size():
                raise exception(errc.invalid, f"copy: destination array has {dest.size} "
                                f"elements, the accessor {src.size()}")
            if not dest.flags.writeable:
                raise exception(errc.invalid, "copy: destination array is read-only")
        else:
            if np.size(src) < dest.size():
                raise exception(errc.invalid, f"copy: source has {np.size(src)} elements, the "
                                f"accessor {dest.size()}")
        self._set(CopyCommand(src, dest))

    def fill(self, dest: Any, value: Any, count: int | None = None) -> None:
        """Set every element of accessor ``dest`` to ``value``, or ``count`` elements of USM
        pointer ``dest`` (``h.fill(ptr, pattern, count)``)."""
        if not isinstance(dest, accessor):
            self._usm_fill(dest, value, count)
            return
        if count is not None:
            raise TypeError("handler.fill with an accessor takes no count: it fills the "
                            "accessor's range")
        if not dest.writes:
            raise exception(errc.invalid, "fill destination accessor has access_mode.read")
        parts = vec_parts(dest.dtype)
        if parts is not None:  # a vector buffer: the pattern is one whole vector record
            rec = np.zeros((), dest.dtype)
            try:
                rec[FIELD] = np.asarray(value, dtype=parts[0])
            except (TypeError, ValueError) as e:
                raise TypeError(f"handler.fill: {value!r} is not a {describe(dest.dtype)} "
                                "(a vector or one number for every element)") from e
            value = rec
        self._set(FillCommand(dest, value))

    # ------------------------------------------------------------ USM commands
    def memcpy(self, dest: Any, src: Any, num_bytes: int) -> None:
        """Copy ``num_bytes`` from ``src`` to ``dest``: USM pointers or host arrays (§4.9.4.3).

        Raises:
            exception: ``errc.invalid`` when ``num_bytes`` exceeds either end, for a
                freed pointer or one of another context (nothing is enqueued).
        """
        n = _nbytes(num_bytes, "memcpy")
        d, dk = endpoint(dest, self._queue, n, True, "memcpy destination")
        s_, sk = endpoint(src, self._queue, n, False, "memcpy source")
        self._set(USMCopyCommand(d, s_, n, (dk, sk)))

    def _usm_copy(self, src: Any, dest: Any, count: int | None) -> None:
        if count is None:
            raise TypeError("handler.copy(src, dest, count): a USM copy needs the element count")
        dt = _dtype_of(src) or _dtype_of(dest)
        if dt is None:
            raise TypeError("handler.copy(src, dest, count): give a sycl.accessor, or at least "
                            "one typed end (a USM pointer or an array); use memcpy for bytes")
        other = _dtype_of(dest) if _dtype_of(src) is not None else None
        if other is not None and other != dt:
            raise TypeError(f"handler.copy: the source holds {dt}, the destination {other}; "
                            "copy converts nothing (C++'s copy<T> has one T)")
        n = _nbytes(count, "copy", what="count") * dt.itemsize
        d, dk = endpoint(dest, self._queue, n, True, "copy destination")
        s_, sk = endpoint(src, self._queue, n, False, "copy source")
        self._set(USMCopyCommand(d, s_, n, (dk, sk)))

    def memset(self, ptr: Any, value: int, num_bytes: int) -> None:
        """Set ``num_bytes`` bytes at ``ptr`` to ``value`` (its low 8 bits, as C's memset)."""
        n = _nbytes(num_bytes, "memset")
        d, dk = endpoint(ptr, self._queue, n, True, "memset")
        self._set(USMFillCommand(d, np.array([int(value) & 0xFF], np.uint8), n, (dk,),
                                 self._staged(dk)))

    def _usm_fill(self, ptr: Any, pattern: Any, count: int | None) -> None:
        if count is None:
            raise TypeError("handler.fill(ptr, pattern, count): a USM fill needs the element "
                            "count")
        dt = _dtype_of(ptr) or np.asarray(pattern).dtype
        try:
            pat = np.array(pattern, dtype=dt).reshape(1)
        except (TypeError, ValueError) as e:
            raise TypeError(f"handler.fill: the pattern {pattern!r} does not convert to {dt}: "
                            f"{e}") from None
        n = _nbytes(count, "fill", what="count") * dt.itemsize
        d, dk = endpoint(ptr, self._queue, n, True, "fill")
        if d % dt.itemsize:
            raise exception(errc.invalid, f"fill: the destination is not aligned to "
                            f"{dt.itemsize} bytes")
        self._set(USMFillCommand(d, pat, n, (dk,), self._staged(dk)))

    def _staged(self, owner: Any) -> bool:
        """Whether a fill's destination, owned by ``owner``, is host memory that the device
        cannot use as it is (no system SVM, as for kernels' host arrays)."""
        return not isinstance(owner, usm_pointer) and not _tables.passed_directly(self._queue)

    def prefetch(self, ptr: Any, num_bytes: int) -> None:
        """Hint that ``num_bytes`` at ``ptr`` will be used on the device soon."""
        n = _nbytes(num_bytes, "prefetch", zero_ok=True)
        d, dk = endpoint(ptr, self._queue, n, False, "prefetch")
        self._set(PrefetchCommand(d, n, None, (dk,)))

    def mem_advise(self, ptr: Any, num_bytes: int, advice: int) -> None:
        """Give the backend ``advice`` about ``num_bytes`` at ``ptr`` (a device-defined hint;
        OpenCL has none to give, so it only orders like any other command)."""
        n = _nbytes(num_bytes, "mem_advise", zero_ok=True)
        if isinstance(advice, bool) or not isinstance(advice, (int, np.integer)):
            raise TypeError(f"mem_advise: advice must be an int, not {advice!r}")
        d, dk = endpoint(ptr, self._queue, n, False, "mem_advise")
        self._set(PrefetchCommand(d, n, int(advice), (dk,)))

    def update_host(self, acc: accessor) -> None:
        """Bring the host copy of ``acc``'s buffer up to date."""
        if not isinstance(acc, accessor):
            raise TypeError("handler.update_host takes a sycl.accessor")
        self._set(UpdateHostCommand(acc))

    def __repr__(self) -> str:
        cmd = None if self.command is None else COMMAND_NAMES[type(self.command)]
        return f"sycl.handler(command={cmd})"


def _dtype_of(v: Any) -> np.dtype | None:
    """The element type of a typed copy end (a pointer, an array, a USM array)."""
    if isinstance(v, usm_pointer):
        return v.dtype
    if isinstance(v, np.ndarray):
        return v.dtype
    iface = getattr(v, "__sycl_usm_array_interface__", None)
    if isinstance(iface, dict) and "typestr" in iface:
        return np.dtype(iface["typestr"])
    return None


def _nbytes(n: Any, fn: str, what: str = "num_bytes", zero_ok: bool = True) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"{fn}: {what} must be an int, not {n!r}")
    if n < 0:
        raise ValueError(f"{fn}: {what} must not be negative, got {n}")
    return int(n)


def _vector_records(arr: Any, acc: accessor, what: str) -> Any:
    """The host array of a copy with a ``sycl::vec`` accessor, viewed as its vector records.

    Such an array holds ``T`` with a last axis of one vector's storage (``N`` elements; 4 for
    a 3-vector, its padding included), C-contiguous; other accessors take ``arr`` as it is.
    """
    parts = vec_parts(acc.dtype)
    if parts is None:
        return arr
    base, n = parts
    lanes = acc.dtype.itemsize // base.itemsize
    if not (isinstance(arr, np.ndarray) and arr.dtype == base and arr.ndim >= 1
            and arr.shape[-1] == lanes and arr.flags.c_contiguous):
        got = (f"a {arr.dtype} array of shape {arr.shape}" if isinstance(arr, np.ndarray)
               else type(arr).__name__)
        pad = " (a 3-vector with its padding element)" if n == 3 else ""
        raise exception(errc.invalid, f"{what}: a {describe(acc.dtype)} accessor copies with a "
                        f"C-contiguous {base} array whose last axis is {lanes} elements{pad}, "
                        f"not {got}")
    return arr.view(acc.dtype).reshape(arr.shape[:-1])

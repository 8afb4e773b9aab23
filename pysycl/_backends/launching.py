"""Kernel launches on a device queue, whatever the backend: one :class:`Launch` per (built
kernel, sizes, queue).

Every Python kernel reaches a device through its backend's ``Launch.enqueue`` (OpenCL:
:class:`pysycl._backends.opencl.launch.OpenCLLaunch`; CUDA:
:class:`pysycl._backends.cuda.launch.CUDALaunch`): pass the arguments, enqueue, hold
the memory the launch uses until it completes, translate the driver's errors, and
note the queue's newest command. What differs between launches are its *steps*: a kernel
that prints gets fresh output buffers bound before and read back after
(:class:`~pysycl._kernels.steps.PrintStep`); a bounds-checked kernel or one with
``assert`` passes its persistent error slot (:func:`~pysycl._kernels.steps.error_slot`).

Two ways in, both here and backend-neutral (the executor gives its ``launch_class``,
``marker(wait_for)`` and ``local_memory(nbytes)``):

* :func:`prepare` -- a kernel command of a command group (``h.parallel_for``), after the
  target-neutral :func:`~pysycl._bundles.resolve.resolve` (captures, cache, compile):
  build, sizes, launch checks, then the cached :class:`Launch` of that built kernel and
  those sizes on this queue, bound to this submit's values.
* :func:`launch` -- ``q.parallel_for(r, k)`` / ``q.single_task(k)`` without a command
  group (``Executor.launch``). The first launch of a kernel takes the whole way
  (:func:`launch_whole`); where its arguments can be checked cheaply the executor then
  remembers its :class:`Launch` with a generated *refresh*
  (:func:`pysycl._kernels.argplan.refresh_for`), and a later launch of the same code
  with the same index space only refreshes the arguments from the closure and enqueues.

Design: docs/design/launch.md §2.5-2.6.
"""

from __future__ import annotations

import time
import types
from collections.abc import Sequence
from functools import partial
from math import copysign
from math import prod as _prod
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from pysycl._bundles.kernel import kernel as _sycl_kernel
from pysycl._bundles.kernel import prepare_interop
from pysycl._bundles.kernel_id import check_kernel_name
from pysycl._bundles.resolve import resolve
from pysycl._commands.commands import KernelCommand
from pysycl._core.abi import PROPS_ATTR
from pysycl._core.exceptions import errc, exception
from pysycl._core.launch_types import native_order
from pysycl._kernels import bounds as _bounds
from pysycl._kernels import reduction_launch as _reduction
from pysycl._kernels import steps as _steps
from pysycl._kernels.again import Again, keepable, kept_launch, space_key
from pysycl._kernels.argplan import accessor_ranges, flat_args, refresh_for, with_local_memory
from pysycl._kernels.cache import kernels, target_of
from pysycl._kernels.captures import _infos
from pysycl._kernels.kassert import submit_site
from pysycl._kernels.kprops import check_launch
from pysycl._kernels.ndrange import SMALL as _SMALL
from pysycl._kernels.ndrange import check_global_size, ndrange_sizes
from pysycl._kernels.rangesize import range_sizes
from pysycl._kernels.signature import check_kernel
from pysycl._memory.usm_api import same_holds

if TYPE_CHECKING:
    from pysycl._bundles.resolve import Resolved
    from pysycl._core.launch_types import CommandGroupRef, KernelCommandRef, QueueRef
    from pysycl._kernels.cache import Kernel

_now = time.perf_counter
_stats = kernels.stats
_FunctionType = types.FunctionType
#: a handler-less launch: the kernel's parameters and the launch's name in messages
_WHERE = {"range": (1, "parallel_for over a range", "range"),
          "nd_range": (1, "parallel_for over a nd_range", "nd_range"),
          "single_task": (0, "single_task", "single_task"),
          "hierarchical": (1, "parallel_for_work_group", "hierarchical")}
#: The launches with work-groups (local memory, a local range).
_GROUPED = ("nd_range", "hierarchical")
#: an executor remembers at most this many launches (then forgets them all)
REMEMBERED = 64


class LaunchingExecutor(Protocol):
    """What launches read and note of the executor of their queue (a backend's device
    executor, which imports this module)."""

    native: Any
    key: Any
    context: Any
    device: Any
    inflight: Any
    launches: dict[Any, Any]
    last: Any
    since: float
    shape: Any

    def build(self, k: Any, spec: Any = None, bound: int = 0, fn: Any = None,
              name: str | None = None) -> Any: ...
    def bounded_kernel(self, k: Any, native: Any, nd: Any, spec: Any = None, fn: Any = None,
                       name: str | None = None, bundle: bool = False) -> Any: ...
    def kernel_limits(self, native: Any) -> tuple[int, tuple[int, ...], int]: ...
    def last_args(self, k: Any) -> dict[Any, list[Any]]: ...
    def marker(self, wait_for: Sequence[Any] | None) -> Any: ...
    def local_memory(self, nbytes: int) -> Any: ...
    def resident_groups(self, native: Any, wg: int, local_bytes: int) -> int | None: ...
    #: the backend's :class:`Launch` subclass
    launch_class: type[Launch]
    #: whether the device runs a last work-group smaller than the others (a range launch's
    #: sizes: :func:`~pysycl._kernels.rangesize.range_sizes`)
    uneven_groups: bool


class Launch:
    """A Python kernel built for one queue, with its sizes (native order: fastest first).

    ``bound`` is the built kernel's last arguments (shared with every queue of the device:
    the kernel object holds them); ``pointers``: the kernel captures USM pointers or
    host arrays, which a launch holds until it completes; ``printer``: its
    :class:`~pysycl._kernels.steps.PrintStep` (None: it does not print); ``space`` the
    index space it was made for in SYCL terms, and ``refresh``/``want``/``gen`` what a
    remembered handler-less launch checks (:func:`launch`).

    A ``range`` launch's sizes are the runtime's, chosen per device and image format
    (:func:`~pysycl._kernels.rangesize.range_sizes`; the ``gsize`` given is the user's
    range), and ``tail``, the user's range, follows the captures' arguments (the kernel's
    entry point runs the items of that range); else ``()``.
    """

    __slots__ = ("bound", "clk", "ex", "floats", "gen", "gsize", "k", "kind", "kinds", "lsize",
                 "pointers", "printer", "refresh", "space", "tail", "want")
    #: whether the backend keeps a native copy of this remembered launch (CUDA: the one C
    #: call of ``_native.c``): its refresh then also returns the values it read, which
    #: :func:`launch` passes to :meth:`enqueue` as a fifth argument
    primes = False

    def __init__(self, ex: LaunchingExecutor, k: Kernel, clk: Any, kind: str, space: Any,
                 gsize: tuple[int, ...], lsize: tuple[int, ...] | None) -> None:
        self.ex, self.k, self.clk = ex, k, clk
        self.tail: tuple[int, ...] = ()
        if kind == "range":
            self.tail = tuple(space)
            gsize, lsize = range_sizes(ex.device, self.tail, ex.kernel_limits(clk)[0],
                                       k.prints, ex.uneven_groups)
        self.kind, self.space, self.gsize, self.lsize = kind, space, gsize, lsize
        self.kinds = k.arg_kinds
        self.bound = ex.last_args(k)
        #: flat arguments that are floating-point numbers: 0.0 == -0.0, yet a kernel given
        #: one must not keep the other (:func:`same_signs`)
        self.floats = tuple(i for i, t in enumerate(k.arg_dtypes)
                            if t is not None and np.dtype(t).kind == "f")
        self.pointers = k.has_pointer
        self.printer = _steps.PrintStep(ex, k.name, k.where) if k.prints else None
        self.refresh: Any = None
        self.want: tuple[Any, ...] = ()
        self.gen = kernels.generation

    def enqueue(self, args: list[Any], holds: Any, wait_for: Sequence[Any] | None,
                bound: dict[Any, list[Any]] | None = None) -> Any:
        """Pass ``args`` (unless they are the native kernel's last ones, ``bound``; None: pass
        them), enqueue, hold ``holds`` (None: nothing) until the kernel completes; the
        native event. The backend's subclass implements it."""
        raise NotImplementedError

    def again(self, args: list[Any], wait_for: Sequence[Any] | None) -> Any:
        """:meth:`enqueue` (holding nothing) of ``args``, the arguments this launch was last
        enqueued with (a command group submitted again: :mod:`pysycl._kernels.again`); a
        backend may do it faster."""
        return self.enqueue(args, None, wait_for, self.bound)

    def args(self, values: list[Any]) -> list[Any]:
        """The native arguments of a launch with the captured ``values``."""
        args = flat_args(values, self.kinds, self.ex.key)
        if self.tail:
            args.extend(self.tail)
        return args

    def prebound(self, args: list[Any]) -> Any:
        """A command graph's kernel node, launched with ``args`` (the native arguments) at
        each replay: what :meth:`replayer` takes. The backend's subclass may bind them once
        (OpenCL: a ``cl_kernel`` of the node's own); here the launch takes them at each
        replay, as a launch does (set, or packed, where they changed since its last one)."""
        return partial(self.enqueue, args, None, None, self.bound)  # set where they changed

    @staticmethod
    def replayer(nodes: Sequence[Any]) -> Any:
        """The function that launches the :meth:`prebound` ``nodes`` in order and returns
        (first, last) native events."""
        def replay() -> tuple[Any, Any]:
            first = ev = None
            for n in nodes:
                ev = n()
                if first is None:
                    first = ev
            return first, ev
        return replay

    def run(self, values: list[Any], wait_for: Sequence[Any] | None,
            watch: tuple[Any, ...] | None = None) -> Any:
        """Launch with the captured ``values`` (local memory bound); ``watch``: what a
        failure reports, for a kernel with an error slot."""
        if self.printer is None and watch is None:
            return self.enqueue(self.args(values), values if self.pointers else None, wait_for,
                                self.bound)
        return self._run_steps(values, wait_for, watch)

    def _run_steps(self, values: list[Any], wait_for: Sequence[Any] | None,
                   watch: tuple[Any, ...] | None) -> Any:
        """:meth:`run` with steps: print buffers and the error slot around the enqueue."""
        ex, printer = self.ex, self.printer
        outs = None
        bound = self.bound
        if printer is not None:
            bound_values, outs = printer.before(values)
            args = self.args(bound_values)
            bound = None  # fresh buffers every launch
        else:
            args = self.args(values)
        holds = values if self.pointers else None
        if watch is None:
            ev = self.enqueue(args, holds, wait_for, bound)
        else:
            ev = _steps.enqueue_checked(ex, self.k, ex.context.key, watch, args,
                                        lambda a: self.enqueue(a, holds, wait_for, bound))
        if outs is not None:
            printer.after(ev, outs)  # type: ignore[union-attr]
        return ev


def hold(ex: LaunchingExecutor, ln: Launch, ev: Any, holds: Any) -> None:
    """Hold ``holds`` (what launch ``ln`` uses) until its event ``ev`` completes, in the
    executor's ``inflight`` (called under the enqueue lock, before ``ex.last`` moves on).

    An in-order queue's newest command stands for the earlier ones: when the newest held
    entry is this launch's previous one and held the same pointers (a tuple, as
    :func:`launch` passes them), ``ev`` replaces its event instead of adding one -- a loop
    launching one kernel holds one entry.
    """
    dq = ex.inflight
    prev = dq[-1] if dq and ex.shape is ln else None
    if prev is not None and prev[0] is ex.last and same_holds(prev[1], holds):
        dq[-1] = (ev, prev[1])
    else:
        dq.append((ev, holds))


def same_signs(last: list[Any], args: list[Any], floats: tuple[int, ...]) -> bool:
    """Equal argument lists (``last == args``) also agree on the sign of their zeros (the
    same object does: a loop, not a generator -- launch-cost hot path)."""
    for i in floats:
        a = args[i]
        if a is not last[i] and a == 0 and copysign(1.0, a) != copysign(1.0, last[i]):
            return False
    return True


def _marker(ex: LaunchingExecutor, wait_for: Sequence[Any] | None) -> Any:
    """An empty index space runs no work-item: a marker on the dependencies."""
    return ex.marker(wait_for)


def prepare(ex: LaunchingExecutor, group: CommandGroupRef, cmd: KernelCommandRef,
            keep: bool = False) -> tuple[Any, list[Any] | None, tuple[Any, ...] | None]:
    """Resolve, build and check a kernel command: ``(launch, values, watch)``, run as
    ``launch.run(values, wait_for, watch)`` when ``launch`` is a :class:`Launch` (a Python
    kernel), else as ``launch(wait_for)`` (a reduction, a ``sycl.kernel`` object, an empty
    index space) -- no closure or ``partial`` per submit on the common path.

    Everything that can fail for a user mistake happens here, before the executor moves
    any data. Reductions and ``sycl.kernel`` objects are :mod:`pysycl._kernels.reduction`'s
    and :mod:`pysycl._bundles.kernel`'s.

    ``keep`` (a command group's submit, not a command graph's node): a submit of the same
    command group again may take the launch the queue kept (:mod:`pysycl._kernels.again`),
    and a launch that can be kept is, once enqueued.
    """
    fn = cmd.fn
    if cmd.reductions:  # sycl.reduction arguments: a kernel plus a combine step
        if type(fn) is _sycl_kernel or group.kernel_bundle is not None:
            raise exception(errc.feature_not_supported, "pysycl: reductions work with Python "
                            "kernels compiled at submit, not with sycl.kernel objects or "
                            "use_kernel_bundle")
        return _reduction.prepare(ex, group, cmd), None, None  # type: ignore[arg-type]
    if type(fn) is _sycl_kernel:  # a sycl.kernel object (source/interop): set_arg arguments
        return prepare_interop(ex, group, cmd), None, None  # type: ignore[arg-type]  # a Submission
    keep = keep and type(fn) is _FunctionType and cmd.kind != "single_task" \
        and group.kernel_bundle is None and group.specialization_values is None
    if keep:
        run = kept_launch(ex, group, cmd, fn, ())  # type: ignore[arg-type]
        if run is not None:
            return run, None, None
    ln, values, watch = _prepare(ex, group, cmd)
    if ln is None:
        return partial(_marker, ex), None, None
    if keep and watch is None and ln.printer is None and cmd.name is None \
            and not ln.k.has_local and not ln.k.has_spec:
        info = _infos.get(fn.__code__)
        globs = None if info is None else keepable(fn, info, group, ())
        if globs is not None:
            again = Again(ln, None, fn, cmd.kind, space_key(cmd.kind, cmd.index_space),
                          ln.pointers, globs)
            return partial(_first, ln, values, again), None, None
    return ln, values, watch


def _first(ln: Launch, values: list[Any], again: Again, wait_for: Sequence[Any] | None) -> Any:
    """:meth:`Launch.run` without steps, then ``again`` keeps the arguments it enqueued."""
    args = ln.args(values)
    ev = ln.enqueue(args, values if ln.pointers else None, wait_for, ln.bound)
    again.remember((), args, ())
    return ev


# long: the per-submit hot path after resolve, kept in one frame (helper calls cost ~50 ns).
def _prepare(ex: LaunchingExecutor, group: CommandGroupRef, cmd: KernelCommandRef
             ) -> tuple[Launch | None, list[Any], tuple[Any, ...] | None]:
    """:func:`prepare`'s work: the :class:`Launch` (None: an empty index space), the values
    it runs with and what a failure reports (None: no error slot)."""
    r = resolve(group, cmd, ex.context, ex.device)
    k, fn, info, values, native, spec, checked = r
    kind, space = cmd.kind, cmd.index_space
    if k.props is not None:  # kernel properties: the launch must give what they require
        check_launch(k.props, k.named(cmd.name), kind,
                     space.get_local_range().values if kind in _GROUPED else None,
                     ex.device, target_of(ex.device)[0])
    clk = native if native is not None else ex.build(k, spec, 0, fn, cmd.name)
    if kind == "range":
        dims = space.values
        gsize, lsize = native_order(dims), None  # SYCL dim 0 is the slowest: OpenCL's last
        if _prod(gsize) > _SMALL:  # more work-items than a 32-bit size_t: the device's limit
            check_global_size(k.named(cmd.name), dims, ex.device)
    elif kind == "single_task":
        dims, gsize, lsize = (), (1,), None
    else:
        if native is None:  # wider than the driver promises (PTX): a build with a bound
            clk = ex.bounded_kernel(k, clk, space, spec, fn, cmd.name)
        gsize, lsize = ndrange_sizes(k, ex.device, ex.kernel_limits(clk), space, values)
        dims = (space.get_global_range().values, space.get_local_range().values,
                space.get_offset().values)  # (an offset was refused above: zeros)
    if k.direct or k.direct_rest:  # the static bounds check: a few int compares
        _bounds.check_static(k, info.location, fn, kind, space, values)
    if k.prints and checked:
        raise exception(errc.feature_not_supported, f"{k.where}: print() and sycl.stream in "
                        "kernels are not available in bounds-checked mode (PYSYCL_BOUNDS_CHECK=1) "
                        "yet; run without it, or on the host_debuggable device")
    watch = _watch(group.queue, r, cmd) if checked or k.asserts else None
    if k.has_local:
        values = _local_values(ex, k, kind, values)
    if 0 in gsize:
        return None, values, watch
    ln = ex.launches.get((clk, gsize, lsize))
    if ln is None:
        ln = prepared(ex, k, clk, gsize, lsize, kind, dims)
    return ln, values, watch


def prepared(ex: LaunchingExecutor, k: Kernel, clk: Any, gsize: tuple[int, ...],
             lsize: tuple[int, ...] | None, kind: str = "nd_range", space: Any = None) -> Launch:
    """``Executor.prepared``: the queue's :class:`Launch` of built kernel ``clk`` (of ``k``)
    over ``gsize``/``lsize`` (native order), made once (``kind``/``space``: the SYCL index
    space it stands for, where a handler-less launch may remember it)."""
    key = (clk, gsize, lsize)
    launches = ex.launches
    ln = launches.get(key)
    if ln is None:
        if len(launches) >= REMEMBERED:
            launches.clear()
        ln = launches[key] = ex.launch_class(ex, k, clk, kind, space, gsize, lsize)
    return ln


def _local_values(ex: LaunchingExecutor, k: Kernel, kind: str, values: list[Any]) -> list[Any]:
    """``values`` with the local accessors' arguments (nd_range kernels only)."""
    if kind not in _GROUPED:
        raise exception(errc.kernel_argument, f"{k.where} captures a sycl.local_accessor, but "
                        "local memory exists only in nd_range kernels: launch it with "
                        "h.parallel_for(sycl.nd_range(global_range, local_range), kernel)")
    return with_local_memory(values, k.arg_kinds, ex.local_memory)


def _watch(q: QueueRef, r: Resolved, cmd: KernelCommandRef) -> tuple[Any, ...]:
    """What a failure of this launch reports (:func:`pysycl._kernels.bounds.record`):
    accessor ranges only where the kernel checks them, the user's submit site only where
    it asserts."""
    k, fn, info, values = r[:4]
    ranges = accessor_ranges(values, k.arg_kinds) if k.compiled.bounds_checked else []
    linear = tuple(cmd.index_space.values) if cmd.kind == "range" else None  # items' ids
    return _bounds.record(q, k, fn, cmd.name or fn.__qualname__, info.location,  # type: ignore[arg-type]
                          values, ranges, max(cmd.ndim, 1), submit_site() if k.asserts else "",
                          linear)


# ----------------------------------------------------------- handler-less launches
def launch(ex: LaunchingExecutor, q: QueueRef, kind: str, index_space: Any, fn: types.FunctionType,
           name: str | None) -> Any:
    """``Executor.launch``: ``q.parallel_for(space, fn)`` / ``q.single_task(fn)`` without
    dependencies; its native event. A remembered launch of ``fn``'s code whose index
    space and refreshed arguments still fit is enqueued at once; else the whole way."""
    ln = ex.launches.get(fn.__code__)
    if ln and name is None and ln.kind == kind and ln.gen == kernels.generation \
            and not _bounds.mode[0] and ln.k.props == getattr(fn, PROPS_ATTR, None) \
            and (kind == "single_task" or (
                index_space.values if kind == "range" else (
                    index_space.get_global_range().values,
                    index_space.get_local_range().values,
                    index_space.get_offset().values))  # an offset: the whole way refuses it
                == ln.space):
        try:
            got = ln.refresh(fn, ln.want)
        except ValueError:  # an empty closure cell: the whole way says so
            got = None
        if got is not None:
            _stats["memory_hits"] += 1  # a remembered launch is a kernel-cache hit
            if ln.primes:  # the backend keeps a native copy: the values the refresh read
                return ln.enqueue(got[0], got[1] or None, None, ln.bound, got[2])
            return ln.enqueue(got[0], got[1] or None, None, ln.bound)
    return launch_whole(ex, q, kind, index_space, fn, name)


def launch_whole(ex: LaunchingExecutor, q: QueueRef, kind: str, space: Any,
                 fn: types.FunctionType, name: str | None) -> Any:
    """A kernel with no dependencies and no accessors the whole way (no command-group
    bookkeeping); then, where it can have one, a remembered launch for the next ones."""
    check_kernel(fn, *_WHERE[kind])
    if name is not None:
        check_kernel_name(name, fn)
    ndim = 0 if space is None else space.dimensions
    cmd = KernelCommand.record(kind, ndim, space, fn, (), name)  # type: ignore[arg-type]
    ln, values, watch = _prepare(ex, Ungrouped(q), cmd)
    ex.shape = None  # set by the launch where it has one
    ev = _marker(ex, None) if ln is None else ln.run(values, None, watch)
    ex.last = ev
    ex.since = _now()
    code = fn.__code__
    if ln is not None and ex.launches.get(code) is not False:
        _remember(ex, code, fn, ln, name, watch)
    return ev


def _remember(ex: LaunchingExecutor, code: types.CodeType, fn: types.FunctionType, ln: Launch,
              name: str | None, watch: tuple[Any, ...] | None) -> None:
    """Remember ``ln``, which ran ``fn``, for its next launches, with the refresh of its
    arguments; ``False`` where it cannot have one (its launches take the whole way)."""
    made = None if name is not None or watch is not None else refresh_for(fn, ln.k, ln.tail,
                                                                        ln.primes)
    if made is None or ln.printer is not None:
        ex.launches[code] = False
        return
    if ln.refresh is not None and ln.refresh is not made[0]:  # shared: another shape -- a copy
        ln = ex.launch_class(ex, ln.k, ln.clk, ln.kind, ln.space, ln.gsize, ln.lsize)
    ln.refresh, ln.want = made
    if len(ex.launches) >= REMEMBERED:
        ex.launches.clear()
    ex.launches[code] = ln


class Ungrouped:
    """The command group of a kernel launched without one (``q.parallel_for(r, k)``): what
    :class:`~pysycl._core.launch_types.CommandGroupRef` names -- the queue, its context's key
    (an accessor belongs to no such group); no bundle, no specialization constants, no
    requirements."""

    __slots__ = ("context_key", "queue")
    kernel_bundle = None
    specialization_values = None
    requirements = ()

    def __init__(self, q: QueueRef) -> None:
        self.queue = q
        self.context_key = q.get_context().key

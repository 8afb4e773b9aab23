"""The host_debuggable device's executor: command groups run in the Python interpreter.

A queue on the host device (:mod:`pysycl._backends.host.device`) has a
:class:`HostExecutor`; its ``submit`` runs each command group to completion.
Design: docs/design/host-device.md.

* **Data**: for the host device a buffer's "device copy" is its host copy. Each
  requirement calls ``Coherence.acquire_host`` (:mod:`pysycl._memory.coherence`), which waits for
  OpenCL work on the buffer and copies newer device data back; the buffer is
  then current on the host (and OpenCL queues copy it again when they need it).
  Commands complete before ``submit`` returns: events are complete host events.
* **Kernels** are the user's Python function itself. The capture rules are the
  compiled path's (:func:`pysycl._commands.launch._capture_values`), so the same kernel is
  accepted or rejected with the same error on both devices. While the kernel runs,
  each accessor is bound to a numpy view of its (ranged) region, each
  ``local_accessor`` to a fresh array per work-group.
* **range** kernels run as a loop in the calling thread (pdb works as anywhere).
  **nd_range** kernels run one work-group at a time, one thread per work-item,
  scheduled deterministically by :class:`_GroupRun`: exactly one work-item runs
  at a time, in local-linear-id order, until it reaches a barrier or returns,
  so ``print`` output is ordered and a pdb session is never interleaved with
  another work-item. A barrier that not every work-item reaches (some returned,
  or they wait at different barriers) is detected exactly and raises
  ``errc.kernel`` naming the kernel and the lines -- no timeout, which would fire
  while a user sits in pdb.
* **Errors**: an exception raised by the kernel is re-raised from ``submit`` as
  ``sycl.exception(errc.kernel)`` chained to the original (whose traceback shows
  the kernel's line); a ``sycl.exception`` raised inside the kernel (such as
  ``errc.accessor`` for a write through a read accessor) is re-raised itself with a
  note naming the kernel and work-item. Buffers the kernel writes are restored
  to their previous contents, so a failed kernel leaves them as they were.
"""

from __future__ import annotations

import builtins
import ctypes
import itertools
import operator
import sys
import types
from collections.abc import Callable, Sequence
from math import prod
from typing import TYPE_CHECKING, Any

import numpy as np

from pysycl._backends.host.atomics import AnyHostReducer, _HostReducer, host_reducer
from pysycl._backends.host.ndrange import HostHierGroup, _run_nd_range
from pysycl._backends.host.views import raise_from, region_view
from pysycl._bundles.resolve import interpreted_submit
from pysycl._commands.commands import (
    CopyCommand,
    FillCommand,
    GraphCommand,
    HostTaskCommand,
    KernelCommand,
    USMCopyCommand,
    USMFillCommand,
)
from pysycl._commands.handler import handler
from pysycl._commands.host_task import run_host_task
from pysycl._core.exceptions import errc, exception, hidden_in_tracebacks
from pysycl._core.plaincode import plain_tree
from pysycl._core.vec_layout import vec_parts
from pysycl._core.where import location
from pysycl._kernels import bounds as _bounds
from pysycl._kernels import kernel_api_host as _host
from pysycl._kernels import kprint as _kprint
from pysycl._kernels import kstream as _kstream
from pysycl._kernels import matrix_flight as _flight
from pysycl._kernels import steps as _steps
from pysycl._kernels.captures import capture_values
from pysycl._kernels.functor import body_of
from pysycl._kernels.kernel_api import local_accessor
from pysycl._kernels.kernel_api_host import KernelView, VecKernelView
from pysycl._kernels.kprops import NONE, Props, check_launch, props_of
from pysycl._kernels.ndrange import SMALL, check_global_size, check_nd_range
from pysycl._kernels.reduction import check_command
from pysycl._kernels.signature import no_value, returned, returns_computed
from pysycl._memory.accessor import accessor
from pysycl._memory.usm import bytes_at, usm_pointer
from pysycl._objects.range import item, nd_range
from pysycl._objects.range import range as _range

if TYPE_CHECKING:
    from pysycl._commands.handler import handler
    from pysycl._commands.queue import queue
    from pysycl._core.launch_types import Submission
    from pysycl._kernels.reduction import reduction
    from pysycl._kernels.specconst import kernel_handler
    from pysycl._objects.context import context
    from pysycl._objects.device import device

#: pytest leaves this module's frames out of a kernel's reported failure (a failed assert,
#: a bounds violation): the user's synchronizing line shows where it surfaced.
__tracebackhide__ = hidden_in_tracebacks


# ------------------------------------------------------------------ submit
class HostExecutor:
    """The executor of a queue on the host device: every command completes at submit.

    It holds no device memory: buffers' host copies are the device copies.
    """

    __slots__ = ("__weakref__", "key")
    native = None  # no backend queue

    def __init__(self, ctx: context, dev: device, *, profiling: bool) -> None:
        self.key = ctx.key

    def submit(self, sub: Submission) -> None:
        return submit(sub)  # complete: no native event

    def launch(self, q: Any, kind: str, index_space: Any, fn: Callable[..., Any],
               name: str | None) -> None:
        """A kernel without a command group: the command group the queue would record."""
        h = handler(q)
        try:
            if kind == "single_task":
                h.single_task(fn, kernel_name=name)
            else:
                h.parallel_for(index_space, fn, kernel_name=name)
            return submit(h.submission())
        finally:
            h.release()

    def launch_reductions(self, q: Any, kind: str, index_space: Any,
                          reductions: Sequence[Any], fn: Callable[..., Any],
                          name: str | None) -> None:
        """A kernel with reductions without a command group: the group the queue would
        record."""
        h = handler(q)
        try:
            h.parallel_for(index_space, *reductions, fn, kernel_name=name)
            return submit(h.submission())
        finally:
            h.release()

    def wait(self) -> None:
        pass  # each command group completed at submit

    def wait_events(self, natives: Sequence[None]) -> None:
        pass

    def wait_event(self, native: None) -> None:
        pass

    def status(self, native: None) -> str:
        return "complete"

    def profile(self, native: None, which: str) -> int:
        raise exception(errc.invalid, "the host device has no profiling timestamps")

    # Buffers never use these (their host copy is the host device's copy); they make
    # the memory half of the Executor protocol whole: plain host bytes, copies at once.
    def alloc(self, nbytes: int) -> np.ndarray:
        return np.zeros(max(int(nbytes), 1), np.uint8)

    def read_back(self, host: np.ndarray, mem: np.ndarray, after: None) -> None:
        self.read(host, mem, None)  # done at once: no native event

    def alloc_visible(self, nbytes: int) -> None:
        return None  # its kernels run in the interpreter: no launch steps

    def settle(self, finished: bool = False) -> None:
        pass  # nothing is left for a synchronization point

    def before_host_sees(self, st: object) -> None:
        pass  # its kernels report at once

    def write(self, mem: np.ndarray, host: np.ndarray, wait_for: Sequence[None] | None) -> None:
        src = np.ascontiguousarray(host).reshape(-1).view(np.uint8)
        mem[:src.size] = src
        return None  # done: no native event

    def read(self, host: np.ndarray, mem: np.ndarray, wait_for: Sequence[None] | None) -> None:
        np.copyto(host, mem[:host.nbytes].view(host.dtype).reshape(host.shape))

    def free(self, mem: object) -> None:
        pass  # numpy's memory: it goes with the last reference


def submit(sub: Submission) -> None:
    """Execute the command group recorded in ``sub`` (of a host device queue) to completion."""
    cmd = sub.command
    # may raise: nothing moved yet (``sub`` is the handler, whose captures it reads)
    run = _prepare(sub.queue, sub, cmd) if type(cmd) is KernelCommand else None  # type: ignore[arg-type]
    for native, other in sub.waits:
        other.wait_event(native)
        if _steps.active or _kprint.pending or _bounds.watching:
            _steps.settle(waited=native)  # as the dependency's event.wait() does
    if type(cmd) is HostTaskCommand:
        run_host_task(sub.queue, sub.requirements, cmd)
        return
    for acc in sub.requirements:
        acc.coherence.acquire_host(writes=acc.writes, no_init=acc.no_init)
    match cmd:
        case KernelCommand():
            run()  # type: ignore[misc]
        case FillCommand(dest=acc, value=value):
            region_view(acc)[...] = np.asarray(value, dtype=acc.dtype)
        case CopyCommand(src=src, dest=dest):
            _copy(src, dest)
        case USMCopyCommand(dst=dst, src=src, nbytes=n):
            ctypes.memmove(dst, src, n)
        case USMFillCommand(dst=dst, pattern=pattern, nbytes=n):
            if n:
                pat = pattern.reshape(1).view(np.uint8)
                bytes_at(dst, n).reshape(-1, pat.size)[...] = pat
        case GraphCommand(graph=graph):  # h.ext_oneapi_graph: its waits are done
            graph.run(sub.queue, [])
        case _:  # update_host: acquire_host above made the host copy current; empty: nothing
            pass


def _copy(src: accessor | np.ndarray, dst: accessor | np.ndarray) -> None:
    if isinstance(src, accessor):
        s = region_view(src, writable=False).reshape(-1)
    else:
        s = np.asarray(src).reshape(-1)
    if isinstance(dst, accessor):
        d = region_view(dst)
        flat = d.reshape(-1).copy()
        flat[:s.size] = s[:flat.size]
        d[...] = flat.reshape(d.shape)
    else:
        if not dst.flags.c_contiguous or dst.dtype != src.dtype:
            raise exception(errc.invalid, "copy(accessor, array): the destination must be a "
                            f"C-contiguous {src.dtype} array")
        dst.reshape(-1)[:s.size] = s


# ----------------------------------------------------------------- kernels
def _describe(fn: object) -> str:
    body = body_of(fn) if not isinstance(fn, types.FunctionType) else None
    if body is not None:
        fn = body[0]
    code = getattr(fn, "__code__", None)
    where = f" ({location(code.co_filename, code.co_firstlineno)})" if code is not None else ""
    return f"kernel {getattr(fn, '__qualname__', fn)!r}{where}"


def _prepare(q: queue, h: handler, cmd: KernelCommand) -> Callable[[], None]:
    """Check a kernel command as the compiled path does; return the function that runs it."""
    from pysycl._bundles import kernel as _kernel
    from pysycl._kernels import specconst as _specconst

    kind, index_space, fn, reds, kernel_name = (
        cmd.kind, cmd.index_space, cmd.fn, cmd.reductions, cmd.name)
    named = "" if kernel_name is None else f" (kernel_name {kernel_name!r})"
    if type(fn) is _kernel.kernel:
        raise exception(errc.kernel_not_supported, f"{fn!r}{named} is an OpenCL kernel object; "
                        "the host_debuggable device runs Python kernels only")
    desc = _describe(fn) if kernel_name is None else f"kernel {kernel_name!r}"
    check_command(h, reds)
    body = body_of(fn) if not isinstance(fn, types.FunctionType) else None
    if body is None:  # a kernel in a module pytest rewrote: its plain code, as compiled
        fn = plain_tree(fn)
    code = fn.__code__ if body is None else body[0].__code__
    # the compiled path's capture rules (a function object: its body and self)
    _, values, caps, tkey = capture_values(*((fn, h) if body is None else (body[0], h, body[1])))
    if reds and h.kernel_bundle is not None:  # as compiled devices answer
        raise exception(errc.feature_not_supported, "pysycl: reductions work with Python "
                        "kernels compiled at submit, not with sycl.kernel objects or "
                        "use_kernel_bundle")
    # kernel ids and use_kernel_bundle, as on compiled devices (nothing compiles here)
    interpreted_submit(h, cmd, fn if body is None else body[0], caps, tkey, code,
                       q.get_context(), q.get_device())
    # each local accessor once (a helper reading the kernel's is the same memory)
    locals_ = list({id(v): v for v in values if type(v) is local_accessor}.values())
    if locals_ and kind not in _GROUPED:
        raise exception(errc.kernel_argument, f"{desc} captures a sycl.local_accessor, but "
                        "local memory exists only in nd_range kernels: launch it with "
                        "h.parallel_for(sycl.nd_range(global_range, local_range), kernel)")
    props = props_of(fn if body is None else body[0])
    if props != NONE:  # kernel properties, checked as compiled devices check them
        check_launch(props, desc, kind, index_space.get_local_range().values
                     if kind in _GROUPED else None, q.get_device(), "host")
    if kind in _GROUPED:
        _check_nd_range(desc, index_space, locals_, reds)
    if kind != "single_task":  # work-items counted by Python's range (ssize_t)
        g = (index_space if kind == "range" else index_space.get_global_range()).values
        if prod(g) > SMALL:
            check_global_size(desc, g, q.get_device(), (sys.maxsize, "the host device counts "
                                                        "work-items in C's ssize_t"))
    nparams = 0 if kind == "single_task" else 1 + len(reds)
    extra: list[kernel_handler] = []
    if code.co_argcount - (body is not None) == nparams + 1:  # a trailing sycl.kernel_handler
        extra.append(_specconst.host_kernel_handler(h.specialization_values))
    if returns_computed(code):  # the kernel's result may be a value the launch would lose
        fn = _result_checked(fn, desc)
    reqs = list(h.requirements)
    ptrs = [v for v in values if type(v) is usm_pointer and not v.readonly]
    streams = [v for v in values if type(v) is _kstream.stream]
    if streams:  # each work-item's end flushes its stream output; notes name the kernel
        where = (f"kernel {kernel_name or (fn if body is None else body[0]).__qualname__} "
                 f"({location(code.co_filename, code.co_firstlineno)})")  # as compiled kernels' notes
        return lambda: _kstream.run_on_host(streams, where, lambda f: _run(
            desc, kind, f, index_space, reqs, locals_, reds, extra, ptrs, props), fn)
    return lambda: _run(desc, kind, fn, index_space, reqs, locals_, reds, extra, ptrs, props)



def _result_checked(fn: Callable[..., object], desc: str) -> Callable[..., None]:
    """``fn``, raising the compiled path's ``kernel_signature_error`` when a work-item's
    result is a value (``lambda i: ra[i] * 2``): a kernel writes through accessors."""
    def work_item(*args: Any) -> None:
        r = fn(*args)
        if r is not None and not no_value(r, _HostReducer):
            raise returned(desc, r)

    return work_item


def _run(desc: str, kind: str, fn: Callable[..., object], index_space: _range | nd_range | None,
         reqs: list[accessor], locals_: list[local_accessor],
         reds: Sequence[reduction], extra: list[kernel_handler],
         ptrs: Sequence[usm_pointer] = (), props: Props = NONE) -> None:
    """Run a checked kernel command; a failed kernel leaves its buffers and the USM
    memory it could write as they were (``props``: its kernel properties, of which the
    host device uses reqd_sub_group_size and ext_pysycl_mads_in_flight)."""
    reducers = [host_reducer(r) for r in reds]
    backups = {}
    for acc in reqs:
        st = acc.coherence
        if acc.writes and id(st) not in backups:
            backups[id(st)] = (st.host, st.host.copy())
    for p in ptrs:
        a = p._alloc
        if id(a) not in backups:
            mem = bytes_at(a.address, a.nbytes)
            backups[id(a)] = (mem, mem.copy())
    for acc in reqs:
        view = region_view(acc, writable=acc.writes)
        acc.host_view = view.view(VecKernelView if vec_parts(acc.dtype) else KernelView)
    try:
        if kind == "single_task":
            _call(desc, fn, (*extra,), "the single task")
        elif kind == "range":
            _run_range(desc, fn, index_space, reducers, extra)
        elif kind == "hierarchical":
            with np.errstate(all="ignore"):
                _run_hierarchical(desc, fn, index_space, locals_, extra)
        else:
            token = _flight.mads_in_flight.set(props[3])  # the work-items' context copies
            try:
                with np.errstate(all="ignore"):  # device arithmetic: wrap-around, inf/nan
                    _run_nd_range(desc, fn, index_space, locals_, reducers, extra, props[2])
            finally:
                _flight.mads_in_flight.reset(token)
        for r in reducers:
            r.write_back()
    except BaseException:
        for host, saved in backups.values():
            host[...] = saved  # a failed kernel leaves its buffers as they were
        raise
    finally:
        for acc in reqs:
            acc.host_view = None
        for la in locals_:
            la.host_view = None


def _check_nd_range(desc: str, nd: nd_range, locals_: list[local_accessor],
                    reds: Sequence[reduction]) -> None:
    """The compiled path's launch checks (§4.9.4.2.2), with the host device's limits."""
    from pysycl._backends.host.device import LOCAL_MEM_SIZE, MAX_WORK_GROUP_SIZE

    def describe(what: str) -> str:
        if what == "where":
            return desc
        if what == "wg":
            return (f"the {MAX_WORK_GROUP_SIZE} of the host_debuggable device "
                    "(info.device.max_work_group_size); use a smaller local range")
        return (f"the {LOCAL_MEM_SIZE} bytes of the host_debuggable device "
                "(info.device.local_mem_size)")


    check_nd_range(nd, MAX_WORK_GROUP_SIZE, None,
                           sum(la.byte_size() for la in locals_), LOCAL_MEM_SIZE, describe)


#: The launches with work-groups (local memory, a local range).
_GROUPED = ("nd_range", "hierarchical")


def _run_hierarchical(desc: str, fn: Callable[..., object], nd: nd_range,
                      locals_: list[local_accessor], extra: list[kernel_handler]) -> None:
    """A hierarchical kernel: ``fn(g)`` once per work-group (SYCL 2020 §4.9.4.2.3); its
    ``parallel_for_work_item`` calls loop over the work-items
    (:class:`~pysycl._objects.hierarchical.hierarchical_group`)."""
    for gid in itertools.product(*(builtins.range(n) for n in nd.get_group_range())):
        for la in locals_:  # fresh local memory per work-group, as in nd_range kernels
            la.host_view = np.full(tuple(la.get_range()), np.nan if la.dtype.kind in "fc" else 0,
                                   dtype=la.dtype).view(KernelView)
        _call(desc, fn, (HostHierGroup(gid, nd), *extra), f"work-group {gid}")


def _call(desc: str, fn: Callable[..., object], args: tuple[Any, ...], who: str) -> None:
    prev = _host.set_active(True)
    try:
        with np.errstate(all="ignore"):  # device arithmetic: wrap-around, inf/nan, no warnings
            fn(*args)
    except Exception as e:
        raise_from(desc, e, who)
    finally:
        _host.set_active(prev)


class _HostItem(item):
    """A range kernel's work-item; a 1-D item also acts as an integer (as in kernels)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, item):
            return super().__eq__(other)
        return bool(operator.index(self) == other)

    __hash__ = item.__hash__


def _int_op(op: Callable[[Any, Any], Any], reflected: bool = False) -> Callable[..., Any]:
    if reflected:
        return lambda self, other: op(other, operator.index(self))
    return lambda self, other: op(operator.index(self), other)


for _name, _op in (("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                   ("floordiv", operator.floordiv), ("truediv", operator.truediv),
                   ("mod", operator.mod), ("lshift", operator.lshift),
                   ("rshift", operator.rshift), ("and", operator.and_), ("or", operator.or_),
                   ("xor", operator.xor)):
    setattr(_HostItem, f"__{_name}__", _int_op(_op))
    setattr(_HostItem, f"__r{_name}__", _int_op(_op, reflected=True))
for _name, _op in (("lt", operator.lt), ("le", operator.le), ("gt", operator.gt),
                   ("ge", operator.ge)):
    setattr(_HostItem, f"__{_name}__", _int_op(_op))
_HostItem.__int__ = item.__index__  # type: ignore[method-assign]
_HostItem.__neg__ = lambda self: -operator.index(self)  # type: ignore[attr-defined]


def _run_range(desc: str, fn: Callable[..., object], rng: _range, reducers: list[AnyHostReducer],
               extra: list[kernel_handler]) -> None:

    prev = _host.set_active(True)
    idx: tuple[int, ...] = ()
    failed: tuple[AssertionError, tuple[int, ...]] | None = None
    failures = 0
    try:
        with np.errstate(all="ignore"):
            for idx in itertools.product(*(builtins.range(n) for n in rng)):
                try:
                    fn(_HostItem(idx, rng), *reducers, *extra)
                except AssertionError as e:  # the work-item ends; the others run (as on devices)
                    failures += 1
                    if failed is None:
                        failed = (e, idx)
    except Exception as e:
        raise_from(desc, e, f"work-item {idx}")
    finally:
        _host.set_active(prev)
    if failed is not None:
        raise_from(desc, failed[0], f"work-item {failed[1]}", failures)


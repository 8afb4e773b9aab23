"""From a recorded kernel command to an enqueued OpenCL kernel (above the kernel and bundle layers).

The submit hot path: read the kernel's captured values and type-key them
(:mod:`pysycl._kernels.captures`), look the key up in the kernel cache
(:mod:`pysycl._kernels.cache`; a kernel bundle given to ``use_kernel_bundle``
instead), check the launch (static bounds, :mod:`pysycl._kernels.ndrange`),
flatten the values into OpenCL arguments (:mod:`pysycl._kernels.args`), enqueue.
The per-``__code__`` analysis is done once; a command group that creates a
fresh lambda object on every submit hits the same cache entry.

Only the executors import this module: it needs the bundle
layer (``use_kernel_bundle``, the kernel-id registry, ``sycl.kernel`` objects),
which itself stands on the rest of :mod:`pysycl._kernels`.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Hashable, Sequence
from math import prod as _prod
from typing import TYPE_CHECKING, Any

from pysycl._bundles import kernel as _kernel
from pysycl._bundles import kernel_id as _kernel_id
from pysycl._bundles.ops import launch_kernel as _bundle_kernel
from pysycl._core.abi import ArgKind, IndexSpace
from pysycl._core.exceptions import errc, exception
from pysycl._kernels import bounds as _bounds
from pysycl._kernels import reduction as _reduction
from pysycl._kernels import specconst as _specconst
from pysycl._kernels import steps as _steps
from pysycl._kernels.args import accessor_ranges, flat_args, with_local_memory
from pysycl._kernels.args import cl as _cl
from pysycl._kernels.cache import Kernel, kernels, target_of
from pysycl._kernels.captures import CodeInfo, capture_values, captures_of, generic_key
from pysycl._kernels.digest import stable_digest
from pysycl._kernels.functor import body_of
from pysycl._kernels.kassert import submit_site
from pysycl._kernels.ndrange import SMALL as _SMALL
from pysycl._kernels.ndrange import check_global_size, check_nd_range, ndrange_sizes
from pysycl._memory import tables as _tables

if TYPE_CHECKING:
    import numpy as np
    import pyopencl as cl

    from pysycl._commands.commands import KernelCommand
    from pysycl._commands.handler import handler
    from pysycl._commands.queue import queue
    from pysycl._kernels.captures import CaptureEntry

_sycl_kernel = _kernel.kernel
_FunctionType = types.FunctionType
_CHECKED = "bounds_check"  # the memory-cache key's suffix in bounds-checked mode

# The kernel cache's counters and memory, under the names the tests read.
stats = _stats = kernels.stats
_kernels = _memory = kernels.memory
__all__ = ["check_nd_range", "prepare"]


class Shortcut:
    """The handler of a kernel launched without a command group (``q.parallel_for(r, k)``).

    :func:`prepare` reads what the ``CommandGroupRef`` protocol
    (:mod:`pysycl._core.launch_types`) names but ``requirements``: the queue and its
    context's key (the capture rules: an accessor belongs to no shortcut), the bundle
    and the specialization constants; a shortcut has none of the last two, and costs
    a fraction of a :class:`handler` on the USM fast path.
    """

    __slots__ = ("clk", "context_key", "mkey", "queue")
    kernel_bundle = None
    specialization_values = None

    def __init__(self, q: queue) -> None:
        self.queue = q
        self.context_key = q.get_context().key
        self.mkey: tuple[Hashable, ...] | None = None  # set by prepare, read by resolved
        self.clk: cl.Kernel | None = None  # an nd_range's kernel, set by prepare (bounded_kernel)


# long: the per-submit hot path, kept in one frame (each helper call costs ~50 ns).
def prepare(q: queue, h: handler,
            cmd: KernelCommand) -> Callable[[Sequence[cl.Event] | None], cl.Event | None]:
    """Compile/build as needed and return ``launch(wait_for) -> cl event``.

    Everything that can fail for a user mistake happens here, before the
    executor moves any data. The hot path of every submit: kept to the
    lookups and checks a launch needs (one function, no helper calls on a hit;
    that is why it is longer than the others).
    """
    fn = cmd.fn
    if cmd.reductions:  # sycl.reduction arguments: a kernel plus a combine step
        if type(fn) is _sycl_kernel or h.kernel_bundle is not None:
            raise exception(errc.feature_not_supported, "pysycl: reductions work with Python "
                            "kernels compiled at submit, not with sycl.kernel objects or "
                            "use_kernel_bundle")
        return _reduction.prepare(q, h, cmd)
    if type(fn) is _sycl_kernel:  # a sycl.kernel object (source/interop) with set_arg arguments
        return _kernel.prepare_interop(q, h, cmd)
    kind, index_space = cmd.kind, cmd.index_space
    obj = None
    if type(fn) is not _FunctionType:  # a function object: its body and self
        fn, obj = body_of(fn)  # type: ignore[misc]  # the handler checked it has one
    info, values, caps, tkey = capture_values(fn, h, obj)
    mkey = (info.code, tkey, kind, cmd.ndim)
    if type(h) is Shortcut:  # for resolved(): reading the captures again would copy tables
        h.mkey = mkey
    kb = h.kernel_bundle
    ex = q.executor
    dev = ex.device
    ctx = ex.context
    checked = kb is None and _bounds.enabled()  # bounds-checked mode: another compiled kernel
    spec = None
    if kb is not None:  # use_kernel_bundle: the kernel comes from the bundle, never compiled
        k, clk = _bundle_kernel(kb, generic_key(caps, tkey, mkey)[2], ctx, dev, fn, cmd.name)
        if cmd.name is not None and not _kernel_id.is_registered(
                cmd.name, generic_key(caps, tkey, mkey)[2]):
            _register(k, fn, info, caps, tkey, mkey, cmd)
    else:
        k = _memory.get(mkey if not checked else (*mkey, _CHECKED))
        if k is None:
            k = _compile(fn, info, caps, tkey, mkey, cmd, checked, target_of(dev), values)
        else:
            _stats["memory_hits"] += 1
            if cmd.name is not None and not _kernel_id.is_registered(
                cmd.name, generic_key(caps, tkey, mkey)[2]):
                _register(k, fn, info, caps, tkey, mkey, cmd, checked)
        spec = _spec_values(k, values, h) if k.has_spec else None
        clk = ex.build(k, spec, 0, fn, cmd.name)  # spec constants: one build per set of values
    if kind == "range":
        gsize = index_space.values[::-1]  # SYCL dim 0 is the slowest: OpenCL's last
        lsize = None
        if _prod(gsize) > _SMALL:  # more work-items than a 32-bit size_t: the device's limit
            check_global_size(k.named(cmd.name), index_space.values, dev)
    elif kind == "single_task":
        gsize, lsize = (1,), None
    else:
        if kb is None:  # wider than the driver promises (PTX): a build with a launch bound
            clk = ex.bounded_kernel(k, clk, index_space, spec, fn, cmd.name)
            if type(h) is Shortcut:
                h.clk = clk
        gsize, lsize = ndrange_sizes(k, dev, ex.kernel_limits(clk), index_space, values)
    if k.direct or k.direct_rest:  # the static bounds check: a few int compares
        _bounds.check_static(k, info.location, fn, kind, index_space, values)
    if k.prints:  # print() in the kernel: an output buffer per launch, decoded at a sync point
        return _print_launch(q, k, info, fn, cmd, clk, gsize, lsize, values, checked)
    if checked or k.asserts:  # an error buffer, read back after the kernel
        return _checked_launch(q, k, info, fn, cmd, clk, gsize, lsize, values)
    if k.has_local:
        values = _local_values(k, kind, values)
    kinds = k.arg_kinds
    bound = ex.last_args(k)
    x = _cl()
    clq = ex.native
    key = ex.key
    shape = (clk, gsize, lsize)  # what the executor learns quick waits by
    if k.has_pointer:  # USM: the pointers (and host arrays) live until the kernel completes
        inflight = ex.inflight

        def launch_usm(wait_for: Sequence[cl.Event] | None) -> cl.Event:
            if 0 in gsize:
                return x.marker(clq, wait_for=wait_for)
            ev = x.launch(clq, clk, gsize, lsize, flat_args(values, kinds, key), wait_for,
                          bound, inflight, values)
            ex.shape = shape
            return ev

        return launch_usm

    def launch(wait_for: Sequence[cl.Event] | None) -> cl.Event:
        if 0 in gsize:
            return x.marker(clq, wait_for=wait_for)  # an empty range runs no work-item
        ev = x.launch(clq, clk, gsize, lsize, flat_args(values, kinds, key), wait_for, bound)
        ex.shape = shape
        return ev

    return launch


def resolved(q: queue, h: Shortcut) -> tuple[Kernel | None, cl.Kernel | None]:
    """The memory-cached kernel and built ``cl_kernel`` that :func:`prepare` used for a
    handler-less launch (``h``; None when they are not plain cached ones)."""
    k = None if h.mkey is None else _memory.get(h.mkey)
    if k is None or k.has_spec:
        return None, None
    return k, h.clk if h.clk is not None else q.executor.build(k)


def _compile(fn: types.FunctionType, info: CodeInfo, caps: list[CaptureEntry], tkey: tuple[Hashable, ...],
             mkey: tuple[Hashable, ...], cmd: KernelCommand, checked: bool,
             target: tuple[str, str], values: list[Any]) -> Kernel:
    """A memory miss: the kernel (its image for ``target``) from the disk cache or the
    compiler, registered by name. A compile error about a lookup table (a store into
    it) says what the table is (``values``: the captured values)."""
    index = IndexSpace(cmd.kind, cmd.ndim)
    name = cmd.name or fn.__qualname__

    def make() -> Kernel:
        captures = captures_of(caps)
        return kernels.load_or_compile(stable_digest(fn, captures, index, checked), fn, index,
                                       captures, name, checked, target)

    with _tables.explaining([c[0] for c in caps], values):
        k = kernels.once(mkey if not checked else (*mkey, _CHECKED), make)
    _register(k, fn, info, caps, tkey, mkey, cmd, checked)
    return k


def _register(k: Kernel | None, fn: types.FunctionType, info: CodeInfo, caps: list[CaptureEntry],
              tkey: tuple[Hashable, ...], mkey: tuple[Hashable, ...], cmd: KernelCommand,
              checked: bool = False) -> None:
    """Add the kernel to the kernel-id registry (under ``cmd.name`` or its automatic name).

    Bundles never get a bounds-checked kernel: the registry gets the plain variant
    (compiled when a bundle asks for it).
    """
    caps, tkey, mkey, specialised = generic_key(caps, tkey, mkey)
    if specialised:  # the registry's kernel is the generic one, compiled when asked for
        k = None
    _kernel_id.register_submitted(None if checked else k, fn, cmd.name, mkey,
                                  IndexSpace(cmd.kind, cmd.ndim), caps, tkey)


def _spec_values(k: Kernel, values: list[Any], h: handler) -> tuple[np.generic | None, ...]:
    """The values of the kernel's specialization constants for this command group."""
    return _specconst.values_for([v for v, kind in zip(values, k.arg_kinds, strict=True)
                                  if kind is ArgKind.SPEC_CONSTANT], h.specialization_values)


def _local_values(k: Kernel, kind: str, values: list[Any]) -> list[Any]:
    """``values`` with the local accessors' OpenCL arguments (nd_range kernels only)."""
    if kind != "nd_range":
        raise exception(errc.kernel_argument, f"{k.where} captures a sycl.local_accessor, but "
                        "local memory exists only in nd_range kernels: launch it with "
                        "h.parallel_for(sycl.nd_range(global_range, local_range), kernel)")
    return with_local_memory(values, k.arg_kinds)


def _checked_launch(q: queue, k: Kernel, info: CodeInfo, fn: types.FunctionType, cmd: KernelCommand,
                    clk: cl.Kernel, gsize: tuple[int, ...], lsize: tuple[int, ...] | None,
                    values: list[Any]) -> Callable[[Sequence[cl.Event] | None], cl.Event]:
    """``launch(wait_for)`` of a bounds-checked kernel or one with asserts: the kernel's
    persistent error slot as its last argument (:mod:`pysycl._kernels.steps`), and what a
    failure reports (a :class:`~pysycl._kernels.bounds.Watch`) appended to it."""
    w = _watch(q, k, fn, info, cmd, values)
    if k.has_local:
        values = _local_values(k, cmd.kind, values)
    x = _cl()
    ex = q.executor
    clq, key, kinds = ex.native, ex.key, k.arg_kinds
    inflight = ex.inflight if k.has_pointer else None  # the pointers live until it completes
    bound = ex.last_args(k)
    shape = (clk, gsize, lsize)  # what the executor learns quick waits by
    ctx_key = ex.context.key

    def launch(wait_for: Sequence[cl.Event] | None) -> cl.Event:
        if 0 in gsize:
            return x.marker(clq, wait_for=wait_for)
        args = flat_args(values, kinds, key)
        slot = _steps.error_slot(ex, k, ctx_key, w)
        args.append(slot.arg)
        try:
            ev = x.launch(clq, clk, gsize, lsize, args, wait_for, bound, inflight, values)
        except BaseException:
            slot.release()
            raise
        slot.add(ev, w)
        ex.shape = shape
        return ev

    return launch


def _watch(q: queue, k: Kernel, fn: types.FunctionType, info: CodeInfo, cmd: KernelCommand,
           values: list[Any]) -> tuple[Any, ...]:
    """What a failure of this launch reports (:func:`pysycl._kernels.bounds.record`):
    accessor ranges only where the kernel checks them, the user's submit site only where
    it asserts."""
    ranges = accessor_ranges(values, k.arg_kinds) if k.compiled.bounds_checked else []
    return _bounds.record(q, k, fn, cmd.name or fn.__qualname__, info.location, values, ranges,
                          max(cmd.ndim, 1), submit_site() if k.asserts else "")


def _print_launch(q: queue, k: Kernel, info: CodeInfo, fn: types.FunctionType,
                  cmd: KernelCommand, clk: cl.Kernel, gsize: tuple[int, ...],
                  lsize: tuple[int, ...] | None, values: list[Any], checked: bool
                  ) -> Callable[[Sequence[cl.Event] | None], cl.Event]:
    """``launch(wait_for)`` of a kernel that calls ``print`` or writes a ``sycl.stream``: its
    output buffers (and with asserts its error slot), read back after it."""
    if checked:
        raise exception(errc.feature_not_supported, f"{k.where}: print() and sycl.stream in "
                        "kernels are not available in bounds-checked mode (PYSYCL_BOUNDS_CHECK=1) "
                        "yet; run without it, or on the host_debuggable device")
    w = _watch(q, k, fn, info, cmd, values) if k.asserts else None
    if k.has_local:
        values = _local_values(k, cmd.kind, values)
    x = _cl()
    ex = q.executor
    clq, ctx, key, kinds = ex.native, ex.context, ex.key, k.arg_kinds
    inflight = ex.inflight if k.has_pointer else None  # the pointers live until it completes
    step = _steps.PrintStep(ex, k.name, k.where)

    def launch(wait_for: Sequence[cl.Event] | None) -> cl.Event:
        if 0 in gsize:
            return x.marker(clq, wait_for=wait_for)
        bound, outs = step.before(values)
        args = flat_args(bound, kinds, key)
        slot = _steps.error_slot(ex, k, ctx.key, w) if w is not None else None
        if slot is not None:
            args.append(slot.arg)
        try:
            ev = x.launch(clq, clk, gsize, lsize, args, wait_for, None, inflight, values)
        except BaseException:
            if slot is not None:
                slot.release()
            raise
        step.after(ev, outs)
        if slot is not None:
            slot.add(ev, w)
        return ev

    return launch

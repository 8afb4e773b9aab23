"""Launching a kernel with reductions on a device queue: :func:`prepare` (issue 27).

The kernel with its reductions is compiled once per code, captures' types, index-space
kind, reductions' element types and operators, bounds mode and target
(:func:`_load_or_compile`); a queue keeps one
:class:`~pysycl._kernels.reduction_plan.ReductionPlan` per kernel, reductions' kinds and
index space (:func:`_build`, :func:`_plan`); and a command group that submits the same
kernel code again finds that plan under one key (:data:`MEMO`) without the kernel-cache
look-up. The checks of each submit -- the reductions' (:func:`~pysycl._kernels.reduction.
check_command`), the captures', the static bounds check, local memory -- run every time.

What a reduction is and how it is written: :mod:`pysycl._kernels.reduction`.
"""

from __future__ import annotations

import hashlib
import types
from collections.abc import Hashable
from math import prod
from typing import TYPE_CHECKING, Any

import numpy as np

from pysycl._core.abi import PROPS_ATTR, IndexSpace, ReductionType, single_pass_reduction
from pysycl._core.exceptions import errc, exception
from pysycl._kernels import argplan as _args
from pysycl._kernels import bounds as _bounds
from pysycl._kernels.again import Again, keepable, kept_launch, space_key
from pysycl._kernels.cache import Kernel, kernels, target_of
from pysycl._kernels.captures import _infos, capture_values, captures_of
from pysycl._kernels.digest import hash_static, stable_digest
from pysycl._kernels.functor import body_of
from pysycl._kernels.kassert import submit_site
from pysycl._kernels.reduction import PLANS, check_command, combiner_key, reduction
from pysycl._kernels.reduction_final import final_kernel
from pysycl._kernels.reduction_plan import (
    Prepared,
    ReductionPlan,
    check_local_memory,
    launch_sizes,
    loops_nd_range,
    single_pass,
)
from pysycl._memory import tables as _tables
from pysycl._memory.accessor import accessor as _accessor

if TYPE_CHECKING:
    from pysycl._core.backends import DeviceExecutor
    from pysycl._core.launch_types import CommandGroupRef, KernelCommandRef
    from pysycl._kernels.captures import CaptureEntry, CodeInfo
    from pysycl._objects.device import device

_stats = kernels.stats
_FunctionType = types.FunctionType
#: ``ex.launches[(MEMO, code, captures' type key, kind, index space, the reductions'
#: launch signatures, kernel name, bounds mode, kernel-cache generation)]``: the plan of a
#: command group's reduction launch (:func:`prepare`)
MEMO = "reduction command"


def _load_or_compile(fn: types.FunctionType, caps: list[CaptureEntry], index: IndexSpace,
                     reds: tuple[reduction, ...], rtypes: tuple[ReductionType, ...],
                     kernel_name: str | None, bounds_check: bool,
                     target: tuple[str, str]) -> Kernel:
    captures = captures_of(caps)
    h = hashlib.sha256(stable_digest(fn, captures, index).encode())
    h.update(repr(tuple((t.dtype.str, t.op, t.span) for t in rtypes)).encode())
    if bounds_check:
        h.update(b"bounds_check")
    seen: set[int] = set()
    for r in reds:
        hash_static(r.combiner, h, seen)
    digest = h.hexdigest()
    name = kernel_name or fn.__qualname__
    compiled = kernels.load_or_compile_image(
        digest, fn, index, captures, name, bounds_check, target,
        tuple((t, r.combiner) for t, r in zip(rtypes, reds, strict=True)))
    k = Kernel(compiled, name, digest)
    index = compiled.index  # (a looped nd_range where the kernel may loop)
    if index.kind == "range" or index.looped:  # the range; a looped one's local range too
        k.arg_dtypes.extend([np.int64] * (index.ndim * (1 + index.looped)))
    single = single_pass_reduction(target[0] == "ptx", any(t.span for t in rtypes))
    for t in rtypes:
        k.arg_dtypes.extend([t.dtype, None, np.int64 if t.span else None])
        if single:  # the variable, its offset, keep, the ticket, its offset
            k.arg_dtypes.extend([None, np.int64, np.uint8, None, np.int64])
    if bounds_check or compiled.asserts:
        k.arg_dtypes.append(None)  # the error buffer
    return k


# long: the reduction launch's checks, in the order their errors must be reported.
def prepare(ex: DeviceExecutor, h: CommandGroupRef, cmd: KernelCommandRef,
            keep: bool = True) -> Any:
    """Compile/build/validate a kernel with reductions for executor ``ex``; return the
    launch, ``prepared(wait_for) -> native event``: the main kernel, then one final kernel
    per reduction unless the plan is single-pass
    (:class:`~pysycl._kernels.reduction_plan.ReductionPlan`, made once per queue, kernel,
    reductions' kinds and index space, and kept in ``ex.launches``).

    A command group that submits the same kernel code with captures of the same types, over
    the same index space, with reductions of the same :attr:`~pysycl._kernels.reduction.
    reduction.launch_signature`, finds its plan under one key (:data:`MEMO`) made of those,
    without the kernel-cache look-up: the per-submit checks (the reductions', the captures',
    the static bounds and local memory checks) still run each time. Where the launch it
    prepares can be kept (``keep``: a command group's submit), the queue keeps it once it is
    enqueued, and a submit of the same command group again returns that kept launch
    (:mod:`pysycl._kernels.again`) instead of a :class:`Prepared`.

    The caller (the backend's launch) has refused ``sycl.kernel`` objects and
    ``use_kernel_bundle``.
    """
    kind, fn, reds = cmd.kind, cmd.fn, cmd.reductions
    if keep and type(fn) is _FunctionType:  # the same command group again (pysycl._kernels.again)
        run = kept_launch(ex, h, cmd, fn, reds)
        if run is not None:
            return run
    mine = True  # every variable a buffer's or an accessor's of this group: nothing to check
    for r in reds:  # (the reductions' slots read directly: a property costs ~40 ns)
        if r._handler is not h:
            mine = False
            check_command(h, reds)
            break
    obj = read = None
    if type(fn) is not _FunctionType:
        body = body_of(fn)
        if body is not None:  # a function object: its body and self
            fn, obj = body
    else:
        read = _accessor_closure(fn, h)
    if read is None:
        info, values, caps, tkey = capture_values(fn, h, obj)
    else:
        info, values, tkey = read
        caps = None
    space = cmd.index_space
    skey = space.values if kind == "range" else space_key(kind, space)
    fast = (MEMO, info.code, tkey, kind, skey,
            (reds[0]._sig,) if len(reds) == 1 else tuple(r._sig for r in reds),
            cmd.name, _bounds.mode[0], kernels.generation)
    launches = ex.launches
    plan = launches.get(fast)
    remembered = plan is not None
    if remembered:
        _stats["memory_hits"] += 1  # (the kernel-cache hit the look-up would have counted)
        k = plan.k
    else:
        if caps is None:
            caps = capture_values(fn, h, obj)[2]
        k, plan, pkey = _kernel_and_plan(ex, h, cmd, fn, info, values, caps, tkey, skey)
    built = None
    if plan is None:  # build and size: the plan is kept once checked
        built = _build(ex, k, h.queue.get_device(), cmd, values, reds)
        lim, wg = built[1], prod(built[2][1])
    else:
        lim, wg = plan.lim, plan.wg
        if k.has_local:  # the local accessors' sizes are this submit's
            dev = h.queue.get_device()
            launch_sizes(k, dev, lim, cmd, values, target_of(dev))
    if k.direct or k.direct_rest:
        _bounds.check_static(k, info.location, fn, kind, space, values)
    if built is not None or k.has_local:
        check_local_memory(k, lim, values, reds, wg)
    if built is not None:
        plan = _plan(ex, k, built, reds, pkey)
    if not remembered:
        if len(launches) >= PLANS:
            launches.clear()
        launches[fast] = plan
    if k.has_local:
        values = _args.with_local_memory(values, k.arg_kinds, ex.local_memory)
    # USM pointers (and host arrays) live until the last kernel completes (in order: both)
    held = [*(values if k.has_pointer else ()), *(r.pointer for r in reds if r.handler is None)
            ] if k.has_pointer or not mine else None
    record = None
    if k.asserts or _bounds.mode[0]:
        record = _bounds.record(h.queue, k, fn, cmd.name or fn.__qualname__, info.location,  # type: ignore[arg-type]
                                values, _args.accessor_ranges(values, k.arg_kinds), cmd.ndim,
                                submit_site() if k.asserts else "", tuple(plan.extra) or None)
    prepared = Prepared(plan, values, reds, held or None, record, h.context_key)
    if keep and record is None and plan.groups and not k.has_local and cmd.name is None:
        globs = keepable(fn, info, h, reds)
        if globs is not None:
            prepared.again = Again(plan.main, plan, fn, kind, skey, held is not None, globs)
    return prepared


def _accessor_closure(fn: types.FunctionType, h: CommandGroupRef
                      ) -> tuple[CodeInfo, list[Any], tuple[Hashable, ...]] | None:
    """What :func:`~pysycl._kernels.captures.capture_values` answers (but the captures'
    entries) of a kernel that reads no global and whose closure holds accessors of command
    group ``h`` only, its code seen before -- the common command group; None for any other,
    which takes ``capture_values`` (it raises what it raises)."""
    closure = fn.__closure__
    if closure is None:
        return None
    info = _infos.get(fn.__code__)
    if info is None or info.globals:
        return None
    values: list[Any] = []
    key: list[Hashable] = []
    for cell in closure:
        try:
            v = cell.cell_contents
        except ValueError:  # unassigned: capture_values says so
            return None
        if type(v) is not _accessor or v.handler is not h:
            return None
        values.append(v)
        key.append(v.kernel_type)
    props = getattr(fn, PROPS_ATTR, None)
    if props is not None:  # kernel properties (pysycl._kernels.kprops): another image
        key.append((PROPS_ATTR, props))
    return info, values, tuple(key)


def _kernel_and_plan(ex: DeviceExecutor, h: CommandGroupRef, cmd: KernelCommandRef,
                     fn: types.FunctionType, info: Any, values: list[Any],
                     caps: list[CaptureEntry], tkey: Hashable, skey: Hashable
                     ) -> tuple[Kernel, ReductionPlan | None, Hashable]:
    """For a reduction command whose :data:`MEMO` key is new: the kernel (the kernel cache,
    compiling if need be; the refusals), the queue's plan of it (None where there is none for
    this kernel yet) and the plan's key."""
    kind, ndim, reds = cmd.kind, cmd.ndim, cmd.reductions
    rtypes = tuple(ReductionType(r.dtype, r.op, r.variable_kind == "span") for r in reds)
    ckeys = tuple(combiner_key(r.combiner) for r in reds)
    checked = _bounds.enabled()
    target = target_of(h.queue.get_device())  # one image per entry: the combiners are not
    # kept to compile more. A single-pass kernel takes its variables (a buffer's memory or a
    # USM pointer) as arguments: one Kernel -- one built kernel -- per variable kind.
    # NVIDIA's OpenCL refused (CL_INVALID_KERNEL_ARGS) a cl_kernel whose argument had been
    # set as an SVM pointer once and as a buffer then; both Kernels load the same image (the
    # digest has no kind).
    vkinds = tuple(r.variable_kind for r in reds)
    looped = kind == "nd_range" and loops_nd_range(
        target, prod(cmd.index_space.get_global_range().values), h.queue.get_device())
    mkey = (info.code, tkey, kind, ndim, rtypes, ckeys, checked, target, vkinds, looped)
    k = kernels.get(mkey)
    if k is None:
        with _tables.explaining([c[0] for c in caps], values):
            k = kernels.once(mkey, lambda: _load_or_compile(
                fn, caps, IndexSpace(kind, ndim, looped), reds, rtypes, cmd.name, checked,
                target))
    if k.prints:
        raise exception(errc.feature_not_supported, f"kernel {k.name}: print() and sycl.stream "
                        "in kernels with reductions are not supported yet; print in a kernel "
                        "without reductions or run it on the host_debuggable device")
    if k.has_spec:
        raise exception(errc.feature_not_supported, f"kernel {k.name}: pysycl does not support "
                        "specialization constants in kernels with reductions yet")
    pkey = ("reduction", mkey, tuple((r.variable_kind, r.count) for r in reds), skey, cmd.name)
    plan = ex.launches.get(pkey)
    return k, plan if plan is not None and plan.k is k else None, pkey


def _build(ex: DeviceExecutor, k: Kernel, dev: device, cmd: KernelCommandRef,
           values: list[Any], reds: tuple[reduction, ...]
           ) -> tuple[Any, Any, Any, list[tuple[Kernel, Any]]]:
    """Build the kernels of ``k`` with ``reds`` for ``ex`` and size the launch on ``dev`` (the
    checks in the order their errors must be reported): ``(built kernel, its limits, (global
    size, local size, extra arguments), [(final kernel, built)])``."""
    target = target_of(dev)
    clk = ex.build(k, name=cmd.name)
    if cmd.kind == "nd_range" and not k.compiled.index.looped:  # wider than the driver
        # promises (PTX): a launch bound
        clk = ex.bounded_kernel(k, clk, cmd.index_space, name=cmd.name)
    lim = ex.kernel_limits(clk)
    occupancy = getattr(ex, "resident_groups", None)
    scratch = sum(r.dtype.itemsize for r in reds)  # (each reduction's local scratch, per item)
    sizes = launch_sizes(k, dev, lim, cmd, values, target, None if occupancy is None else
                         lambda wg: occupancy(clk, wg, wg * scratch))
    if single_pass(k, target, reds, sizes):  # the last work-group folds the partials
        return clk, lim, sizes, []
    finals = [final_kernel(r, combiner_key(r.combiner), target) for r in reds]
    fclks = [ex.build(fk) for fk in finals]
    return clk, lim, sizes, list(zip(finals, fclks, strict=True))


def _plan(ex: DeviceExecutor, k: Kernel, built: tuple[Any, Any, Any, list[tuple[Kernel, Any]]],
          reds: tuple[reduction, ...], key: Hashable) -> ReductionPlan:
    """The plan of ``k`` with ``reds`` from what :func:`_build` made (partials, the queue's
    prepared launches), kept in ``ex.launches`` under ``key``."""
    clk, lim, sizes, finals = built
    plan = ReductionPlan(ex, k, clk, lim, sizes, reds, finals)
    launches = ex.launches
    if len(launches) >= PLANS:
        launches.clear()
    launches[key] = plan
    return plan

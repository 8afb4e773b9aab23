"""The launch of a kernel with reductions, prepared once per queue: a :class:`ReductionPlan`.

A command with ``sycl.reduction`` arguments runs as the main kernel (each work-group leaves
its partial in a temporary buffer) and one final kernel per reduction (it folds the
partials -- and the variable's old value unless ``initialize_to_identity`` -- into the
variable). Everything that depends only on the kernel, the reductions' kinds and the index
space is prepared once and kept in the executor's ``launches`` (issue 27: a repeated
reduction paid ~120 us of host time per launch on the CPU device, rebuilding all of it):

* the built main kernel and final kernels, the kernel limits, the launch sizes (a ``range``
  runs as a padded 1-D ``nd_range``: :func:`launch_sizes`), the partials buffers, the local
  memory arguments, and each final kernel's argument list but for what changes between
  launches (the variable, the identity, ``initialize_to_identity``) -- :class:`FinalStep`;
* the queue's prepared launches of those kernels (``DeviceExecutor.prepared``), which set a
  kernel's arguments only when they changed.

What a launch still does: the main kernel's arguments from the captured values, then the
enqueues (:meth:`ReductionPlan.run`). The checks that read the captured values (local
accessors' sizes, the static bounds check) stay per launch (:func:`pysycl._kernels.reduction_launch.prepare`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import prod
from typing import TYPE_CHECKING, Any

import numpy as np

from pysycl._core.abi import single_pass_reduction
from pysycl._core.exceptions import errc, exception
from pysycl._kernels import argplan as _args
from pysycl._kernels import steps as _steps
from pysycl._kernels.ndrange import SMALL, check_global_size, ndrange_sizes
from pysycl._kernels.rangesize import COARSEN
from pysycl._kernels.reduction_final import final_layout, final_sizes
from pysycl._memory.usm_api import PRUNE_AT, prune, same_holds
from pysycl._objects.info import _device_info

if TYPE_CHECKING:
    from pysycl._core.backends import DeviceExecutor
    from pysycl._core.launch_types import KernelCommandRef
    from pysycl._kernels.cache import Kernel
    from pysycl._kernels.reduction_final import reduction  # what the launch reads of one
    from pysycl._objects.device import device


_partials: dict[tuple[int, int], tuple[Any, Any, int]] = {}


def partials_buffer(ex: DeviceExecutor, slot: int, nbytes: int) -> Any:
    """The temporary of reduction ``slot`` on ``ex``'s queue, of at least ``nbytes``: one per
    (native queue, slot) -- the queue is in order, so a later command group's kernels never
    overlap this one's."""
    clq = ex.native
    key = (id(clq), slot)
    hit = _partials.get(key)
    if hit is None or hit[0] is not clq or hit[2] < nbytes:
        if len(_partials) > 64:
            _partials.clear()  # enqueued commands keep their buffers alive (drivers retain)
        size = max(nbytes, 4096)
        hit = _partials[key] = (clq, ex.alloc(size), size)
    return hit[1]


#: Work-groups per compute unit of a ``range`` reduction's launch on a GPU (and on every
#: device with a span reduction, whose partials are a row of n per group): the final
#: step reads every group's partial (fewer is faster: 0.2x -> see docs/performance.md).
_GROUPS_PER_UNIT_GPU = 16
#: The same for a 1-D range on PTX without span reductions
#: (``pysycl_numba.reduction_entry.strided_blocks``: each work-item has 64 bytes a step in
#: flight per array): one wave of work-groups of 256 -- an SM holds four at up to 64
#: registers a work-item (ptxas: 40 for a float32 sum, sm_90) -- whose work-items then loop
#: over the range; 528 partials on a 132-SM H200. At most one vector of 4 items per
#: work-item below that. Where the driver tells the kernel's occupancy (CUDA:
#: ``Executor.resident_groups``), up to :data:`_GROUPS_PER_UNIT_PTX_MAX` that the SM holds
#: at once (still one wave): H200, sum of 2^28 float32, 4242 GB/s at 4 an SM, 4336 at 6;
#: H100 2934 and 2940 (docs/performance.md).
_GROUPS_PER_UNIT_PTX = 4
_GROUPS_PER_UNIT_PTX_MAX = 6
#: Work-items a compute unit of a GPU holds at once (NVIDIA's SMs since Volta: 2048; 1536 on
#: sm_86/sm_89): an nd_range reduction of at most this many a unit is not looped
#: (:func:`loops_nd_range`; looped, an nd_range of 8 work-groups of 256 a unit whose items
#: loop over 2^28 float32 ran at 0.15-0.22x ``cupy.sum``, four items in a row a work-item
#: and fewer resident work-groups, against 0.59x as it is: docs/performance.md).
_ITEMS_PER_UNIT_GPU = 2048
#: The same on a CPU device where no work-group size divides a 1-D range (:func:`exact_group`)
#: or the range is n-D: work enough for its threads and its vectorizer, several items per
#: work-item (2 compute units: 4096 groups of 256; measured 0.88-1.03x the OpenCL C two-stage
#: reduction at 2^22-2^24 float32, against 0.31-0.35x with one guarded item per work-item;
#: docs/performance.md)
_GROUPS_PER_UNIT_CPU = 2048


def loops_nd_range(target: tuple[str, str], items: int, dev: device) -> bool:
    """Whether an nd_range reduction of ``items`` work-items compiled for ``target`` on
    ``dev`` is asked to run looped (``pysycl_numba.looped``): on PTX images (NVIDIA GPUs),
    where the GPU cannot hold all its work-items at once (a sum of 2^28 float32 in
    work-groups of 256, one item a work-item: 0.07x ``cupy.sum``, ~1.0x looped). An
    nd_range the GPU holds at once runs as it is: its items may be loops themselves (a
    kernel that strides over its data), which looped work-items would run in a row. Not on
    SPIR-V: on Intel's CPU runtime the plain nd_range ran at 2.0-2.2x the OpenCL C two-stage
    reduction, looped at 1.4x (docs/performance.md)."""
    return target[0] == "ptx" and items > _ITEMS_PER_UNIT_GPU * max(
        1, int(dev.get_info(_device_info.max_compute_units)))


def launch_sizes(k: Kernel, dev: device, lim: tuple[int, tuple[int, ...], int],
                 cmd: KernelCommandRef, values: list[Any], target: tuple[str, str],
                 resident: Callable[[int], int | None] | None = None
                 ) -> tuple[tuple[int, ...], tuple[int, ...], list[Any]]:
    """(global size, local size, extra arguments): a range runs as a padded 1-D nd_range, and
    so does a looped nd_range over its global range once its checks passed (its extra
    arguments: the global range, then the local range; ``pysycl._core.abi.IndexSpace.looped``)
    (``lim``: the built kernel's limits; ``target``: its image's; ``resident(wg)``: how many
    work-groups of ``wg`` a compute unit holds at once, where the driver tells)."""
    tail: list[Any] = []
    if cmd.kind != "range":
        if not k.compiled.index.looped:
            gsize, lsize = ndrange_sizes(k, dev, lim, cmd.index_space, values)
            return gsize, lsize, []
        # the checks of the nd_range as launched (the work-group limit the device's: a
        # plain nd_range kernel would be built with a launch bound that fits it)
        widest = int(dev.get_info(_device_info.max_work_group_size))
        ndrange_sizes(k, dev, (max(lim[0], widest), *lim[1:]), cmd.index_space, values)
        user = tuple(cmd.index_space.get_global_range())
        tail = list(cmd.index_space.get_local_range())
    else:
        if k.has_local:
            raise exception(errc.kernel_argument, f"{k.where} captures a sycl.local_accessor, "
                            "but local memory exists only in nd_range kernels")
        user = tuple(cmd.index_space)
        if prod(user) > SMALL:
            check_global_size(k.named(cmd.name), user, dev)
    total = int(np.prod(user, dtype=np.int64)) if user else 0
    wg = max(1, min(256, lim[0], lim[1][0], total))
    # The kernel loops over the items (grid-stride). On a GPU: enough groups to fill it,
    # few enough that the final step has little to combine. On a CPU: more groups (its
    # runtime vectorises across a group's work-items and spreads groups over threads), still
    # several items per work-item; one item per work-item ran at a third of the OpenCL C
    # peer (each item paid a work-group reduction).
    groups = -(-total // wg)
    units = max(1, int(dev.get_info(_device_info.max_compute_units)))  # cached per device
    spans = any(r.variable_kind == "span" for r in cmd.reductions)
    if target[0] == "ptx" and len(user) == 1 and not spans:  # strided_blocks
        fit = resident(wg) if resident is not None else None
        per_unit = min(fit, _GROUPS_PER_UNIT_PTX_MAX) if fit else _GROUPS_PER_UNIT_PTX
        groups = min(-(-total // (wg * COARSEN)), per_unit * units)
    elif dev.is_gpu() or spans:  # a span's rows take atomics: more groups, more rows
        groups = min(groups, _GROUPS_PER_UNIT_GPU * units)
    elif len(user) == 1 and (exact := exact_group(total, wg)) is not None:
        wg, groups = exact, total // exact  # an item a work-item, no guard: exact_or_grid_stride
    else:
        groups = min(groups, _GROUPS_PER_UNIT_CPU * units)
    return (groups * wg,), (wg,), [*user, *tail]


#: The smallest work-group :func:`exact_group` takes (a smaller one pays its work-group's
#: reduction for fewer items).
_EXACT_GROUP_MIN = 64


def exact_group(total: int, wg: int) -> int | None:
    """The largest work-group of at most ``wg`` (and at least :data:`_EXACT_GROUP_MIN`, or
    ``total`` itself) work-items that divides ``total``: a CPU device's 1-D range reduction
    then launches an item a work-item (``pysycl_numba.range_items.exact_or_grid_stride``:
    1.3x the grid-stride loop, a sum of 2^22-2^24 float32 on Intel's CPU runtime,
    docs/performance.md); None where none does."""
    if total <= wg:
        return total or None
    for w in range(wg, min(wg, _EXACT_GROUP_MIN) - 1, -1):
        if total % w == 0:
            return w
    return None


def single_pass(k: Kernel, target: tuple[str, str], reds: Sequence[reduction],
                sizes: tuple[tuple[int, ...], tuple[int, ...], list[Any]]) -> bool:
    """Whether kernel ``k`` (built for ``target``) with reductions ``reds``, launched over
    ``sizes`` (:func:`launch_sizes`), finishes its reductions itself: compiled single-pass
    (:func:`pysycl._core.abi.single_pass_reduction`) and at least one work-group to run (an
    empty launch leaves the variables to the final kernels)."""
    return single_pass_reduction(target[0] == "ptx",
                                 any(r.variable_kind == "span" for r in reds)) and prod(
                                     sizes[0]) > 0


def tickets(ex: DeviceExecutor, n: int) -> tuple[Any, np.ndarray]:
    """A device buffer of ``n`` zeroed 32-bit tickets (a single-pass plan's: the last
    work-group to finish sets its ticket back to 0) and the host zeros being copied into it
    (the copy may still read them: keep them)."""
    zeros = np.zeros(max(n, 16), np.uint32)
    mem = ex.alloc(zeros.nbytes)
    ex.write(mem, zeros, None)
    return mem, zeros


def check_local_memory(k: Kernel, lim: tuple[int, tuple[int, ...], int], values: list[Any],
                       reds: Sequence[reduction], wg: int) -> None:
    """``errc.nd_range`` unless the kernel's local accessors and the reductions' scratch
    (one element a work-item, span reductions none) fit the built kernel's local memory."""
    local = _args.local_bytes(values, k.arg_kinds) + sum(wg * r.dtype.itemsize for r in reds
                                                          if r.variable_kind != "span")
    if local > lim[2]:
        raise exception(errc.nd_range, f"{k.where}: its local accessors and reductions need "
                        f"{local} bytes of local memory per work-group, more than the "
                        f"{lim[2]} bytes available; use a smaller local range")


# KEEP[init]: the final kernel's ``keep`` argument (combine with the old value unless
# ``initialize_to_identity``), the same objects every launch (argument compares by identity)
KEEP = (np.uint8(1), np.uint8(0))


class FinalStep:
    """One reduction's final kernel on a queue: its prepared launch and its arguments but the
    variable (``out``: at ``at``, ``width`` arguments), the identity and ``keep``."""

    __slots__ = ("at", "ident", "keep", "launch", "template", "width")

    def __init__(self, ex: DeviceExecutor, fk: Kernel, fclk: Any, r: reduction, part: Any,
                 groups: int) -> None:
        g, n = final_sizes(r, groups, ex.kernel_limits(fclk)[0])
        self.launch = ex.prepared(fk, fclk, (g,), (n,))
        self.template, self.at, self.width, self.ident, self.keep = final_layout(
            fk, r, part, groups, n, ex)

    def args(self, r: reduction, key: Any) -> list[Any]:
        """The final kernel's arguments for reduction ``r`` writing its variable (for the
        executor of buffer key ``key``: :func:`final_dest`)."""
        a = self.template.copy()
        at = self.at
        if r.variable_kind == "accessor":  # final_dest's, inlined (the submit hot path)
            out = r.accessor
            a[at] = out.coherence.dev[key]
            a[at + 1] = out.kernel_tail[0]
            a[at + 2] = 1
        else:
            a[at:at + self.width] = final_dest(r, key)
        a[self.ident] = r.identity
        a[self.keep] = KEEP[r.initialize_to_identity]
        return a


class ReductionPlan:
    """A kernel with reductions prepared for one queue (``ex``), one index space and
    reductions of given kinds (see the module docstring): ``k`` its compiled kernel,
    ``lim`` the built kernel's limits, ``extra`` the arguments after the captures' (a
    ``range``: the user's range), ``groups``/``wg`` the main launch's work-groups and their
    size, ``main`` its prepared launch, ``tails`` what each reduction adds to the main
    kernel's arguments after its identity (partials, then local scratch or a span's size),
    ``finals`` one :class:`FinalStep` per reduction."""

    __slots__ = ("ex", "extra", "finals", "groups", "held", "k", "key", "lim", "main", "single",
                 "tails", "wg", "zeros")

    def __init__(self, ex: DeviceExecutor, k: Kernel, clk: Any, lim: tuple[int, tuple[int, ...], int],
                 sizes: tuple[tuple[int, ...], tuple[int, ...], list[Any]],
                 reds: Sequence[reduction], finals: Sequence[tuple[Kernel, Any]]) -> None:
        gsize, lsize, extra = sizes
        self.ex, self.k, self.lim, self.extra = ex, k, lim, extra
        self.key = ex.key
        #: the event of this plan's newest ``inflight`` entry (:meth:`hold`)
        self.held: Any = None
        self.wg = wg = prod(lsize)
        self.groups = groups = prod(gsize) // wg
        parts = [partials_buffer(ex, i, max(groups * r.count, 1) * r.dtype.itemsize)
                 for i, r in enumerate(reds)]
        self.tails = tuple((p, np.int64(r.count) if r.variable_kind == "span"
                            else ex.local_memory(wg * r.dtype.itemsize))
                           for r, p in zip(reds, parts, strict=True))
        #: single pass (no final kernels): each reduction's ticket (buffer, offset)
        self.single: tuple[tuple[Any, np.int64], ...] | None = None
        if not finals:
            mem, self.zeros = tickets(ex, len(reds))
            self.single = tuple((mem, np.int64(i)) for i in range(len(reds)))
        self.main = ex.prepared(k, clk, gsize, lsize)
        self.finals = tuple(FinalStep(ex, fk, fclk, r, p, groups)
                            for (fk, fclk), r, p in zip(finals, reds, parts, strict=True)
                            ) if finals else ()

    def run(self, values: list[Any], reds: Sequence[reduction], holds: Any,
            record: tuple[Any, ...] | None, ctx_key: Any, wait_for: Sequence[Any] | None) -> Any:
        """Launch with the captured ``values`` (local memory bound) and reductions ``reds``
        (of the kinds the plan was made for) after ``wait_for``; hold ``holds`` until the
        last kernel completes; ``record``: what a failure reports (a kernel with an error
        slot), else None. The last kernel's native event."""
        return Prepared(self, values, reds, holds, record, ctx_key)(wait_for)

    def main_kernel(self, args: list[Any], reds: Sequence[reduction],
                    wait_for: Sequence[Any] | None, record: tuple[Any, ...] | None = None,
                    ctx_key: Any = None) -> Any:
        """Enqueue the main kernel with the captures' arguments ``args`` (and ``extra``),
        the reductions' appended here."""
        tails = self.tails
        single = self.single
        if single is None:
            for i, r in enumerate(reds):  # (as many as tails: zip(strict=True) costs ~0.2 us)
                part, last = tails[i]
                args.extend((r.identity, part, last))
        else:  # and the variable (its buffer or pointer, offset), keep, the ticket
            key = self.key
            for i, r in enumerate(reds):
                part, last = tails[i]
                args.extend((r.identity, part, last, *single_dest(r, key),
                             KEEP[r.initialize_to_identity], *single[i]))
        main = self.main
        if record is None:
            return main.enqueue(args, None, wait_for, main.bound)
        return _steps.enqueue_checked(self.ex, self.k, ctx_key, record, args,
                                      lambda a: main.enqueue(a, None, wait_for))

    def finish(self, reds: Sequence[reduction], holds: Any,
               wait_for: Sequence[Any] | None, ev: Any = None) -> Any:
        """Enqueue the final kernels (after ``wait_for``; ``ev``: the main kernel's event);
        the last one (a single-pass plan's main kernel) holds ``holds``."""
        if self.single is not None:
            if holds is not None:
                self.hold(ev, holds)
            return ev
        key = self.key
        finals = self.finals
        for i, r in enumerate(reds):  # (as many as finals)
            f = finals[i]
            ln = f.launch
            ev = ln.enqueue(f.args(r, key), None, wait_for, ln.bound)
            wait_for = None
        if holds is not None:
            self.hold(ev, holds)
        return ev

    def hold(self, ev: Any, holds: Any) -> None:
        """Hold ``holds`` until ``ev`` (the last kernel's event) completes, in the executor's
        ``inflight``: in place of this plan's previous entry where that is the newest and
        held the same objects (a loop of one reduction holds one entry; the queue is in
        order, so ``ev`` completes after the entry's event), else a new entry."""
        ex = self.ex
        dq = ex.inflight
        with ex.lock:
            prev = dq[-1] if dq else None
            if prev is not None and prev[0] is self.held and same_holds(prev[1], holds):
                dq[-1] = (ev, prev[1])
            else:
                dq.append((ev, holds))
            self.held = ev
        if len(dq) > PRUNE_AT:
            prune(ex)


def final_dest(r: reduction, key: Any) -> tuple[Any, ...]:
    """The final kernel's ``out`` arguments: the variable of reduction ``r`` (an accessor's
    device copy for the executor of buffer key ``key``, with its offset and range; a USM
    pointer's kernel argument)."""
    if r.variable_kind == "accessor":
        out = r.accessor
        return (out.coherence.dev[key], out.kernel_tail[0], 1)
    p = r.pointer
    karg = p.native_arg
    return (karg if karg is not None else p.make_native_arg(),)


def single_dest(r: reduction, key: Any) -> tuple[Any, np.int64]:
    """A single-pass kernel's variable arguments of reduction ``r``: its memory (an
    accessor's device copy for the executor of buffer key ``key``; a USM pointer's kernel
    argument) and the element offset."""
    if r.variable_kind == "accessor":
        out = r.accessor
        return out.coherence.dev[key], out.kernel_tail[0]
    p = r.pointer
    karg = p.native_arg
    return (karg if karg is not None else p.make_native_arg()), _ZERO


_ZERO = np.int64(0)


class Prepared:
    """A reduction command ready to run: ``prepared(wait_for)`` is the plan's
    :meth:`ReductionPlan.run` with this submit's values (what
    :func:`pysycl._backends.launching.prepare` hands the command-group submit)."""

    __slots__ = ("again", "ctx_key", "holds", "plan", "record", "reds", "values")

    def __init__(self, plan: ReductionPlan, values: list[Any], reds: Sequence[reduction],
                 holds: Any, record: tuple[Any, ...] | None, ctx_key: Any) -> None:
        self.plan, self.values, self.reds = plan, values, reds
        self.holds, self.record, self.ctx_key = holds, record, ctx_key
        #: what keeps this launch for the same command group again once enqueued, a
        #: :class:`pysycl._kernels.again.Again` (None: it does not qualify)
        self.again: Any = None

    def __call__(self, wait_for: Sequence[Any] | None) -> Any:
        """:meth:`ReductionPlan.run` (here, one frame less on the submit hot path)."""
        plan, reds = self.plan, self.reds
        if not plan.groups:
            return plan.finish(reds, self.holds, wait_for)
        args = _args.flat_args(self.values, plan.k.arg_kinds, plan.key)
        args.extend(plan.extra)
        again = self.again
        if self.record is not None or plan.single is not None:
            ev = plan.finish(reds, self.holds, None, plan.main_kernel(
                args, reds, wait_for, self.record, self.ctx_key))
            if again is not None:  # (main_kernel completed args in place)
                again.remember(reds, args, ())
            return ev
        # main_kernel and finish without an error slot, in one frame (the reductions' slots
        # read directly: a property costs ~40 ns)
        tails, finals = plan.tails, plan.finals
        for i, r in enumerate(reds):  # (as many as tails)
            part, last = tails[i]
            args.extend((r._identity, part, last))
        ln = plan.main
        ev = ln.enqueue(args, None, wait_for, ln.bound)
        key = plan.key
        kept = []
        for i, r in enumerate(reds):  # (as many as finals)
            ln = finals[i].launch
            a = finals[i].args(r, key)
            ev = ln.enqueue(a, None, None, ln.bound)
            kept.append((ln, a))
        if again is not None:
            again.remember(reds, args, tuple(kept))
        if self.holds is not None:
            plan.hold(ev, self.holds)
        return ev

"""Handler-less launches of kernels with reductions, whatever the backend (issue 27).

``q.parallel_for(space, sycl.reduction(ptr, op), ..., k)`` with no dependencies reaches
:func:`launch_reductions` (``Executor.launch_reductions`` of the OpenCL and CUDA
executors). Its first launch takes the whole way -- the handler's checks, then
:func:`pysycl._kernels.reduction_launch.prepare` (captures, compile, the queue's
:class:`~pysycl._kernels.reduction_plan.ReductionPlan`) -- and remembers, per kernel code,
a :class:`RememberedReductions`: the plan, the refresh of the kernel's captures
(:func:`pysycl._kernels.argplan.refresh_for`, as a remembered plain launch has), and what
the reductions were (variable kind, element type, operator, combiner, span size, the
pointer's context, type and writability). A later launch of the same code over the same
index space, with reductions of the same kinds, checks what can change -- the captured
values (the refresh), each reduction variable's pointer (live, its signature), the
kernel-cache generation, bounds mode, kernel properties, no kernel name -- then builds the
main kernel's arguments and enqueues both kernels
(:meth:`~pysycl._kernels.reduction_plan.ReductionPlan.main_kernel`, ``finish``). The
identity and ``initialize_to_identity`` are per-launch arguments of the final kernel, so
they may change freely. Anything else takes the whole way again, which raises the
proper errors.

Design: docs/design/launch.md §4.2.
"""

from __future__ import annotations

import time
import types
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any

from pysycl._backends.launching import Ungrouped
from pysycl._commands.handler import handler
from pysycl._core.abi import PROPS_ATTR
from pysycl._kernels import bounds as _bounds
from pysycl._kernels.again import space_key
from pysycl._kernels.argplan import refresh_for
from pysycl._kernels.cache import kernels
from pysycl._kernels.reduction import check_command, reduction
from pysycl._kernels.reduction_launch import prepare as _prepare
from pysycl._memory.usm_api import PRUNE_AT, prune

if TYPE_CHECKING:
    from pysycl._backends.launching import LaunchingExecutor
    from pysycl._core.launch_types import QueueRef
    from pysycl._kernels.reduction_plan import Prepared, ReductionPlan

_now = time.perf_counter
_stats = kernels.stats
#: ``ex.launches[(KEY, code)]``: the remembered reduction launch of a kernel's code
KEY = "reductions"
#: an executor remembers at most this many launches (then forgets them all), as
#: :data:`pysycl._backends.launching.REMEMBERED`
REMEMBERED = 64


class RememberedReductions:
    """A handler-less launch with reductions, kept for the next launches of its kernel code
    (see the module docstring): ``plan``, the refresh and its constants (``want``), the
    launch's kind, index space (:func:`~pysycl._kernels.again.space_key`), kernel-cache
    generation and kernel properties, ``reds`` one ``(variable kind, dtype, op, combiner key
    (a custom one's; else None), count, pointer signature)`` per reduction, ``group`` what
    :func:`~pysycl._kernels.reduction.check_command` reads (several reductions: their
    variables must not overlap)."""

    __slots__ = ("gen", "group", "kind", "plan", "props", "reds", "refresh", "space", "want")

    def __init__(self, plan: ReductionPlan, made: tuple[Any, tuple[Any, ...]], kind: str,
                 space: Hashable, reds: Sequence[reduction], group: Any) -> None:
        self.plan = plan
        self.refresh, self.want = made
        self.kind, self.space, self.group = kind, space, group
        self.gen = kernels.generation
        self.props = plan.k.props
        self.reds = tuple(r.launch_signature for r in reds)

    def pointers(self, reds: Sequence[Any]) -> list[Any] | None:
        """The variables' pointers of ``reds`` where they are reductions of the remembered
        kinds (:attr:`~pysycl._kernels.reduction.reduction.launch_signature`) whose pointers
        are live, else None (several: not overlapping -- else ``errc.invalid``, as the
        whole way says)."""
        want = self.reds
        if len(reds) != len(want):
            return None
        out = []
        for i, r in enumerate(reds):  # (as many as want)
            if type(r) is not reduction or r.launch_signature != want[i]:
                return None
            p = r.pointer
            if not p.live:
                return None
            out.append(p)
        if len(reds) > 1:
            check_command(self.group, reds)
        return out


def launch_reductions(ex: LaunchingExecutor, q: QueueRef, kind: str, index_space: Any,
                      reductions: Sequence[Any], fn: types.FunctionType, name: str | None) -> Any:
    """``Executor.launch_reductions``: ``q.parallel_for(space, *reductions, fn)`` with no
    dependencies; its native event. A remembered launch of ``fn``'s code whose index space,
    reductions and refreshed arguments still fit is enqueued at once; else the whole way."""
    rl = ex.launches.get((KEY, fn.__code__))
    if rl and name is None and rl.kind == kind and rl.gen == kernels.generation \
            and not _bounds.mode[0] and rl.props == getattr(fn, PROPS_ATTR, None) \
            and (index_space.values if kind == "range" else space_key(kind, index_space)
                 ) == rl.space and (ptrs := rl.pointers(reductions)) is not None:
        try:
            got = rl.refresh(fn, rl.want)
        except ValueError:  # an empty closure cell: the whole way says so
            got = None
        if got is not None:
            _stats["memory_hits"] += 1  # a remembered launch is a kernel-cache hit
            plan = rl.plan
            ev = plan.main_kernel(got[0], reductions, None) if plan.groups else None
            # the captured pointers and the variables live until the last kernel completes
            return plan.finish(reductions, (*got[1], *ptrs), None, ev)
    return launch_reductions_whole(ex, q, kind, index_space, reductions, fn, name)


def launch_reductions_whole(ex: LaunchingExecutor, q: QueueRef, kind: str, space: Any,
                            reductions: Sequence[Any], fn: types.FunctionType,
                            name: str | None) -> Any:
    """The launch the whole way: the command group a queue would record, checked by its
    handler, prepared and run as its submit would; then, where it can have one, remembered
    for the next ones."""
    h = handler(q)  # type: ignore[arg-type]
    try:
        h.parallel_for(space, *reductions, fn, kernel_name=name)
        sub = h.submission()
        if sub.requirements:  # (none: the variables are USM, a shortcut has no accessors)
            return ex.submit(sub)  # type: ignore[attr-defined]
        prepared = _prepare(ex, sub, sub.command, keep=False)  # type: ignore[arg-type]
        ex.shape = None  # set by the launch
        ev = prepared(None)
    finally:
        h.release()
    ex.last = ev
    ex.since = _now()
    if len(ex.inflight) > PRUNE_AT:
        prune(ex)
    if prepared.record is None and name is None:  # (an error slot: bounds-checked mode,
        # asserts; a kernel name: its launches take the whole way, which checks the name)
        _remember(ex, fn, kind, space, prepared, Ungrouped(q))
    return ev


def _remember(ex: LaunchingExecutor, fn: types.FunctionType, kind: str, space: Any,
              prepared: Prepared, group: Any) -> None:
    """Remember the launch ``prepared`` ran for ``fn``'s next launches; ``False`` where its
    captures have no refresh (its launches take the whole way)."""
    plan = prepared.plan
    made = refresh_for(fn, plan.k, tuple(plan.extra))
    key = (KEY, fn.__code__)
    launches = ex.launches
    if len(launches) >= REMEMBERED:
        launches.clear()
    launches[key] = False if made is None else RememberedReductions(
        plan, made, kind, space_key(kind, space), prepared.reds, group)

"""nd_range reductions that loop: which kernels may, and the compile that falls back.

An ``nd_range`` kernel with reductions launches a work-item per item of its nd_range,
and every work-group of them ends with the reduction's end (the group's combine with
barriers, its partial, a ticket): with one item a work-item and 2^20 work-groups that end
is the kernel's whole time (0.07x ``cupy.sum`` at 2^28 float32, docs/performance.md). A
kernel that never synchronises its work-group cannot tell which work-item runs one of its
items, or in what order its items run: SYCL orders work-items only through barriers,
group functions and memory scopes. Such a kernel runs *looped*
(``pysycl._core.abi.IndexSpace.looped``): as a ``range`` reduction over the nd_range's
global range -- a launch the runtime sizes for the device, work-items that loop over the
items (on PTX with 128-bit loads, :func:`pysycl_numba.reduction_entry.strided_blocks`) --
each item with its own ``sycl.nd_item`` (its global, local and group ids and the ranges
the nd_range's, :class:`~pysycl_numba.types.NdItemType` ``looped``).

:func:`may_loop` says which kernels may, from what the compile is given: none of the
names of :data:`BLOCKERS` in its code or its helpers' (a barrier, a group or sub-group
function, an async copy, an atomic fence, an atomic of work-group or sub-group scope), no
``assert`` (a failed assert reports its work-item's id), no local accessor, print or stream
capture, no kernel properties (a required work-group size), no span reduction, not
bounds-checked. A looped nd_item has no group object, sub-group or barrier, so a kernel
that reaches one another way fails to type; then, or where the looped kernel still has
asserts, the kernel compiles the usual way (:func:`compile_looped`).
"""

from __future__ import annotations

import dis
import types
from collections.abc import Callable, Sequence
from typing import Any

from pysycl._core.abi import (
    PROPS_ATTR,
    AccessorType,
    Capture,
    CompiledKernel,
    IndexSpace,
    PrintType,
    ReductionType,
    StreamType,
    nested_codes,
)
from pysycl._core.exceptions import kernel_compile_error, kernel_signature_error
from pysycl_numba.asserts import GROUP_SYNC

#: Names after which a kernel's work-items may not run many of its items: its work-group's
#: synchronisation (:data:`pysycl_numba.asserts.GROUP_SYNC`), sub-groups, async copies,
#: fences, atomics whose scope is the work-group or sub-group.
BLOCKERS = GROUP_SYNC | frozenset((
    "get_sub_group", "async_work_group_copy", "wait_for", "atomic_fence", "work_group",
    "sub_group", "local_accessor",
))


def may_loop(pyfunc: Callable[..., Any], captures: Sequence[Capture],
             reductions: Sequence[ReductionType], bounds_check: bool,
             helpers: Sequence[tuple[Callable[..., Any], Any]]) -> bool:
    """Whether the nd_range kernel ``pyfunc`` with ``reductions`` may run looped (the module
    docstring); ``helpers``: its call graph (``compile_kernel``'s), or empty."""
    if bounds_check or not reductions or any(r.span for r in reductions):
        return False
    if getattr(pyfunc, PROPS_ATTR, None) is not None:
        return False
    for c in captures:
        t = c.type
        if isinstance(t, (PrintType, StreamType)) or (
                isinstance(t, AccessorType) and t.space == "local"):
            return False
    for f, _ in helpers or [(pyfunc, ())]:
        code = getattr(getattr(f, "py_func", f), "__code__", None)
        if code is not None and any(BLOCKERS.intersection(c.co_names) or _asserts(c)
                                    for c in nested_codes(code)):
            return False
    return True


def _asserts(code: types.CodeType) -> bool:
    """Whether ``code`` has an ``assert`` (a looped kernel's failed assert would report the
    wrong work-item: it would compile twice to find out, :func:`compile_looped`)."""
    return "AssertionError" in code.co_names or any(
        ins.opname == "LOAD_ASSERTION_ERROR" for ins in dis.get_instructions(code))


def compile_looped(run: Callable[[IndexSpace], CompiledKernel], index: IndexSpace,
                   may: bool) -> CompiledKernel:
    """``run(index)`` for a looped ``index`` where the kernel ``may`` loop and compiles so
    without asserts; else ``run`` of the plain nd_range (whose errors are the user's)."""
    plain = IndexSpace(index.kind, index.ndim)
    if not may:
        return run(plain)
    try:
        k = run(index)
    except (kernel_compile_error, kernel_signature_error):
        return run(plain)
    return run(plain) if k.asserts else k

"""The work-group combine of a ``sycl.reduction``: a device function written in Python.

After the user's function returns, every work-item hands its accumulator to
the reduction's *epilogue*, which combines the work-group's values and lets
work-item 0 write the group's partial result to ``partials[group_linear_id]``:

* ``reduce_over_group`` (OpenCL's ``work_group_reduce_*``) for ``plus``/
  ``minimum``/``maximum`` on the types OpenCL's work-group collectives take;
* otherwise a tree in local memory (``T __local *scratch``, one element per
  work-item) with ``(n + 1) >> 1`` halving, so any work-group size works.

The epilogue is compiled as a device function (once per combiner and kind);
the entry point (:func:`pysycl_numba.reduction_entry.build_reduction_wrapper`) calls
it. The runtime folds the partials in a second kernel, or, in a single-pass kernel
(:func:`pysycl._core.abi.single_pass_reduction`), the last work-group to finish does
(:func:`compile_last`). :func:`compile_fold` gives the
combiner itself as a device function (the entry point of a 1-D range reduction on PTX
folds its item slots' accumulators with it).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pysycl._core.memory_model import memory_order, memory_scope
from pysycl._kernels.kernel_api import (
    access,
    atomic_fence,
    atomic_ref,
    group_broadcast,
    maximum,
    minimum,
    plus,
    reduce_over_group,
)
from pysycl_numba._numba_compat import types
from pysycl_numba.dispatcher import DeviceDispatcher
from pysycl_numba.types import AccessorType, NdItemType, ReducerType, SpanReducerType

if TYPE_CHECKING:
    from pysycl_numba._numba_compat import CompileResult

# Every work-item runs the loop the same number of times (n is uniform), so
# the barriers are never divergent; readers read [half, n), writers write
# [0, n - half): a step never reads what it writes.
_TREE_FOLD = '''it.barrier(access.fence_space.local_space)
n = nl
while n > 1:
    half = (n + 1) >> 1
    if lid + half < n:
        tmp[lid] = combiner(tmp[lid], tmp[lid + half])
    it.barrier(access.fence_space.local_space)
    n = half'''


def _indented(text: str, spaces: int) -> str:
    """``text``'s lines after the first indented by ``spaces`` (it replaces a placeholder
    that stands at that indentation)."""
    return text.replace("\n", "\n" + " " * spaces)


_TREE = '''
def _pysycl_reduction_epilogue(it, v, tmp, part):
    lid = it.get_local_linear_id()
    nl = it.get_local_range().size()
    tmp[lid] = v
    TREE_FOLD
    if lid == 0:
        part[it.get_group_linear_id()] = tmp[0]
'''.replace("TREE_FOLD", _indented(_TREE_FOLD, 4))

_COLLECTIVE = '''
def _pysycl_reduction_epilogue(it, v, tmp, part):
    r = reduce_over_group(it.get_group(), v, functor)
    if it.get_local_linear_id() == 0:
        part[it.get_group_linear_id()] = r
'''

# A span reduction's prologue (it has no epilogue): the work-group sets its row of
# partials, part[base, base + n), to the identity and returns base; the work-items
# then combine into the row atomically, and the kernel's end publishes it.
_SPAN_PROLOGUE = '''
def _pysycl_span_reduction_prologue(it, v, n, part):
    base = it.get_group_linear_id() * n
    j = it.get_local_linear_id()
    nl = it.get_local_range().size()
    while j < n:
        part[base + j] = v
        j += nl
    it.barrier(access.fence_space.global_space)
    return base
'''

# A single-pass reduction's end (pysycl._core.abi.single_pass_reduction), after the epilogue
# wrote the group's partial: work-item 0 counts the group done on the ticket (acq_rel at
# device scope: its partial is visible before the count); the group that takes the last
# ticket folds every group's partial (and the variable's old value unless not keep) into
# the variable and zeroes the ticket for the next launch. The group's branch is uniform
# (a broadcast), so its barriers are too.
_LAST = '''
def _pysycl_reduction_last(it, tmp, part, out, keep, ticket, ident):
    lid = it.get_local_linear_id()
    nl = it.get_local_range().size()
    ng = it.get_group_range().size()
    done = 0
    if lid == 0:
        t = atomic_ref(ticket, 0, memory_order.acq_rel, memory_scope.device).fetch_add(1)
        if t == ng - 1:
            done = 1
    if group_broadcast(it.get_group(), done, 0) != 0:
        atomic_fence(memory_order.acquire, memory_scope.device)
        tmp[lid] = ident
        i = lid
        while i < ng:
            tmp[lid] = combiner(tmp[lid], part[i])
            i += nl
        FOLD
        if lid == 0:
            ticket[0] = 0
            if keep != 0:
                out[0] = combiner(out[0], total)
            else:
                out[0] = total
'''
_LAST_TREE = _indented(_TREE_FOLD + "\ntotal = tmp[0]", 8)
_LAST_COLLECTIVE = "total = reduce_over_group(it.get_group(), tmp[lid], functor)"

# The combiner of two values as a device function of its own: the entry point of a range
# reduction that keeps an accumulator per item slot folds them with it
# (pysycl_numba.reduction_entry; the result is cast to the element type there).
_FOLD = '''
def _pysycl_reduction_fold(a, b):
    return combiner(a, b)
'''

_FUNCTORS = {"plus": plus(), "minimum": minimum(), "maximum": maximum()}
_COLLECTIVE_TYPES = (types.int32, types.uint32, types.int64, types.uint64, types.float32,
                     types.float64)
_epilogues: weakref.WeakKeyDictionary[Callable[..., Any], dict[str, Callable[..., Any]]] = (
    weakref.WeakKeyDictionary())


def epilogue_function(r: ReducerType | SpanReducerType, fold: bool = False,
                      last: bool = False) -> Callable[..., Any]:
    """The Python epilogue of reducer type ``r`` (a span reducer's prologue; ``fold``: the
    combiner of two values; ``last``: a single-pass reduction's end), cached per combiner."""
    collective = r.op in _FUNCTORS and r.dtype in _COLLECTIVE_TYPES
    kind = "fold" if fold else "span" if isinstance(r, SpanReducerType) else (
        "collective" if collective else "tree")
    if last:
        kind = "last-" + kind
    per = _epilogues.setdefault(r.combiner, {})
    fn = per.get(kind)
    if fn is None:
        ns: dict[str, Any] = {
            "access": access, "reduce_over_group": reduce_over_group,
            "combiner": r.combiner, "functor": _FUNCTORS.get(r.op),
            "atomic_ref": atomic_ref, "atomic_fence": atomic_fence,
            "group_broadcast": group_broadcast, "memory_order": memory_order,
            "memory_scope": memory_scope,
        }
        src = {"span": _SPAN_PROLOGUE, "collective": _COLLECTIVE, "tree": _TREE,
               "fold": _FOLD,
               "last-collective": _LAST.replace("FOLD", _LAST_COLLECTIVE),
               "last-tree": _LAST.replace("FOLD", _LAST_TREE)}[kind]
        exec(compile(src, f"<pysycl reduction epilogue {r.op}>", "exec"), ns)  # our template
        fn = per[kind] = next(v for k, v in ns.items() if k.startswith("_pysycl_"))
    return fn


def scratch_type(r: ReducerType | SpanReducerType) -> AccessorType:
    """The epilogue's local scratch: one element per work-item."""
    return AccessorType(r.dtype, 1, "read_write", "local")


def partials_type(r: ReducerType | SpanReducerType) -> AccessorType:
    """The epilogue's output: one partial result per work-group."""
    return AccessorType(r.dtype, 1, "write", "global")


def last_arg_types(r: ReducerType, group_ndim: int) -> list[types.Type]:
    """A single-pass reduction's end's parameters: ``(nd_item, scratch, partials, out,
    keep, ticket, identity)`` (accessors of one element: ``out``, ``ticket``)."""
    glob = AccessorType(r.dtype, 1, "read_write", "global")
    return [NdItemType(group_ndim), scratch_type(r), glob, glob, types.uint8,
            AccessorType(types.uint32, 1, "read_write", "global"), r.dtype]


def compile_last(r: ReducerType, group_ndim: int) -> CompileResult:
    """Compile ``r``'s single-pass end (:data:`_LAST`) for an ``nd_item`` of
    ``group_ndim`` dimensions."""
    args = tuple(last_arg_types(r, group_ndim))
    disp = DeviceDispatcher.for_function(epilogue_function(r, last=True))
    disp.compile(args)
    return disp.overloads[args]


def epilogue_arg_types(r: ReducerType | SpanReducerType, group_ndim: int) -> list[types.Type]:
    """The epilogue's parameters: ``(nd_item, value, scratch, partials)``; a span reducer's
    prologue: ``(nd_item, identity, n, partials)``."""
    if isinstance(r, SpanReducerType):
        return [NdItemType(group_ndim), r.dtype, types.int64, partials_type(r)]
    return [NdItemType(group_ndim), r.dtype, scratch_type(r), partials_type(r)]


def compile_epilogue(r: ReducerType | SpanReducerType, group_ndim: int) -> CompileResult:
    """Compile the epilogue of ``r`` (a span reducer's prologue) for an ``nd_item`` of
    ``group_ndim`` dimensions."""
    args = tuple(epilogue_arg_types(r, group_ndim))
    disp = DeviceDispatcher.for_function(epilogue_function(r))
    disp.compile(args)
    return disp.overloads[args]


def compile_fold(r: ReducerType) -> CompileResult:
    """Compile ``r``'s combiner of two values (``(dtype, dtype)``) as a device function."""
    args = (r.dtype, r.dtype)
    disp = DeviceDispatcher.for_function(epilogue_function(r, fold=True))
    disp.compile(args)
    return disp.overloads[args]

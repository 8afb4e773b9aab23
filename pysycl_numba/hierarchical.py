"""Group scope of a hierarchical kernel (``h.parallel_for_work_group``) on a device.

The kernel runs as an nd_range: every work-item of a group runs the kernel's code, which
SYCL 2020 §4.9.4.2.3 allows for group-scope code without side effects. :class:`RewriteGroupScope`
rewrites the kernel's own function, before anything else reads it, so that each side
effect happens once per work-group:

1. ``g.parallel_for_work_item([r,] fn)`` becomes a call of
   :func:`~pysycl_numba.overloads.hierarchical.work_items` (``work_items_in``): a barrier,
   ``fn`` on this work-item's (logical) ids, a barrier;
2. functions defined in the kernel and called at group scope are compiled in place first,
   so what they do is group-scope code too;
3. what cannot run once per group is refused at its line: group-scope arrays
   (``sycl.private_array``: use a ``sycl.local_accessor``), atomics, ``print`` and
   ``sycl.stream`` output, barriers and group functions (anywhere in the kernel), a plain
   Python function called at group scope that stores or prints;
4. each group-scope store ``t[i] = v`` becomes
   :func:`~pysycl_numba.overloads.hierarchical.group_store`: barrier, the leader (local
   id 0) stores, barrier.

Then the rewritten calls are compiled in place (:func:`pysycl_numba.nested.inline_nested_calls`),
and with them the work-item functions, whose own stores are left as they are.
"""

from __future__ import annotations

import dis
import operator
import types as pytypes
from typing import TYPE_CHECKING

from pysycl._core.abi import StreamType, nested_codes
from pysycl._kernels import kernel_api
from pysycl_numba._numba_compat import FunctionPass, ir, ir_utils, register_pass
from pysycl_numba.errors import KernelSourceError
from pysycl_numba.nested import _global_value, inline_nested_calls
from pysycl_numba.overloads.hierarchical import group_store, work_items, work_items_in

if TYPE_CHECKING:
    from pysycl_numba._numba_compat import StateDict

#: Names of the barriers and group functions a hierarchical kernel may not call.
GROUP_FUNCTIONS = frozenset((
    "group_barrier", "group_broadcast", "reduce_over_group", "any_of_group",
    "all_of_group", "none_of_group", "inclusive_scan_over_group", "exclusive_scan_over_group",
    "joint_reduce", "joint_any_of", "joint_all_of", "joint_none_of", "joint_inclusive_scan",
    "joint_exclusive_scan", "shift_group_left", "shift_group_right", "permute_group_by_xor",
    "select_from_group",
))
NO_GROUP_FUNCTIONS = (
    "barriers and group functions (group_barrier, group_broadcast, reduce_over_group, ...) "
    "are not available in a hierarchical kernel: each parallel_for_work_item call already "
    "synchronizes the work-group before and after it, and inside one their behaviour is "
    "undefined (SYCL 2020 §4.9.4.2.3). Use an nd_range kernel for them")
_ONCE = ("at group scope of a hierarchical kernel, which every work-item of the group runs "
         "on this device: ")


@register_pass(mutates_CFG=True, analysis_only=False)
class RewriteGroupScope(FunctionPass):
    """Make a hierarchical kernel's group scope run its side effects once per work-group."""

    _name = "pysycl_rewrite_group_scope"

    def __init__(self) -> None:
        FunctionPass.__init__(self)

    def run_pass(self, state: StateDict) -> bool:
        """Rewrite ``state.func_ir`` of a hierarchical kernel (nothing for others)."""
        index = getattr(state, "pysycl_index", None)
        if index is None or index.kind != "hierarchical":
            return False
        func_ir = state.func_ir
        spec = getattr(state, "pysycl_lift", None)
        _check_group_functions(func_ir.func_id.code)
        _work_item_calls(func_ir)
        inline_nested_calls(func_ir, spec, receivers=False)
        group = _group_param(func_ir, int(bool(getattr(state, "pysycl_functor", False))))
        streams = {c.name for c in getattr(state, "pysycl_captures", ())
                   if isinstance(c.type, StreamType) and c.owner == 0}
        _check_group_scope(func_ir, streams)
        _stores_once(func_ir, group)
        func_ir._definitions = ir_utils.build_definitions(func_ir.blocks)
        inline_nested_calls(func_ir, spec, force=True)
        return True


def _check_group_functions(code: pytypes.CodeType) -> None:
    """Refuse a barrier or group function anywhere in the kernel, at its line."""
    for c in nested_codes(code):
        if not GROUP_FUNCTIONS.intersection(c.co_names):
            continue
        for ins in dis.get_instructions(c):
            if ins.argval in GROUP_FUNCTIONS and ins.opname in (
                    "LOAD_GLOBAL", "LOAD_ATTR", "LOAD_METHOD"):
                line = ins.positions.lineno if ins.positions else c.co_firstlineno
                raise KernelSourceError(f"{ins.argval}: {NO_GROUP_FUNCTIONS}",
                                        ir.Loc(c.co_filename, line))


def _work_item_calls(func_ir: ir.FunctionIR) -> None:
    """``g.parallel_for_work_item(*args)`` -> ``work_items(g, *args)`` (or ``work_items_in``)."""
    methods: set[str] = set()
    for block in func_ir.blocks.values():
        for stmt in block.body:
            call = stmt.value if isinstance(stmt, ir.Assign) else None
            if not (isinstance(call, ir.Expr) and call.op == "call"):
                continue
            m = ir_utils.guard(ir_utils.get_definition, func_ir, call.func)
            if not (isinstance(m, ir.Expr) and m.op == "getattr"
                    and m.attr == "parallel_for_work_item"):
                continue
            if call.kws or call.vararg is not None or len(call.args) not in (1, 2):
                raise KernelSourceError(
                    "parallel_for_work_item takes (fn) or (logical_range, fn): a function of "
                    "one parameter, the sycl.h_item, and optionally a sycl.range before it",
                    stmt.loc)
            fn = work_items if len(call.args) == 1 else work_items_in
            var = block.scope.redefine("$pysycl_work_items", stmt.loc)
            block.body.insert(block.body.index(stmt),
                              ir.Assign(ir.Global(fn.__name__, fn, stmt.loc), var, stmt.loc))
            methods.add(call.func.name)
            call.func = var
            call.args = [m.value, *call.args]
    for block in func_ir.blocks.values():  # the method values, now unused
        block.body = [s for s in block.body
                      if not (isinstance(s, ir.Assign) and s.target.name in methods)]
    func_ir._definitions = ir_utils.build_definitions(func_ir.blocks)


def _group_param(func_ir: ir.FunctionIR, k: int) -> ir.Var:
    """The variable of the kernel's parameter ``k`` (the group; 1 after a functor's self)."""
    for block in func_ir.blocks.values():
        for stmt in block.body:
            if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Arg) \
                    and stmt.value.index == k:
                return stmt.target
    raise KernelSourceError("a hierarchical kernel takes one parameter, the sycl.group",
                            func_ir.loc)


def _why_not_once(func_ir: ir.FunctionIR, stmt: ir.Stmt, streams: set[str]) -> str | None:
    """What in a group-scope statement cannot run once per work-group, or None."""
    if isinstance(stmt, ir.Print):
        return "print() output " + _ONCE + "print inside parallel_for_work_item instead"
    value = stmt.value if isinstance(stmt, ir.Assign) else None
    if not isinstance(value, ir.Expr):
        return None
    if value.op == "binop" and value.fn is operator.lshift:
        if _stream_root(func_ir, value.lhs) in streams:
            return "sycl.stream output " + _ONCE + "write to the stream inside " \
                "parallel_for_work_item (e.g. only where h.get_local_id(0) == 0)"
    if value.op != "call":
        return None
    fn = _global_value(func_ir, value.func)
    if fn is print:
        return "print() output " + _ONCE + "print inside parallel_for_work_item instead"
    if fn is kernel_api.private_array:
        return ("a group-scope array would be one private copy per work-item here, not the "
                "work-group's shared array SYCL 2020 makes of it: create a "
                "sycl.local_accessor(dtype, sycl.range(n), h) in the command group and "
                "capture it (or make the sycl.private_array inside parallel_for_work_item)")
    if fn is kernel_api.atomic_ref or fn is kernel_api.atomic_fence:
        return ("an atomic operation " + _ONCE + "it would happen once per work-item; do it "
                "inside parallel_for_work_item (e.g. only where h.get_local_id(0) == 0)")
    if isinstance(fn, pytypes.FunctionType) and fn not in (work_items, work_items_in) \
            and not (fn.__module__ or "").startswith(("pysycl.", "pysycl_numba.", "numba.")):
        if _stores_or_prints(fn.__code__):
            return (f"the function '{fn.__qualname__}' stores or prints, and a function called "
                    + _ONCE + "its side effects would happen once per work-item. Do the "
                    "store in the kernel itself (group-scope stores happen once), or call it "
                    "inside parallel_for_work_item")
    return None


def _stream_root(func_ir: ir.FunctionIR, var: ir.Var) -> str | None:
    """The captured variable at the left end of a ``<<`` chain, or None."""
    for _ in range(256):
        d = ir_utils.guard(ir_utils.get_definition, func_ir, var)
        if not (isinstance(d, ir.Expr) and d.op == "binop" and d.fn is operator.lshift):
            break
        var = d.lhs
    d = ir_utils.guard(ir_utils.get_definition, func_ir, var)
    return d.name if isinstance(d, (ir.FreeVar, ir.Global)) else None


def _stores_or_prints(code: pytypes.CodeType) -> bool:
    return any(ins.opname == "STORE_SUBSCR" or (ins.opname == "LOAD_GLOBAL" and ins.argval in (
        "print", "atomic_ref", "atomic_fence")) for c in nested_codes(code)
        for ins in dis.get_instructions(c))


def _check_group_scope(func_ir: ir.FunctionIR, streams: set[str]) -> None:
    """Refuse what group scope cannot do once per work-group (:func:`_why_not_once`;
    ``streams``: the names of the kernel's captured streams)."""
    for block in func_ir.blocks.values():
        for stmt in block.body:
            why = _why_not_once(func_ir, stmt, streams)
            if why is not None:
                raise KernelSourceError(why, stmt.loc)


def _stores_once(func_ir: ir.FunctionIR, group: ir.Var) -> None:
    """Each group-scope ``t[i] = v`` -> ``group_store(g, t, i, v)``."""
    for block in func_ir.blocks.values():
        body: list[ir.Stmt] = []
        for stmt in block.body:
            if isinstance(stmt, (ir.SetItem, ir.StaticSetItem)):
                index = stmt.index if isinstance(stmt, ir.SetItem) else stmt.index_var
                fn = block.scope.redefine("$pysycl_group_store", stmt.loc)
                res = block.scope.redefine("$pysycl_stored", stmt.loc)
                body += [ir.Assign(ir.Global("group_store", group_store, stmt.loc), fn, stmt.loc),
                         ir.Assign(ir.Expr.call(fn, [group, stmt.target, index, stmt.value], (),
                                                stmt.loc), res, stmt.loc)]
                continue
            body.append(stmt)
        block.body = body


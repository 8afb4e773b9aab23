"""Captured strings as compile-time constants: ``op = "min"; ... if op == "min":`` in a kernel.

A device has no strings, but a kernel may compare a captured ``str`` (a closure variable or
a module global; part of the kernel's key, so each value compiles its own specialisation,
see :mod:`pysycl._kernels.captures`) with a literal or another constant string.
:class:`FoldStringComparisons` runs before Numba's dead-branch pruning: it replaces each
``==`` / ``!=`` whose two operands are constants, one of them a ``str``, by its ``bool``
value, and drops the string constants nothing reads any more — so the untaken branch is
pruned and no string reaches type inference. A string used any other way still fails to
type with "strings cannot be used in kernels".
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any

from pysycl_numba._numba_compat import DeadBranchPrune, FunctionPass, ir, ir_utils, register_pass

if TYPE_CHECKING:
    from pysycl_numba._numba_compat import PassManager, StateDict

_FOLDED = {operator.eq: operator.eq, operator.ne: operator.ne}
_NONE = object()


def _constant(func_ir: ir.FunctionIR, var: ir.Var) -> Any:
    """The value of ``var`` when it is a single assignment of a constant, a closure
    variable or a global; ``_NONE`` otherwise."""
    d = ir_utils.guard(ir_utils.get_definition, func_ir, var)
    if isinstance(d, (ir.Const, ir.FreeVar, ir.Global)):
        return d.value
    return _NONE


def _is_string(value: Any) -> bool:
    return isinstance(value, (str, bytes))


def _reads(st: ir.Stmt) -> list[ir.Var]:
    """The variables statement ``st`` reads."""
    if isinstance(st, ir.Del):
        return []
    if isinstance(st, ir.Assign):
        v = st.value
        return [v] if isinstance(v, ir.Var) else v.list_vars() if isinstance(v, ir.Expr) else []
    return st.list_vars()


def _drop_unused_strings(func_ir: ir.FunctionIR) -> None:
    """Remove assignments of string constants whose variable nothing reads."""
    while True:
        used = {v.name for blk in func_ir.blocks.values() for st in blk.body for v in _reads(st)}
        dead = set()
        for blk in func_ir.blocks.values():
            for st in blk.body:
                if (isinstance(st, ir.Assign) and st.target.name not in used
                        and isinstance(st.value, (ir.Const, ir.FreeVar, ir.Global))
                        and _is_string(st.value.value)):
                    dead.add(st.target.name)
        if not dead:
            return
        for blk in func_ir.blocks.values():
            blk.body = [st for st in blk.body if not (
                (isinstance(st, ir.Assign) and st.target.name in dead)
                or (isinstance(st, ir.Del) and st.value in dead))]
        for name in dead:
            func_ir._definitions.pop(name, None)


@register_pass(mutates_CFG=False, analysis_only=False)
class FoldStringComparisons(FunctionPass):
    """Fold ``==`` / ``!=`` of constant strings to ``bool`` constants (see the module)."""

    _name = "pysycl_fold_string_comparisons"

    def __init__(self) -> None:
        FunctionPass.__init__(self)

    def run_pass(self, state: StateDict) -> bool:
        """Fold the comparisons; True when the IR changed."""
        func_ir = state.func_ir
        changed = False
        for blk in func_ir.blocks.values():
            for st in blk.body:
                e = st.value if isinstance(st, ir.Assign) else None
                if not (isinstance(e, ir.Expr) and e.op == "binop" and e.fn in _FOLDED):
                    continue
                lhs, rhs = _constant(func_ir, e.lhs), _constant(func_ir, e.rhs)
                if lhs is _NONE or rhs is _NONE or not (_is_string(lhs) or _is_string(rhs)):
                    continue
                st.value = ir.Const(bool(_FOLDED[e.fn](lhs, rhs)), e.loc)
                func_ir._definitions[st.target.name] = [st.value]
                changed = True
        if changed:
            _drop_unused_strings(func_ir)
        return changed


def fold_strings_before_pruning(pm: PassManager) -> None:
    """Run :class:`FoldStringComparisons` right before the first dead-branch pruning."""
    k = [p for p, _ in pm.passes].index(DeadBranchPrune)
    pm.passes.insert(k, (FoldStringComparisons, "pysycl: fold comparisons of constant strings"))

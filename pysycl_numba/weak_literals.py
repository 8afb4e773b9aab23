"""Python float literals as weak operands (numpy 2, NEP 50): ``h * 2.0`` stays float16.

Numba types a Python float constant as float64, so ``np.float16(x) * 2.0`` would be
typed as float64 arithmetic; numpy 2 converts the literal to the other operand's
type instead. :class:`MarkWeakLiterals` runs right before type inference: each
operand of a binary operator (``+ - * /``, comparisons, in-place forms) and each
argument of ``min``/``max``/``np.clip``/numpy's math ufuncs that is a float constant gets its own constant of
value :class:`~pysycl_numba.overloads.half.WeakFloat`, typed ``WeakFloatLiteral``.
Only the float16 and float32 templates (``overloads/half.py``, ``overloads/float32.py``),
``np.clip`` and numpy's math ufuncs (``overloads/math.py``) read it as weak; every other
operation sees the float64 it always was, so nothing else changes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from pysycl_numba._numba_compat import FunctionPass, ir, ir_utils, register_pass
from pysycl_numba.overloads.half import WeakFloat
from pysycl_numba.overloads.math import SUPPORTED as NUMPY_MATH
from pysycl_numba.overloads.sycl_intrel import WEAK_FLOAT_FUNCTIONS as SYCL_RELATIONAL
from pysycl_numba.overloads.sycl_math import WEAK_ARG_FUNCTIONS as SYCL_MATH

if TYPE_CHECKING:
    from pysycl_numba._numba_compat import StateDict

_BINOPS = ("binop", "inplace_binop")


def _float_const(func_ir: Any, var: Any) -> float | None:
    """The value of ``var`` when it is defined once as a Python float constant."""
    try:
        d = ir_utils.get_definition(func_ir, var)
    except (KeyError, ir_utils.GuardException):  # no or several definitions: no constant
        return None
    if isinstance(d, ir.Const) and type(d.value) is float:
        return d.value
    return None


#: Functions whose float literal arguments are weak: ``min``, ``max``, ``np.clip``,
#: numpy's math ufuncs (``np.minimum(np.float32(x), 0.7)`` is a float32, as in numpy 2)
#: the SYCL math functions (``sycl.clamp(x, 0.0, 1.0)``, ``sycl.native.divide(x, 2.0)``) and
#: the SYCL relational functions (``sycl.isless(np.float32(x), 0.5)``).
_WEAK_ARG_FUNCTIONS = (min, max, np.clip, *NUMPY_MATH, *SYCL_MATH, *SYCL_RELATIONAL)


def _is_min_max(func_ir: Any, func: Any) -> bool:
    """Whether ``func`` is one of :data:`_WEAK_ARG_FUNCTIONS` (``np.clip`` as read off numpy)."""
    value = _global_value(func_ir, func)
    return value is not None and any(value is f for f in _WEAK_ARG_FUNCTIONS)


def _global_value(func_ir: Any, var: Any, depth: int = 4) -> Any:
    """The object ``var`` names when it is a global or a chain of attributes of one
    (``sycl.native.divide``), else None."""
    try:
        d = ir_utils.get_definition(func_ir, var)
    except (KeyError, ir_utils.GuardException):  # get_definition raises either
        return None
    if isinstance(d, (ir.Global, ir.FreeVar)):
        return d.value
    if isinstance(d, ir.Expr) and d.op == "getattr" and depth > 0:
        return getattr(_global_value(func_ir, d.value, depth - 1), d.attr, None)
    return None


def _operands(func_ir: Any, expr: Any) -> list[tuple[str, int | None]]:
    """The places of ``expr`` that may hold a weak float: (attribute, index in args)."""
    if expr.op in _BINOPS:
        return [("lhs", None), ("rhs", None)]
    if expr.op == "call" and not expr.kws and _is_min_max(func_ir, expr.func):
        return [("args", k) for k in range(len(expr.args))]
    return []


def _weaken(func_ir: Any, block: Any, stmt: Any, replaced: set[str]) -> list[Any]:
    """New statements defining weak copies of ``stmt``'s float operands (rewires them)."""
    expr = stmt.value
    new = []
    for attr, k in _operands(func_ir, expr):
        var = getattr(expr, attr) if k is None else expr.args[k]
        value = _float_const(func_ir, var)
        if value is None:
            continue
        replaced.add(var.name)
        weak = ir.Var(block.scope, ir_utils.mk_unique_var("$weak_float"), stmt.loc)
        new.append(ir.Assign(ir.Const(WeakFloat(value), stmt.loc), weak, stmt.loc))
        if k is None:
            setattr(expr, attr, weak)
        else:
            expr.args[k] = weak
    return new


@register_pass(mutates_CFG=False, analysis_only=False)
class MarkWeakLiterals(FunctionPass):
    """Give float constants used as operands the weak literal type."""

    _name = "pysycl_mark_weak_literals"

    def __init__(self) -> None:
        FunctionPass.__init__(self)

    def run_pass(self, state: StateDict) -> bool:
        """Rewrite ``state.func_ir`` in place."""
        func_ir = state.func_ir
        replaced: set[str] = set()
        for block in func_ir.blocks.values():
            body = []
            for stmt in block.body:
                if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr):
                    body.extend(_weaken(func_ir, block, stmt, replaced))
                body.append(stmt)
            block.body = body
        if not replaced:
            return False
        _drop_unused(func_ir, replaced)
        func_ir._definitions = ir_utils.build_definitions(func_ir.blocks)
        return True


def _drop_unused(func_ir: Any, names: set[str]) -> None:
    """Remove the float constants of ``names`` nothing reads any more.

    A float64 left in the IR would make the kernel require ``aspect.fp64``.
    """
    used: set[str] = set()
    for block in func_ir.blocks.values():
        for stmt in block.body:
            target = stmt.target.name if isinstance(stmt, ir.Assign) else None
            used |= {v.name for v in stmt.list_vars() if v.name != target}
    for block in func_ir.blocks.values():
        block.body = [stmt for stmt in block.body
                      if not (isinstance(stmt, ir.Assign) and stmt.target.name in names
                              and stmt.target.name not in used)]

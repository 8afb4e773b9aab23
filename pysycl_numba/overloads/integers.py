"""Integer arithmetic with numpy's result types: ``int8 + int8`` is an int8, as on the host.

Numba computes integers narrower than 64 bits in int64 (``choose_result_int``):
``int8(127) + int8(1)`` is 128 and ``uint32(1) - uint32(2)`` is -1. numpy 2 (and so
the ``host_debuggable`` device, which runs the kernel on numpy scalars) keeps the
operands' common type, ``np.result_type``, and wraps around: -128 and 4294967295,
as C++ does for ``int`` and wider types. Here the operators below type as numpy's:

* ``+ - * // %`` and ``& | ^`` (and their in-place forms) of two integers (or an
  integer and a bool) give ``np.result_type`` of the operands when that is an
  integer type (``uint64`` with a signed type is float64 in numpy and in Numba:
  Numba's rule serves it); unary ``-``, ``+``, ``~`` and ``abs`` keep the type.
* A Python int literal is *weak* (numpy 2, NEP 50): ``np.uint8(x) - 1`` is a uint8.
  A literal that does not fit the type is a compile error, numpy's
  ``OverflowError`` (``np.int8(x) + 300``): :func:`literal_overflow`, called after
  type inference (Numba types such an operation with its own int64 template).

The lowering is Numba's integer lowering (``int_add_impl``, ``int_floordiv_impl``
...), which computes in the signature's return type. Shifts (``<<``, ``>>``) and
``**`` keep Numba's rules (int64 for narrow types): numpy's narrow shifts define
shift counts beyond the width, LLVM's do not.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from pysycl_numba._numba_compat import (
    AbstractTemplate,
    LoweringRegistry,
    TypingRegistry,
    errors,
    numpy_support,
    signature,
    types,
)

typing_registry = TypingRegistry()
lowering_registry = LoweringRegistry("pysycl.integers")

BINARY = (operator.add, operator.sub, operator.mul, operator.floordiv, operator.mod,
          operator.and_, operator.or_, operator.xor,
          operator.iadd, operator.isub, operator.imul, operator.ifloordiv, operator.imod,
          operator.iand, operator.ior, operator.ixor)
UNARY = (operator.neg, operator.pos, operator.invert, abs)

def _literal(t: types.Type) -> bool:
    return isinstance(t, (types.IntegerLiteral, types.BooleanLiteral))


def result_dtype(args: tuple[types.Type, ...]) -> np.dtype | None:
    """numpy's integer result dtype of an operator on ``args``, or None (not integers,
    only literals, or a result numpy does not compute in an integer type).

    Raises:
        TypingError: an int literal that does not fit the result (numpy's OverflowError).
    """
    strong = [a for a in args if not _literal(a)]
    if not strong or not all(isinstance(a, (types.Integer, types.Boolean)) for a in strong):
        return None
    res = np.result_type(*(numpy_support.as_dtype(a) for a in strong))
    if res.kind not in "iu":
        return None
    check_int_literals(args, res)
    return res


def fits(value: int, dt: np.dtype) -> bool:
    """Whether the Python int ``value`` is a value of the integer dtype ``dt``."""
    info = np.iinfo(dt)
    return bool(info.min <= value <= info.max)


def check_int_literals(args: Sequence[types.Type], res: np.dtype, who: str = "") -> None:
    """numpy 2's ``OverflowError`` for an int literal of ``args`` that ``res`` (an integer
    result) cannot hold, as a ``TypingError`` (``who``: a prefix, ``"np.minimum: "``)."""
    if res.kind not in "iu":
        return
    for a in args:
        if isinstance(a, types.IntegerLiteral) and not fits(a.literal_value, res):
            raise errors.TypingError(f"{who}Python integer {a.literal_value} out of bounds "
                                     f"for {res}")


def _template(key: Any, nargs: int) -> type:
    class NumpyIntegerOp(AbstractTemplate):
        prefer_literal = True  # weak literals: seen as literals before their int64 type

        def generic(self, args: tuple, kws: dict) -> Any:
            if kws or len(args) != nargs:
                return None
            try:
                res = result_dtype(tuple(args))
            except errors.TypingError:
                return None  # a literal that does not fit: literal_overflow() says so
            if res is None:
                return None
            rt = numpy_support.from_dtype(res)
            return signature(rt, *(rt for _ in args))

    NumpyIntegerOp.key = key
    NumpyIntegerOp.__name__ = f"NumpyInteger_{getattr(key, '__name__', key)}"
    return NumpyIntegerOp


for _op in BINARY:
    typing_registry.register_global(_op)(_template(_op, 2))
for _op in UNARY:
    typing_registry.register_global(_op)(_template(_op, 1))


def literal_overflow(expr: Any, typemap: dict[str, types.Type]) -> str | None:
    """Why the operator ``expr`` (a typed ``binop``) is numpy's OverflowError, or None:
    an int literal operand that does not fit the other operand's integer type."""
    if expr.op not in ("binop", "inplace_binop") or expr.fn not in BINARY:
        return None
    try:
        result_dtype((typemap[expr.lhs.name], typemap[expr.rhs.name]))
    except errors.TypingError as e:
        return (f"{e.msg.splitlines()[0]}: numpy computes an integer operator in its operands' "
                "type and a Python int literal takes that type (numpy 2 raises OverflowError); "
                "use a literal within the type's range, or widen first (np.int64(x) + 300)")
    return None

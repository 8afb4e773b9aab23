"""float32 arithmetic with Python literals stays float32, as in numpy 2 (and on the host).

Numba types a Python number literal as a 64-bit value, so ``x * 2.0``, ``x + 1``
and ``x < 0.1`` of a float32 ``x`` compute in float64: another rounding than numpy
2's and the host device's (a Python literal is weak, NEP 50: converted to float32
first), and a ``double`` that makes the kernel need ``aspect.fp64``. Here:

* ``+ - * / // % **`` (and their in-place forms), the comparisons, ``min``/``max`` and
  ``pow`` of a float32 and literals (float literals marked weak by
  :class:`~pysycl_numba.weak_literals.MarkWeakLiterals`, int and bool literals) or
  numbers numpy combines with float32 into float32 (float16, bool, int8/16,
  uint8/16: ``np.result_type``) give float32 (comparisons: bool); the literal is
  rounded to float32 first (LLVM folds the conversion of a constant).
* A float64 *value* (a captured Python float, ``np.float64(...)``) stays strong: float64,
  as in numpy. float16 operands with literals are :mod:`.half`'s.

The lowering is Numba's float lowering on the float32 signature (``min``/``max``:
:func:`.half.minmax`, Python's algorithm). ``**`` keeps Numba's rule (float64 for a
literal exponent): numpy's float32 ``powf`` is correctly rounded where an OpenCL
``pow`` is not, and the float64 power rounded to float32 is closer to it.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from pysycl_numba._numba_compat import (
    AbstractTemplate,
    LoweringRegistry,
    TypingRegistry,
    numpy_support,
    signature,
    types,
)
from pysycl_numba.overloads.half import WeakFloatLiteral, minmax

typing_registry = TypingRegistry()
lowering_registry = LoweringRegistry("pysycl.float32")

ARITH = (operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
         operator.mod, operator.iadd, operator.isub, operator.imul, operator.itruediv,
         operator.ifloordiv, operator.imod)
COMPARE = (operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge)


def _operand(t: types.Type) -> bool:
    """Whether ``t`` combines with float32 into float32 (numpy 2's rules)."""
    if isinstance(t, (WeakFloatLiteral, types.IntegerLiteral, types.BooleanLiteral)):
        return True
    if not isinstance(t, (types.Integer, types.Float, types.Boolean)):
        return False
    return np.result_type(np.float32, numpy_support.as_dtype(t)) == np.float32


def float32_signature(args: tuple, ret: types.Type | None = None) -> Any:
    """``ret(float32, ...)`` when ``args`` compute in float32 with a literal, else None
    (no literal: Numba's own rules give the same type)."""
    if types.float32 not in args or not all(_operand(a) for a in args):
        return None
    if not any(isinstance(a, types.Literal) for a in args):
        return None
    return signature(ret or types.float32, *(types.float32 for _ in args))


def _template(key: Any, nargs: tuple[int, ...], ret: types.Type | None) -> type:
    class Float32Op(AbstractTemplate):
        prefer_literal = True  # literals first: they are what makes the call weak

        def generic(self, args: tuple, kws: dict) -> Any:
            if kws or len(args) not in nargs:
                return None
            return float32_signature(tuple(args), ret)

    Float32Op.key = key
    Float32Op.__name__ = f"Float32_{getattr(key, '__name__', key)}"
    return Float32Op


for _op in ARITH:
    typing_registry.register_global(_op)(_template(_op, (2,), None))
for _op in COMPARE:
    typing_registry.register_global(_op)(_template(_op, (2,), types.boolean))
for _op in (min, max):
    typing_registry.register_global(_op)(_template(_op, (2, 3, 4, 5, 6, 7, 8), None))


for _n in range(2, 9):
    lowering_registry.lower(max, *(types.float32,) * _n)(minmax(">"))
    lowering_registry.lower(min, *(types.float32,) * _n)(minmax("<"))

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

from pysycl_numba._numba_compat import (
    LoweringRegistry,
    TypingRegistry,
    signature,
    types,
)
from pysycl_numba.overloads.half import keeps, minmax, weak_template

typing_registry = TypingRegistry()
lowering_registry = LoweringRegistry("pysycl.float32")

ARITH = (operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
         operator.mod, operator.iadd, operator.isub, operator.imul, operator.itruediv,
         operator.ifloordiv, operator.imod)
COMPARE = (operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge)


def float32_signature(args: tuple, ret: types.Type | None = None) -> Any:
    """``ret(float32, ...)`` when ``args`` compute in float32 with a literal, else None
    (no literal: Numba's own rules give the same type)."""
    if types.float32 not in args or not all(keeps(types.float32, a) for a in args):
        return None
    if not any(isinstance(a, types.Literal) for a in args):
        return None
    return signature(ret or types.float32, *(types.float32 for _ in args))


for _op in ARITH:
    typing_registry.register_global(_op)(weak_template(_op, (2,), None, float32_signature,
                                                       "Float32"))
for _op in COMPARE:
    typing_registry.register_global(_op)(weak_template(_op, (2,), types.boolean,
                                                       float32_signature, "Float32"))
for _op in (min, max):
    typing_registry.register_global(_op)(weak_template(_op, (2, 3, 4, 5, 6, 7, 8), None,
                                                       float32_signature, "Float32"))


for _n in range(2, 9):
    lowering_registry.lower(max, *(types.float32,) * _n)(minmax(">"))
    lowering_registry.lower(min, *(types.float32,) * _n)(minmax("<"))

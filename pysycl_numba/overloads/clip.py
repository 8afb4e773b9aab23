"""``np.clip(x, lo, hi)`` on numbers in kernels: numpy's result type and NaN rule.

numpy 2 (``numpy/_core/_methods.py`` ``_clip``, ``umath/clip.cpp``):

* the result type is ``np.result_type(x, lo, hi)``, Python number literals weak
  (NEP 50: ``np.clip(np.float32(v), 0.0, 1.0)`` is a float32; a float literal is
  marked weak by :mod:`pysycl_numba.weak_literals`, an int literal is Numba's
  ``IntegerLiteral``); complex numbers have no device implementation;
* for an integer ``x``, a Python int bound at or beyond the end of ``x``'s range is
  dropped (``np.clip(np.uint8(v), -1, 3)`` is ``np.minimum(v, 3)``); another literal
  that does not fit the result type is numpy's ``OverflowError``, a compile error here;
* ``None`` for a bound: ``np.minimum``/``np.maximum`` (numpy's NaN-propagating loop);
* both bounds: ``lo`` if ``x < lo``, then ``hi`` if that is ``> hi`` (so ``hi`` wins
  when ``lo > hi``; a NaN ``x`` stays NaN, ``-0.0`` stays ``-0.0``), and NaN when
  ``lo`` or ``hi`` is NaN -- the loops numpy runs for numbers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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
from pysycl_numba.overloads.half import WeakFloatLiteral
from pysycl_numba.overloads.integers import fits
from pysycl_numba.overloads.math import minmax

if TYPE_CHECKING:
    from collections.abc import Sequence

    from llvmlite import ir as llir

    from pysycl_numba._numba_compat import BaseContext, Signature

typing_registry = TypingRegistry()
lowering_registry = LoweringRegistry("pysycl.clip")

_LITERALS = (types.IntegerLiteral, types.BooleanLiteral, WeakFloatLiteral)


def _operand(t: types.Type) -> Any:
    """What numpy's promotion sees: a Python value for a literal (weak), else a dtype."""
    if isinstance(t, _LITERALS):
        return t.literal_value
    t = types.unliteral(t)
    if isinstance(t, (types.Integer, types.Float, types.Boolean)):
        return numpy_support.as_dtype(t)
    return None


def plan(args: Sequence[types.Type]) -> tuple[np.dtype, bool, bool] | None:
    """numpy's result dtype of ``np.clip(*args)`` and which bounds take part (None: untyped).

    Raises:
        TypingError: a Python int bound that does not fit the result type.
    """
    x = _operand(types.unliteral(args[0]))  # x itself is an array to numpy: never weak
    if not isinstance(x, np.dtype):
        return None
    bounds: list[Any] = []
    for t in args[1:]:
        if isinstance(t, (types.NoneType, types.Omitted)):
            bounds.append(None)
            continue
        b = _operand(t)
        if b is None:
            return None
        bounds.append(b)
    if x.kind in "iu":  # numpy's _clip: an int bound beyond x's range is no bound
        info = np.iinfo(x)
        if type(bounds[0]) is int and bounds[0] <= info.min:
            bounds[0] = None
        if type(bounds[1]) is int and bounds[1] >= info.max:
            bounds[1] = None
    res = np.result_type(x, *(b for b in bounds if b is not None))
    if res.kind not in "biuf":
        return None
    for b in bounds:
        if type(b) is int and res.kind in "iu" and not fits(b, res):
            raise errors.TypingError(f"np.clip: Python integer {b} out of bounds for {res}")
    return res, bounds[0] is not None, bounds[1] is not None


@typing_registry.register_global(np.clip)
class NumpyClip(AbstractTemplate):
    """``np.clip(x, lo, hi)`` of numbers (``lo``/``hi`` may be ``None``)."""

    key = np.clip
    prefer_literal = True  # weak literals keep their value

    _refused: errors.TypingError | None = None

    def generic(self, args: tuple, kws: dict) -> Any:
        """numpy's result type (:func:`plan`), the literal argument types kept."""
        if kws or len(args) != 3:
            return None
        if self._refused is not None:
            # Numba retries a refused call with the literals as plain int64 values: that
            # would be a strong int64 clip, not numpy's answer (an OverflowError)
            raise self._refused
        try:
            p = plan(args)
        except errors.TypingError as e:
            self._refused = e
            raise
        if p is None:
            return None
        return signature(numpy_support.from_dtype(p[0]), *args)


@lowering_registry.lower(np.clip, types.Any, types.Any, types.Any)
def _clip(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
          args: Sequence[llir.Value]) -> llir.Value:
    p = plan(sig.args)
    assert p is not None  # typing made the same plan
    _, use_lo, use_hi = p
    ret = sig.return_type
    x, lo, hi = (context.cast(builder, v, t, ret) if u else None
                 for v, t, u in zip(args, sig.args, (True, use_lo, use_hi), strict=True))
    if lo is None or hi is None:
        if lo is not None:
            return minmax(context, builder, np.maximum, x, lo, ret)
        return x if hi is None else minmax(context, builder, np.minimum, x, hi, ret)
    if isinstance(ret, types.Float):
        r = builder.select(builder.fcmp_ordered("<", x, lo), lo, x)
        r = builder.select(builder.fcmp_ordered(">", r, hi), hi, r)
        nan = builder.fcmp_unordered("uno", lo, hi)
        return builder.select(nan, builder.fadd(lo, hi), r)  # a NaN bound: NaN
    cmp = builder.icmp_signed if isinstance(ret, types.Integer) and ret.signed \
        else builder.icmp_unsigned
    r = builder.select(cmp("<", x, lo), lo, x)
    return builder.select(cmp(">", r, hi), hi, r)

"""float16 arithmetic in half precision: each operation rounded to ``half``, as numpy does.

Numba's typing promotes float16 (``x * x + x`` would be computed in float32 and
rounded once); on a device with ``aspect.fp16`` pysycl types and lowers it as numpy
does, one ``half`` instruction (``fadd half``: SPIR-V ``OpFAdd`` on ``OpTypeFloat 16``,
capability ``Float16``) per operation:

* ``+ - * /`` and the comparisons on two float16 operands, or a float16 and a
  number numpy promotes to float16 (``np.result_type``: bool, int8, uint8), give
  float16 (comparisons: bool); so do unary ``-``/``+``, ``abs``, ``min``/``max``.
* Python number literals are *weak*, numpy 2's rule (NEP 50): ``h * 2.0``,
  ``h + 1`` and ``h < 0.1`` convert the literal to float16 (round to nearest even)
  and stay float16. :class:`~pysycl_numba.weak_literals.MarkWeakLiterals` gives a
  float constant used directly as an operand the type :class:`WeakFloatLiteral`;
  every other template sees it as the float64 it was (Numba's literal rule: the
  non-literal type first), so only the float16 templates here treat it as weak.
  Integer literals are Numba's ``IntegerLiteral`` already.
* ``math.*`` of one float16 gives float16 (a Python float stored to float16 or
  combined with float16 rounds the same way on the host); numpy's math ufuncs
  already follow numpy's result types (``overloads/math.py``).
* ``//``, ``%`` and ``**`` (and ``pow``) of two such operands give float16, as numpy,
  which computes them in float32 and rounds once (``HALF_floor_divide``,
  ``HALF_remainder``; ``power``'s float16 loop is the float32 one): ``//`` and ``%``
  widen to float and run Numba's float ``divmod`` (CPython's ``float_divmod``, which
  numpy's ``npy_divmodf`` copies), so they equal numpy bit for bit. ``**`` is the
  float64 ``pow`` rounded to float, then to half: the correctly rounded ``powf``
  (glibc's, numpy's, is off by a fraction of an ulp for about one float16 pair in 60
  million; a float32 ``pow`` on a device, by up to 16 ulp, for many more), and a
  signaling NaN operand gives NaN, as glibc's ``powf``. It needs ``aspect.fp64`` (the
  compiler finds the ``double`` in the IR).

The lowering of ``half`` operations is Numba's generic float lowering (``fadd``,
``fcmp``, ``fabs``) on ``half`` values (``pysycl_numba.type_models._FloatModel``);
``+ - * /`` and ``sqrt`` are correctly rounded in IEEE 754, so results match numpy
bit for bit.
"""

from __future__ import annotations

import math
import operator
from typing import TYPE_CHECKING, Any

import numpy as np
from llvmlite import ir as llir

from pysycl_numba._numba_compat import (
    AbstractTemplate,
    LoweringRegistry,
    TypingRegistry,
    models,
    numpy_support,
    signature,
    types,
)
from pysycl_numba.targets.spirv import ocl

if TYPE_CHECKING:
    from collections.abc import Callable

    from pysycl_numba._numba_compat import BaseContext, DataModelManager

typing_registry = TypingRegistry()
lowering_registry = LoweringRegistry("pysycl.half")
lower = lowering_registry.lower


class WeakFloat(float):
    """A Python float literal used as an operand (the value of a marked ``ir.Const``)."""

    __slots__ = ()


class WeakFloatLiteral(types.Literal, types.Dummy):
    """The type of a :class:`WeakFloat`: a float64 literal that float16 operands keep weak."""

    def __init__(self, value: float) -> None:
        self._literal_init(float(value))
        types.Dummy.__init__(self, f"WeakLiteral[float]({float(value)!r})")

    @property
    def literal_type(self) -> types.Type:
        """float64, what Numba types a Python float as."""
        return types.float64

    def can_convert_to(self, typingctx: Any, other: types.Type) -> Any:
        """Converts like the float64 it is."""
        return typingctx.can_convert(types.float64, other)


def resolve_half_value(val: object) -> types.Type | None:
    """The type of a weak float literal (:class:`WeakFloat`), else None."""
    if type(val) is WeakFloat:
        return WeakFloatLiteral(val)
    return None


class _WeakFloatModel(models.PrimitiveModel):
    def __init__(self, dmm: DataModelManager, fe_type: WeakFloatLiteral) -> None:
        super().__init__(dmm, fe_type, llir.DoubleType())


def register_models(dmm: DataModelManager) -> None:
    """Add the weak literal's data model (a ``double``) to the target's manager."""
    dmm.register(WeakFloatLiteral, _WeakFloatModel)


@lowering_registry.lower_constant(WeakFloatLiteral)
def _weak_constant(context: BaseContext, builder: llir.IRBuilder, ty: WeakFloatLiteral,
                   pyval: float) -> llir.Value:
    return llir.Constant(llir.DoubleType(), float(pyval))


@lowering_registry.lower_cast(WeakFloatLiteral, types.Number)
@lowering_registry.lower_cast(WeakFloatLiteral, types.Boolean)
def _weak_cast(context: BaseContext, builder: llir.IRBuilder, fromty: WeakFloatLiteral,
               toty: types.Type, val: llir.Value) -> llir.Value:
    # double -> half rounds to nearest even, as numpy converts a Python float.
    return context.cast(builder, val, types.float64, toty)


# ====================================================================== typing
def keeps(ftype: types.Float, t: types.Type) -> bool:
    """Whether ``t`` combines with ``ftype`` into ``ftype`` (numpy 2's rules: a Python
    literal is weak)."""
    if isinstance(t, (WeakFloatLiteral, types.IntegerLiteral, types.BooleanLiteral)):
        return True
    t = types.unliteral(t)
    if not isinstance(t, (types.Integer, types.Float, types.Boolean)):
        return False
    dt = numpy_support.as_dtype(ftype)
    return np.result_type(dt, numpy_support.as_dtype(t)) == dt


def half_signature(args: tuple, ret: types.Type | None = None) -> Any:
    """``ret(float16, ...)`` when ``args`` compute in float16, else None."""
    if not args or types.float16 not in args or not all(keeps(types.float16, a) for a in args):
        return None
    return signature(ret or types.float16, *(types.float16 for _ in args))


ARITH = (operator.add, operator.sub, operator.mul, operator.truediv,
         operator.iadd, operator.isub, operator.imul, operator.itruediv)
#: numpy computes these in float32 and rounds once (``HALF_floor_divide``, ``HALF_remainder``,
#: ``power``'s ``e`` loop ``astype={'e': 'f'}``); the lowering below does the same.
VIA_FLOAT = (operator.floordiv, operator.ifloordiv, operator.mod, operator.imod,
             operator.pow, operator.ipow, pow)
COMPARE = (operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge)


def weak_template(key: Any, nargs: tuple[int, ...], ret: types.Type | None,
                  typer: Callable[[tuple, types.Type | None], Any] = half_signature,
                  prefix: str = "Float16") -> type:
    """A template of ``key`` for ``nargs`` arguments typed by ``typer(args, ret)``
    (:func:`half_signature`; ``float32.float32_signature``), literals seen first."""
    class WeakLiteralOp(AbstractTemplate):
        prefer_literal = True  # see WeakFloatLiteral: literals first

        def generic(self, args: tuple, kws: dict) -> Any:
            if kws or len(args) not in nargs:
                return None
            return typer(tuple(args), ret)

    WeakLiteralOp.key = key
    WeakLiteralOp.__name__ = f"{prefix}_{getattr(key, '__name__', key)}"
    return WeakLiteralOp


for _op in (*ARITH, *VIA_FLOAT):
    typing_registry.register_global(_op)(weak_template(_op, (2,), None))
for _op in COMPARE:
    typing_registry.register_global(_op)(weak_template(_op, (2,), types.boolean))
for _op in (operator.neg, operator.pos, abs):
    typing_registry.register_global(_op)(weak_template(_op, (1,), None))
for _op in (min, max):
    typing_registry.register_global(_op)(weak_template(_op, (2, 3, 4, 5, 6, 7, 8), None))

#: ``math`` functions of one float argument typed float16 -> float16 here.
MATH_UNARY = (math.sqrt, math.exp, math.exp2, math.expm1, math.log, math.log2, math.log10,
              math.log1p, math.sin, math.cos, math.tan, math.asin, math.acos, math.atan,
              math.sinh, math.cosh, math.tanh, math.asinh, math.acosh, math.atanh,
              math.fabs, math.erf, math.erfc, math.gamma, math.lgamma)


def _math_template(fn: Any) -> type:
    class Float16Math(AbstractTemplate):
        key = fn

        def generic(self, args: tuple, kws: dict) -> Any:
            if kws or len(args) != 1 or types.unliteral(args[0]) != types.float16:
                return None
            return signature(types.float16, types.float16)

    Float16Math.__name__ = f"Float16_{fn.__name__}"
    return Float16Math


for _fn in MATH_UNARY:
    typing_registry.register_global(_fn)(_math_template(_fn))


# ==================================================================== lowering
# Numba's float lowering serves the rest (fadd/fsub/fmul on ``half``, fcmp, fabs).
def _truediv(context: BaseContext, builder: llir.IRBuilder, sig: Any, args: Any) -> llir.Value:
    # Numba's checks for a zero divisor know no ``half`` (and the numpy error model
    # raises nothing): IEEE division gives inf/nan, as numpy.
    return builder.fdiv(*args)


for _op in (operator.truediv, operator.itruediv):
    lower(_op, types.float16, types.float16)(_truediv)


_F32_SIG = signature(types.float32, types.float32, types.float32)


def _via_float32(op: Any) -> Any:
    """numpy's ``HALF_floor_divide``/``HALF_remainder``: widen to float, compute, round once.

    Numba's float ``//`` and ``%`` are CPython's ``float_divmod``, which numpy's
    ``npy_divmodf`` copies (the sign of a zero remainder is the divisor's, of a zero
    quotient the true quotient's; a zero divisor gives ``a / b`` and NaN), so the
    float32 result is numpy's, bit for bit; ``fptrunc`` rounds it to nearest even.
    """
    def impl(context: BaseContext, builder: llir.IRBuilder, sig: Any, args: Any) -> llir.Value:
        wide = [builder.fpext(a, llir.FloatType()) for a in args]
        r = context.get_function(op, _F32_SIG)(builder, wide)
        return builder.fptrunc(r, llir.HalfType())

    impl.__name__ = f"half_{op.__name__}"
    return impl


for _op in (operator.floordiv, operator.ifloordiv, operator.mod, operator.imod):
    lower(_op, types.float16, types.float16)(_via_float32(_op))


def _is_snan(builder: llir.IRBuilder, h: llir.Value) -> llir.Value:
    """Whether the half ``h`` is a signaling NaN (exponent all ones, quiet bit clear, not inf)."""
    bits = builder.bitcast(h, llir.IntType(16))
    mag = builder.and_(bits, llir.Constant(bits.type, 0x7FFF))
    return builder.and_(builder.icmp_unsigned(">", mag, llir.Constant(bits.type, 0x7C00)),
                        builder.icmp_unsigned("<", mag, llir.Constant(bits.type, 0x7E00)))


def _power(context: BaseContext, builder: llir.IRBuilder, sig: Any, args: Any) -> llir.Value:
    """numpy's float16 ``**``: C's ``powf`` of the widened operands, rounded to half.

    ``powf`` here is the float64 ``pow`` rounded to float: the correctly rounded
    float (a float32 ``pow`` may be a few ulp off, which moves a result near a
    half-way point to the other half), then rounded to half, as numpy rounds
    ``powf``'s result. A signaling NaN operand gives NaN, as glibc's ``powf`` does
    (``pow(1, nan)`` and ``pow(nan, 0)`` are 1 only for a quiet NaN).
    """
    x, y = (builder.fpext(a, llir.DoubleType()) for a in args)
    r = ocl.call_math(builder, "pow", [x, y])
    r = builder.fptrunc(builder.fptrunc(r, llir.FloatType()), llir.HalfType())
    snan = builder.or_(_is_snan(builder, args[0]), _is_snan(builder, args[1]))
    return builder.select(snan, llir.Constant(llir.HalfType(), float("nan")), r)


for _op in (operator.pow, operator.ipow, pow):
    lower(_op, types.float16, types.float16)(_power)


def minmax(strict: str) -> Any:
    """The lowering of ``max`` (``strict`` ``">"``) or ``min`` (``"<"``) of floats, as Python."""
    def impl(context: BaseContext, builder: llir.IRBuilder, sig: Any, args: Any) -> llir.Value:
        # Python's algorithm (the host oracle runs it): the first of the extreme values
        # is kept, so max(nan, 1) is nan and max(1, nan) is 1.
        acc = args[0]
        for v in args[1:]:
            acc = builder.select(builder.fcmp_ordered(strict, v, acc), v, acc)
        return acc

    return impl


for _n in range(2, 9):
    lower(max, *(types.float16,) * _n)(minmax(">"))
    lower(min, *(types.float16,) * _n)(minmax("<"))


def _math_impl(name: str) -> Any:
    def impl(context: BaseContext, builder: llir.IRBuilder, sig: Any, args: Any) -> llir.Value:
        if context.image_format != "ptx":
            return ocl.call_math(builder, name, list(args))  # the half built-in (cl_khr_fp16)
        # libdevice has no half math: float, rounded once (NVIDIA's OpenCL has no fp16,
        # so such a kernel is refused there by aspect; PTX images still compile).
        x = builder.fpext(args[0], llir.FloatType())
        return builder.fptrunc(ocl.call_math(builder, name, [x]), llir.HalfType())

    impl.__name__ = f"half_{name}"
    return impl


for _fn in MATH_UNARY:
    # The OpenCL built-in of the same name (math.gamma is tgamma).
    lower(_fn, types.float16)(_math_impl("tgamma" if _fn is math.gamma else _fn.__name__))

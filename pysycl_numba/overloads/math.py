"""``math.*`` and numpy's math ufuncs on numbers in kernels → OpenCL C built-ins.

* ``math``: typing is Numba's (``mathdecl``/``cmathdecl``, installed by the
  target) plus ``math.fmod`` here; Numba's own CPU lowering calls libm symbols
  (``tanf``, ``erf``) that do not exist on an OpenCL device, so this module
  replaces it: every function becomes an OpenCL built-in (``_Z3tanf``) that
  LLVM's SPIR-V backend turns into an ``OpenCL.std`` extended instruction.
  Integer arguments are converted to the signature's floating-point type first,
  as Python does. ``floor/ceil/trunc`` convert to int (Python semantics);
  ``isnan/isinf/isfinite`` are ``fcmp``; ``degrees/radians`` multiply.
* numpy: a kernel computes on scalars, and ``np.sqrt(acc[i])`` means the same as
  ``math.sqrt(acc[i])``: numpy's math ufuncs applied to numbers lower to the same
  built-ins, with numpy's result types (``ufunc.resolve_dtypes``:
  ``np.sqrt(np.float32(x))`` is a float32, ``np.sqrt(2)`` a float64,
  ``np.floor(x)`` stays a float). float16 is computed in float32 and rounded, as
  numpy does. Arrays do not exist in kernels, and complex arguments are not
  supported (no device implementation), so those fail typing and ``errors.py``
  says what to write instead.
* ``override_registry``: complex division as numpy's ``npy_math`` (Numba's raises
  ``ZeroDivisionError``, a string the device cannot have), installed after
  Numba's builtin lowerings (``SYCLTargetContext.refresh``).
"""

from __future__ import annotations

import math
import operator
from typing import TYPE_CHECKING

import numpy as np
from llvmlite import ir as llir

from pysycl_numba._numba_compat import (
    AbstractTemplate,
    ConcreteTemplate,
    LoweringRegistry,
    TypingRegistry,
    errors,
    numpy_support,
    signature,
    types,
)
from pysycl_numba.overloads.half import WeakFloatLiteral
from pysycl_numba.overloads.integers import check_int_literals
from pysycl_numba.targets.spirv import ocl

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pysycl_numba._numba_compat import BaseContext, LoweringImpl, Signature

typing_registry = TypingRegistry()
lowering_registry = LoweringRegistry("pysycl.math")
lower = lowering_registry.lower


@typing_registry.register_global(math.fmod)
class MathFmod(ConcreteTemplate):
    """``math.fmod`` (Numba types it on no target)."""

    cases = [  # noqa: RUF012 - Numba's template protocol
        signature(types.float64, types.int64, types.int64),
        signature(types.float64, types.uint64, types.uint64),
        signature(types.float32, types.float32, types.float32),
        signature(types.float64, types.float64, types.float64),
    ]


# ====================================================================== math
# math.<fn> -> OpenCL C built-in of the same meaning.
_MATH_UNARY = {
    math.sqrt: "sqrt",
    math.exp: "exp",
    math.exp2: "exp2",
    math.expm1: "expm1",
    math.log: "log",
    math.log2: "log2",
    math.log10: "log10",
    math.log1p: "log1p",
    math.sin: "sin",
    math.cos: "cos",
    math.tan: "tan",
    math.asin: "asin",
    math.acos: "acos",
    math.atan: "atan",
    math.sinh: "sinh",
    math.cosh: "cosh",
    math.tanh: "tanh",
    math.asinh: "asinh",
    math.acosh: "acosh",
    math.atanh: "atanh",
    math.fabs: "fabs",
    math.erf: "erf",
    math.erfc: "erfc",
    math.gamma: "tgamma",
    math.lgamma: "lgamma",
}

_MATH_BINARY = {
    math.atan2: "atan2",
    math.pow: "pow",
    math.hypot: "hypot",
    math.copysign: "copysign",
    math.fmod: "fmod",
}

# Python's math.floor/ceil/trunc return int.
_TO_INT = {math.floor: "floor", math.ceil: "ceil", math.trunc: "trunc"}


def _as_float_args(context: BaseContext, builder: llir.IRBuilder, sig: Signature, args: Sequence[llir.Value],
                   fty: types.Type) -> list[llir.Value]:
    return [context.cast(builder, a, t, fty) for a, t in zip(args, sig.args, strict=True)]


def _float_result_type(sig: Signature) -> types.Type:
    ret = sig.return_type
    return ret if isinstance(ret, types.Float) else types.float64


def _make_float_impl(name: str) -> LoweringImpl:
    def impl(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
             args: Sequence[llir.Value]) -> llir.Value:
        fty = _float_result_type(sig)
        return ocl.call_math(builder, name, _as_float_args(context, builder, sig, args, fty))

    impl.__name__ = f"ocl_{name}"
    return impl


for _fn, _name in _MATH_UNARY.items():
    lowering_registry.lower(_fn, types.Number)(_make_float_impl(_name))
for _fn, _name in _MATH_BINARY.items():
    lowering_registry.lower(_fn, types.Number, types.Number)(_make_float_impl(_name))


def _make_to_int_impl(name: str) -> LoweringImpl:
    def impl(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
             args: Sequence[llir.Value]) -> llir.Value:
        (argty,) = sig.args
        if isinstance(argty, types.Integer):
            return context.cast(builder, args[0], argty, sig.return_type)
        value = ocl.call_math(builder, name, [args[0]])
        return context.cast(builder, value, argty, sig.return_type)

    impl.__name__ = f"ocl_{name}_to_int"
    return impl


for _fn, _name in _TO_INT.items():
    lowering_registry.lower(_fn, types.Number)(_make_to_int_impl(_name))


def _fabs(builder: llir.IRBuilder, x: llir.Value) -> llir.Value:
    return ocl.call_math(builder, "fabs", [x])


@lower(math.isnan, types.Float)
def isnan_float(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                args: Sequence[llir.Value]) -> llir.Value:
    """NaN compares unordered with itself."""
    return builder.fcmp_unordered("uno", args[0], args[0])


@lower(math.isinf, types.Float)
def isinf_float(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                args: Sequence[llir.Value]) -> llir.Value:
    """``|x| == inf``."""
    return builder.fcmp_ordered("==", _fabs(builder, args[0]), args[0].type(math.inf))


@lower(math.isfinite, types.Float)
def isfinite_float(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                   args: Sequence[llir.Value]) -> llir.Value:
    """Ordered and ``|x| != inf``."""
    return builder.fcmp_ordered("!=", _fabs(builder, args[0]), args[0].type(math.inf))


@lower(math.isnan, types.Integer)
@lower(math.isinf, types.Integer)
def int_never(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
              args: Sequence[llir.Value]) -> llir.Value:
    """Integers are never NaN nor infinite."""
    return llir.Constant(llir.IntType(1), 0)


@lower(math.isfinite, types.Integer)
def int_always(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
               args: Sequence[llir.Value]) -> llir.Value:
    """Integers are always finite."""
    return llir.Constant(llir.IntType(1), 1)


def _scale(factor: float) -> LoweringImpl:
    def impl(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
             args: Sequence[llir.Value]) -> llir.Value:
        fty = _float_result_type(sig)
        (x,) = _as_float_args(context, builder, sig, args, fty)
        return builder.fmul(x, x.type(factor))

    return impl


lower(math.degrees, types.Number)(_scale(180.0 / math.pi))
lower(math.radians, types.Number)(_scale(math.pi / 180.0))


# ---------------------------------------------------------------- overrides
#: Installed after Numba's builtin registry (``SYCLTargetContext.refresh``), so
#: these replace Numba's own lowering of the same operation.
override_registry = LoweringRegistry("pysycl.math.overrides")


def _complex_div(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                 args: Sequence[llir.Value]) -> llir.Value:
    """``a / b`` for complex numbers, as numpy divides them (``npy_math``'s Smith division).

    Numba's lowering raises ``ZeroDivisionError`` (a string, which cannot exist
    on a device); numpy gives inf/nan instead, as a device must. Computed in
    the component type (complex64 in float32).
    """
    ty = sig.args[0]
    a = context.make_complex(builder, ty, value=args[0])
    b = context.make_complex(builder, ty, value=args[1])
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag
    one = br.type(1.0)
    abr, abi = _fabs(builder, br), _fabs(builder, bi)
    out = context.make_complex(builder, ty)
    with builder.if_else(builder.fcmp_ordered(">=", abr, abi)) as (real_big, imag_big):
        with real_big:
            zero = builder.and_(builder.fcmp_ordered("==", abr, abr.type(0.0)),
                                builder.fcmp_ordered("==", abi, abi.type(0.0)))
            with builder.if_else(zero) as (by_zero, normal):
                with by_zero:  # a complex inf or nan
                    out.real = builder.fdiv(ar, abr)
                    out.imag = builder.fdiv(ai, abr)
                with normal:
                    rat = builder.fdiv(bi, br)
                    scl = builder.fdiv(one, builder.fadd(br, builder.fmul(bi, rat)))
                    out.real = builder.fmul(builder.fadd(ar, builder.fmul(ai, rat)), scl)
                    out.imag = builder.fmul(builder.fsub(ai, builder.fmul(ar, rat)), scl)
        with imag_big:  # also taken when b has a NaN part
            rat = builder.fdiv(br, bi)
            scl = builder.fdiv(one, builder.fadd(bi, builder.fmul(br, rat)))
            out.real = builder.fmul(builder.fadd(builder.fmul(ar, rat), ai), scl)
            out.imag = builder.fmul(builder.fsub(builder.fmul(ai, rat), ar), scl)
    return out._getvalue()


for _ty in (types.complex64, types.complex128):
    override_registry.lower(operator.truediv, _ty, _ty)(_complex_div)
    override_registry.lower(operator.itruediv, _ty, _ty)(_complex_div)


# ===================================================================== numpy
#: numpy ufunc -> OpenCL C built-in of one floating-point argument.
UNARY: dict[np.ufunc, str] = {
    np.sqrt: "sqrt", np.cbrt: "cbrt", np.exp: "exp", np.exp2: "exp2", np.expm1: "expm1",
    np.log: "log", np.log2: "log2", np.log10: "log10", np.log1p: "log1p",
    np.sin: "sin", np.cos: "cos", np.tan: "tan", np.arcsin: "asin", np.arccos: "acos",
    np.arctan: "atan", np.sinh: "sinh", np.cosh: "cosh", np.tanh: "tanh",
    np.arcsinh: "asinh", np.arccosh: "acosh", np.arctanh: "atanh", np.fabs: "fabs",
    np.floor: "floor", np.ceil: "ceil", np.trunc: "trunc", np.rint: "rint",
}
#: numpy ufunc -> OpenCL C built-in of two floating-point arguments.
BINARY: dict[np.ufunc, str] = {
    np.arctan2: "atan2", np.hypot: "hypot", np.copysign: "copysign", np.fmod: "fmod",
    np.power: "pow", np.fmin: "fmin", np.fmax: "fmax", np.nextafter: "nextafter",
}
#: Unit conversions: a multiplication.
SCALE: dict[np.ufunc, float] = {
    np.deg2rad: math.pi / 180.0, np.radians: math.pi / 180.0,
    np.rad2deg: 180.0 / math.pi, np.degrees: 180.0 / math.pi,
}
PREDICATES = (np.isnan, np.isinf, np.isfinite)
#: numpy's NaN-propagating ``minimum``/``maximum`` (``fmin``/``fmax`` ignore a NaN).
MINMAX = (np.minimum, np.maximum)
SUPPORTED = (*UNARY, *BINARY, *SCALE, *PREDICATES, *MINMAX, np.absolute)


def _operand(t: types.Type) -> np.dtype | type | None:
    """What numpy's type resolution sees for an argument of type ``t``.

    A Python literal is *weak* (numpy 2, NEP 50: ``np.minimum(np.float32(x), 0.7)`` is
    a float32): a float literal (marked by :mod:`pysycl_numba.weak_literals`) is
    ``float``, an int literal ``int``; anything else its dtype. None: no device
    implementation (complex numbers, arrays, objects).
    """
    if isinstance(t, WeakFloatLiteral):
        return float
    if isinstance(t, types.IntegerLiteral):
        return int
    t = types.unliteral(t)
    if not isinstance(t, (types.Integer, types.Float, types.Boolean)):
        return None
    return numpy_support.as_dtype(t)


def result_supported(ufunc: np.ufunc, res: np.dtype) -> bool:
    """Whether numpy's result type ``res`` of ``ufunc`` has a device implementation here.

    Floating-point results (the built-ins compute in floating point), the
    predicates' bools, and ``np.absolute``, ``np.minimum``, ``np.maximum`` of any
    real number; ``np.nextafter`` not of float16 (computed in float32, as the others).
    """
    if ufunc is np.absolute or ufunc in MINMAX:
        return res.kind in "biuf"
    if ufunc is np.nextafter:  # a float16 step is no float32 step rounded
        return res.kind == "f" and res != np.float16
    return res.kind == "f" or (res.kind == "b" and ufunc in PREDICATES)


def resolve(ufunc: np.ufunc, args: Sequence[types.Type]) -> np.dtype | None:
    """numpy's result dtype of ``ufunc(*args)`` on numbers (None: not supported).

    Raises:
        TypingError: an int literal that does not fit an integer result (numpy's
            ``OverflowError``: ``np.minimum(np.int8(x), 300)``).
    """
    ops = [_operand(a) for a in args]
    if any(o is None for o in ops):
        return None
    try:
        res = ufunc.resolve_dtypes((*ops, None))[-1]
    except (TypeError, np.exceptions.DTypePromotionError):
        return None
    if not result_supported(ufunc, res):
        return None  # e.g. np.power of integers: use **
    check_int_literals(args, res, f"np.{ufunc.__name__}: ")
    return res


def _template(ufunc: np.ufunc) -> type:
    nin = ufunc.nin

    class NumpyScalarMath(AbstractTemplate):
        key = ufunc
        prefer_literal = True  # weak literals (NEP 50) keep their type

        _refused: errors.TypingError | None = None

        def generic(self, args: tuple, kws: dict) -> object:
            if kws or len(args) != nin:
                return None
            if self._refused is not None:
                # Numba retries a refused call with the literals as plain int64 values: a
                # strong int64 minimum, not numpy's answer (an OverflowError)
                raise self._refused
            try:
                res = resolve(ufunc, args)
            except errors.TypingError as e:
                self._refused = e
                raise
            if res is None:
                return None
            # literal argument types are kept: the lowering converts a weak literal
            # straight to the computation's type (no float64 value in the kernel)
            return signature(numpy_support.from_dtype(res), *args)

    NumpyScalarMath.__name__ = f"Numpy_{ufunc.__name__}"
    return NumpyScalarMath


for _uf in SUPPORTED:
    typing_registry.register_global(_uf)(_template(_uf))


def _compute_type(ret: types.Type) -> types.Type:
    # float16 math runs in float32 and is rounded to the result, as numpy does.
    return types.float32 if ret == types.float16 else ret


def _float_args(context: BaseContext, builder: llir.IRBuilder, sig: Signature, args: Sequence[llir.Value],
                ty: types.Type) -> list[llir.Value]:
    """The arguments as ``ty``, each converted to the result type first, as numpy's loop
    does (a weak literal in a float16 call is rounded to float16, then computed in float32)."""
    ret = sig.return_type
    via = ret if isinstance(ret, types.Float) and ret != ty else None
    return [context.cast(builder, context.cast(builder, a, t, via), via, ty) if via is not None
            else context.cast(builder, a, t, ty) for a, t in zip(args, sig.args, strict=True)]


def _make_call(name: str) -> LoweringImpl:
    def impl(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
             args: Sequence[llir.Value]) -> llir.Value:
        comp = _compute_type(sig.return_type)
        r = ocl.call_math(builder, name, _float_args(context, builder, sig, args, comp))
        return context.cast(builder, r, comp, sig.return_type)

    impl.__name__ = f"np_{name}"
    return impl


def _make_scale(factor: float) -> LoweringImpl:
    def impl(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
             args: Sequence[llir.Value]) -> llir.Value:
        comp = _compute_type(sig.return_type)
        (x,) = _float_args(context, builder, sig, args, comp)
        return context.cast(builder, builder.fmul(x, x.type(factor)), comp, sig.return_type)

    return impl


def _predicate(which: np.ufunc) -> LoweringImpl:
    def impl(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
             args: Sequence[llir.Value]) -> llir.Value:
        (argty,) = sig.args
        if not isinstance(argty, types.Float):  # integers and bools: never nan nor inf
            return llir.Constant(llir.IntType(1), int(which is np.isfinite))
        x = args[0]
        if which is np.isnan:
            return builder.fcmp_unordered("uno", x, x)
        ax = ocl.call_math(builder, "fabs", [context.cast(builder, x, argty,
                                                          _compute_type(argty))])
        inf = ax.type(math.inf)
        return (builder.fcmp_ordered("==", ax, inf) if which is np.isinf
                else builder.fcmp_ordered("!=", ax, inf))  # ordered: false for nan

    return impl


def _absolute(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
              args: Sequence[llir.Value]) -> llir.Value:
    (argty,) = sig.args
    ret = sig.return_type
    if isinstance(ret, types.Float):
        return _make_call("fabs")(context, builder, sig, args)
    x = context.cast(builder, args[0], argty, ret)
    if isinstance(ret, types.Integer) and ret.signed:  # wraps at the minimum, as numpy
        return builder.select(builder.icmp_signed("<", x, x.type(0)), builder.neg(x), x)
    return x


def minmax(context: BaseContext, builder: llir.IRBuilder, which: np.ufunc, a: llir.Value,
           b: llir.Value, ty: types.Type) -> llir.Value:
    """numpy's ``minimum``/``maximum`` of ``a`` and ``b`` (both of type ``ty``).

    numpy's loop: ``a if (a <= b or isnan(a)) else b`` (``>=`` for maximum), so a
    NaN operand gives NaN.
    """
    less = which is np.minimum
    if isinstance(ty, types.Float):
        keep = builder.or_(builder.fcmp_ordered("<=" if less else ">=", a, b),
                           builder.fcmp_unordered("uno", a, a))
        return builder.select(keep, a, b)
    if isinstance(ty, types.Integer) and ty.signed:
        return builder.select(builder.icmp_signed("<=" if less else ">=", a, b), a, b)
    return builder.select(builder.icmp_unsigned("<=" if less else ">=", a, b), a, b)


def _make_minmax(which: np.ufunc) -> LoweringImpl:
    def impl(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
             args: Sequence[llir.Value]) -> llir.Value:
        ret = sig.return_type
        a, b = (context.cast(builder, v, t, ret) for v, t in zip(args, sig.args, strict=True))
        return minmax(context, builder, which, a, b, ret)

    impl.__name__ = f"np_{which.__name__}"
    return impl


# types.Any: numbers, bools and weak literals (typing admits nothing else)
for _uf in MINMAX:
    lowering_registry.lower(_uf, types.Any, types.Any)(_make_minmax(_uf))
for _uf, _name in UNARY.items():
    lowering_registry.lower(_uf, types.Any)(_make_call(_name))
for _uf, _name in BINARY.items():
    lowering_registry.lower(_uf, types.Any, types.Any)(_make_call(_name))
for _uf, _f in SCALE.items():
    lowering_registry.lower(_uf, types.Any)(_make_scale(_f))
for _uf in PREDICATES:
    lowering_registry.lower(_uf, types.Any)(_predicate(_uf))
lowering_registry.lower(np.absolute, types.Any)(_absolute)

"""Lowering of the ``math`` module to OpenCL C built-ins.

Typing is Numba's (``numba.core.typing.mathdecl``, plus ``math.fmod`` in
:mod:`pysycl_numba.decl`); Numba's own CPU lowering calls libm symbols
(``tanf``, ``erf``) that do not exist on an OpenCL device, so this registry
replaces it: every function becomes an OpenCL built-in (``_Z3tanf``) that
LLVM's SPIR-V backend turns into an ``OpenCL.std`` extended instruction.
Integer arguments are converted to the signature's floating-point type first,
as Python does.
"""

from __future__ import annotations

import math
import operator
from typing import Any

from llvmlite import ir as llir

from pysycl_numba._numba_compat import LoweringRegistry, types
from pysycl_numba.targets.spirv import ocl

registry = LoweringRegistry("pysycl.math")
lower = registry.lower

# math.<fn> -> OpenCL C built-in of the same meaning.
_UNARY = {
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

_BINARY = {
    math.atan2: "atan2",
    math.pow: "pow",
    math.hypot: "hypot",
    math.copysign: "copysign",
    math.fmod: "fmod",
}

# Python's math.floor/ceil/trunc return int.
_TO_INT = {math.floor: "floor", math.ceil: "ceil", math.trunc: "trunc"}


def _as_float_args(context: Any, builder: Any, sig: Any, args: Any, fty: types.Type) -> list[Any]:
    return [context.cast(builder, a, t, fty) for a, t in zip(args, sig.args, strict=True)]


def _float_result_type(sig: Any) -> types.Type:
    ret = sig.return_type
    return ret if isinstance(ret, types.Float) else types.float64


def _make_float_impl(name: str) -> Any:
    def impl(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        fty = _float_result_type(sig)
        return ocl.call_math(builder, name, _as_float_args(context, builder, sig, args, fty))

    impl.__name__ = f"ocl_{name}"
    return impl


for _fn, _name in _UNARY.items():
    lower(_fn, types.Number)(_make_float_impl(_name))
for _fn, _name in _BINARY.items():
    lower(_fn, types.Number, types.Number)(_make_float_impl(_name))


def _make_to_int_impl(name: str) -> Any:
    def impl(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        (argty,) = sig.args
        if isinstance(argty, types.Integer):
            return context.cast(builder, args[0], argty, sig.return_type)
        value = ocl.call_math(builder, name, [args[0]])
        return context.cast(builder, value, argty, sig.return_type)

    impl.__name__ = f"ocl_{name}_to_int"
    return impl


for _fn, _name in _TO_INT.items():
    lower(_fn, types.Number)(_make_to_int_impl(_name))


def _fabs(builder: Any, x: Any) -> Any:
    return ocl.call_math(builder, "fabs", [x])


@lower(math.isnan, types.Float)
def isnan_float(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """NaN compares unordered with itself."""
    return builder.fcmp_unordered("uno", args[0], args[0])


@lower(math.isinf, types.Float)
def isinf_float(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """``|x| == inf``."""
    return builder.fcmp_ordered("==", _fabs(builder, args[0]), args[0].type(math.inf))


@lower(math.isfinite, types.Float)
def isfinite_float(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """Ordered and ``|x| != inf``."""
    return builder.fcmp_ordered("!=", _fabs(builder, args[0]), args[0].type(math.inf))


@lower(math.isnan, types.Integer)
@lower(math.isinf, types.Integer)
def int_never(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """Integers are never NaN nor infinite."""
    return llir.Constant(llir.IntType(1), 0)


@lower(math.isfinite, types.Integer)
def int_always(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """Integers are always finite."""
    return llir.Constant(llir.IntType(1), 1)


def _scale(factor: float) -> Any:
    def impl(context: Any, builder: Any, sig: Any, args: Any) -> Any:
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


def _complex_div(context: Any, builder: Any, sig: Any, args: Any) -> Any:
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

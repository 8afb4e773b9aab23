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
from typing import Any

from llvmlite import ir as llir

from pysycl_numba import ocl
from pysycl_numba._numba_compat import LoweringRegistry, types

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

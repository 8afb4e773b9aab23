"""numpy's math functions on numbers inside kernels: ``np.sqrt(x)``, ``np.exp(x)``, ...

A kernel computes on scalars, and a user writing ``np.sqrt(acc[i])`` means the
same as ``math.sqrt(acc[i])``: numpy's math ufuncs applied to numbers lower to
the same OpenCL C built-ins as :mod:`pysycl_numba.mathimpl`, with numpy's result
types (``ufunc.resolve_dtypes``: ``np.sqrt(np.float32(x))`` is a float32,
``np.sqrt(2)`` a float64, ``np.floor(x)`` stays a float). float16 is computed in
float32 and rounded, as numpy does. Arrays do not exist in kernels, and complex
arguments are not supported (no device implementation), so those fail typing and
``errors.py`` says what to write instead.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from llvmlite import ir as llir

from pysycl_numba._numba_compat import (
    AbstractTemplate,
    LoweringRegistry,
    TypingRegistry,
    numpy_support,
    signature,
    types,
)
from pysycl_numba.targets.spirv import ocl

typing_registry = TypingRegistry()
registry = LoweringRegistry("pysycl.npmath")

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
    np.power: "pow", np.fmin: "fmin", np.fmax: "fmax",
}
#: Unit conversions: a multiplication.
SCALE: dict[np.ufunc, float] = {
    np.deg2rad: math.pi / 180.0, np.radians: math.pi / 180.0,
    np.rad2deg: 180.0 / math.pi, np.degrees: 180.0 / math.pi,
}
PREDICATES = (np.isnan, np.isinf, np.isfinite)
SUPPORTED = (*UNARY, *BINARY, *SCALE, *PREDICATES, np.absolute)


def _dtype(t: types.Type) -> np.dtype | None:
    t = types.unliteral(t)
    if not isinstance(t, (types.Integer, types.Float, types.Boolean)):
        return None  # complex numbers, arrays, objects: no device implementation
    return numpy_support.as_dtype(t)


def result_supported(ufunc: np.ufunc, res: np.dtype) -> bool:
    """Whether numpy's result type ``res`` of ``ufunc`` has a device implementation here.

    Floating-point results (the built-ins compute in floating point), the
    predicates' bools, and ``np.absolute`` of any number.
    """
    if ufunc is np.absolute:
        return res.kind in "biuf"
    return res.kind == "f" or (res.kind == "b" and ufunc in PREDICATES)


def _template(ufunc: np.ufunc) -> type:
    nin = ufunc.nin

    class NumpyScalarMath(AbstractTemplate):
        key = ufunc

        def generic(self, args: tuple, kws: dict) -> object:
            if kws or len(args) != nin:
                return None
            dts = [_dtype(a) for a in args]
            if any(d is None for d in dts):
                return None
            try:
                res = ufunc.resolve_dtypes((*dts, None))[-1]
            except (TypeError, np.exceptions.DTypePromotionError):
                return None
            if not result_supported(ufunc, res):
                return None  # e.g. np.power of integers: use **
            return signature(numpy_support.from_dtype(res), *(types.unliteral(a) for a in args))

    NumpyScalarMath.__name__ = f"Numpy_{ufunc.__name__}"
    return NumpyScalarMath


for _uf in SUPPORTED:
    typing_registry.register_global(_uf)(_template(_uf))


def _compute_type(ret: types.Type) -> types.Type:
    # float16 math runs in float32 and is rounded to the result, as numpy does.
    return types.float32 if ret == types.float16 else ret


def _float_args(context: Any, builder: Any, sig: Any, args: Any, ty: types.Type) -> list[Any]:
    return [context.cast(builder, a, t, ty) for a, t in zip(args, sig.args, strict=True)]


def _make_call(name: str) -> Any:
    def impl(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        comp = _compute_type(sig.return_type)
        r = ocl.call_math(builder, name, _float_args(context, builder, sig, args, comp))
        return context.cast(builder, r, comp, sig.return_type)

    impl.__name__ = f"np_{name}"
    return impl


def _make_scale(factor: float) -> Any:
    def impl(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        comp = _compute_type(sig.return_type)
        (x,) = _float_args(context, builder, sig, args, comp)
        return context.cast(builder, builder.fmul(x, x.type(factor)), comp, sig.return_type)

    return impl


def _predicate(which: np.ufunc) -> Any:
    def impl(context: Any, builder: Any, sig: Any, args: Any) -> Any:
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


def _absolute(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    (argty,) = sig.args
    ret = sig.return_type
    if isinstance(ret, types.Float):
        return _make_call("fabs")(context, builder, sig, args)
    x = context.cast(builder, args[0], argty, ret)
    if isinstance(ret, types.Integer) and ret.signed:  # wraps at the minimum, as numpy
        return builder.select(builder.icmp_signed("<", x, x.type(0)), builder.neg(x), x)
    return x


for _uf, _name in UNARY.items():
    for _t in (types.Number, types.Boolean):
        registry.lower(_uf, _t)(_make_call(_name))
for _uf, _name in BINARY.items():
    for _a in (types.Number, types.Boolean):
        for _b in (types.Number, types.Boolean):
            registry.lower(_uf, _a, _b)(_make_call(_name))
for _uf, _f in SCALE.items():
    for _t in (types.Number, types.Boolean):
        registry.lower(_uf, _t)(_make_scale(_f))
for _uf in PREDICATES:
    for _t in (types.Number, types.Boolean):
        registry.lower(_uf, _t)(_predicate(_uf))
for _t in (types.Number, types.Boolean):
    registry.lower(np.absolute, _t)(_absolute)

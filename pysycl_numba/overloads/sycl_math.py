"""SYCL 2020 math and common functions (§4.17.5, §4.17.6) in kernels: ``sycl.sqrt`` ...

The function objects are the runtime's (``pysycl._objects.sycl_math``, the host
reference); here each gets a typing template and a lowering:

* types as the host's :func:`~pysycl._objects.sycl_math.element_dtype`: vectors of one
  element type, a number beside a vector converted to it, numbers alone promoted as
  numpy does (float literals weak, :mod:`pysycl_numba.weak_literals`; integers alone give
  float64); ``min``/``max``/``clamp`` also on integers; ``ldexp``/``pown``/``rootn`` take
  an ``int`` (saturated to int32); out-parameters are tuples (``sincos`` -> ``(s, c)``).
* lowering: vectors and marrays elementwise (extract, scalar built-in, insert), so the
  PTX target needs the scalar built-ins only. A scalar is an OpenCL C built-in
  (``_Z5rootnfi``: an ``OpenCL.std`` instruction in SPIR-V) or, where the spec defines the
  function by a formula (``mix``, ``step``, ``smoothstep``, ``sign``, ``clamp``, ``min``,
  ``max``, ``degrees``, ``radians``, ``modf``, ``fract``, ``lgamma_r``'s sign), that
  formula in LLVM IR, computed as the host computes it (bit for bit).
* float16 is computed in float32 and rounded (as numpy and the host); ``nextafter`` of
  float16 is refused (a float32 step is no float16 step). ``sycl.native.*`` and
  ``sycl.half_precision.*`` take float32 only: OpenCL's ``native_*``/``half_*``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from llvmlite import ir as llir

from pysycl._kernels.kernel_api import math_api
from pysycl_numba._numba_compat import (
    AbstractTemplate,
    LoweringRegistry,
    TypingRegistry,
    cgutils,
    errors,
    numpy_support,
    signature,
    types,
)
from pysycl_numba.overloads.half import WeakFloatLiteral
from pysycl_numba.overloads.math_extras import clamp_to_int
from pysycl_numba.overloads.vec import build, elem_value
from pysycl_numba.targets.spirv import ocl
from pysycl_numba.vec_types import VecType

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from pysycl_numba._numba_compat import BaseContext, Signature

    #: (builder, element type, the arguments in its compute type) -> result(s)
    Scalar = Callable[[llir.IRBuilder, types.Type, list[llir.Value]], "llir.Value | tuple"]

typing_registry = TypingRegistry()
lowering_registry = LoweringRegistry("pysycl.sycl_math")

_I32 = llir.IntType(32)
_CODE = {"float": "f", "double": "d"}  # Itanium codes of the parameter types


@dataclass(frozen=True)
class Spec:
    """How one function types and lowers (see :func:`pysycl._objects.sycl_math.make`)."""

    name: str
    nargs: int
    scalar: Scalar
    ints: bool = False
    int_arg: int | None = None
    out: tuple[str, ...] = ("f",)
    float32_only: bool = False
    no_half: bool = False


# ==================================================================== typing
def _operand(t: types.Type) -> float | int | np.dtype | None:
    """What ``np.result_type`` sees: a Python number (weak, NEP 50) for a literal, else a dtype."""
    if isinstance(t, WeakFloatLiteral):
        return 0.0
    if isinstance(t, types.IntegerLiteral):
        return 0
    t = types.unliteral(t)
    if isinstance(t, (types.Integer, types.Float)):
        return numpy_support.as_dtype(t)
    return None


def _refuse(spec: Spec, why: str) -> errors.TypingError:
    return errors.TypingError(f"sycl.{spec.name.replace('::', '.')}: {why}")


def element_type(spec: Spec, args: Sequence[types.Type]) -> tuple[types.Type, VecType | None]:
    """The element type of a call and its vector type (None for numbers), as the host's.

    Raises:
        TypingError: what the arguments lack, in the spec's terms.
    """
    floats = [a for k, a in enumerate(args) if k != spec.int_arg]
    vecs = [a for a in args if isinstance(a, VecType)]
    if any(a.n != vecs[0].n or a.marray != vecs[0].marray for a in vecs):
        raise _refuse(spec, f"vector arguments of different sizes or kinds {vecs}")
    fvecs = {a.dtype for a in floats if isinstance(a, VecType)}
    bad = [a for a in floats if not isinstance(a, VecType) and _operand(a) is None]
    if bad or len(fvecs) > 1:
        raise _refuse(spec, f"takes numbers or sycl.vec/sycl.marray of one element type, "
                            f"got {', '.join(map(str, args))}")
    if fvecs:
        elem = fvecs.pop()
    else:
        dt = np.result_type(*(_operand(a) for a in floats))
        elem = (numpy_support.from_dtype(dt) if dt.kind == "f" or (spec.ints and dt.kind in "iu")
                else types.float64)
    wanted = (types.Float, types.Integer) if spec.ints else types.Float
    if not isinstance(elem, wanted) or isinstance(elem, types.Boolean):
        raise _refuse(spec, f"takes {'genfloat or integer' if spec.ints else 'genfloat'} "
                            f"(float16/32/64) elements, got {elem}")
    if spec.float32_only and elem != types.float32:
        raise _refuse(spec, f"takes float32 numbers or vectors only, got {elem} "
                            f"(use sycl.{spec.name.split('::')[-1]})")
    if spec.no_half and elem == types.float16:
        raise _refuse(spec, "float16 is not supported (a float32 step is no float16 step)")
    if spec.int_arg is not None:
        k = args[spec.int_arg]
        kel = k.dtype if isinstance(k, VecType) else types.unliteral(k)
        if not isinstance(kel, types.Integer) or (vecs and not isinstance(k, VecType)
                                                  and spec.name != "ldexp"):
            raise _refuse(spec, f"takes an int (an int vector beside a vector) argument "
                                f"{spec.int_arg + 1}, got {k}")
    return elem, (vecs[0] if vecs else None)


def _result_type(spec: Spec, elem: types.Type, v: VecType | None) -> types.Type:
    outs = [elem if o == "f" else types.int32 for o in spec.out]
    if v is not None:
        outs = [VecType(t, v.n, marray=v.marray) for t in outs]
    return outs[0] if len(outs) == 1 else types.Tuple(outs)


def _template(fn: Callable, spec: Spec) -> type:
    class SyclMath(AbstractTemplate):
        key = fn
        prefer_literal = True  # weak literals keep their type

        def generic(self, args: tuple, kws: dict) -> object:
            if kws:
                raise _refuse(spec, "takes no keyword arguments")
            if len(args) != spec.nargs:
                raise _refuse(spec, f"takes {spec.nargs} arguments, got {len(args)}")
            elem, v = element_type(spec, args)
            return signature(_result_type(spec, elem, v), *args)

    SyclMath.__name__ = f"Sycl_{spec.name.replace('::', '_')}"
    return SyclMath


# ================================================================== lowering
def _scalar_args(context: BaseContext, builder: llir.IRBuilder, spec: Spec, sig: Signature,
                 args: Sequence[llir.Value], elem: types.Type, comp: types.Type,
                 k: int | None) -> list[llir.Value]:
    out = []
    for pos, (t, a) in enumerate(zip(sig.args, args, strict=True)):
        if isinstance(t, VecType):
            a, t = elem_value(context, builder, t, a, k), t.dtype
        if pos == spec.int_arg:
            out.append(clamp_to_int(builder, context.cast(builder, a, t, types.unliteral(t)),
                                 types.unliteral(t)))
        else:
            out.append(context.cast(builder, context.cast(builder, a, t, elem), elem, comp))
    return out


def _make_lowering(spec: Spec) -> Callable:
    def impl(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
             args: Sequence[llir.Value]) -> llir.Value:
        elem, v = element_type(spec, sig.args)
        comp = types.float32 if elem == types.float16 else elem
        per_elem = []
        for k in ([None] if v is None else range(v.n)):
            r = spec.scalar(builder, elem, _scalar_args(context, builder, spec, sig, args,
                                                        elem, comp, k))
            rs = r if isinstance(r, tuple) else (r,)
            per_elem.append([context.cast(builder, x, comp, elem) if o == "f" else x
                             for x, o in zip(rs, spec.out, strict=True)])
        outs = []
        for j, o in enumerate(spec.out):
            t = elem if o == "f" else types.int32
            vals = [e[j] for e in per_elem]
            outs.append(vals[0] if v is None else
                        build(context, builder, VecType(t, v.n, marray=v.marray), vals))
        return outs[0] if len(outs) == 1 else context.make_tuple(builder, sig.return_type, outs)

    impl.__name__ = f"lower_{spec.name.replace('::', '_')}"
    return impl


# ============================================================ scalar bodies
def _builtin(name: str) -> Scalar:
    """The OpenCL C built-in ``name`` on floats (``_Z4fmaxff``)."""
    return lambda b, t, xs: ocl.call_math(b, name, xs)


def _with_int(name: str) -> Scalar:
    """OpenCL's ``name(gentype x, int k)`` (``_Z4pownfi``)."""
    return lambda b, t, xs: ocl.call(b, ocl.mangle(name, ocl.float_kind(xs[0].type), "int"),
                                     xs[0].type, xs)


def _ilogb(b: llir.IRBuilder, t: types.Type, xs: list[llir.Value]) -> llir.Value:
    return ocl.call(b, ocl.mangle("ilogb", ocl.float_kind(xs[0].type)), _I32, xs)


def _with_out(name: str, outty: Callable[[llir.Type], llir.Type], code: str) -> Scalar:
    """OpenCL's ``name(x..., T *out)`` (a private pointer): ``(result, *out)``."""
    def f(b: llir.IRBuilder, t: types.Type, xs: list[llir.Value]) -> tuple:
        slot = cgutils.alloca_once(b, outty(xs[0].type))
        kind = ocl.float_kind(xs[0].type)
        mangled = f"_Z{len(name)}{name}{_CODE[kind] * len(xs)}P{code}"
        r = ocl.call(b, mangled, xs[0].type, [*xs, slot], pure=False)
        return r, b.load(slot)
    return f


def _isinf(b: llir.IRBuilder, x: llir.Value) -> llir.Value:
    return b.fcmp_ordered("==", ocl.call_math(b, "fabs", [x]), x.type(math.inf))


def _isnan(b: llir.IRBuilder, x: llir.Value) -> llir.Value:
    return b.fcmp_unordered("uno", x, x)


def _frexp(b: llir.IRBuilder, t: types.Type, xs: list[llir.Value]) -> tuple:
    m, e = _with_out("frexp", lambda _: _I32, "i")(b, t, xs)
    finite = b.fcmp_ordered("!=", ocl.call_math(b, "fabs", xs), xs[0].type(math.inf))
    return m, b.select(finite, e, _I32(0))


def _modf(b: llir.IRBuilder, t: types.Type, xs: list[llir.Value]) -> tuple:
    (x,) = xs
    ip = ocl.call_math(b, "trunc", [x])
    frac = b.select(_isinf(b, x), x.type(0.0), b.fsub(x, ip))
    return ocl.call_math(b, "copysign", [frac, x]), ip


def _fract(b: llir.IRBuilder, t: types.Type, xs: list[llir.Value]) -> tuple:
    (x,) = xs
    fl = ocl.call_math(b, "floor", [x])
    # below 1 in the element type: float16's 0x1.ffcp-1 (exact in float32), not float32's,
    # which rounds to 1.0 when the float32 result is rounded to float16
    below_one = float(np.nextafter(np.asarray(1.0, numpy_support.as_dtype(t)), 0))
    r = ocl.call_math(b, "fmin", [b.fsub(x, fl), x.type(below_one)])
    r = b.select(_isinf(b, x), ocl.call_math(b, "copysign", [x.type(0.0), x]), r)
    return b.select(_isnan(b, x), x, r), fl


def _lgamma_r(b: llir.IRBuilder, t: types.Type, xs: list[llir.Value]) -> tuple:
    """``lgamma(x)`` and the sign of gamma: -1 on (-1, 0), (-3, -2) ... and at -0."""
    (x,) = xs
    zero = x.type(0.0)
    fl = ocl.call_math(b, "floor", [x])
    odd = b.fcmp_unordered("!=", ocl.call_math(b, "fmod", [fl, x.type(2.0)]), zero)
    neg = b.and_(b.and_(b.fcmp_ordered("<", x, zero), b.fcmp_ordered("!=", x, fl)), odd)
    bits = b.bitcast(x, _int_like(x.type))
    minus_zero = b.and_(b.fcmp_ordered("==", x, zero), b.icmp_signed("<", bits, bits.type(0)))
    sign = b.select(b.or_(neg, minus_zero), _I32(-1), _I32(1))
    return ocl.call_math(b, "lgamma", [x]), sign


def _int_like(ft: llir.Type) -> llir.IntType:
    return llir.IntType(64 if isinstance(ft, llir.DoubleType) else 32)


def _less(b: llir.IRBuilder, t: types.Type, x: llir.Value, y: llir.Value) -> llir.Value:
    if isinstance(t, types.Float):
        return b.fcmp_ordered("<", x, y)
    return b.icmp_signed("<", x, y) if t.signed else b.icmp_unsigned("<", x, y)


def _min(b: llir.IRBuilder, t: types.Type, xs: list[llir.Value]) -> llir.Value:
    x, y = xs
    return b.select(_less(b, t, y, x), y, x)


def _max(b: llir.IRBuilder, t: types.Type, xs: list[llir.Value]) -> llir.Value:
    x, y = xs
    return b.select(_less(b, t, x, y), y, x)


def _clamp(b: llir.IRBuilder, t: types.Type, xs: list[llir.Value]) -> llir.Value:
    x, lo, hi = xs
    if isinstance(t, types.Float):  # OpenCL: fmin(fmax(x, minval), maxval)
        return ocl.call_math(b, "fmin", [ocl.call_math(b, "fmax", [x, lo]), hi])
    return _min(b, t, [_max(b, t, [x, lo]), hi])


def _mix(b: llir.IRBuilder, t: types.Type, xs: list[llir.Value]) -> llir.Value:
    x, y, a = xs
    return b.fadd(x, b.fmul(b.fsub(y, x), a))


def _step(b: llir.IRBuilder, t: types.Type, xs: list[llir.Value]) -> llir.Value:
    edge, x = xs
    return b.select(b.fcmp_ordered("<", x, edge), x.type(0.0), x.type(1.0))


def _smoothstep(b: llir.IRBuilder, t: types.Type, xs: list[llir.Value]) -> llir.Value:
    e0, e1, x = xs
    r = b.fdiv(b.fsub(x, e0), b.fsub(e1, e0))
    r = ocl.call_math(b, "fmin", [ocl.call_math(b, "fmax", [r, x.type(0.0)]), x.type(1.0)])
    return b.fmul(b.fmul(r, r), b.fsub(x.type(3.0), b.fmul(x.type(2.0), r)))


def _sign(b: llir.IRBuilder, t: types.Type, xs: list[llir.Value]) -> llir.Value:
    (x,) = xs
    zero = x.type(0.0)
    r = b.select(_isnan(b, x), zero, x)
    r = b.select(b.fcmp_ordered("<", x, zero), x.type(-1.0), r)
    return b.select(b.fcmp_ordered(">", x, zero), x.type(1.0), r)


def _scale(factor: float) -> Scalar:
    return lambda b, t, xs: b.fmul(xs[0], xs[0].type(factor))


def _sincos(b: llir.IRBuilder, t: types.Type, xs: list[llir.Value]) -> tuple:
    return ocl.call_math(b, "sin", xs), ocl.call_math(b, "cos", xs)


def _native(prefix: str, name: str) -> Scalar:
    return _builtin(f"{prefix}_{name}")


# ==================================================================== table
_UNARY = ("acos", "acosh", "acospi", "asin", "asinh", "asinpi", "atan", "atanh", "atanpi",
          "cbrt", "ceil", "cos", "cosh", "cospi", "erf", "erfc", "exp", "exp2", "exp10", "expm1",
          "fabs", "floor", "lgamma", "log", "log2", "log10", "log1p", "logb", "rint", "round",
          "rsqrt", "sin", "sinh", "sinpi", "sqrt", "tan", "tanh", "tanpi", "tgamma", "trunc")
_BINARY = ("atan2", "atan2pi", "copysign", "fdim", "fmax", "fmin", "fmod", "hypot", "maxmag",
           "minmag", "nextafter", "pow", "powr", "remainder")


def _specs() -> list[Spec]:
    s = [Spec(n, 1, _builtin(n)) for n in _UNARY]
    s += [Spec(n, 2, _builtin(n), no_half=n == "nextafter") for n in _BINARY]
    s += [Spec("fma", 3, _builtin("fma")), Spec("mad", 3, _builtin("mad")),
          Spec("ldexp", 2, _with_int("ldexp"), int_arg=1),
          Spec("pown", 2, _with_int("pown"), int_arg=1),
          Spec("rootn", 2, _with_int("rootn"), int_arg=1),
          Spec("ilogb", 1, _ilogb, out=("i",)),
          Spec("sincos", 1, _sincos, out=("f", "f")),
          Spec("modf", 1, _modf, out=("f", "f")),
          Spec("fract", 1, _fract, out=("f", "f")),
          Spec("frexp", 1, _frexp, out=("f", "i")),
          Spec("remquo", 2, _with_out("remquo", lambda _: _I32, "i"), out=("f", "i")),
          Spec("lgamma_r", 1, _lgamma_r, out=("f", "i")),
          Spec("clamp", 3, _clamp, ints=True), Spec("min", 2, _min, ints=True),
          Spec("max", 2, _max, ints=True), Spec("mix", 3, _mix), Spec("step", 2, _step),
          Spec("smoothstep", 3, _smoothstep), Spec("sign", 1, _sign),
          Spec("degrees", 1, _scale(180.0 / math.pi)),
          Spec("radians", 1, _scale(math.pi / 180.0))]
    return s


#: function object -> its spec (the runtime's functions: ``sycl.sqrt is math_api.sqrt``).
SPECS: dict[Callable, Spec] = {getattr(math_api, s.name): s for s in _specs()}
for _prefix, _table in (("native", math_api.NATIVE), ("half", math_api.HALF_PRECISION)):
    for _name, _fn in _table.items():
        _spec_name = f"{'half_precision' if _prefix == 'half' else 'native'}::{_name}"
        SPECS[_fn] = Spec(_spec_name, 2 if _name in ("divide", "powr") else 1,
                          _native(_prefix, _name), float32_only=True)

#: The functions whose Python float literal arguments are weak (``sycl.fmax(f32, 0.5)``).
WEAK_ARG_FUNCTIONS: tuple[Callable, ...] = tuple(SPECS)

for _fn, _spec in SPECS.items():
    typing_registry.register_global(_fn)(_template(_fn, _spec))
    lowering_registry.lower(_fn, types.VarArg(types.Any))(_make_lowering(_spec))

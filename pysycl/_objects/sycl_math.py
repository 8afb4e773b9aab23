"""SYCL 2020 math and common functions (§4.17.5, §4.17.6): ``sycl.sqrt``, ``sycl.clamp`` ...

The pure-Python reference semantics: numpy on numbers, ``sycl.vec`` and ``sycl.marray``
(elementwise), run by the host and the host_debuggable device; inside a compiled kernel
:mod:`pysycl_numba.overloads.sycl_math` lowers the same function objects to OpenCL C
built-ins with the same results (within the built-in's ulp: OpenCL C 3.0 §7.4).

Types, as the spec's ``genfloat`` overloads and numpy 2's promotion (NEP 50):

* a float function takes float16/float32/float64 numbers, or ``vec``/``marray`` of them;
  every vector argument has one type, a number beside a vector is converted to its
  element type (the spec's ``sgenfloat`` arguments, allowed in every position here);
* numbers alone: numpy's result type (a Python literal is weak: ``sycl.fmax(f32, 0.5)``
  is a float32); integers alone give float64, as ``np.sqrt(2)``;
* ``sycl.min``/``max``/``clamp`` also take integers (§4.17.7) and keep their type;
* ``ldexp``/``pown``/``rootn`` take an ``int`` (or int vector) second argument, saturated
  to int32; ``ilogb`` returns int32 (int32 vector);
* C++ out-parameters become tuples: ``sincos(x)`` is ``(sin, cos)``, ``modf(x)`` is
  ``(fractional part, integral part)``, ``fract(x)`` is ``(fract, floor)``, ``frexp(x)``
  is ``(mantissa, exponent)``, ``remquo(x, y)`` is ``(remainder, quotient bits)``,
  ``lgamma_r(x)`` is ``(lgamma, sign of gamma)``.

float16 is computed in float32 and rounded (as numpy), float32 in float64 and rounded.
``sycl.native.*`` and ``sycl.half_precision.*`` (float32 only) compute as the accurate
functions here; on a device they may be less accurate (OpenCL's ``native_*``/``half_*``).
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from pysycl._objects.vec import vec

Fn = Callable[..., Any]
_INT32 = np.iinfo(np.int32)
_FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


# ================================================================ arguments
def _vector_shape(name: str, args: tuple) -> tuple[type, int] | None:
    shape = None
    for a in args:
        if isinstance(a, vec):
            s = (type(a), a._a.size)
            if shape is not None and s != shape:
                raise TypeError(f"sycl.{name}: vector arguments of different types "
                                f"({shape[0].__name__} of {shape[1]} and {s[0].__name__} of {s[1]})")
            shape = s
    return shape


def element_dtype(name: str, args: tuple, ints: bool = False) -> np.dtype:
    """The element type of ``sycl.<name>(*args)`` (the float arguments of a float function).

    Raises:
        TypeError: an argument is not a number or a vector of numbers, or the vectors
            have different element types, or an integer vector where floats are needed.
    """
    vdts = {a._a.dtype for a in args if isinstance(a, vec)}
    for a in args:
        if not isinstance(a, (vec, int, float, np.integer, np.floating)) or isinstance(a, bool):
            raise TypeError(f"sycl.{name} takes numbers or sycl.vec/sycl.marray of numbers, "
                            f"got {type(a).__name__}")
    if len(vdts) > 1:
        raise TypeError(f"sycl.{name}: vector arguments of different element types "
                        f"{sorted(map(str, vdts))}")
    if vdts:
        dt = vdts.pop()
    else:
        dt = np.result_type(*(a if type(a) in (int, float) else np.asarray(a).dtype
                              for a in args))
    if dt in _FLOATS or (ints and dt.kind in "iu"):
        return dt
    if dt.kind in "iu" and not vdts and not any(isinstance(a, vec) for a in args):
        return np.dtype(np.float64)  # np.sqrt(2) is a float64
    kinds = "genfloat or integer" if ints else "genfloat (float16/32/64)"
    raise TypeError(f"sycl.{name} takes {kinds} numbers, vec or marray, got elements of {dt}")


def _array(a: Any, dt: np.dtype) -> np.ndarray:
    if isinstance(a, vec):
        return a._a.astype(dt)
    with np.errstate(all="ignore"):
        return np.asarray(a).astype(dt)


def _int_array(name: str, a: Any) -> np.ndarray:
    """An ``int`` argument, saturated to int32 (an exponent past 2**31 acts the same)."""
    arr = a._a if isinstance(a, vec) else np.asarray(a)
    if arr.dtype.kind not in "iu" or isinstance(a, bool):
        raise TypeError(f"sycl.{name} takes an integer (or integer vector) second argument, "
                        f"got {type(a).__name__} of {arr.dtype}")
    return np.clip(arr.astype(np.int64), _INT32.min, _INT32.max).astype(np.int32)


def _result(shape: tuple[type, int] | None, r: Any, dt: np.dtype) -> Any:
    with np.errstate(all="ignore"):  # float64 -> float32 overflows to inf, as on a device
        r = np.asarray(r).astype(dt)
    if shape is None:
        return r.reshape(-1)[0] if r.ndim else r[()]
    cls, n = shape
    return cls._wrap(np.broadcast_to(r, (n,)).copy())


def _compute(dt: np.dtype, wide: bool) -> np.dtype:
    """float64 for the transcendental functions (rounded once to ``dt``); else float32 for half."""
    if wide:
        return np.dtype(np.float64)
    return np.dtype(np.float32) if dt == np.float16 else dt


def make(name: str, fn: Fn, nargs: int, *, wide: bool = True, ints: bool = False,
         int_arg: int | None = None, out: tuple[str, ...] = ("f",), typed: bool = False,
         doc: str = "") -> Fn:
    """A host function ``sycl.<name>`` computing ``fn`` elementwise on numpy arrays.

    Args:
        name: the spec's name.
        fn: computes on the float arguments converted to the compute type (and the int32
            ``int_arg``); returns one array, or a tuple for ``out`` of several results.
        nargs: the number of arguments.
        wide: compute in float64 (else in the element type, float32 for float16).
        ints: integers are element types too (``min``, ``max``, ``clamp``).
        int_arg: the position of an ``int`` argument (``ldexp``, ``pown``, ``rootn``).
        out: per result, ``"f"`` (the element type) or ``"i"`` (int32).
        typed: ``fn`` also takes the element type (a last argument).
        doc: the docstring.
    """
    def function(*args: Any) -> Any:
        if len(args) != nargs:
            raise TypeError(f"sycl.{name} takes {nargs} argument{'s' * (nargs > 1)}, "
                            f"got {len(args)}")
        floats = tuple(a for k, a in enumerate(args) if k != int_arg)
        shape = _vector_shape(name, args)
        dt = element_dtype(name, floats, ints)
        ct = _compute(dt, wide) if dt.kind == "f" else dt
        xs = [_int_array(name, a) if k == int_arg else _array(_array(a, dt), ct)
              for k, a in enumerate(args)]
        with np.errstate(all="ignore"):
            r = fn(*xs, dt) if typed else fn(*xs)
        if len(out) == 1:
            return _result(shape, r, dt if out[0] == "f" else np.dtype(np.int32))
        return tuple(_result(shape, v, dt if o == "f" else np.dtype(np.int32))
                     for v, o in zip(r, out, strict=True))

    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc or f"``sycl::{name}`` (SYCL 2020 §4.17.5), elementwise."
    return function


def _each(f: Callable[[float], float]) -> Fn:
    """A Python ``math`` function on every element (float64); its errors give inf/nan."""
    def safe(v: float) -> float:
        try:
            return f(v)
        except OverflowError:
            return math.inf
        except ValueError:
            return math.nan if math.isnan(v) or math.isinf(v) or v < 0 else math.inf

    vf = np.vectorize(safe, otypes=[np.float64])
    return lambda x: vf(x)


def _sinpi(x: np.ndarray) -> np.ndarray:
    """``sin(pi * x)`` after an exact reduction of ``x`` modulo 2; exactly ±0 at integers."""
    r = np.fmod(x, 2.0)
    return np.where(r == np.trunc(r), np.copysign(0.0, x), np.sin(np.pi * r))


def _cospi(x: np.ndarray) -> np.ndarray:
    """``cos(pi * x)`` after an exact reduction; exactly +0 at the half-integers."""
    r = np.fmod(np.abs(x), 2.0)
    return np.where(r - np.trunc(r) == 0.5, 0.0, np.cos(np.pi * r))


def _tgamma(v: float) -> float:
    if v == 0:
        return math.copysign(math.inf, v)
    if v < 0 and v == math.floor(v):
        return math.nan
    return math.gamma(v)


def _lgamma(v: float) -> float:
    if v <= 0 and v == math.floor(v):
        return math.inf
    return math.lgamma(v)


def _gamma_sign(x: np.ndarray) -> np.ndarray:
    """The sign of gamma(x): -1 on (-1, 0), (-3, -2) ...; 1 elsewhere (poles and NaN too)."""
    odd = np.fmod(np.floor(x), 2.0) != 0
    neg = (x < 0) & (x != np.floor(x)) & odd
    return np.where(neg | (np.signbit(x) & (x == 0)), -1, 1).astype(np.int32)


def _logb(x: np.ndarray) -> np.ndarray:
    _, e = np.frexp(x)
    r = (e - 1).astype(np.float64)
    r = np.where(x == 0, -np.inf, r)
    return np.where(np.isinf(x), np.inf, np.where(np.isnan(x), x, r))


def _ilogb(x: np.ndarray) -> np.ndarray:
    """OpenCL's ilogb: ``FP_ILOGB0`` (INT_MIN) for 0, ``FP_ILOGBNAN`` (INT_MAX) for NaN and inf."""
    _, e = np.frexp(np.where(np.isfinite(x), x, 1.0))
    r = (e - 1).astype(np.int64)
    r = np.where(x == 0, _INT32.min, r)
    return np.where(np.isfinite(x), r, _INT32.max)


def _round(x: np.ndarray) -> np.ndarray:
    """Halfway cases away from zero (C's ``round``; numpy's rounds them to even)."""
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.copysign(1.0, x), t)


def _powr(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``pow`` for ``x >= 0`` (OpenCL's powr: NaN for x < 0, 0**0, inf**0 and 1**inf)."""
    r = np.power(x, y)
    bad = (x < 0) | ((x == 0) & (y == 0)) | (np.isinf(x) & (y == 0)) | ((x == 1) & np.isinf(y))
    return np.where(bad | np.isnan(x) | np.isnan(y), np.nan, r)


def _pown(x: np.ndarray, n: np.ndarray) -> np.ndarray:
    return np.where(n == 0, 1.0, np.power(x, n.astype(np.float64)))


def _rootn(x: np.ndarray, n: np.ndarray) -> np.ndarray:
    """``x ** (1/n)``; a negative ``x`` has a real root for odd ``n`` only."""
    nf = n.astype(np.float64)
    odd = (n % 2) != 0
    mag = np.power(np.abs(x), 1.0 / np.where(n == 0, 1.0, nf))
    r = np.where(x < 0, np.where(odd, -mag, np.nan), np.copysign(mag, np.where(odd, x, 1.0)))
    return np.where(n == 0, np.nan, r)


def _mag(pick_min: bool) -> Fn:
    def f(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        ax, ay = np.abs(x), np.abs(y)
        first = ax < ay if pick_min else ax > ay
        second = ay < ax if pick_min else ay > ax
        tie = np.fmin(x, y) if pick_min else np.fmax(x, y)
        return np.where(first, x, np.where(second, y, tie))
    return f


def _fdim(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.where(np.isnan(x) | np.isnan(y), np.nan, np.where(x > y, x - y, 0.0))


def _remainder(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.vectorize(lambda a, b: math.nan if b == 0 or math.isinf(a) or math.isnan(a + b)
                        else math.remainder(a, b), otypes=[np.float64])(x, y)


def _quotient_bits(a: float, b: float) -> int:
    """The sign and 7 low bits of ``x / y`` rounded to the nearest integer (ties to even),
    exactly: a float64 ``(x - r) / y`` loses the low bits past 2**53."""
    if b == 0 or not math.isfinite(a) or math.isnan(b):
        return 0
    k = builtins.round(Fraction(a) / Fraction(b)) if math.isfinite(b) else 0
    return -(-k % 128) if k < 0 else k % 128


def _remquo(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The remainder, and the quotient's sign with its 7 low bits (OpenCL: at least 3)."""
    q = np.vectorize(_quotient_bits, otypes=[np.int32])(x, y)
    return _remainder(x, y), q


def _modf(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ip = np.trunc(x)
    frac = np.where(np.isinf(x), 0.0, x - ip)
    return np.copysign(frac, x), ip


def _fract(x: np.ndarray, dt: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """``fmin(x - floor(x), 0x1.fffffep-1)`` (below 1 in the element type ``dt``: a tiny
    negative ``x`` gives ``x - floor(x)`` rounded to 1); ±inf gives ±0, NaN gives NaN.

    Computed in ``dt`` (float32 for float16, where ``x - floor(x)`` is exact) as OpenCL's
    ``fract``; the float64 difference rounded to float32 could reach 1.0.
    """
    fl = np.floor(x)
    below_one = np.nextafter(np.asarray(1.0, dt), 0).astype(x.dtype)
    r = np.fmin(x - fl, below_one)
    r = np.where(np.isinf(x), np.copysign(0.0, x), r)
    return np.where(np.isnan(x), x, r), fl


def _frexp(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    m, e = np.frexp(x)
    return m, np.where(np.isfinite(x), e, 0)


def _fma(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``a * b + c`` in float64, rounded to odd: exact once rounded to float32 or float16.

    The product of two float32 values is exact in float64; the sum's error term (TwoSum)
    says where the exact value lies, and rounding to odd keeps it through the second rounding.
    """
    p = a * b
    s = p + c
    bp = s - c
    t = (p - bp) + (c - (s - bp))  # s + t == p + c exactly
    even = (s.view(np.int64) & 1) == 0
    fix = (t != 0) & even & np.isfinite(s)
    return np.where(fix, np.nextafter(s, np.where(t > 0, np.inf, -np.inf)), s)


def _smoothstep(e0: np.ndarray, e1: np.ndarray, x: np.ndarray) -> np.ndarray:
    one = np.asarray(1, x.dtype)
    t = np.fmin(np.fmax((x - e0) / (e1 - e0), np.asarray(0, x.dtype)), one)
    return t * t * (np.asarray(3, x.dtype) - np.asarray(2, x.dtype) * t)


def _sign(x: np.ndarray) -> np.ndarray:
    """1 for x > 0, -1 for x < 0, the zero itself for ±0, 0 for NaN (OpenCL's sign)."""
    return np.where(x > 0, 1.0, np.where(x < 0, -1.0, np.where(np.isnan(x), 0.0, x)))


def _scale(factor: float) -> Fn:
    return lambda x: x * np.asarray(factor, x.dtype)


# ============================================================ §4.17.5 math
acos = make("acos", np.arccos, 1)
acosh = make("acosh", np.arccosh, 1)
acospi = make("acospi", lambda x: np.arccos(x) / np.pi, 1)
asin = make("asin", np.arcsin, 1)
asinh = make("asinh", np.arcsinh, 1)
asinpi = make("asinpi", lambda x: np.arcsin(x) / np.pi, 1)
atan = make("atan", np.arctan, 1)
atan2 = make("atan2", np.arctan2, 2)
atanh = make("atanh", np.arctanh, 1)
atanpi = make("atanpi", lambda x: np.arctan(x) / np.pi, 1)
atan2pi = make("atan2pi", lambda y, x: np.arctan2(y, x) / np.pi, 2)
cbrt = make("cbrt", np.cbrt, 1)
ceil = make("ceil", np.ceil, 1)
copysign = make("copysign", np.copysign, 2)
cos = make("cos", np.cos, 1)
cosh = make("cosh", np.cosh, 1)
cospi = make("cospi", _cospi, 1)
erf = make("erf", _each(math.erf), 1)
erfc = make("erfc", _each(math.erfc), 1)
exp = make("exp", np.exp, 1)
exp2 = make("exp2", np.exp2, 1)
exp10 = make("exp10", lambda x: np.power(10.0, x), 1)
expm1 = make("expm1", np.expm1, 1)
fabs = make("fabs", np.fabs, 1)
fdim = make("fdim", _fdim, 2)
floor = make("floor", np.floor, 1)
fma = make("fma", lambda a, b, c: _fma(a, b, c), 3,
           doc="``sycl::fma(a, b, c)``: ``a * b + c`` rounded once (float32 and float16 "
               "exactly; float64 on the host through a rounded float64 product).")
fmax = make("fmax", np.fmax, 2, doc="``sycl::fmax``: the larger; a NaN argument gives the other.")
fmin = make("fmin", np.fmin, 2, doc="``sycl::fmin``: the smaller; a NaN argument gives the other.")
fmod = make("fmod", np.fmod, 2)
fract = make("fract", _fract, 1, wide=False, out=("f", "f"), typed=True,
             doc="``sycl::fract(x, &fl)`` as ``(fract, fl) = sycl.fract(x)``: "
                 "``fmin(x - floor(x), largest below 1)`` and ``floor(x)``.")
frexp = make("frexp", _frexp, 1, out=("f", "i"),
             doc="``sycl::frexp(x, &e)`` as ``(m, e) = sycl.frexp(x)``: ``x == m * 2**e``, "
                 "``0.5 <= |m| < 1``; inf and NaN give ``e == 0``.")
hypot = make("hypot", np.hypot, 2)
ilogb = make("ilogb", _ilogb, 1, out=("i",),
             doc="``sycl::ilogb``: the exponent as int32; 0 gives INT_MIN, inf and NaN INT_MAX.")
ldexp = make("ldexp", np.ldexp, 2, int_arg=1,
             doc="``sycl::ldexp(x, k)``: ``x * 2**k`` (``k`` an int, saturated to int32).")
lgamma = make("lgamma", _each(_lgamma), 1)
lgamma_r = make("lgamma_r", lambda x: (_each(_lgamma)(x), _gamma_sign(x)), 1, out=("f", "i"),
                doc="``sycl::lgamma_r(x, &s)`` as ``(lg, s) = sycl.lgamma_r(x)``: "
                    "``log|gamma(x)|`` and the sign of ``gamma(x)`` (1 or -1).")
log = make("log", np.log, 1)
log2 = make("log2", np.log2, 1)
log10 = make("log10", np.log10, 1)
log1p = make("log1p", np.log1p, 1)
logb = make("logb", _logb, 1)
mad = make("mad", lambda a, b, c: a * b + c, 3,
           doc="``sycl::mad(a, b, c)``: ``a * b + c``, maybe faster and less accurate "
               "(a device may round the product or not).")
maxmag = make("maxmag", _mag(False), 2)
minmag = make("minmag", _mag(True), 2)
modf = make("modf", _modf, 1, out=("f", "f"),
            doc="``sycl::modf(x, &ip)`` as ``(frac, ip) = sycl.modf(x)``: the fractional and "
                "integral parts, both with the sign of ``x``.")
nextafter = make("nextafter", np.nextafter, 2, wide=False)
pow = make("pow", np.power, 2)
pown = make("pown", _pown, 2, int_arg=1,
            doc="``sycl::pown(x, n)``: ``x ** n`` for an int ``n`` (``pown(x, 0)`` is 1).")
powr = make("powr", _powr, 2, doc="``sycl::powr(x, y)``: ``x ** y`` for ``x >= 0`` "
                                  "(NaN for a negative ``x``).")
remainder = make("remainder", _remainder, 2)
remquo = make("remquo", _remquo, 2, out=("f", "i"),
              doc="``sycl::remquo(x, y, &q)`` as ``(r, q) = sycl.remquo(x, y)``: "
                  "``remainder(x, y)`` and the sign and low bits of the quotient "
                  "(OpenCL guarantees 3 bits: compare ``q % 8``).")
rint = make("rint", np.rint, 1)
rootn = make("rootn", _rootn, 2, int_arg=1, doc="``sycl::rootn(x, n)``: ``x ** (1/n)``.")
round = make("round", _round, 1)
rsqrt = make("rsqrt", lambda x: 1.0 / np.sqrt(x), 1)
sin = make("sin", np.sin, 1)
sincos = make("sincos", lambda x: (np.sin(x), np.cos(x)), 1, out=("f", "f"),
              doc="``sycl::sincos(x, &c)`` as ``(s, c) = sycl.sincos(x)``.")
sinh = make("sinh", np.sinh, 1)
sinpi = make("sinpi", _sinpi, 1)
sqrt = make("sqrt", np.sqrt, 1)
tan = make("tan", np.tan, 1)
tanh = make("tanh", np.tanh, 1)
tanpi = make("tanpi", lambda x: _sinpi(x) / _cospi(x), 1)
tgamma = make("tgamma", _each(_tgamma), 1)
trunc = make("trunc", np.trunc, 1)

# ========================================================== §4.17.6 common
clamp = make("clamp", lambda x, lo, hi: np.fmin(np.fmax(x, lo), hi), 3, wide=False, ints=True,
             doc="``sycl::clamp(x, lo, hi)``: ``fmin(fmax(x, lo), hi)`` (integers: "
                 "``min(max(x, lo), hi)``).")
degrees = make("degrees", _scale(180.0 / math.pi), 1, wide=False)
max = make("max", lambda x, y: np.where(x < y, y, x), 2, wide=False, ints=True,
           doc="``sycl::max(x, y)``: ``y if x < y else x`` (floats and integers).")
min = make("min", lambda x, y: np.where(y < x, y, x), 2, wide=False, ints=True,
           doc="``sycl::min(x, y)``: ``y if y < x else x`` (floats and integers).")
mix = make("mix", lambda x, y, a: x + (y - x) * a, 3, wide=False,
           doc="``sycl::mix(x, y, a)``: ``x + (y - x) * a``.")
radians = make("radians", _scale(math.pi / 180.0), 1, wide=False)
sign = make("sign", _sign, 1, wide=False)
smoothstep = make("smoothstep", _smoothstep, 3, wide=False,
                  doc="``sycl::smoothstep(e0, e1, x)``: Hermite interpolation, "
                      "``t * t * (3 - 2 * t)`` with ``t = clamp((x - e0) / (e1 - e0), 0, 1)``.")
step = make("step", lambda edge, x: np.where(x < edge, 0.0, 1.0), 2, wide=False,
            doc="``sycl::step(edge, x)``: 0.0 if ``x < edge`` else 1.0.")

#: ``sycl::native::<name>`` and ``sycl::half_precision::<name>`` (float32 only).
NATIVE_NAMES = ("cos", "divide", "exp", "exp2", "exp10", "log", "log2", "log10", "powr",
                "recip", "rsqrt", "sin", "sqrt", "tan")
_ACCURATE: dict[str, Fn] = {
    "divide": lambda x, y: x / y, "recip": lambda x: 1.0 / x,
    "cos": np.cos, "exp": np.exp, "exp2": np.exp2, "exp10": lambda x: np.power(10.0, x),
    "log": np.log, "log2": np.log2, "log10": np.log10, "powr": _powr,
    "rsqrt": lambda x: 1.0 / np.sqrt(x), "sin": np.sin, "sqrt": np.sqrt, "tan": np.tan,
}


def _float32_only(prefix: str, name: str) -> Fn:
    nargs = 2 if name in ("divide", "powr") else 1
    inner = make(f"{prefix}::{name}", _ACCURATE[name], nargs)

    def function(*args: Any) -> Any:
        if element_dtype(f"{prefix}::{name}", args) != np.float32:
            raise TypeError(f"sycl.{prefix}.{name} takes float32 numbers, vec or marray only "
                            "(use sycl.{name} for other types)".replace("{name}", name))
        return inner(*args)

    function.__name__ = function.__qualname__ = f"{prefix}_{name}"
    function.__doc__ = (f"``sycl::{prefix}::{name}`` (float32): OpenCL's ``{prefix}_{name}``, "
                        "maybe less accurate on a device; the accurate function on the host.")
    return function


#: ``sycl.native.<name>`` -> the function, and the same for ``half_precision``.
NATIVE: dict[str, Fn] = {n: _float32_only("native", n) for n in NATIVE_NAMES}
HALF_PRECISION: dict[str, Fn] = {n: _float32_only("half_precision", n) for n in NATIVE_NAMES}
# Reachable as module attributes too (``native_sin``), as Numba keys a function by where it lives.
globals().update({f.__name__: f for f in (*NATIVE.values(), *HALF_PRECISION.values())})

__all__ = [
    "acos", "acosh", "acospi", "asin", "asinh", "asinpi", "atan", "atan2", "atan2pi", "atanh",
    "atanpi", "cbrt", "ceil", "clamp", "copysign", "cos", "cosh", "cospi", "degrees", "erf",
    "erfc", "exp", "exp2", "exp10", "expm1", "fabs", "fdim", "floor", "fma", "fmax", "fmin",
    "fmod", "fract", "frexp", "hypot", "ilogb", "ldexp", "lgamma", "lgamma_r", "log", "log1p",
    "log2", "log10", "logb", "mad", "max", "maxmag", "min", "minmag", "mix", "modf",
    "nextafter", "pow", "pown", "powr", "radians", "remainder", "remquo", "rint", "rootn",
    "round", "rsqrt", "sign", "sin", "sincos", "sinh", "sinpi", "smoothstep", "sqrt", "step",
    "tan", "tanh", "tanpi", "tgamma", "trunc",
]

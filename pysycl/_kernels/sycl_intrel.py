"""The SYCL 2020 integer functions (§4.17.7) and relational functions (§4.17.9).

These are the host semantics -- computed exactly with Python integers (and numpy for
the float tests) on numpy scalars, :class:`~pysycl._objects.vec.vec` and
:class:`~pysycl._objects.vec.marray` values; the host_debuggable device runs them, and
they are the oracle of the compiled ones (:mod:`pysycl_numba.overloads.sycl_intrel`).

Python spelling (docs/kernels.md, docs/mapping.md): ``sycl::popcount(x)`` is
``sycl.popcount(x)``. The operands of a function are of one type, as the spec
requires (an ``int32`` with an ``int32``, an ``int4`` with an ``int4``); a Python int
takes the type of the other operands (``sycl.add_sat(x, 1)``), alone it is an
``int64`` as in kernels. Results follow SYCL 2020 rev. 8 and later:

* ``abs`` and ``abs_diff`` return the operand's type (rev. 5-7 returned the unsigned
  type); ``abs(INT_MIN)`` and a difference that does not fit wrap around (undefined
  in the spec);
* ``mul24``/``mad24`` multiply all 32 bits (the spec leaves operands beyond 24 bits
  implementation-defined);
* scalar relational functions return ``bool``; on a ``vec`` the signed integer
  vector of the element size (-1 true, 0 false); on an ``marray`` an ``marray`` of bool;
* ``any``/``all`` of a signed integer ``vec`` test the most significant bits and return
  an ``int32`` 1 or 0; of a signed scalar (deprecated) a bool; of an ``marray`` a bool
  (of bools: the values; of signed integers: the most significant bits);
* ``select(a, b, c)``: scalars ``b if c else a``; ``vec``: ``b[i]`` where the most
  significant bit of ``c[i]`` (an integer vector of the element size) is set;
  ``marray``: ``b[i]`` where the bool ``c[i]``. ``bitselect(a, b, c)``: the bits of ``b``
  where ``c``'s bits are 1, else ``a``'s (floats bit by bit).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

import numpy as np

from pysycl._objects.vec import compare_dtype, marray, vec

_INT_DTYPES = tuple(np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.uint16, np.int32,
                                          np.uint32, np.int64, np.uint64))
_FLOAT_DTYPES = tuple(np.dtype(t) for t in (np.float16, np.float32, np.float64))


def _bits(dt: np.dtype) -> int:
    return dt.itemsize * 8


def _range(dt: np.dtype) -> tuple[int, int]:
    info = np.iinfo(dt)
    return int(info.min), int(info.max)


def _wrap_int(v: int, dt: np.dtype) -> int:
    """``v`` modulo 2**bits, as a value of ``dt`` (two's complement)."""
    b = _bits(dt)
    v &= (1 << b) - 1
    return v - (1 << b) if dt.kind == "i" and v >> (b - 1) else v


def _kind_of(x: Any) -> str:
    if isinstance(x, marray):
        return "marray"
    if isinstance(x, vec):
        return "vec"
    return "scalar"


def _dtype_of(x: Any) -> np.dtype | None:
    """The element type of an operand; None for a Python number (weak)."""
    if isinstance(x, vec):
        return x.dtype
    if isinstance(x, (np.number, np.bool_)):
        return x.dtype
    if isinstance(x, (bool, int, float)):
        return None
    raise TypeError(f"expected a number, a sycl.vec or a sycl.marray, got {type(x).__name__}")


def _operands(name: str, args: tuple, allowed: tuple[np.dtype, ...],
              ) -> tuple[str, np.dtype, list[np.ndarray]]:
    """The kind (scalar/vec/marray), element type and elements of ``args``, all of one type."""
    kinds = {_kind_of(a) for a in args}
    dts = [_dtype_of(a) for a in args]
    known = {d for d in dts if d is not None}
    weak = builtins.any(d is None for d in dts)  # not `None in dts`: dtype('f8') == None
    if len(kinds) != 1 or len(known) > 1 or (kinds != {"scalar"} and weak):
        raise TypeError(f"sycl.{name}: the operands must be of one type (numbers of one "
                        f"dtype, or vectors of one type), got "
                        f"{', '.join(_describe(a) for a in args)}")
    kind = kinds.pop()
    if known:
        dt = known.pop()
    else:  # Python numbers alone: int64 or float64, as kernels type literals
        dt = np.dtype(np.float64 if builtins.any(isinstance(a, float) for a in args) else np.int64)
    if dt not in allowed:
        raise TypeError(f"sycl.{name} takes {_names(allowed)}, got {_describe(args[0])}")
    if kind != "scalar":
        sizes = {a.size() for a in args}
        if len(sizes) != 1:
            raise TypeError(f"sycl.{name}: the vectors must have one size, got "
                            f"{', '.join(_describe(a) for a in args)}")
        return kind, dt, [a.to_numpy() for a in args]
    elems = []
    for a in args:
        if isinstance(a, (int, float)) and not isinstance(a, bool) and dt.kind in "iu" and (
                not isinstance(a, int) or not _range(dt)[0] <= a <= _range(dt)[1]):
            raise OverflowError(f"sycl.{name}: {a!r} is not a value of {dt}")
        elems.append(np.asarray(a).astype(dt).reshape(1))
    return kind, dt, elems


def _describe(a: Any) -> str:
    if isinstance(a, vec):
        return f"sycl.{_kind_of(a)} of {a.size()} {a.dtype}"
    return type(a).__name__


def _names(dts: tuple[np.dtype, ...]) -> str:
    return "integers" if dts == _INT_DTYPES else "floats (float16, float32, float64)"


def _result(kind: str, a: np.ndarray) -> Any:
    if kind == "vec":
        return vec._wrap(a)
    if kind == "marray":
        return marray._wrap(a)
    return a[0] if a.dtype != np.bool_ else bool(a[0])


def _int_elementwise(name: str, fn: Callable[..., int], args: tuple,
                     ret: Callable[[np.dtype], np.dtype] | None = None) -> Any:
    """``fn`` of the Python-int elements of integer ``args``, as ``ret(dtype)`` (default dtype)."""
    kind, dt, elems = _operands(name, args, _INT_DTYPES)
    rdt = ret(dt) if ret else dt
    out = [_wrap_int(fn(dt, *(int(e[k]) for e in elems)), rdt) for k in range(elems[0].size)]
    return _result(kind, np.array(out, dtype=object).astype(rdt))


def _saturate(v: int, dt: np.dtype) -> int:
    lo, hi = _range(dt)
    return min(max(v, lo), hi)


def _mul_hi(dt: np.dtype, x: int, y: int) -> int:
    return (x * y) >> _bits(dt)


# ------------------------------------------------------------ integer functions
def abs(x: Any) -> Any:
    """``sycl::abs``: ``|x|`` of an integer (``abs(INT_MIN)`` wraps to ``INT_MIN``)."""
    return _int_elementwise("abs", lambda dt, a: a if a >= 0 else -a, (x,))


def abs_diff(x: Any, y: Any) -> Any:
    """``sycl::abs_diff``: ``|x - y|`` without overflow in the subtraction (the result wraps
    when it does not fit the type)."""
    return _int_elementwise("abs_diff", lambda dt, a, b: a - b if a > b else b - a, (x, y))


def add_sat(x: Any, y: Any) -> Any:
    """``sycl::add_sat``: ``x + y``, saturated to the type's range."""
    return _int_elementwise("add_sat", lambda dt, a, b: _saturate(a + b, dt), (x, y))


def sub_sat(x: Any, y: Any) -> Any:
    """``sycl::sub_sat``: ``x - y``, saturated to the type's range."""
    return _int_elementwise("sub_sat", lambda dt, a, b: _saturate(a - b, dt), (x, y))


def hadd(x: Any, y: Any) -> Any:
    """``sycl::hadd``: ``(x + y) >> 1`` without overflow in the sum."""
    return _int_elementwise("hadd", lambda dt, a, b: (a + b) >> 1, (x, y))


def rhadd(x: Any, y: Any) -> Any:
    """``sycl::rhadd``: ``(x + y + 1) >> 1`` without overflow in the sum."""
    return _int_elementwise("rhadd", lambda dt, a, b: (a + b + 1) >> 1, (x, y))


def mul_hi(x: Any, y: Any) -> Any:
    """``sycl::mul_hi``: the high half of the double-width product ``x * y``."""
    return _int_elementwise("mul_hi", _mul_hi, (x, y))


def mad_hi(a: Any, b: Any, c: Any) -> Any:
    """``sycl::mad_hi``: ``mul_hi(a, b) + c`` (the sum wraps around)."""
    return _int_elementwise("mad_hi", lambda dt, x, y, z: _mul_hi(dt, x, y) + z, (a, b, c))


def mad_sat(a: Any, b: Any, c: Any) -> Any:
    """``sycl::mad_sat``: ``a * b + c``, saturated to the type's range."""
    return _int_elementwise("mad_sat", lambda dt, x, y, z: _saturate(x * y + z, dt), (a, b, c))


def rotate(v: Any, count: Any) -> Any:
    """``sycl::rotate``: ``v`` rotated left by ``count`` bits (modulo the width)."""
    def rot(dt: np.dtype, a: int, n: int) -> int:
        b = _bits(dt)
        u, s = a & ((1 << b) - 1), n & (b - 1)
        return (u << s) | (u >> (b - s))
    return _int_elementwise("rotate", rot, (v, count))


def clz(x: Any) -> Any:
    """``sycl::clz``: the number of leading 0-bits (the width for 0)."""
    return _int_elementwise("clz", lambda dt, a: _bits(dt) - (a & ((1 << _bits(dt)) - 1)
                                                              ).bit_length(), (x,))


def ctz(x: Any) -> Any:
    """``sycl::ctz``: the number of trailing 0-bits (the width for 0)."""
    def tz(dt: np.dtype, a: int) -> int:
        u = a & ((1 << _bits(dt)) - 1)
        return (u & -u).bit_length() - 1 if u else _bits(dt)
    return _int_elementwise("ctz", tz, (x,))


def popcount(x: Any) -> Any:
    """``sycl::popcount``: the number of 1-bits."""
    return _int_elementwise("popcount", lambda dt, a: bin(a & ((1 << _bits(dt)) - 1)
                                                          ).count("1"), (x,))


def _check_32(name: str, args: tuple) -> None:
    dts = {d for d in map(_dtype_of, args) if d is not None}
    if dts - {np.dtype(np.int32), np.dtype(np.uint32)}:
        raise TypeError(f"sycl.{name} takes int32 or uint32 operands (and vectors of them), "
                        f"got {', '.join(_describe(a) for a in args)}")


def mul24(x: Any, y: Any) -> Any:
    """``sycl::mul24``: ``x * y`` of 32-bit integers meant to hold 24-bit values (here all
    32 bits are multiplied; the product wraps)."""
    _check_32("mul24", (x, y))
    return _int_elementwise("mul24", lambda dt, a, b: a * b, (x, y))


def mad24(x: Any, y: Any, z: Any) -> Any:
    """``sycl::mad24``: ``mul24(x, y) + z`` (wraps)."""
    _check_32("mad24", (x, y, z))
    return _int_elementwise("mad24", lambda dt, a, b, c: a * b + c, (x, y, z))


def upsample(hi: Any, lo: Any) -> Any:
    """``sycl::upsample``: ``(hi << bits) | lo`` in the integer type twice as wide as ``hi``
    (signed as ``hi``); ``lo`` is the unsigned type of ``hi``'s width."""
    dhi, dlo = _dtype_of(hi), _dtype_of(lo)
    if dhi is None or dlo is None or dhi.kind not in "iu" or dhi.itemsize > 4 or \
            dlo != np.dtype(f"u{dhi.itemsize}") or _kind_of(hi) != _kind_of(lo) or (
                isinstance(hi, vec) and hi.size() != lo.size()):
        raise TypeError("sycl.upsample(hi, lo) takes hi of int8/uint8/int16/uint16/int32/"
                        "uint32 and lo of the unsigned type of the same width (or vectors of "
                        f"them), got {_describe(hi)} and {_describe(lo)}")
    kind = _kind_of(hi)
    a = hi.to_numpy() if kind != "scalar" else np.asarray(hi).reshape(1)
    b = lo.to_numpy() if kind != "scalar" else np.asarray(lo).reshape(1)
    rdt = np.dtype(f"{dhi.kind}{2 * dhi.itemsize}")
    out = (a.astype(rdt) << np.array(_bits(dhi), rdt)) | b.astype(rdt)
    return _result(kind, out.astype(rdt))


# --------------------------------------------------------- relational functions
def _float_test(name: str, fn: Callable[..., np.ndarray], args: tuple) -> Any:
    """``fn`` of the float elements of ``args``: a bool, an int vector (-1/0) or marray<bool>."""
    kind, dt, elems = _operands(name, args, _FLOAT_DTYPES)
    with np.errstate(all="ignore"):
        r = np.asarray(fn(*elems), dtype=np.bool_)
    if kind == "vec":
        return vec._wrap(np.where(r, -1, 0).astype(compare_dtype(dt)))
    return _result(kind, r)


def isequal(x: Any, y: Any) -> Any:
    """``sycl::isequal``: ``x == y`` (false with a NaN)."""
    return _float_test("isequal", np.equal, (x, y))


def isnotequal(x: Any, y: Any) -> Any:
    """``sycl::isnotequal``: ``x != y`` (true with a NaN)."""
    return _float_test("isnotequal", np.not_equal, (x, y))


def isgreater(x: Any, y: Any) -> Any:
    """``sycl::isgreater``: ``x > y``."""
    return _float_test("isgreater", np.greater, (x, y))


def isgreaterequal(x: Any, y: Any) -> Any:
    """``sycl::isgreaterequal``: ``x >= y``."""
    return _float_test("isgreaterequal", np.greater_equal, (x, y))


def isless(x: Any, y: Any) -> Any:
    """``sycl::isless``: ``x < y``."""
    return _float_test("isless", np.less, (x, y))


def islessequal(x: Any, y: Any) -> Any:
    """``sycl::islessequal``: ``x <= y``."""
    return _float_test("islessequal", np.less_equal, (x, y))


def islessgreater(x: Any, y: Any) -> Any:
    """``sycl::islessgreater``: ``x < y or x > y`` (false with a NaN)."""
    return _float_test("islessgreater", lambda a, b: (a < b) | (a > b), (x, y))


def isfinite(x: Any) -> Any:
    """``sycl::isfinite``: neither infinite nor NaN."""
    return _float_test("isfinite", np.isfinite, (x,))


def isinf(x: Any) -> Any:
    """``sycl::isinf``: plus or minus infinity."""
    return _float_test("isinf", np.isinf, (x,))


def isnan(x: Any) -> Any:
    """``sycl::isnan``: a NaN."""
    return _float_test("isnan", np.isnan, (x,))


def isnormal(x: Any) -> Any:
    """``sycl::isnormal``: finite, not zero and not subnormal."""
    def normal(a: np.ndarray) -> np.ndarray:
        return np.isfinite(a) & (np.abs(a) >= np.finfo(a.dtype).smallest_normal)
    return _float_test("isnormal", normal, (x,))


def isordered(x: Any, y: Any) -> Any:
    """``sycl::isordered``: neither operand is a NaN."""
    return _float_test("isordered", lambda a, b: ~(np.isnan(a) | np.isnan(b)), (x, y))


def isunordered(x: Any, y: Any) -> Any:
    """``sycl::isunordered``: an operand is a NaN."""
    return _float_test("isunordered", lambda a, b: np.isnan(a) | np.isnan(b), (x, y))


def signbit(x: Any) -> Any:
    """``sycl::signbit``: the sign bit is set (``-0.0`` and negative NaNs too)."""
    return _float_test("signbit", np.signbit, (x,))


def _vote(name: str, x: Any, reduce: Callable[[np.ndarray], bool]) -> Any:
    """``any``/``all`` of the most significant bits (or of the bools of an marray<bool>)."""
    kind, dt = _kind_of(x), _dtype_of(x)
    ok = dt is not None and (dt.kind == "i" or (kind == "marray" and dt == np.bool_))
    if not ok:
        raise TypeError(f"sycl.{name} takes a signed integer vec, marray or number, or an "
                        f"marray of bool, got {_describe(x)} (compare first: "
                        f"sycl.{name}(v > 0))")
    a = x.to_numpy() if kind != "scalar" else np.asarray(x).reshape(1)
    r = bool(reduce(a if a.dtype == np.bool_ else a < 0))
    return np.int32(r) if kind == "vec" else r


def any(x: Any) -> Any:
    """``sycl::any``: whether the most significant bit of any element is set (an int32 1/0
    for a vec, a bool otherwise); for an marray of bool whether any element is true."""
    return _vote("any", x, np.any)


def all(x: Any) -> Any:
    """``sycl::all``: whether the most significant bits of all elements are set (an int32
    1/0 for a vec, a bool otherwise); for an marray of bool whether all are true."""
    return _vote("all", x, np.all)


_SCALAR_TYPES = (*_INT_DTYPES, *_FLOAT_DTYPES)


def bitselect(a: Any, b: Any, c: Any) -> Any:
    """``sycl::bitselect``: each bit from ``b`` where that bit of ``c`` is 1, else from ``a``."""
    kind, dt, (x, y, z) = _operands("bitselect", (a, b, c), _SCALAR_TYPES)
    it = np.dtype(f"u{dt.itemsize}")
    r = (x.view(it) & ~z.view(it)) | (y.view(it) & z.view(it))
    return _result(kind, r.view(dt))


def select(a: Any, b: Any, c: Any) -> Any:
    """``sycl::select``: ``b if c else a`` (scalars); per element of vectors: ``b[i]`` where the
    most significant bit of ``c[i]`` is set (vec) or where ``c[i]`` is true (marray)."""
    kind, dt, (x, y) = _operands("select", (a, b), _SCALAR_TYPES)
    if kind == "scalar":
        cdt = _dtype_of(c)
        if isinstance(c, (vec, float)) or (cdt is not None and cdt.kind not in "biu"):
            raise TypeError(f"sycl.select(a, b, c) of numbers takes a bool or integer c, got "
                            f"{_describe(c)}")
        return _result(kind, y if c else x)
    cdt = _dtype_of(c)
    want = "marray of bool" if kind == "marray" else f"vec of {dt.itemsize * 8}-bit integers"
    if _kind_of(c) != kind or c.size() != x.size or (
            cdt != np.bool_ if kind == "marray" else
            (cdt.kind not in "iu" or cdt.itemsize != dt.itemsize)):
        raise TypeError(f"sycl.select(a, b, c) of {_describe(a)} takes c as a {want} of "
                        f"{x.size} elements, got {_describe(c)}")
    m = c.to_numpy()
    pick = m if kind == "marray" else m.view(f"i{dt.itemsize}") < 0
    return _result(kind, np.where(pick, y, x).astype(dt))

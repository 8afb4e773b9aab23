"""``sycl::vec`` and ``sycl::marray`` (SYCL 2020 §4.14.2, §4.14.3) and the geometric functions.

These are the pure-Python reference semantics -- numpy-backed, usable on the host and
in kernels running on the host_debuggable device. Inside a compiled kernel the
compiler (:mod:`pysycl_numba.overloads.vec`) gives the same names an LLVM vector
implementation (``<4 x float>``) with the same results.

Python spelling (docs/kernels.md, docs/mapping.md):

* ``sycl::vec<float, 4>{x, y, z, w}`` is ``sycl.float4(x, y, z, w)`` or
  ``sycl.vec(x, y, z, w, dtype=np.float32)``; broadcast ``sycl.float4(1.0)`` or
  ``sycl.vec(1.0, dtype=np.float32, num_elements=4)``. The aliases are the spec's:
  ``char/uchar/short/ushort/int/uint/long/ulong/half/float/double`` x ``2, 3, 4, 8, 16``.
* ``v.as<sycl::int4>()`` is ``v.as_(sycl.int4)`` (``as`` is a Python keyword);
  ``v.convert<int>()`` is ``v.convert(np.int32)``.
* C++'s member ``v.load(offset, ptr)`` assigns to ``v``; Python's
  ``sycl.float4.load(offset, acc_or_ptr)`` returns the vector.
* Vectors are values: there is no ``v[k] = s`` / ``v.x() = s``; build a new vector.
* Comparisons give the spec's integer vectors (-1 true, 0 false); ``marray``
  comparisons give an ``marray`` of bool.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

#: The spec's alias element types (SYCL 2020 §4.14.2.1), by alias prefix.
ALIAS_DTYPES: dict[str, np.dtype] = {
    "char": np.dtype(np.int8), "uchar": np.dtype(np.uint8),
    "short": np.dtype(np.int16), "ushort": np.dtype(np.uint16),
    "int": np.dtype(np.int32), "uint": np.dtype(np.uint32),
    "long": np.dtype(np.int64), "ulong": np.dtype(np.uint64),
    "half": np.dtype(np.float16), "float": np.dtype(np.float32), "double": np.dtype(np.float64),
}
ALIAS_SIZES = (2, 3, 4, 8, 16)
_VEC_SIZES = (1, *ALIAS_SIZES)
_SWIZZLE_SETS = ("xyzw", "rgba")
_HEX = "0123456789abcdef"
_S_SWIZZLE = re.compile(r"s([0-9a-fA-F]+)$")


def compare_dtype(dtype: np.dtype) -> np.dtype:
    """The element type of a vec comparison's result: a signed integer of the same size."""
    return np.dtype(f"i{np.dtype(dtype).itemsize}")


def swizzle_indices(name: str, n: int) -> tuple[int, ...] | None:
    """The element indices of swizzle ``name`` (``"xy"``, ``"s03"``) on an ``n``-vector, or None."""
    m = _S_SWIZZLE.match(name)
    if m:
        idx = tuple(_HEX.index(c) for c in m.group(1).lower())
    else:
        idx = ()
        for letters in _SWIZZLE_SETS:
            if name and all(c in letters for c in name):
                idx = tuple(letters.index(c) for c in name)
                break
        if idx and n > 4:
            return None  # xyzw / rgba only on vectors of up to 4 elements, as in the spec
    if not idx or len(idx) not in _VEC_SIZES or any(i >= n for i in idx):
        return None
    return idx


class vec:  # noqa: N801 - the spec's spelling
    """``sycl::vec<T, N>``: ``N`` (1, 2, 3, 4, 8, 16) elements of a numeric ``dtype``.

    ``sycl.vec(x, y, z, w, dtype=np.float32)``, ``sycl.vec(1.0, dtype=np.float32,
    num_elements=4)`` (broadcast), or an alias: ``sycl.float4(x, y, z, w)``. Elements
    may be scalars or vectors, concatenated (``sycl.float4(v2, 0.0, 1.0)``).
    """

    __slots__ = ("_a",)
    __hash__ = None  # type: ignore[assignment]  # == is elementwise
    # numpy defers to the reflected operators (np.float32(2) * v is a vec, as in kernels,
    # where accessor elements are numpy scalars); np.sqrt(v) is a TypeError, as in kernels.
    __array_ufunc__ = None
    _marray: ClassVar[bool] = False

    def __init__(self, *elements: Any, dtype: Any, num_elements: int | None = None) -> None:
        dt = np.dtype(dtype)
        if dt.kind not in "iuf" and not (self._marray and dt == np.bool_):
            raise TypeError(f"sycl.{self._kind()}: element type must be numeric, got {dt}")
        with np.errstate(all="ignore"):  # C++ conversions: 1e40 -> inf, 300 -> 44 for uchar
            parts = [np.asarray(self._element(e)).astype(dt).ravel() for e in elements]
        a = np.concatenate(parts) if parts else np.zeros(0, dt)
        if num_elements is not None:
            if a.size == 1:
                a = np.full(num_elements, a[0], dt)
            elif a.size != num_elements:
                raise TypeError(f"sycl.{self._kind()}: {num_elements} elements expected, "
                                f"got {a.size}")
        if not self._size_ok(a.size):
            raise TypeError(f"sycl.{self._kind()} of {a.size} elements: vec has 1, 2, 3, 4, 8 "
                            "or 16")
        self._a = a

    @classmethod
    def _element(cls, e: Any) -> Any:
        """The values of one constructor argument: a number, or a vector of this kind."""
        if isinstance(e, vec):
            if e._marray != cls._marray:
                raise TypeError(f"sycl.{cls._kind()} cannot be built from a sycl.{e._kind()} "
                                "(C++ has no such constructor): pass its elements")
            return e._a
        if not isinstance(e, (int, float, bool, np.number, np.bool_)):
            raise TypeError(f"sycl.{cls._kind()} elements are numbers or vectors, got "
                            f"{type(e).__name__}")
        return e

    @classmethod
    def _kind(cls) -> str:
        return "marray" if cls._marray else "vec"

    @staticmethod
    def _size_ok(n: int) -> bool:
        return n in _VEC_SIZES

    @classmethod
    def _wrap(cls, a: np.ndarray) -> Any:
        v = cls.__new__(cls)
        v._a = a
        return v

    # ------------------------------------------------------------------ queries
    @property
    def dtype(self) -> np.dtype:
        """The element type."""
        return self._a.dtype

    def size(self) -> int:
        """Number of elements (C++ ``size()``)."""
        return int(self._a.size)

    def byte_size(self) -> int:
        """Bytes of the elements (C++ ``byte_size()``; a 3-vector occupies 4 elements there)."""
        n = 4 if self._a.size == 3 and not self._marray else self._a.size
        return n * self._a.dtype.itemsize

    def __len__(self) -> int:
        return int(self._a.size)

    def __getitem__(self, k: int) -> Any:
        k = operator.index(k)
        if not 0 <= k < self._a.size:  # SYCL indices do not wrap around (as accessors)
            raise IndexError(f"index {k} is out of bounds for a sycl.{self._kind()} of "
                             f"{self._a.size} elements")
        return self._a[k]

    def __iter__(self) -> Any:
        return iter(self._a)

    def to_numpy(self) -> np.ndarray:
        """A copy of the elements as a numpy array (pysycl's own)."""
        return self._a.copy()

    def __repr__(self) -> str:
        return f"sycl.{self._kind()}({', '.join(map(repr, self._a.tolist()))}, dtype={self.dtype})"

    def __bool__(self) -> bool:
        raise TypeError(f"the truth value of a sycl.{self._kind()} is ambiguous: a vector "
                        "comparison is elementwise; test the components, if v[0] == 1.0 and "
                        "v[1] == 1.0, or index the comparison, if (v == 1.0)[k]")

    def __getattr__(self, name: str) -> Callable[[], Any]:
        idx = swizzle_indices(name, self._a.size) if not self._marray else None
        if idx is None:
            raise AttributeError(f"sycl.{self._kind()} has no attribute {name!r}")
        a = self._a

        def swizzle() -> Any:
            return a[idx[0]] if len(idx) == 1 else vec._wrap(a[list(idx)].copy())

        return swizzle

    # -------------------------------------------------------------- conversions
    def convert(self, dtype: Any) -> Any:
        """``convert<T>()``: elementwise conversion (float → int truncates toward zero)."""
        with np.errstate(all="ignore"):
            return type(self)._wrap(self._a.astype(np.dtype(dtype)))

    def as_(self, vectype: Any) -> Any:
        """``as<vec<U, M>>()``: the same bytes as another vector type (C++ ``as``)."""
        dt, n = vectype.dtype, vectype.num_elements
        if dt.itemsize * n != self._a.dtype.itemsize * self._a.size:
            raise TypeError(f"as_: {vectype!r} has another size than this vector")
        return vec._wrap(self._a.view(dt).copy())

    def store(self, offset: int, dst: Any) -> None:
        """Write the elements to ``dst[offset * N + k]`` (an accessor or a USM pointer)."""
        n = self._a.size
        check_load_target(dst, self._a.dtype, "store")
        for k in range(n):
            dst[int(offset) * n + k] = self._a[k]

    # ---------------------------------------------------------------- operators
    def _operand(self, other: Any) -> np.ndarray | None:
        if isinstance(other, vec):
            if other._a.dtype != self._a.dtype or other._a.size != self._a.size:
                return None
            return other._a
        if isinstance(other, (int, float, bool, np.number, np.bool_)):
            with np.errstate(all="ignore"):
                return np.asarray(other).astype(self._a.dtype)
        return None

    def _binop(self, other: Any, op: Callable[[Any, Any], Any], reflected: bool = False) -> Any:
        b = self._operand(other)
        if b is None or self._a.dtype == np.bool_:  # bool marrays only compare, as in kernels
            return NotImplemented
        x, y = (b, self._a) if reflected else (self._a, b)
        with np.errstate(all="ignore"):
            r = op(x, y)
        return type(self)._wrap(np.asarray(r).astype(self._a.dtype))

    def _compare(self, other: Any, op: Callable[[Any, Any], Any]) -> Any:
        b = self._operand(other)
        if b is None:
            return NotImplemented
        r = op(self._a, b)
        if self._marray:
            return type(self)._wrap(r)
        return vec._wrap(np.where(r, -1, 0).astype(compare_dtype(self._a.dtype)))

    def __add__(self, o: Any) -> Any: return self._binop(o, operator.add)
    def __radd__(self, o: Any) -> Any: return self._binop(o, operator.add, True)
    def __sub__(self, o: Any) -> Any: return self._binop(o, operator.sub)
    def __rsub__(self, o: Any) -> Any: return self._binop(o, operator.sub, True)
    def __mul__(self, o: Any) -> Any: return self._binop(o, operator.mul)
    def __rmul__(self, o: Any) -> Any: return self._binop(o, operator.mul, True)
    def __truediv__(self, o: Any) -> Any: return self._binop(o, _div(self._a.dtype))
    def __rtruediv__(self, o: Any) -> Any: return self._binop(o, _div(self._a.dtype), True)
    def __floordiv__(self, o: Any) -> Any: return self._int_binop(o, _cdiv)
    def __rfloordiv__(self, o: Any) -> Any: return self._int_binop(o, _cdiv, True)
    def __mod__(self, o: Any) -> Any: return self._int_binop(o, _cmod)
    def __rmod__(self, o: Any) -> Any: return self._int_binop(o, _cmod, True)
    def __and__(self, o: Any) -> Any: return self._int_binop(o, operator.and_)
    def __rand__(self, o: Any) -> Any: return self._int_binop(o, operator.and_, True)
    def __or__(self, o: Any) -> Any: return self._int_binop(o, operator.or_)
    def __ror__(self, o: Any) -> Any: return self._int_binop(o, operator.or_, True)
    def __xor__(self, o: Any) -> Any: return self._int_binop(o, operator.xor)
    def __rxor__(self, o: Any) -> Any: return self._int_binop(o, operator.xor, True)
    def __lshift__(self, o: Any) -> Any: return self._int_binop(o, _shl)
    def __rshift__(self, o: Any) -> Any: return self._int_binop(o, _shr)
    def __eq__(self, o: object) -> Any: return self._compare(o, operator.eq)  # type: ignore[override]
    def __ne__(self, o: object) -> Any: return self._compare(o, operator.ne)  # type: ignore[override]
    def __lt__(self, o: Any) -> Any: return self._compare(o, operator.lt)
    def __le__(self, o: Any) -> Any: return self._compare(o, operator.le)
    def __gt__(self, o: Any) -> Any: return self._compare(o, operator.gt)
    def __ge__(self, o: Any) -> Any: return self._compare(o, operator.ge)

    def __rlshift__(self, o: Any) -> Any: return self._int_binop(o, _shl, True)
    def __rrshift__(self, o: Any) -> Any: return self._int_binop(o, _shr, True)

    def _int_binop(self, other: Any, op: Callable[[Any, Any], Any], reflected: bool = False) -> Any:
        if self._a.dtype.kind not in "iu":
            return NotImplemented
        return self._binop(other, op, reflected)

    def __neg__(self) -> Any:
        with np.errstate(all="ignore"):
            return type(self)._wrap(-self._a)

    def __pos__(self) -> Any:
        return type(self)._wrap(self._a.copy())

    def __invert__(self) -> Any:
        if self._a.dtype.kind not in "iu":  # a unary operator cannot return NotImplemented
            raise TypeError(f"bad operand type for ~: sycl.{self._kind()} of {self._a.dtype}")
        return type(self)._wrap(~self._a)


class marray(vec):  # noqa: N801 - the spec's spelling
    """``sycl::marray<T, N>``: ``N`` (any, ≥ 1) elements; no swizzles, comparisons give bools."""

    __slots__ = ()
    _marray = True

    @staticmethod
    def _size_ok(n: int) -> bool:
        return n >= 1


def check_load_target(target: Any, dtype: np.dtype, what: str) -> None:
    """Reject what a kernel cannot ``load``/``store`` (the compiler's rule): a 1-D accessor
    or a USM pointer of the vector's element type."""
    tdt = getattr(target, "dtype", None)
    rng = getattr(target, "get_range", None)
    if tdt is None or np.dtype(tdt) != dtype or (rng is not None and len(rng()) != 1):
        raise TypeError(f"vec {what}: needs a 1-D accessor or a USM pointer of {dtype}, got "
                        f"{target!r}")


def _div(dt: np.dtype) -> Callable[[Any, Any], Any]:
    return _cdiv if dt.kind in "iu" else operator.truediv


def _cdiv(a: Any, b: Any) -> Any:
    """C++ integer division: truncation toward zero (0 for a zero divisor: undefined in C++)."""
    b0 = np.where(b == 0, 1, b)
    q = np.abs(a) // np.abs(b0)
    q = np.where((a < 0) != (b0 < 0), -q, q) if a.dtype.kind == "i" else q
    return np.where(b == 0, 0, q)


def _cmod(a: Any, b: Any) -> Any:
    """C++ ``%``: the sign of the dividend."""
    return np.where(b == 0, 0, a - _cdiv(a, b) * np.where(b == 0, 1, b))


def _shl(a: Any, b: Any) -> Any:
    return np.left_shift(a, np.asarray(b) & (a.dtype.itemsize * 8 - 1))


def _shr(a: Any, b: Any) -> Any:
    return np.right_shift(a, np.asarray(b) & (a.dtype.itemsize * 8 - 1))


class vec_type:  # noqa: N801 - pysycl's own
    """A vector type such as ``sycl.float4``: call it to build one, ``.load`` to read one.

    ``sycl.float4(x, y, z, w)``, ``sycl.float4(1.0)`` (broadcast),
    ``sycl.float4.load(offset, acc_or_ptr)`` (elements ``offset * 4 + k``).
    """

    __slots__ = ("_cls", "dtype", "name", "num_elements")

    def __init__(self, name: str, dtype: Any, num_elements: int, cls: type[vec] = vec) -> None:
        self.name = name
        self.dtype = np.dtype(dtype)
        self.num_elements = num_elements
        self._cls = cls

    @property
    def is_marray(self) -> bool:
        """Whether this is an ``marray`` type."""
        return self._cls is marray

    def __call__(self, *elements: Any) -> Any:
        if not elements:
            elements = (0,)
        return self._cls(*elements, dtype=self.dtype, num_elements=self.num_elements)

    def load(self, offset: int, src: Any) -> Any:
        """Elements ``src[offset * N + k]`` of an accessor or USM pointer, as a vector."""
        n = self.num_elements
        check_load_target(src, self.dtype, "load")
        return self._cls(*[src[int(offset) * n + k] for k in range(n)], dtype=self.dtype,
                         num_elements=n)

    def __repr__(self) -> str:
        return f"sycl.{self.name}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, vec_type) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("vec_type", self.name))


#: Every alias, by name: ``float4``, ``uchar16``, ... and ``mfloat4``, ``mbool3``, ...
VEC_ALIASES: dict[str, vec_type] = {}
for _p, _dt in ALIAS_DTYPES.items():
    for _n in ALIAS_SIZES:
        VEC_ALIASES[f"{_p}{_n}"] = vec_type(f"{_p}{_n}", _dt, _n)
        VEC_ALIASES[f"m{_p}{_n}"] = vec_type(f"m{_p}{_n}", _dt, _n, marray)
for _n in ALIAS_SIZES:
    VEC_ALIASES[f"mbool{_n}"] = vec_type(f"mbool{_n}", np.bool_, _n, marray)


# ------------------------------------------------------------ geometric functions
def _float_vec(v: Any, what: str, other: Any = None, sizes: tuple[int, ...] = (1, 2, 3, 4),
               ) -> np.ndarray:
    """The elements of a geometric function's operand, checked as kernels check them: a float32
    or float64 vector of ``sizes`` elements (or a number), of the same type as ``other``."""
    if isinstance(v, vec):
        a = v._a
    elif isinstance(v, (float, np.floating)):
        a = np.asarray(v).ravel()
    else:
        raise TypeError(f"sycl.{what} takes float or double vectors or numbers, got "
                        f"{type(v).__name__}")
    if a.dtype not in (np.float32, np.float64) or a.size not in sizes:
        raise TypeError(f"sycl.{what} takes float or double vectors of "
                        f"{', '.join(map(str, sizes))} elements, got {a.size} of {a.dtype}")
    if other is not None:
        o = other._a if isinstance(other, vec) else np.asarray(other).ravel()
        if isinstance(other, vec) != isinstance(v, vec) or (
                isinstance(v, vec) and type(other) is not type(v)) or o.dtype != a.dtype \
                or o.size != a.size:
            raise TypeError(f"sycl.{what} takes two operands of one type, got {other!r} and "
                            f"{v!r}")
    return a


def dot(a: Any, b: Any) -> Any:
    """``sycl::dot``: ``a0*b0 + a1*b1 + ...`` in order (float vectors of 1-4 elements, or numbers)."""
    x, y = _float_vec(a, "dot"), _float_vec(b, "dot", a)
    acc = x[0] * y[0]
    for k in range(1, x.size):
        acc = acc + x[k] * y[k]
    return acc


def cross(a: Any, b: Any) -> Any:
    """``sycl::cross`` of two 3- or 4-element float vectors (``w`` of a 4-vector is 0)."""
    x, y = _float_vec(a, "cross", sizes=(3, 4)), _float_vec(b, "cross", a, (3, 4))
    r = np.zeros_like(x)
    r[0] = x[1] * y[2] - x[2] * y[1]
    r[1] = x[2] * y[0] - x[0] * y[2]
    r[2] = x[0] * y[1] - x[1] * y[0]
    return type(a)._wrap(r)


def length(a: Any) -> Any:
    """``sycl::length``: ``sqrt(dot(a, a))``."""
    _float_vec(a, "length")
    with np.errstate(all="ignore"):
        return np.sqrt(dot(a, a))


def distance(a: Any, b: Any) -> Any:
    """``sycl::distance``: ``length(a - b)``."""
    _float_vec(a, "distance")
    _float_vec(b, "distance", a)
    return length(a - b)


def normalize(a: Any) -> Any:
    """``sycl::normalize``: ``a / length(a)`` (a zero vector stays zero)."""
    _float_vec(a, "normalize")
    n = length(a)
    if n == 0:
        return a
    with np.errstate(all="ignore"):
        return a / n if isinstance(a, vec) else np.asarray(a / n).astype(np.asarray(a).dtype)[()]

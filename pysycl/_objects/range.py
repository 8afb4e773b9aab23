"""Host-side index-space classes: ``range``, ``id``, ``item``, ``nd_range`` (SYCL 2020 §4.9.1).

These are the pure-Python reference semantics of the index space. Inside a
kernel the compiler gives ``item``/``id`` their device implementation; on the
host they are what users build launches from and what property tests use as
an oracle. Dimension 0 is the slowest-varying (row-major), as in the spec.
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, SupportsIndex

import numpy as np

from pysycl._core.exceptions import errc, exception
from pysycl._core.streamfmt import composite_texts, format_array

if TYPE_CHECKING:
    from typing_extensions import Self


def _as_ints(values: Iterable[Any], what: str) -> tuple[int, ...]:
    out = []
    for v in values:
        try:
            out.append(operator.index(v))
        except TypeError:
            raise TypeError(f"{what} components must be integers, got {v!r}") from None
    return tuple(out)


class _Vec:
    """Shared behaviour of ``id`` and ``range``: 1-3 integer components."""

    # ``values``: the components as a tuple of ``int`` (pysycl's own; what launches and checks
    # read on every submit, so a plain slot). Never reassigned after construction.
    __slots__ = ("values",)
    _kind = "vec"

    def __init__(self, *dims: SupportsIndex | Iterable[SupportsIndex]) -> None:
        if len(dims) == 1 and not isinstance(dims[0], int):
            if isinstance(dims[0], _Vec):
                dims = dims[0].values
            elif isinstance(dims[0], item):  # id(const item&): its id
                dims = dims[0].get_id().values  # type: ignore[union-attr]
            elif hasattr(dims[0], "__iter__"):
                dims = tuple(dims[0])  # type: ignore[arg-type]
        v = _as_ints(dims, f"sycl.{self._kind}")
        if not 1 <= len(v) <= 3:
            raise TypeError(f"sycl.{self._kind} takes 1, 2 or 3 dimensions, got {len(v)}")
        self.values = v

    @property
    def dimensions(self) -> int:
        """Number of dimensions (the C++ template parameter)."""
        return len(self.values)

    def get(self, dimension: int) -> int:
        """Component ``dimension``."""
        return self.values[dimension]

    def __getitem__(self, dimension: int) -> int:
        return self.values[dimension]

    def __len__(self) -> int:
        return len(self.values)

    def __iter__(self) -> Iterator[int]:
        return iter(self.values)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _Vec) and type(other) is type(self):
            return self.values == other.values
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self._kind, self.values))

    def __repr__(self) -> str:
        return f"sycl.{self._kind}({', '.join(map(str, self.values))})"

    def __str__(self) -> str:
        # What `sycl::stream << id` writes in DPC++ (and print() in kernels): {1, 2}
        return format_array(self.values)

    def _binop(self, other: _Vec | SupportsIndex, op: Callable[[int, int], int],
               reflected: bool = False) -> Self:
        if isinstance(other, _Vec):
            if len(other.values) != len(self.values):
                raise TypeError(f"dimension mismatch: {self!r} and {other!r}")
            ov = other.values
        else:
            try:
                s = operator.index(other)
            except TypeError:
                return NotImplemented
            ov = (s,) * len(self.values)
        pairs = zip(ov, self.values, strict=False) if reflected else zip(self.values, ov, strict=False)
        # checked as the constructor checks: a range's components are sizes, so a negative
        # one or one past size_t is errc.invalid here (compiled kernels compute in int64)
        return type(self)(*(op(a, b) for a, b in pairs))

    def __neg__(self) -> Self:
        return type(self)(*(-x for x in self.values))

    def __pos__(self) -> Self:
        return type(self)(*self.values)

    def __add__(self, o: _Vec | SupportsIndex) -> Self: return self._binop(o, operator.add)
    def __radd__(self, o: _Vec | SupportsIndex) -> Self: return self._binop(o, operator.add, True)
    def __sub__(self, o: _Vec | SupportsIndex) -> Self: return self._binop(o, operator.sub)
    def __rsub__(self, o: _Vec | SupportsIndex) -> Self: return self._binop(o, operator.sub, True)
    def __mul__(self, o: _Vec | SupportsIndex) -> Self: return self._binop(o, operator.mul)
    def __rmul__(self, o: _Vec | SupportsIndex) -> Self: return self._binop(o, operator.mul, True)
    def __floordiv__(self, o: _Vec | SupportsIndex) -> Self: return self._binop(o, _cdiv)
    def __rfloordiv__(self, o: _Vec | SupportsIndex) -> Self: return self._binop(o, _cdiv, True)
    __truediv__ = __floordiv__
    __rtruediv__ = __rfloordiv__
    def __mod__(self, o: _Vec | SupportsIndex) -> Self: return self._binop(o, _cmod)
    def __rmod__(self, o: _Vec | SupportsIndex) -> Self: return self._binop(o, _cmod, True)
    def __lshift__(self, o: _Vec | SupportsIndex) -> Self: return self._binop(o, operator.lshift)
    def __rlshift__(self, o: _Vec | SupportsIndex) -> Self: return self._binop(o, operator.lshift, True)
    def __rshift__(self, o: _Vec | SupportsIndex) -> Self: return self._binop(o, operator.rshift)
    def __rrshift__(self, o: _Vec | SupportsIndex) -> Self: return self._binop(o, operator.rshift, True)
    def __and__(self, o: _Vec | SupportsIndex) -> Self: return self._binop(o, operator.and_)
    def __rand__(self, o: _Vec | SupportsIndex) -> Self: return self._binop(o, operator.and_, True)
    def __or__(self, o: _Vec | SupportsIndex) -> Self: return self._binop(o, operator.or_)
    def __ror__(self, o: _Vec | SupportsIndex) -> Self: return self._binop(o, operator.or_, True)
    def __xor__(self, o: _Vec | SupportsIndex) -> Self: return self._binop(o, operator.xor)
    def __rxor__(self, o: _Vec | SupportsIndex) -> Self: return self._binop(o, operator.xor, True)

    # The spec's comparison operators (and && and ||) are element-wise and return a vector
    # of 0/1; Python's rich comparisons must return truth values for sorting and
    # containers, and `and`/`or` cannot be overloaded, so they are methods instead. A
    # number on the left is the mirrored method: `n < x` is x.elementwise_gt(n).
    def _no_order(self, other: object, op: str, method: str) -> bool:
        if isinstance(other, (_Vec, int, np.integer)):
            raise TypeError(f"'{op}' of sycl.{self._kind} values is elementwise in SYCL (the "
                            f"result is a sycl.{self._kind} of 0/1): write x.{method}(y); a "
                            "number on the left mirrors it: n < x is x.elementwise_gt(n) "
                            "(docs/mapping.md)")
        return NotImplemented

    def __lt__(self, other: object) -> bool:
        return self._no_order(other, "<", "elementwise_lt")

    def __le__(self, other: object) -> bool:
        return self._no_order(other, "<=", "elementwise_le")

    def __gt__(self, other: object) -> bool:
        return self._no_order(other, ">", "elementwise_gt")

    def __ge__(self, other: object) -> bool:
        return self._no_order(other, ">=", "elementwise_ge")

    def elementwise_lt(self, o: _Vec | SupportsIndex) -> Self:
        """Element-wise ``<`` (the spec's ``operator<``), as a vector of 0/1."""
        return self._binop(o, lambda a, b: int(a < b))

    def elementwise_le(self, o: _Vec | SupportsIndex) -> Self:
        """Element-wise ``<=``."""
        return self._binop(o, lambda a, b: int(a <= b))

    def elementwise_gt(self, o: _Vec | SupportsIndex) -> Self:
        """Element-wise ``>``."""
        return self._binop(o, lambda a, b: int(a > b))

    def elementwise_ge(self, o: _Vec | SupportsIndex) -> Self:
        """Element-wise ``>=``."""
        return self._binop(o, lambda a, b: int(a >= b))

    def elementwise_logical_and(self, o: _Vec | SupportsIndex) -> Self:
        """Element-wise ``&&``: 1 where both components are non-zero."""
        return self._binop(o, lambda a, b: int(bool(a) and bool(b)))

    def elementwise_logical_or(self, o: _Vec | SupportsIndex) -> Self:
        """Element-wise ``||``: 1 where either component is non-zero."""
        return self._binop(o, lambda a, b: int(bool(a) or bool(b)))


def _cdiv(a: int, b: int) -> int:
    # C++ integer division truncates toward zero.
    if b == 0:
        raise ZeroDivisionError("division by zero in sycl index arithmetic")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


#: The largest size_t: a range component's upper bound.
_SIZE_MAX = (1 << 64) - 1


def _cmod(a: int, b: int) -> int:
    return a - _cdiv(a, b) * b


class range(_Vec):  # noqa: N801 - the spec's spelling
    """``sycl::range``: the extent of an index space, 1-3 dimensions.

    ``sycl.range(1024)``, ``sycl.range(64, 64)``, ``sycl.range((4, 8, 16))``.
    """

    __slots__ = ()
    _kind = "range"

    def __init__(self, *dims: SupportsIndex | Iterable[SupportsIndex]) -> None:
        if len(dims) == 1 and type(dims[0]) is int and 0 <= dims[0] <= _SIZE_MAX:
            self.values = dims  # sycl.range(n), often made for each launch: checked first
            return
        if not dims:
            dims = (0,)  # range(): SYCL 2020's default constructor, one dimension of 0
        super().__init__(*dims)
        if any(x < 0 for x in self.values):
            raise exception(errc.invalid, f"sycl.range components must be >= 0, got {self.values}")
        big = [d for d, x in enumerate(self.values) if x > _SIZE_MAX]
        if big:  # size_t components (SYCL 2020 §4.9.1.1)
            raise exception(errc.invalid, f"sycl.range component {self.values[big[0]]} "
                            f"(dimension {big[0]}) does not fit size_t: components are at most "
                            f"2**64 - 1 = {_SIZE_MAX}")

    def size(self) -> int:
        """Product of all components (the number of work-items)."""
        n = 1
        for x in self.values:
            n *= x
        return n


class id(_Vec):  # noqa: N801 - the spec's spelling
    """``sycl::id``: a point in an index space, 1-3 dimensions (zeros by default)."""

    __slots__ = ()
    _kind = "id"

    def __init__(self, *dims: SupportsIndex | Iterable[SupportsIndex] | range) -> None:
        if not dims:
            dims = (0,)
        super().__init__(*dims)  # type: ignore[arg-type]

    def __index__(self) -> int:
        # A 1-D id converts to size_t (spec: "operator size_t() const" if dims == 1).
        if len(self.values) != 1:
            raise TypeError("only a 1-D sycl.id converts to an integer")
        return self.values[0]

    __int__ = __index__

    def __float__(self) -> float:
        return float(self.__index__())

    def _scalar(self, other: object) -> int | float | None:
        """``other`` as the number a 1-D id compares with (C++ converts the id to
        ``size_t``: ``d == 3``, ``d < n``), else None."""
        if len(self.values) == 1 and isinstance(other, (int, float, np.integer, np.floating)):
            return other  # type: ignore[return-value]
        if len(self.values) == 1 and isinstance(other, id) and len(other.values) == 1:
            return other.values[0]  # two 1-D ids: both convert to size_t
        return None

    def __eq__(self, other: object) -> bool:
        n = self._scalar(other)
        return super().__eq__(other) if n is None else bool(self.values[0] == n)

    def __hash__(self) -> int:  # a 1-D id equals its number: the same hash
        return hash(self.values[0]) if len(self.values) == 1 else super().__hash__()

    def _order(self, other: object, op: Callable[[Any, Any], bool], sym: str, method: str) -> bool:
        n = self._scalar(other)
        return self._no_order(other, sym, method) if n is None else bool(op(self.values[0], n))

    def __lt__(self, other: object) -> bool:
        return self._order(other, operator.lt, "<", "elementwise_lt")

    def __le__(self, other: object) -> bool:
        return self._order(other, operator.le, "<=", "elementwise_le")

    def __gt__(self, other: object) -> bool:
        return self._order(other, operator.gt, ">", "elementwise_gt")

    def __ge__(self, other: object) -> bool:
        return self._order(other, operator.ge, ">=", "elementwise_ge")


def _composite(kind: str, *parts: Iterable[int]) -> str:
    """DPC++'s text of an item, nd_item, group or nd_range (its ``sycl::stream`` operator<<):
    ``item(range: {2, 3}, id: {0, 1}, offset: {0, 0})``."""
    texts = composite_texts(kind)
    return "".join(t + format_array(tuple(p)) for t, p in zip(texts, parts, strict=False)) + texts[-1]


def linear_index(idx: Iterable[int], rng: Iterable[int]) -> int:
    """Row-major linearization of ``idx`` inside ``rng`` (dimension 0 slowest)."""
    lin = 0
    for i, r in zip(idx, rng, strict=False):
        lin = lin * r + i
    return lin


def delinearize(lin: int, rng: Iterable[int]) -> tuple[int, ...]:
    """Inverse of :func:`linear_index`."""
    dims = list(rng)
    out = [0] * len(dims)
    for d in builtins.range(len(dims) - 1, -1, -1):
        out[d] = lin % dims[d] if dims[d] else 0
        lin = lin // dims[d] if dims[d] else 0
    return tuple(out)


class item:  # noqa: N801 - the spec's spelling
    """``sycl::item``: a work-item's id together with the launch range.

    On the host this is the reference model used by tests; inside kernels the
    compiler provides the same methods.
    """

    __slots__ = ("_id", "_range")

    def __init__(self, index: id | Iterable[int], launch_range: range) -> None:
        self._id = index if isinstance(index, id) else id(*index)
        self._range = launch_range
        if len(self._id) != len(self._range):
            raise TypeError("item id and range dimensions differ")

    @property
    def dimensions(self) -> int:
        """Number of dimensions."""
        return len(self._range)

    def get_id(self, dimension: int | None = None) -> id | int:
        """The id, or its component ``dimension``."""
        return self._id if dimension is None else self._id[dimension]

    def __getitem__(self, dimension: int) -> int:
        return self._id[dimension]

    def get_range(self, dimension: int | None = None) -> range | int:
        """The launch range, or its component ``dimension``."""
        return self._range if dimension is None else self._range[dimension]

    def get_linear_id(self) -> int:
        """Row-major linear id (dimension 0 slowest)."""
        return linear_index(self._id, self._range)

    def __index__(self) -> int:
        return operator.index(self._id)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, item):
            return self._id == other._id and self._range == other._range
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self._id, self._range))

    def __repr__(self) -> str:
        return f"sycl.item(id={tuple(self._id)}, range={tuple(self._range)})"

    def __str__(self) -> str:
        return _composite("item", self._range, self._id, (0,) * len(self._range))


#: The zero offset of an nd_range of 1-3 dimensions (made for each launch: shared).
_ZERO_IDS = {n: id(*([0] * n)) for n in (1, 2, 3)}


class nd_range:  # noqa: N801 - the spec's spelling
    """``sycl::nd_range``: a global range divided into work-groups of a local range."""

    __slots__ = ("_global", "_local", "_offset")

    def __init__(self, global_range: range, local_range: range, offset: id | None = None) -> None:
        g = global_range if isinstance(global_range, range) else range(global_range)
        loc = local_range if isinstance(local_range, range) else range(local_range)
        if len(g) != len(loc):
            raise TypeError(
                f"nd_range global and local ranges must have the same dimensions: {g!r}, {loc!r}"
            )
        self._global = g
        self._local = loc
        self._offset = offset if offset is not None else (
            _ZERO_IDS.get(len(g)) or id(*([0] * len(g))))  # (ids are immutable: shared)

    @property
    def dimensions(self) -> int:
        """Number of dimensions."""
        return len(self._global)

    def get_global_range(self) -> range:
        """The global range."""
        return self._global

    def get_local_range(self) -> range:
        """The work-group (local) range."""
        return self._local

    def get_group_range(self) -> range:
        """Number of work-groups in each dimension (global / local)."""
        return range(*(g // loc if loc else 0 for g, loc in zip(self._global, self._local, strict=False)))

    def get_offset(self) -> id:
        """The (deprecated in SYCL 2020) global offset."""
        return self._offset

    def __eq__(self, other: object) -> bool:
        if isinstance(other, nd_range):
            return (self._global, self._local, self._offset) == (
                other._global, other._local, other._offset)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self._global, self._local, self._offset))

    def __repr__(self) -> str:
        return f"sycl.nd_range({self._global!r}, {self._local!r})"

    def __str__(self) -> str:
        return _composite("nd_range", self._global, self._local, self._offset)


class group:  # noqa: N801 - the spec's spelling
    """``sycl::group`` (§4.9.1.7): one work-group of an ``nd_range`` launch.

    On the host this is the reference model (a work-group seen from one of its
    work-items); inside kernels ``it.get_group()`` gives the device version
    with the same methods.
    """

    __slots__ = ("_group_id", "_local_id", "_nd")

    def __init__(self, group_id: Iterable[int], local_id: Iterable[int], nd: nd_range) -> None:
        self._group_id = id(*group_id)
        self._local_id = id(*local_id)
        self._nd = nd

    @property
    def dimensions(self) -> int:
        """Number of dimensions."""
        return self._nd.dimensions

    def get_group_id(self, dimension: int | None = None) -> id | int:
        """The work-group's id in the group range, or its component ``dimension``."""
        return self._group_id if dimension is None else self._group_id[dimension]

    def __getitem__(self, dimension: int) -> int:
        return self._group_id[dimension]

    def get_local_id(self, dimension: int | None = None) -> id | int:
        """The calling work-item's id inside the group."""
        return self._local_id if dimension is None else self._local_id[dimension]

    def get_local_range(self, dimension: int | None = None) -> range | int:
        """The work-group size."""
        r = self._nd.get_local_range()
        return r if dimension is None else r[dimension]

    def get_group_range(self, dimension: int | None = None) -> range | int:
        """The number of work-groups."""
        r = self._nd.get_group_range()
        return r if dimension is None else r[dimension]

    def get_max_local_range(self) -> range:
        """The largest local range (equal to the local range: groups are uniform)."""
        return self._nd.get_local_range()

    def get_group_linear_id(self) -> int:
        """Row-major linear id of the group in the group range."""
        return linear_index(self._group_id, self._nd.get_group_range())

    def get_local_linear_id(self) -> int:
        """Row-major linear id of the calling work-item inside the group."""
        return linear_index(self._local_id, self._nd.get_local_range())

    def get_group_linear_range(self) -> int:
        """Number of work-groups."""
        return self._nd.get_group_range().size()

    def get_local_linear_range(self) -> int:
        """Number of work-items in the group."""
        return self._nd.get_local_range().size()

    def leader(self) -> bool:
        """Whether the calling work-item has local linear id 0."""
        return self.get_local_linear_id() == 0

    def __eq__(self, other: object) -> bool:
        if isinstance(other, group):
            return (self._group_id, self._nd) == (other._group_id, other._nd)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self._group_id, self._nd))

    def __repr__(self) -> str:
        return f"sycl.group(id={tuple(self._group_id)}, nd_range={self._nd!r})"

    def __str__(self) -> str:
        nd = self._nd
        return _composite("group", self._group_id, nd.get_global_range(), nd.get_local_range(),
                          nd.get_group_range())


class nd_item:  # noqa: N801 - the spec's spelling
    """``sycl::nd_item`` (§4.9.1.5): a work-item of an ``nd_range`` launch.

    The host model is built from the global id and the ``nd_range``; every
    query follows from them (local id = global id mod local range, group id =
    global id div local range, linear ids row-major with dimension 0 slowest).
    It is the oracle the property tests compare device results with.
    """

    __slots__ = ("_gid", "_nd")

    def __init__(self, global_id: Iterable[int], nd: nd_range) -> None:
        self._gid = id(*global_id)
        self._nd = nd
        if len(self._gid) != nd.dimensions:
            raise TypeError("nd_item id and nd_range dimensions differ")

    @property
    def dimensions(self) -> int:
        """Number of dimensions."""
        return self._nd.dimensions

    def get_global_id(self, dimension: int | None = None) -> id | int:
        """The global id, or its component ``dimension``."""
        return self._gid if dimension is None else self._gid[dimension]

    def get_global_linear_id(self) -> int:
        """Row-major linear global id."""
        return linear_index(self._gid, self._nd.get_global_range())

    def get_local_id(self, dimension: int | None = None) -> id | int:
        """The id inside the work-group."""
        lid = id(*(g % r for g, r in zip(self._gid, self._nd.get_local_range(), strict=False)))
        return lid if dimension is None else lid[dimension]

    def get_local_linear_id(self) -> int:
        """Row-major linear id inside the work-group."""
        return linear_index(self.get_local_id(), self._nd.get_local_range())

    def get_group(self, dimension: int | None = None) -> group | int:
        """The work-group (a ``sycl.group``), or its id in ``dimension``."""
        gid = tuple(g // r for g, r in zip(self._gid, self._nd.get_local_range(), strict=False))
        if dimension is not None:
            return gid[dimension]
        return group(gid, tuple(self.get_local_id()), self._nd)

    def get_group_linear_id(self) -> int:
        """Row-major linear id of the work-group."""
        return self.get_group().get_group_linear_id()

    def get_group_range(self, dimension: int | None = None) -> range | int:
        """Number of work-groups."""
        r = self._nd.get_group_range()
        return r if dimension is None else r[dimension]

    def get_global_range(self, dimension: int | None = None) -> range | int:
        """The global range."""
        r = self._nd.get_global_range()
        return r if dimension is None else r[dimension]

    def get_local_range(self, dimension: int | None = None) -> range | int:
        """The work-group size."""
        r = self._nd.get_local_range()
        return r if dimension is None else r[dimension]

    def get_nd_range(self) -> nd_range:
        """The launch's ``nd_range``."""
        return self._nd

    def __eq__(self, other: object) -> bool:
        if isinstance(other, nd_item):
            return (self._gid, self._nd) == (other._gid, other._nd)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self._gid, self._nd))

    def __repr__(self) -> str:
        return f"sycl.nd_item(global_id={tuple(self._gid)}, nd_range={self._nd!r})"

    def __str__(self) -> str:
        return _composite("nd_item", self._gid, self.get_local_id())  # type: ignore[arg-type]


def np_index(idx: Any) -> Any:
    """A numpy index for a SYCL index: ids and ranges become tuples, items their id."""
    if isinstance(idx, (id, range)):
        return tuple(idx)
    if hasattr(idx, "get_id") and hasattr(idx, "get_linear_id"):  # an item
        return tuple(idx.get_id())
    return idx

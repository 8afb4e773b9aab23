"""Lowering of the SYCL kernel objects (paired with :mod:`pysycl_numba.decl`).

Accessor element ``acc[i0, ..., i{n-1}]`` lives at
``base[offset + ((i0 * m1 + i1) * m2 + i2)]`` where ``m1..`` is the buffer's
``mem_range`` (``pysycl._core.abi``). Index arithmetic is ``i64`` with
``nsw`` flags and an ``inbounds`` GEP, as in OpenCL C with ``size_t``
indices, and it is deliberately *not* Python-like:

* no negative-index wraparound (SYCL has no negative indices; ``acc[-1]`` is
  out of bounds, like in C++ SYCL), and
* no bounds checks -- except in bounds-checked mode (``AccessorType.checked``,
  :mod:`pysycl_numba.bounds`), where an access outside the access range is
  skipped and reported.
"""

from __future__ import annotations

import operator
from typing import Any

from pysycl_numba import bounds
from pysycl_numba._numba_compat import LoweringRegistry, cgutils, types
from pysycl_numba.types import AccessorType, ItemType, RangeType, index_type

registry = LoweringRegistry("pysycl")
lower = registry.lower
lower_cast = registry.lower_cast

_NSW = ("nsw",)


def _struct(context: Any, builder: Any, ty: types.Type, value: Any) -> Any:
    return cgutils.create_struct_proxy(ty)(context, builder, value=value)


def _select_dim(builder: Any, values: list[Any], dim: Any) -> Any:
    """``values[dim]`` for a runtime ``dim``, as a select chain (no memory)."""
    dim = builder.sext(dim, values[0].type) if dim.type.width < 64 else dim
    result = values[0]
    for d in range(1, len(values)):
        is_d = builder.icmp_signed("==", dim, dim.type(d))
        result = builder.select(is_d, values[d], result)
    return result


def _to_index(context: Any, builder: Any, value: Any, ty: types.Type) -> Any:
    return context.cast(builder, value, ty, index_type)


# --------------------------------------------------------------------------
# item


def item_ids(context: Any, builder: Any, ty: ItemType, value: Any) -> list[Any]:
    """The ids of an item, SYCL dimension order."""
    s = _struct(context, builder, ty, value)
    return [getattr(s, f"id{d}") for d in range(ty.ndim)]


def item_ranges(context: Any, builder: Any, ty: ItemType, value: Any) -> list[Any]:
    """The launch range of an item, SYCL dimension order."""
    s = _struct(context, builder, ty, value)
    return [getattr(s, f"range{d}") for d in range(ty.ndim)]


def make_range(context: Any, builder: Any, ndim: int, values: list[Any]) -> Any:
    """Build a ``RangeType(ndim)`` value from ``i64`` extents."""
    r = cgutils.create_struct_proxy(RangeType(ndim))(context, builder)
    for d, v in enumerate(values):
        setattr(r, f"r{d}", v)
    return r._getvalue()


def _dim_arg(context: Any, builder: Any, sig: Any, args: Any, pos: int) -> Any:
    return _to_index(context, builder, args[pos], sig.args[pos])


@lower(operator.getitem, ItemType, types.Integer)
@lower("item.get_id", ItemType, types.Integer)
def item_getitem(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """``it[d]`` / ``it.get_id(d)``."""
    ids = item_ids(context, builder, sig.args[0], args[0])
    return _select_dim(builder, ids, _dim_arg(context, builder, sig, args, 1))


@lower("item.get_id", ItemType)
def item_get_id(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """``it.get_id()``: the id as a tuple of ``int64``."""
    ids = item_ids(context, builder, sig.args[0], args[0])
    return context.make_tuple(builder, sig.return_type, ids)


@lower("item.get_range", ItemType)
def item_get_range(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """``it.get_range()``."""
    ty = sig.args[0]
    return make_range(context, builder, ty.ndim, item_ranges(context, builder, ty, args[0]))


@lower("item.get_range", ItemType, types.Integer)
def item_get_range_dim(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """``it.get_range(d)``."""
    ranges = item_ranges(context, builder, sig.args[0], args[0])
    return _select_dim(builder, ranges, _dim_arg(context, builder, sig, args, 1))


@lower("item.get_linear_id", ItemType)
def item_get_linear_id(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """Row-major linear id (dimension 0 slowest)."""
    ty = sig.args[0]
    ids = item_ids(context, builder, ty, args[0])
    ranges = item_ranges(context, builder, ty, args[0])
    lin = ids[0]
    for d in range(1, ty.ndim):
        lin = builder.add(builder.mul(lin, ranges[d], flags=_NSW), ids[d], flags=_NSW)
    return lin


@lower(int, ItemType)
def item_to_int(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """``int(it)`` of a 1-D item."""
    return item_ids(context, builder, sig.args[0], args[0])[0]


@lower(float, ItemType)
def item_to_float(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """``float(it)`` of a 1-D item."""
    ident = item_ids(context, builder, sig.args[0], args[0])[0]
    return context.cast(builder, ident, index_type, sig.return_type)


@lower_cast(ItemType, types.Integer)
@lower_cast(ItemType, types.Float)
def item_to_number(context: Any, builder: Any, fromty: Any, toty: Any, val: Any) -> Any:
    """Implicit conversion of a 1-D item to its id (SYCL ``item<1>`` -> ``size_t``)."""
    ident = item_ids(context, builder, fromty, val)[0]
    return context.cast(builder, ident, index_type, toty)


# --------------------------------------------------------------------------
# range


def range_values(context: Any, builder: Any, ty: RangeType, value: Any) -> list[Any]:
    """The extents of a range value."""
    s = _struct(context, builder, ty, value)
    return [getattr(s, f"r{d}") for d in range(ty.ndim)]


@lower(operator.getitem, RangeType, types.Integer)
@lower("range.get", RangeType, types.Integer)
def range_getitem(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """``r[d]`` / ``r.get(d)``."""
    values = range_values(context, builder, sig.args[0], args[0])
    return _select_dim(builder, values, _dim_arg(context, builder, sig, args, 1))


@lower("range.size", RangeType)
def range_size(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """``r.size()``: the product of the extents."""
    values = range_values(context, builder, sig.args[0], args[0])
    total = values[0]
    for v in values[1:]:
        total = builder.mul(total, v, flags=_NSW)
    return total


@lower(len, RangeType)
def range_len(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """``len(r)``: the number of dimensions."""
    return context.get_constant(index_type, sig.args[0].ndim)


# --------------------------------------------------------------------------
# accessor


def _index_values(context: Any, builder: Any, idxty: types.Type, idx: Any) -> list[Any]:
    if isinstance(idxty, ItemType):
        return item_ids(context, builder, idxty, idx)
    if isinstance(idxty, types.Integer):
        return [_to_index(context, builder, idx, idxty)]
    if isinstance(idxty, types.BaseTuple):
        return [
            _to_index(context, builder, builder.extract_value(idx, k), t)
            for k, t in enumerate(idxty.types)
        ]
    raise TypeError(f"unsupported accessor index type {idxty}")


def _pointer(builder: Any, accty: AccessorType, a: Any, ids: list[Any]) -> Any:
    lin = ids[0]
    for d in range(1, accty.ndim):
        extent = getattr(a, f"mem_range{d}") if accty.space == "global" else getattr(a, f"range{d}")
        lin = builder.add(builder.mul(lin, extent, flags=_NSW), ids[d], flags=_NSW)
    if accty.space == "global":
        lin = builder.add(a.offset, lin, flags=_NSW)
    return builder.gep(a.base, [lin], inbounds=True)


def element_pointer(
    context: Any, builder: Any, accty: AccessorType, acc: Any, idxty: types.Type, idx: Any,
    kind: str = "atomic_ref",
) -> Any:
    """Pointer (in the accessor's address space) to the indexed element.

    In bounds-checked mode an index outside the access range is reported as a
    ``kind`` access and the pointer is the error buffer's scratch word instead.
    """
    a = _struct(context, builder, accty, acc)
    ids = _index_values(context, builder, idxty, idx)
    if not accty.checked:
        return _pointer(builder, accty, a, ids)
    ok = bounds.in_bounds(builder, ids, _ranges(accty, a))
    return bounds.checked(builder, ok, a.rec, a.slot, kind, ids,
                          lambda: _pointer(builder, accty, a, ids),
                          default=bounds.scratch(builder, a.err, a.base.type, accty.space))


def _ranges(accty: AccessorType, a: Any) -> list[Any]:
    return [getattr(a, f"range{d}") for d in range(accty.ndim)]


def _alignment(context: Any, ty: types.Type) -> int:
    return context.get_abi_alignment(context.get_data_type(ty))


@lower(operator.getitem, AccessorType, types.Any)
@lower("accessor.__getitem__", AccessorType, types.Any)
def accessor_getitem(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """``acc[idx]``: a load from global (or local) memory (0 if out of range when checked)."""
    accty, idxty = sig.args
    a = _struct(context, builder, accty, args[0])
    ids = _index_values(context, builder, idxty, args[1])
    align = _alignment(context, accty.dtype)

    def load() -> Any:
        ptr = _pointer(builder, accty, a, ids)
        return context.unpack_value(builder, accty.dtype, ptr, align=align)

    if not accty.checked:
        return load()
    ok = bounds.in_bounds(builder, ids, _ranges(accty, a))
    zero = context.get_constant_null(accty.dtype)
    return bounds.checked(builder, ok, a.rec, a.slot, "read", ids, load, default=zero)


@lower(operator.setitem, AccessorType, types.Any, types.Any)
@lower("accessor.__setitem__", AccessorType, types.Any, types.Any)
def accessor_setitem(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """``acc[idx] = value``: a store to global (or local) memory (skipped if out of range when checked)."""
    accty, idxty, valty = sig.args
    a = _struct(context, builder, accty, args[0])
    ids = _index_values(context, builder, idxty, args[1])
    value = context.cast(builder, args[2], valty, accty.dtype)
    align = _alignment(context, accty.dtype)

    def store() -> None:
        ptr = _pointer(builder, accty, a, ids)
        context.pack_value(builder, accty.dtype, value, ptr, align=align)

    if not accty.checked:
        store()
    else:
        ok = bounds.in_bounds(builder, ids, _ranges(accty, a))
        bounds.checked(builder, ok, a.rec, a.slot, "write", ids, store)
    return context.get_dummy_value()


@lower("accessor.get_range", AccessorType)
def accessor_get_range(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """``acc.get_range()``: the access range."""
    accty = sig.args[0]
    a = _struct(context, builder, accty, args[0])
    values = [getattr(a, f"range{d}") for d in range(accty.ndim)]
    return make_range(context, builder, accty.ndim, values)


@lower("accessor.size", AccessorType)
def accessor_size(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """``acc.size()`` / ``acc.get_count()``: elements in the access range."""
    accty = sig.args[0]
    a = _struct(context, builder, accty, args[0])
    total = a.range0
    for d in range(1, accty.ndim):
        total = builder.mul(total, getattr(a, f"range{d}"), flags=_NSW)
    return total

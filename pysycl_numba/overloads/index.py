"""``sycl.item`` and ``sycl.range``: typing and lowering.

* ``item``: ``it[d]``, ``it.get_id()``, ``it.get_id(d)``, ``it.get_range()``,
  ``it.get_range(d)``, ``it.get_linear_id()``, ``int(it)`` / ``float(it)`` (1-D),
  and integer arithmetic through the implicit conversion of a 1-D item
  (:class:`~pysycl_numba.types.ItemType`). ``it.get_id()`` is a ``sycl.id``
  (:class:`~pysycl_numba.types.IdType`), as on the host.
* ``range``: ``r[d]``, ``r.get(d)``, ``r.size()``, ``len(r)``.

A runtime dimension ``d`` selects among every dimension's value with a select
chain (:func:`select_dim`), never through memory.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING

from pysycl_numba._numba_compat import (
    AbstractTemplate,
    AttributeTemplate,
    LoweringRegistry,
    TypingRegistry,
    bound_function,
    cgutils,
    signature,
    types,
)
from pysycl_numba.types import IdType, ItemType, RangeType, index_type

if TYPE_CHECKING:
    from collections.abc import Sequence

    from llvmlite import ir as llir

    from pysycl_numba._numba_compat import BaseContext, Signature, StructProxy

typing_registry = TypingRegistry()
lowering_registry = LoweringRegistry("pysycl.index")
lower = lowering_registry.lower

NSW = ("nsw",)
#: Integer types a dimension argument may have.
INT = (types.Integer, types.IntegerLiteral)


# ==================================================================== typing
def dim_query(args: tuple, kws: dict, whole: types.Type) -> object:
    """Typing of ``q()`` → ``whole`` and ``q(d)`` → ``int64``."""
    if kws:
        return None
    if not args:
        return signature(whole)
    if len(args) == 1 and isinstance(args[0], INT):
        return signature(index_type, types.unliteral(args[0]))
    return None


@typing_registry.register_global(operator.getitem)
class GetItem(AbstractTemplate):
    """``it[d]``, ``r[d]``."""

    def generic(self, args: tuple[types.Type, ...], kws: dict) -> object:
        if len(args) == 2 and isinstance(args[0], (ItemType, RangeType)) \
                and isinstance(args[1], INT):
            return signature(index_type, args[0], types.unliteral(args[1]))
        return None


@typing_registry.register_attr
class ItemAttributes(AttributeTemplate):
    """Methods of ``sycl.item``."""

    key = ItemType

    @bound_function("item.get_id")
    def resolve_get_id(self, it: ItemType, args: tuple, kws: dict) -> object:
        return dim_query(args, kws, IdType(it.ndim))

    @bound_function("item.get_range")
    def resolve_get_range(self, it: ItemType, args: tuple, kws: dict) -> object:
        return dim_query(args, kws, RangeType(it.ndim))

    @bound_function("item.get_linear_id")
    def resolve_get_linear_id(self, it: ItemType, args: tuple, kws: dict) -> object:
        return signature(index_type) if not args and not kws else None


@typing_registry.register_attr
class RangeAttributes(AttributeTemplate):
    """Methods of ``sycl.range``."""

    key = RangeType

    @bound_function("range.size")
    def resolve_size(self, r: RangeType, args: tuple, kws: dict) -> object:
        return signature(index_type) if not args and not kws else None

    @bound_function("range.get")
    def resolve_get(self, r: RangeType, args: tuple, kws: dict) -> object:
        if len(args) == 1 and not kws and isinstance(args[0], INT):
            return signature(index_type, types.unliteral(args[0]))
        return None


@typing_registry.register_global(int)
class ItemToInt(AbstractTemplate):
    """``int(it)`` for a 1-D item (``item<1>`` converts to ``size_t``)."""

    def generic(self, args: tuple, kws: dict) -> object:
        if len(args) == 1 and not kws and isinstance(args[0], ItemType) and args[0].ndim == 1:
            return signature(index_type, args[0])
        return None


@typing_registry.register_global(float)
class ItemToFloat(AbstractTemplate):
    """``float(it)`` for a 1-D item."""

    def generic(self, args: tuple, kws: dict) -> object:
        if len(args) == 1 and not kws and isinstance(args[0], ItemType) and args[0].ndim == 1:
            return signature(types.float64, args[0])
        return None


@typing_registry.register_global(len)
class RangeLen(AbstractTemplate):
    """``len(r)``, ``len(i)``: the number of dimensions of a range or an id."""

    def generic(self, args: tuple, kws: dict) -> object:
        if len(args) == 1 and not kws and isinstance(args[0], (RangeType, IdType)):
            return signature(index_type, args[0])
        return None


# ================================================================== lowering
def struct(context: BaseContext, builder: llir.IRBuilder, ty: types.Type, value: llir.Value) -> StructProxy:
    """The struct proxy of ``value`` (an item, range or accessor)."""
    return cgutils.create_struct_proxy(ty)(context, builder, value=value)


def select_dim(builder: llir.IRBuilder, values: Sequence[llir.Value], dim: llir.Value) -> llir.Value:
    """``values[dim]`` for a runtime ``dim``, as a select chain (no memory)."""
    dim = builder.sext(dim, values[0].type) if dim.type.width < 64 else dim
    result = values[0]
    for d in range(1, len(values)):
        is_d = builder.icmp_signed("==", dim, dim.type(d))
        result = builder.select(is_d, values[d], result)
    return result


def to_index(context: BaseContext, builder: llir.IRBuilder, value: llir.Value, ty: types.Type) -> llir.Value:
    """``value`` of type ``ty`` as an ``int64`` index."""
    return context.cast(builder, value, ty, index_type)


def item_ids(context: BaseContext, builder: llir.IRBuilder, ty: ItemType, value: llir.Value,
             ) -> list[llir.Value]:
    """The ids of an item, SYCL dimension order."""
    s = struct(context, builder, ty, value)
    return [getattr(s, f"id{d}") for d in range(ty.ndim)]


def item_ranges(context: BaseContext, builder: llir.IRBuilder, ty: ItemType, value: llir.Value,
                ) -> list[llir.Value]:
    """The launch range of an item, SYCL dimension order."""
    s = struct(context, builder, ty, value)
    return [getattr(s, f"range{d}") for d in range(ty.ndim)]


def make_range(context: BaseContext, builder: llir.IRBuilder, ndim: int, values: Sequence[llir.Value],
               cls: type[RangeType | IdType] = RangeType) -> llir.Value:
    """Build a ``RangeType(ndim)`` value (an ``IdType(ndim)`` one with ``cls=IdType``) from
    ``i64`` components."""
    r = cgutils.create_struct_proxy(cls(ndim))(context, builder)
    for d, v in enumerate(values):
        setattr(r, f"r{d}", v)
    return r._getvalue()


def product(builder: llir.IRBuilder, values: Sequence[llir.Value]) -> llir.Value:
    """The product of ``i64`` extents."""
    total = values[0]
    for v in values[1:]:
        total = builder.mul(total, v, flags=NSW)
    return total


def linear(builder: llir.IRBuilder, ids: Sequence[llir.Value], ranges: Sequence[llir.Value]) -> llir.Value:
    """The row-major linear id (dimension 0 slowest) of ``ids`` in ``ranges``."""
    lin = ids[0]
    for d in range(1, len(ids)):
        lin = builder.add(builder.mul(lin, ranges[d], flags=NSW), ids[d], flags=NSW)
    return lin


def _dim_arg(context: BaseContext, builder: llir.IRBuilder, sig: Signature, args: Sequence[llir.Value],
             pos: int) -> llir.Value:
    return to_index(context, builder, args[pos], sig.args[pos])


@lower(operator.getitem, ItemType, types.Integer)
@lower("item.get_id", ItemType, types.Integer)
def item_getitem(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                 args: Sequence[llir.Value]) -> llir.Value:
    """``it[d]`` / ``it.get_id(d)``."""
    ids = item_ids(context, builder, sig.args[0], args[0])
    return select_dim(builder, ids, _dim_arg(context, builder, sig, args, 1))


@lower("item.get_id", ItemType)
def item_get_id(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                args: Sequence[llir.Value]) -> llir.Value:
    """``it.get_id()``: a ``sycl.id``, as on the host."""
    ids = item_ids(context, builder, sig.args[0], args[0])
    return make_range(context, builder, len(ids), ids, IdType)


@lower("item.get_range", ItemType)
def item_get_range(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                   args: Sequence[llir.Value]) -> llir.Value:
    """``it.get_range()``."""
    ty = sig.args[0]
    return make_range(context, builder, ty.ndim, item_ranges(context, builder, ty, args[0]))


@lower("item.get_range", ItemType, types.Integer)
def item_get_range_dim(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                       args: Sequence[llir.Value]) -> llir.Value:
    """``it.get_range(d)``."""
    ranges = item_ranges(context, builder, sig.args[0], args[0])
    return select_dim(builder, ranges, _dim_arg(context, builder, sig, args, 1))


@lower("item.get_linear_id", ItemType)
def item_get_linear_id(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                       args: Sequence[llir.Value]) -> llir.Value:
    """Row-major linear id (dimension 0 slowest)."""
    ty = sig.args[0]
    return linear(builder, item_ids(context, builder, ty, args[0]),
                  item_ranges(context, builder, ty, args[0]))


@lower(int, ItemType)
def item_to_int(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                args: Sequence[llir.Value]) -> llir.Value:
    """``int(it)`` of a 1-D item."""
    return item_ids(context, builder, sig.args[0], args[0])[0]


@lower(float, ItemType)
def item_to_float(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                  args: Sequence[llir.Value]) -> llir.Value:
    """``float(it)`` of a 1-D item."""
    ident = item_ids(context, builder, sig.args[0], args[0])[0]
    return context.cast(builder, ident, index_type, sig.return_type)


@lowering_registry.lower_cast(ItemType, types.Integer)
@lowering_registry.lower_cast(ItemType, types.Float)
def item_to_number(context: BaseContext, builder: llir.IRBuilder, fromty: ItemType, toty: types.Type,
                   val: llir.Value) -> llir.Value:
    """Implicit conversion of a 1-D item to its id (SYCL ``item<1>`` -> ``size_t``)."""
    ident = item_ids(context, builder, fromty, val)[0]
    return context.cast(builder, ident, index_type, toty)


def range_values(context: BaseContext, builder: llir.IRBuilder, ty: RangeType, value: llir.Value,
                 ) -> list[llir.Value]:
    """The extents of a range value."""
    s = struct(context, builder, ty, value)
    return [getattr(s, f"r{d}") for d in range(ty.ndim)]


@lower(operator.getitem, RangeType, types.Integer)
@lower("range.get", RangeType, types.Integer)
def range_getitem(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                  args: Sequence[llir.Value]) -> llir.Value:
    """``r[d]`` / ``r.get(d)``."""
    values = range_values(context, builder, sig.args[0], args[0])
    return select_dim(builder, values, _dim_arg(context, builder, sig, args, 1))


@lower("range.size", RangeType)
def range_size(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
               args: Sequence[llir.Value]) -> llir.Value:
    """``r.size()``: the product of the extents."""
    return product(builder, range_values(context, builder, sig.args[0], args[0]))


@lower(len, RangeType)
@lower(len, IdType)
def range_len(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
              args: Sequence[llir.Value]) -> llir.Value:
    """``len(r)``: the number of dimensions."""
    return context.get_constant(index_type, sig.args[0].ndim)

"""Typing of the SYCL kernel objects (paired with :mod:`pysycl_numba.impl`).

* ``item``: ``it[d]``, ``it.get_id()``, ``it.get_id(d)``, ``it.get_range()``,
  ``it.get_range(d)``, ``it.get_linear_id()``, ``int(it)`` (1-D), and integer
  arithmetic through the implicit conversion of a 1-D item (``types.ItemType``).
* ``range``: ``r[d]``, ``r.get(d)``, ``r.size()``.
* ``accessor``: ``acc[i]``, ``acc[i, j]``, ``acc[it]``, ``acc[id_tuple]``,
  ``acc[...] = v``, ``acc.__setitem__(i, v)``, ``acc.get_range()``,
  ``acc.size()``, ``acc.get_count()``. Writes through a read accessor type
  here and are rejected with the source line by
  :class:`pysycl_numba.passes.ValidateTypedKernel` (a typing failure would
  only say "no implementation").
* ``math.fmod`` (missing from Numba's math typing).
"""

from __future__ import annotations

import math
import operator

from pysycl_numba._numba_compat import (
    AbstractTemplate,
    AttributeTemplate,
    ConcreteTemplate,
    TypingRegistry,
    bound_function,
    signature,
    types,
)
from pysycl_numba.types import AccessorType, ItemType, RangeType, index_type

registry = TypingRegistry()


def normalize_index(idx: types.Type, ndim: int) -> types.Type | None:
    """The accessor index type for ``idx`` on an ``ndim`` accessor, or None."""
    if isinstance(idx, ItemType):
        return idx if idx.ndim == ndim else None
    if isinstance(idx, (types.Integer, types.IntegerLiteral)) and ndim == 1:
        return types.unliteral(idx)
    if isinstance(idx, types.BaseTuple) and len(idx) == ndim:
        elems = [types.unliteral(t) for t in idx.types]
        # A 1-D item is an integer index too (item<1> converts to size_t).
        if all(
            isinstance(t, types.Integer) or (isinstance(t, ItemType) and t.ndim == 1)
            for t in elems
        ):
            return types.Tuple(elems) if len(set(elems)) > 1 else types.UniTuple(elems[0], ndim)
    return None


@registry.register_global(operator.getitem)
class GetItem(AbstractTemplate):
    """``acc[idx]``, ``it[d]``, ``r[d]``."""

    def generic(self, args: tuple[types.Type, ...], kws: dict) -> object:
        if len(args) != 2:
            return None
        obj, idx = args
        if isinstance(obj, AccessorType):
            norm = normalize_index(idx, obj.ndim)
            if norm is not None:
                return signature(obj.dtype, obj, norm)
            return None
        if isinstance(obj, (ItemType, RangeType)) and isinstance(
            idx, (types.Integer, types.IntegerLiteral)
        ):
            return signature(index_type, obj, types.unliteral(idx))
        return None


def _setitem_signature(
    context: object, acc: types.Type, idx: types.Type, val: types.Type
) -> object:
    if not isinstance(acc, AccessorType):
        return None
    norm = normalize_index(idx, acc.ndim)
    if norm is None:
        return None
    if context.can_convert(val, acc.dtype) is None:  # type: ignore[attr-defined]
        return None
    return signature(types.none, acc, norm, acc.dtype)


@registry.register_global(operator.setitem)
class SetItem(AbstractTemplate):
    """``acc[idx] = value``."""

    def generic(self, args: tuple[types.Type, ...], kws: dict) -> object:
        if len(args) != 3:
            return None
        return _setitem_signature(self.context, *args)


@registry.register_attr
class AccessorAttributes(AttributeTemplate):
    """Methods of ``sycl.accessor``."""

    key = AccessorType

    @bound_function("accessor.__setitem__")
    def resolve___setitem__(self, acc: AccessorType, args: tuple, kws: dict) -> object:
        if len(args) != 2 or kws:
            return None
        sig = _setitem_signature(self.context, acc, *args)
        if sig is None:
            return None
        return signature(types.none, *sig.args[1:])

    @bound_function("accessor.__getitem__")
    def resolve___getitem__(self, acc: AccessorType, args: tuple, kws: dict) -> object:
        if len(args) != 1 or kws:
            return None
        norm = normalize_index(args[0], acc.ndim)
        return None if norm is None else signature(acc.dtype, norm)

    @bound_function("accessor.get_range")
    def resolve_get_range(self, acc: AccessorType, args: tuple, kws: dict) -> object:
        return signature(RangeType(acc.ndim)) if not args and not kws else None

    @bound_function("accessor.size")
    def resolve_size(self, acc: AccessorType, args: tuple, kws: dict) -> object:
        return signature(index_type) if not args and not kws else None

    @bound_function("accessor.size")
    def resolve_get_count(self, acc: AccessorType, args: tuple, kws: dict) -> object:
        return signature(index_type) if not args and not kws else None


def _dim_query(args: tuple, kws: dict, whole: types.Type) -> object:
    if kws:
        return None
    if not args:
        return signature(whole)
    if len(args) == 1 and isinstance(args[0], (types.Integer, types.IntegerLiteral)):
        return signature(index_type, types.unliteral(args[0]))
    return None


@registry.register_attr
class ItemAttributes(AttributeTemplate):
    """Methods of ``sycl.item``."""

    key = ItemType

    @bound_function("item.get_id")
    def resolve_get_id(self, it: ItemType, args: tuple, kws: dict) -> object:
        return _dim_query(args, kws, types.UniTuple(index_type, it.ndim))

    @bound_function("item.get_range")
    def resolve_get_range(self, it: ItemType, args: tuple, kws: dict) -> object:
        return _dim_query(args, kws, RangeType(it.ndim))

    @bound_function("item.get_linear_id")
    def resolve_get_linear_id(self, it: ItemType, args: tuple, kws: dict) -> object:
        return signature(index_type) if not args and not kws else None


@registry.register_attr
class RangeAttributes(AttributeTemplate):
    """Methods of ``sycl.range``."""

    key = RangeType

    @bound_function("range.size")
    def resolve_size(self, r: RangeType, args: tuple, kws: dict) -> object:
        return signature(index_type) if not args and not kws else None

    @bound_function("range.get")
    def resolve_get(self, r: RangeType, args: tuple, kws: dict) -> object:
        if len(args) == 1 and not kws and isinstance(args[0], (types.Integer, types.IntegerLiteral)):
            return signature(index_type, types.unliteral(args[0]))
        return None


@registry.register_global(int)
class ItemToInt(AbstractTemplate):
    """``int(it)`` for a 1-D item (``item<1>`` converts to ``size_t``)."""

    def generic(self, args: tuple, kws: dict) -> object:
        if len(args) == 1 and not kws and isinstance(args[0], ItemType) and args[0].ndim == 1:
            return signature(index_type, args[0])
        return None


@registry.register_global(float)
class ItemToFloat(AbstractTemplate):
    """``float(it)`` for a 1-D item."""

    def generic(self, args: tuple, kws: dict) -> object:
        if len(args) == 1 and not kws and isinstance(args[0], ItemType) and args[0].ndim == 1:
            return signature(types.float64, args[0])
        return None


@registry.register_global(len)
class RangeLen(AbstractTemplate):
    """``len(r)``: the number of dimensions of a range."""

    def generic(self, args: tuple, kws: dict) -> object:
        if len(args) == 1 and not kws and isinstance(args[0], RangeType):
            return signature(index_type, args[0])
        return None


@registry.register_global(math.fmod)
class MathFmod(ConcreteTemplate):
    """``math.fmod`` (Numba types it on no target)."""

    cases = [  # noqa: RUF012 - Numba's template protocol
        signature(types.float64, types.int64, types.int64),
        signature(types.float64, types.uint64, types.uint64),
        signature(types.float32, types.float32, types.float32),
        signature(types.float64, types.float64, types.float64),
    ]

"""``sycl.accessor`` and ``sycl.local_accessor`` in kernels: typing and lowering.

``acc[i]``, ``acc[i, j]``, ``acc[it]``, ``acc[id_tuple]``, ``acc[...] = v``,
``acc.__getitem__(i)``, ``acc.__setitem__(i, v)``, ``acc.get_range()``,
``acc.size()``, ``acc.get_count()``. Writes through a read accessor type here
and are rejected with the source line by
:class:`pysycl_numba.passes.ValidateTypedKernel` (a typing failure would only
say "no implementation").

Element ``acc[i0, ..., i{n-1}]`` lives at
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
from typing import TYPE_CHECKING

from pysycl_numba import bounds
from pysycl_numba._numba_compat import (
    AbstractTemplate,
    AttributeTemplate,
    LoweringRegistry,
    TypingRegistry,
    bound_function,
    signature,
    types,
)
from pysycl_numba.overloads.index import NSW, item_ids, make_range, product, struct, to_index
from pysycl_numba.types import AccessorType, IdType, ItemType, RangeType, index_type

if TYPE_CHECKING:
    from collections.abc import Sequence

    from llvmlite import ir as llir

    from pysycl_numba._numba_compat import BaseContext, Signature, StructProxy

typing_registry = TypingRegistry()
lowering_registry = LoweringRegistry("pysycl.accessor")
lower = lowering_registry.lower


# ==================================================================== typing
def normalize_index(idx: types.Type, ndim: int) -> types.Type | None:
    """The accessor index type for ``idx`` on an ``ndim`` accessor, or None."""
    if isinstance(idx, (ItemType, IdType)):
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


@typing_registry.register_global(operator.getitem)
class GetItem(AbstractTemplate):
    """``acc[idx]``."""

    def generic(self, args: tuple[types.Type, ...], kws: dict) -> object:
        if len(args) != 2 or not isinstance(args[0], AccessorType):
            return None
        acc, idx = args
        norm = normalize_index(idx, acc.ndim)
        return None if norm is None else signature(acc.dtype, acc, norm)


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


@typing_registry.register_global(operator.setitem)
class SetItem(AbstractTemplate):
    """``acc[idx] = value``."""

    def generic(self, args: tuple[types.Type, ...], kws: dict) -> object:
        if len(args) != 3:
            return None
        return _setitem_signature(self.context, *args)


@typing_registry.register_attr
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


# ================================================================== lowering
def index_values(context: BaseContext, builder: llir.IRBuilder, idxty: types.Type, idx: llir.Value,
                 ) -> list[llir.Value]:
    """The ``i64`` index components of an index typed by :func:`normalize_index`."""
    if isinstance(idxty, ItemType):
        return item_ids(context, builder, idxty, idx)
    if isinstance(idxty, IdType):
        s = struct(context, builder, idxty, idx)
        return [getattr(s, f"r{d}") for d in range(idxty.ndim)]
    if isinstance(idxty, types.Integer):
        return [to_index(context, builder, idx, idxty)]
    if isinstance(idxty, types.BaseTuple):
        return [
            to_index(context, builder, builder.extract_value(idx, k), t)
            for k, t in enumerate(idxty.types)
        ]
    raise TypeError(f"unsupported accessor index type {idxty}")


def _pointer(builder: llir.IRBuilder, accty: AccessorType, a: StructProxy, ids: Sequence[llir.Value],
             ) -> llir.Value:
    lin = ids[0]
    for d in range(1, accty.ndim):
        extent = getattr(a, f"mem_range{d}") if accty.space == "global" else getattr(a, f"range{d}")
        lin = builder.add(builder.mul(lin, extent, flags=NSW), ids[d], flags=NSW)
    if accty.space == "global":
        lin = builder.add(a.offset, lin, flags=NSW)
    return builder.gep(a.base, [lin], inbounds=True)


def _ranges(accty: AccessorType, a: StructProxy) -> list[llir.Value]:
    return [getattr(a, f"range{d}") for d in range(accty.ndim)]


def element_pointer(
    context: BaseContext, builder: llir.IRBuilder, accty: AccessorType, acc: llir.Value,
    idxty: types.Type, idx: llir.Value, kind: str = "atomic_ref",
) -> llir.Value:
    """Pointer (in the accessor's address space) to the indexed element.

    In bounds-checked mode an index outside the access range is reported as a
    ``kind`` access and the pointer is the error buffer's scratch word instead.
    """
    a = struct(context, builder, accty, acc)
    ids = index_values(context, builder, idxty, idx)
    if not accty.checked:
        return _pointer(builder, accty, a, ids)
    ok = bounds.in_bounds(builder, ids, _ranges(accty, a))
    return bounds.checked(builder, ok, a.rec, a.slot, kind, ids,
                          lambda: _pointer(builder, accty, a, ids),
                          default=bounds.scratch(builder, a.err, a.base.type, accty.space))


def element_alignment(context: BaseContext, ty: types.Type) -> int:
    """The ABI alignment of a ``ty`` element in memory."""
    return context.get_abi_alignment(context.get_data_type(ty))


@lower(operator.getitem, AccessorType, types.Any)
@lower("accessor.__getitem__", AccessorType, types.Any)
def accessor_getitem(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                     args: Sequence[llir.Value]) -> llir.Value:
    """``acc[idx]``: a load from global (or local) memory (0 if out of range when checked)."""
    accty, idxty = sig.args
    a = struct(context, builder, accty, args[0])
    ids = index_values(context, builder, idxty, args[1])
    align = element_alignment(context, accty.dtype)

    def load() -> llir.Value:
        ptr = _pointer(builder, accty, a, ids)
        return context.unpack_value(builder, accty.dtype, ptr, align=align)

    if not accty.checked:
        return load()
    ok = bounds.in_bounds(builder, ids, _ranges(accty, a))
    zero = context.get_constant_null(accty.dtype)
    return bounds.checked(builder, ok, a.rec, a.slot, "read", ids, load, default=zero)


@lower(operator.setitem, AccessorType, types.Any, types.Any)
@lower("accessor.__setitem__", AccessorType, types.Any, types.Any)
def accessor_setitem(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                     args: Sequence[llir.Value]) -> llir.Value:
    """``acc[idx] = value``: a store to global (or local) memory (skipped if out of range when checked)."""
    accty, idxty, valty = sig.args
    a = struct(context, builder, accty, args[0])
    ids = index_values(context, builder, idxty, args[1])
    value = context.cast(builder, args[2], valty, accty.dtype)
    align = element_alignment(context, accty.dtype)

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
def accessor_get_range(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                       args: Sequence[llir.Value]) -> llir.Value:
    """``acc.get_range()``: the access range."""
    accty = sig.args[0]
    a = struct(context, builder, accty, args[0])
    return make_range(context, builder, accty.ndim, _ranges(accty, a))


@lower("accessor.size", AccessorType)
def accessor_size(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                  args: Sequence[llir.Value]) -> llir.Value:
    """``acc.size()`` / ``acc.get_count()``: elements in the access range."""
    accty = sig.args[0]
    return product(builder, _ranges(accty, struct(context, builder, accty, args[0])))

"""Captured USM pointers (``sycl.usm_pointer``) in kernels: typing and lowering.

``p[i]``, ``p[i] = v``, ``p[i] += v``, ``p.__getitem__(i)``,
``p.__setitem__(i, v)`` (lambdas), with ``i`` any integer, a 1-D
``sycl.item`` or a 1-tuple of integers (``it.get_id()``), and ``p + k``,
``k + p``, ``p - k`` for an integer ``k`` (another pointer, ``k`` elements
on). Element ``p[i]`` is ``base[i]`` of the pointer's ``T addrspace(1)*``
(:class:`~pysycl_numba.types.USMPointerType`): C++'s ``p[i]``, no bounds check
(not even in bounds-checked mode, which checks accessors against their ranges;
a pointer has none), negative indices included. Stored values convert to the
element type as accessor stores do. Stores into a ``readonly`` pointer type
here and are rejected with the source line by
:class:`pysycl_numba.passes.ValidateTypedKernel`. ``sycl.atomic_ref(p, i, ...)``
is in :mod:`pysycl_numba.overloads.atomics`.
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
    signature,
    types,
)
from pysycl_numba.overloads.accessor import element_alignment, index_values, normalize_index
from pysycl_numba.overloads.index import to_index
from pysycl_numba.types import USMPointerType

if TYPE_CHECKING:
    from collections.abc import Sequence

    from llvmlite import ir as llir

    from pysycl_numba._numba_compat import BaseContext, Signature

typing_registry = TypingRegistry()
lowering_registry = LoweringRegistry("pysycl.pointer")
lower = lowering_registry.lower


# ==================================================================== typing
def pointer_index(idx: types.Type) -> types.Type | None:
    """The index type of ``p[idx]`` (an integer, a 1-D item, a 1-tuple), or None."""
    return normalize_index(idx, 1)


def _setitem_signature(context: object, ptr: types.Type, idx: types.Type, val: types.Type,
                       ) -> Signature | None:
    if not isinstance(ptr, USMPointerType):
        return None
    norm = pointer_index(idx)
    if norm is None or context.can_convert(val, ptr.dtype) is None:  # type: ignore[attr-defined]
        return None
    return signature(types.none, ptr, norm, ptr.dtype)


@typing_registry.register_global(operator.getitem)
class GetItem(AbstractTemplate):
    """``p[i]``."""

    def generic(self, args: tuple[types.Type, ...], kws: dict) -> object:
        if len(args) != 2 or not isinstance(args[0], USMPointerType):
            return None
        norm = pointer_index(args[1])
        return None if norm is None else signature(args[0].dtype, args[0], norm)


@typing_registry.register_global(operator.setitem)
class SetItem(AbstractTemplate):
    """``p[i] = v``."""

    def generic(self, args: tuple[types.Type, ...], kws: dict) -> object:
        return _setitem_signature(self.context, *args) if len(args) == 3 else None


def _offset_signature(args: tuple[types.Type, ...], commutes: bool) -> Signature | None:
    """``p + k`` / ``p - k`` (and ``k + p`` where ``commutes``): a pointer."""
    if len(args) != 2:
        return None
    a, b = args
    if isinstance(a, USMPointerType) and isinstance(b, (types.Integer, types.IntegerLiteral)):
        return signature(a, a, types.unliteral(b))
    if commutes and isinstance(b, USMPointerType) \
            and isinstance(a, (types.Integer, types.IntegerLiteral)):
        return signature(b, types.unliteral(a), b)
    return None


@typing_registry.register_global(operator.add)
@typing_registry.register_global(operator.iadd)
class Add(AbstractTemplate):
    """``p + k``, ``k + p``, ``p += k``."""

    def generic(self, args: tuple[types.Type, ...], kws: dict) -> object:
        return _offset_signature(args, commutes=True)


@typing_registry.register_global(operator.sub)
@typing_registry.register_global(operator.isub)
class Sub(AbstractTemplate):
    """``p - k``, ``p -= k``."""

    def generic(self, args: tuple[types.Type, ...], kws: dict) -> object:
        return _offset_signature(args, commutes=False)


@typing_registry.register_attr
class PointerAttributes(AttributeTemplate):
    """Methods of a USM pointer (lambdas cannot assign: ``p.__setitem__(i, v)``)."""

    key = USMPointerType

    @bound_function("usm_pointer.__getitem__")
    def resolve___getitem__(self, ptr: USMPointerType, args: tuple, kws: dict) -> object:
        if len(args) != 1 or kws:
            return None
        norm = pointer_index(args[0])
        return None if norm is None else signature(ptr.dtype, norm)

    @bound_function("usm_pointer.__setitem__")
    def resolve___setitem__(self, ptr: USMPointerType, args: tuple, kws: dict) -> object:
        if len(args) != 2 or kws:
            return None
        sig = _setitem_signature(self.context, ptr, *args)
        return None if sig is None else signature(types.none, *sig.args[1:])


# ================================================================== lowering
def element_address(context: BaseContext, builder: llir.IRBuilder, idxty: types.Type,
                    ptr: llir.Value, idx: llir.Value) -> llir.Value:
    """``&p[idx]``: a ``T addrspace(1)*`` (no bounds check, as C++'s ``p[i]``)."""
    (i,) = index_values(context, builder, idxty, idx)
    return builder.gep(ptr, [i], inbounds=True)


@lower(operator.getitem, USMPointerType, types.Any)
@lower("usm_pointer.__getitem__", USMPointerType, types.Any)
def pointer_getitem(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                    args: Sequence[llir.Value]) -> llir.Value:
    """``p[i]``: a load from global memory."""
    ptrty, idxty = sig.args
    addr = element_address(context, builder, idxty, args[0], args[1])
    return context.unpack_value(builder, ptrty.dtype, addr,
                                align=element_alignment(context, ptrty.dtype))


@lower(operator.setitem, USMPointerType, types.Any, types.Any)
@lower("usm_pointer.__setitem__", USMPointerType, types.Any, types.Any)
def pointer_setitem(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                    args: Sequence[llir.Value]) -> llir.Value:
    """``p[i] = v``: a store to global memory, ``v`` converted to the element type."""
    ptrty, idxty, valty = sig.args
    addr = element_address(context, builder, idxty, args[0], args[1])
    value = context.cast(builder, args[2], valty, ptrty.dtype)
    context.pack_value(builder, ptrty.dtype, value, addr,
                       align=element_alignment(context, ptrty.dtype))
    return context.get_dummy_value()


def _offset(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
            args: Sequence[llir.Value], negate: bool) -> llir.Value:
    if isinstance(sig.args[0], USMPointerType):
        ptr, (kty, k) = args[0], (sig.args[1], args[1])
    else:
        ptr, (kty, k) = args[1], (sig.args[0], args[0])
    step = to_index(context, builder, k, kty)
    if negate:
        step = builder.neg(step)
    return builder.gep(ptr, [step])  # not inbounds: p + k may leave the allocation


@lower(operator.add, USMPointerType, types.Integer)
@lower(operator.add, types.Integer, USMPointerType)
@lower(operator.iadd, USMPointerType, types.Integer)
def pointer_add(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                args: Sequence[llir.Value]) -> llir.Value:
    """``p + k``: the pointer ``k`` elements on."""
    return _offset(context, builder, sig, args, negate=False)


@lower(operator.sub, USMPointerType, types.Integer)
@lower(operator.isub, USMPointerType, types.Integer)
def pointer_sub(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                args: Sequence[llir.Value]) -> llir.Value:
    """``p - k``: the pointer ``k`` elements back."""
    return _offset(context, builder, sig, args, negate=True)

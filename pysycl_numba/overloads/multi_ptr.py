"""``acc.get_multi_ptr()`` (SYCL 2020 §4.7.6.9, §4.7.6.11; C++'s ``multi_ptr``) in kernels.

``p = acc.get_multi_ptr()`` (also ``acc.get_pointer()``, SYCL 1.2.1's name) of a 1-D
accessor or local accessor points at the accessor's first element: ``p + k``, ``k + p``
and ``p - k`` point elsewhere in it, ``p[i]`` reads and ``p[i] = v`` writes element ``k +
i`` (bounds-checked, in bounds-checked mode, like ``acc[k + i]``), and a multi_ptr is a
memory operand of ``joint_matrix_load``/``store`` and ``async_work_group_copy`` (the
``(acc, k)`` they also take; :func:`memory_operand` says what such an operand may be, for
both). Its value is the accessor and the element offset
(:class:`~pysycl_numba.types.MultiPtrType`).
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
    errors,
    signature,
    types,
)
from pysycl_numba.types import AccessorType, MultiPtrType, USMPointerType, index_type

if TYPE_CHECKING:
    from collections.abc import Sequence

    from llvmlite import ir as llir

    from pysycl_numba._numba_compat import BaseContext, Signature

typing_registry = TypingRegistry()
lowering_registry = LoweringRegistry("pysycl.multi_ptr")
lower = lowering_registry.lower


# ==================================================================== typing
def _multi_ptr_sig(acc: AccessorType, args: tuple, kws: dict) -> Signature | None:
    if args or kws:
        return None
    if acc.ndim != 1:
        raise errors.TypingError(f"get_multi_ptr() of a {acc.ndim}-D accessor: pysycl's "
                                 "multi_ptr is of 1-D accessors and local accessors (index "
                                 "an n-D one with acc[i, j])")
    return signature(MultiPtrType(acc))


@typing_registry.register_attr
class AccessorPointers(AttributeTemplate):
    """``acc.get_multi_ptr()`` and ``acc.get_pointer()``."""

    key = AccessorType

    @bound_function("accessor.get_multi_ptr")
    def resolve_get_multi_ptr(self, acc: AccessorType, args: tuple, kws: dict) -> object:
        return _multi_ptr_sig(acc, args, kws)

    @bound_function("accessor.get_multi_ptr")
    def resolve_get_pointer(self, acc: AccessorType, args: tuple, kws: dict) -> object:
        return _multi_ptr_sig(acc, args, kws)


@typing_registry.register_global(operator.add)
class MultiPtrAdd(AbstractTemplate):
    """``p + k`` and ``k + p``."""

    def generic(self, args: tuple, kws: dict) -> object:
        if len(args) != 2:
            return None
        a, b = args
        if isinstance(a, MultiPtrType) and isinstance(b, types.Integer):
            return signature(a, a, b)
        if isinstance(b, MultiPtrType) and isinstance(a, types.Integer):
            return signature(b, a, b)
        return None


@typing_registry.register_global(operator.sub)
class MultiPtrSub(AbstractTemplate):
    """``p - k``."""

    def generic(self, args: tuple, kws: dict) -> object:
        if len(args) == 2 and isinstance(args[0], MultiPtrType) \
                and isinstance(args[1], types.Integer):
            return signature(args[0], *args)
        return None


@typing_registry.register_global(operator.getitem)
class MultiPtrGetItem(AbstractTemplate):
    """``p[i]``."""

    def generic(self, args: tuple, kws: dict) -> object:
        if len(args) == 2 and isinstance(args[0], MultiPtrType) \
                and isinstance(args[1], types.Integer):
            return signature(args[0].acc.dtype, *args)
        return None


@typing_registry.register_global(operator.setitem)
class MultiPtrSetItem(AbstractTemplate):
    """``p[i] = v``; through a read accessor's it types, as an accessor's store does, and
    :class:`pysycl_numba.passes.ValidateTypedKernel` rejects it with the source line."""

    def generic(self, args: tuple, kws: dict) -> object:
        if len(args) != 3 or not isinstance(args[0], MultiPtrType) \
                or not isinstance(args[1], types.Integer) \
                or not isinstance(args[2], (types.Number, types.Boolean)):
            return None
        return signature(types.none, args[0], args[1], args[0].acc.dtype)


def memory_operand(t: types.Type) -> tuple[types.Type, bool] | None:
    """(the memory, whether an offset comes with it) of a memory operand of
    ``joint_matrix_load``/``store`` and ``async_work_group_copy``: a 1-D accessor or local
    accessor, a USM pointer (``p + k`` is one too), ``acc.get_multi_ptr() + k``, or
    ``(accessor or pointer, offset)``; None for anything else."""
    if (isinstance(t, AccessorType) and t.ndim == 1) or isinstance(t, USMPointerType):
        return t, False
    if isinstance(t, MultiPtrType):
        return t.acc, True
    if isinstance(t, types.BaseTuple) and len(t) == 2 and isinstance(t.types[1], types.Integer):
        inner = memory_operand(t.types[0])
        if inner is not None and not inner[1]:
            return inner[0], True
    return None


# ==================================================================== lowering
def operand_values(context: BaseContext, builder: llir.IRBuilder, t: types.Type,
                   v: llir.Value) -> tuple[types.Type, llir.Value, llir.Value]:
    """(memory type, memory value, element offset) of a :func:`memory_operand` ``t``."""
    mem, with_off = memory_operand(t)  # type: ignore[misc]
    if not with_off:
        return mem, v, context.get_constant(index_type, 0)
    if isinstance(t, MultiPtrType):
        acc, off = parts(context, builder, t, v)
        return mem, acc, off
    off = context.cast(builder, builder.extract_value(v, 1), t.types[1], index_type)
    return mem, builder.extract_value(v, 0), off


def parts(context: BaseContext, builder: llir.IRBuilder, ty: MultiPtrType,
          v: llir.Value) -> tuple[llir.Value, llir.Value]:
    """(the accessor's value, the element offset) of a multi_ptr."""
    s = cgutils.create_struct_proxy(ty)(context, builder, value=v)
    return s.acc, s.off


def _make(context: BaseContext, builder: llir.IRBuilder, ty: MultiPtrType, acc: llir.Value,
          off: llir.Value) -> llir.Value:
    s = cgutils.create_struct_proxy(ty)(context, builder)
    s.acc, s.off = acc, off
    return s._getvalue()


@lower("accessor.get_multi_ptr", AccessorType)
def lower_get_multi_ptr(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                        args: Sequence[llir.Value]) -> llir.Value:
    return _make(context, builder, sig.return_type, args[0],
                 context.get_constant(index_type, 0))


@lower(operator.add, MultiPtrType, types.Integer)
@lower(operator.add, types.Integer, MultiPtrType)
def lower_add(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
              args: Sequence[llir.Value]) -> llir.Value:
    pi = 0 if isinstance(sig.args[0], MultiPtrType) else 1
    ty = sig.args[pi]
    acc, off = parts(context, builder, ty, args[pi])
    k = context.cast(builder, args[1 - pi], sig.args[1 - pi], index_type)
    return _make(context, builder, ty, acc, builder.add(off, k))


@lower(operator.sub, MultiPtrType, types.Integer)
def lower_sub(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
              args: Sequence[llir.Value]) -> llir.Value:
    ty = sig.args[0]
    acc, off = parts(context, builder, ty, args[0])
    k = context.cast(builder, args[1], sig.args[1], index_type)
    return _make(context, builder, ty, acc, builder.sub(off, k))


def _element(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
             args: Sequence[llir.Value]) -> tuple[AccessorType, llir.Value, llir.Value]:
    ty = sig.args[0]
    acc, off = parts(context, builder, ty, args[0])
    i = context.cast(builder, args[1], sig.args[1], index_type)
    return ty.acc, acc, builder.add(off, i)


@lower(operator.getitem, MultiPtrType, types.Integer)
def lower_getitem(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                  args: Sequence[llir.Value]) -> llir.Value:
    """``p[i]``: ``acc[off + i]`` (checked in bounds-checked mode)."""
    accty, acc, i = _element(context, builder, sig, args)
    isig = signature(accty.dtype, accty, index_type)
    return context.get_function(operator.getitem, isig)(builder, [acc, i])


@lower(operator.setitem, MultiPtrType, types.Integer, types.Any)
def lower_setitem(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                  args: Sequence[llir.Value]) -> llir.Value:
    """``p[i] = v``: ``acc[off + i] = v``."""
    accty, acc, i = _element(context, builder, sig, args)
    isig = signature(types.none, accty, index_type, sig.args[2])
    return context.get_function(operator.setitem, isig)(builder, [acc, i, args[2]])

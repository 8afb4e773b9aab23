"""``sycl.private_array(dtype, n)``: ``n`` elements of private memory.

An ``alloca`` of ``[n x T]`` in the function's entry block (address space 0 =
SPIR-V Function storage), zero-initialised with ``memset``; SROA promotes
small arrays to registers. ``arr[i]``, ``arr[i] = v``, ``len(arr)``.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING

from llvmlite import ir as llir

from pysycl._kernels.kernel_api import private_array
from pysycl_numba._numba_compat import (
    AbstractTemplate,
    LoweringRegistry,
    TypingRegistry,
    cgutils,
    signature,
    types,
)
from pysycl_numba.types import PrivateArrayType, index_type

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pysycl_numba._numba_compat import BaseContext, Signature

typing_registry = TypingRegistry()
lowering_registry = LoweringRegistry("pysycl.private_array")
lower = lowering_registry.lower


@typing_registry.register_global(private_array)
class PrivateArrayCtor(AbstractTemplate):
    """``sycl.private_array(dtype, n)`` with ``n`` an integer literal or a tuple of them."""

    def generic(self, args: tuple, kws: dict) -> object:
        if len(args) != 2 or kws or not isinstance(args[0], types.NumberClass):
            return None
        n = args[1]
        if isinstance(n, types.BaseTuple) and 1 <= len(n) <= 3:
            shape = tuple(t.literal_value if isinstance(t, types.IntegerLiteral) else 0
                          for t in n.types)
            if min(shape) <= 0:
                return None
            size = 1
            for k in shape:
                size *= k
            return signature(PrivateArrayType(args[0].instance_type, size, shape), *args)
        if not isinstance(n, types.IntegerLiteral) or n.literal_value <= 0:
            return None
        return signature(PrivateArrayType(args[0].instance_type, n.literal_value), *args)


@lower(private_array, types.NumberClass, types.IntegerLiteral)
@lower(private_array, types.NumberClass, types.BaseTuple)
def lower_private_array(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                        args: Sequence[llir.Value]) -> llir.Value:
    """An alloca in the function's entry block, zeroed."""
    ty = sig.return_type
    llty = context.get_data_type(ty.dtype)
    ptr = cgutils.alloca_once(builder, llty, size=ty.size)
    nbytes = ty.size * context.get_abi_sizeof(llty)
    cgutils.memset(builder, ptr, llir.Constant(llir.IntType(64), nbytes), 0)
    return ptr


def _index_type(arr: PrivateArrayType, idx: types.Type) -> types.Type | None:
    """The index type of ``arr[idx]``: an integer (1-D), a tuple of ``len(shape)`` integers."""
    ints = (types.Integer, types.IntegerLiteral)
    if arr.shape is None or len(arr.shape) == 1:
        if isinstance(idx, ints):
            return types.unliteral(idx)
    if isinstance(idx, types.BaseTuple) and len(idx) == len(arr.shape or (0,)) \
            and all(isinstance(t, ints) for t in idx.types):
        return types.UniTuple(index_type, len(idx))
    return None


class _PrivateGetItem(AbstractTemplate):
    def generic(self, args: tuple, kws: dict) -> object:
        if len(args) == 2 and isinstance(args[0], PrivateArrayType):
            idx = _index_type(args[0], args[1])
            return None if idx is None else signature(args[0].dtype, args[0], idx)
        return None


class _PrivateSetItem(AbstractTemplate):
    def generic(self, args: tuple, kws: dict) -> object:
        if len(args) == 3 and isinstance(args[0], PrivateArrayType) \
                and self.context.can_convert(args[2], args[0].dtype) is not None:
            idx = _index_type(args[0], args[1])
            return None if idx is None else signature(types.none, args[0], idx, args[0].dtype)
        return None


class _PrivateLen(AbstractTemplate):
    def generic(self, args: tuple, kws: dict) -> object:
        if len(args) == 1 and isinstance(args[0], PrivateArrayType):
            return signature(index_type, args[0])
        return None


typing_registry.register_global(operator.getitem)(_PrivateGetItem)
typing_registry.register_global(operator.setitem)(_PrivateSetItem)
typing_registry.register_global(len)(_PrivateLen)


def _private_ptr(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                 args: Sequence[llir.Value]) -> llir.Value:
    arr, idxty = sig.args[0], sig.args[1]
    if isinstance(idxty, types.BaseTuple):  # row-major: ((i0 * n1) + i1) * n2 + i2
        ids = [builder.extract_value(args[1], k) for k in range(len(idxty))]
        idx = ids[0]
        for k in range(1, len(ids)):
            idx = builder.add(builder.mul(idx, context.get_constant(index_type, arr.shape[k]),
                                          flags=("nsw",)), ids[k], flags=("nsw",))
    else:
        idx = context.cast(builder, args[1], idxty, index_type)
    return builder.gep(args[0], [idx], inbounds=True)


@lower(operator.getitem, PrivateArrayType, types.Integer)
@lower(operator.getitem, PrivateArrayType, types.BaseTuple)
def private_getitem(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                    args: Sequence[llir.Value]) -> llir.Value:
    """``arr[i]``."""
    return context.unpack_value(builder, sig.args[0].dtype, _private_ptr(context, builder, sig,
                                                                          args))


@lower(operator.setitem, PrivateArrayType, types.Integer, types.Any)
@lower(operator.setitem, PrivateArrayType, types.BaseTuple, types.Any)
def private_setitem(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                    args: Sequence[llir.Value]) -> llir.Value:
    """``arr[i] = v``."""
    ptr = _private_ptr(context, builder, sig, args)
    context.pack_value(builder, sig.args[0].dtype, args[2], ptr)
    return context.get_dummy_value()


@lower(len, PrivateArrayType)
def private_len(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                args: Sequence[llir.Value]) -> llir.Value:
    """``len(arr)``: the elements (of dimension 0 for a multi-dimensional array, as numpy)."""
    arr = sig.args[0]
    return context.get_constant(index_type, arr.shape[0] if arr.shape else arr.size)

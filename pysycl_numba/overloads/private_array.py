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
    """``sycl.private_array(dtype, n)`` with ``n`` an integer literal."""

    def generic(self, args: tuple, kws: dict) -> object:
        if len(args) != 2 or kws or not isinstance(args[0], types.NumberClass):
            return None
        n = args[1]
        if not isinstance(n, types.IntegerLiteral) or n.literal_value <= 0:
            return None
        return signature(PrivateArrayType(args[0].instance_type, n.literal_value), *args)


@lower(private_array, types.NumberClass, types.IntegerLiteral)
def lower_private_array(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                        args: Sequence[llir.Value]) -> llir.Value:
    """An alloca in the function's entry block, zeroed."""
    ty = sig.return_type
    llty = context.get_data_type(ty.dtype)
    ptr = cgutils.alloca_once(builder, llty, size=ty.size)
    nbytes = ty.size * context.get_abi_sizeof(llty)
    cgutils.memset(builder, ptr, llir.Constant(llir.IntType(64), nbytes), 0)
    return ptr


class _PrivateGetItem(AbstractTemplate):
    def generic(self, args: tuple, kws: dict) -> object:
        if len(args) == 2 and isinstance(args[0], PrivateArrayType) \
                and isinstance(args[1], (types.Integer, types.IntegerLiteral)):
            return signature(args[0].dtype, args[0], types.unliteral(args[1]))
        return None


class _PrivateSetItem(AbstractTemplate):
    def generic(self, args: tuple, kws: dict) -> object:
        if len(args) == 3 and isinstance(args[0], PrivateArrayType) \
                and isinstance(args[1], (types.Integer, types.IntegerLiteral)) \
                and self.context.can_convert(args[2], args[0].dtype) is not None:
            return signature(types.none, args[0], types.unliteral(args[1]), args[0].dtype)
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
    idx = context.cast(builder, args[1], sig.args[1], index_type)
    return builder.gep(args[0], [idx], inbounds=True)


@lower(operator.getitem, PrivateArrayType, types.Integer)
def private_getitem(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                    args: Sequence[llir.Value]) -> llir.Value:
    """``arr[i]``."""
    return context.unpack_value(builder, sig.args[0].dtype, _private_ptr(context, builder, sig,
                                                                          args))


@lower(operator.setitem, PrivateArrayType, types.Integer, types.Any)
def private_setitem(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                    args: Sequence[llir.Value]) -> llir.Value:
    """``arr[i] = v``."""
    ptr = _private_ptr(context, builder, sig, args)
    context.pack_value(builder, sig.args[0].dtype, args[2], ptr)
    return context.get_dummy_value()


@lower(len, PrivateArrayType)
def private_len(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                args: Sequence[llir.Value]) -> llir.Value:
    """``len(arr)``."""
    return context.get_constant(index_type, sig.args[0].size)

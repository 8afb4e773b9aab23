"""Specialization constants in kernels: ``kh.get_specialization_constant(sid)``.

A kernel that reads specialization constants takes a trailing ``kh``
parameter (:class:`~pysycl_numba.types.KernelHandlerType`, no data) and
captures ``sycl.specialization_id`` objects, which the compiler types as
``SpecConstRefType(k, dtype, default)`` tags (no OpenCL argument).
``kh.get_specialization_constant(sid)`` lowers to a call of the SPIR-V
friendly built-in ``__spirv_SpecConstant(k, default)``, which LLVM's SPIR-V
backend (LLVM 22) emits as ``OpSpecConstant``/``OpSpecConstantTrue``/
``OpSpecConstantFalse`` decorated ``SpecId k`` (checked with spirv-val). The
call is pure, so LLVM hoists it like a constant.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from llvmlite import ir as llir

from pysycl_numba._numba_compat import (
    AttributeTemplate,
    LoweringRegistry,
    TypingRegistry,
    bound_function,
    errors,
    signature,
    types,
)
from pysycl_numba.targets.spirv import ocl
from pysycl_numba.types import KernelHandlerType, SpecConstRefType

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pysycl_numba._numba_compat import BaseContext, Signature

typing_registry = TypingRegistry()
lowering_registry = LoweringRegistry("pysycl.specconst")


@typing_registry.register_attr
class KernelHandlerAttributes(AttributeTemplate):
    """``kh.get_specialization_constant(spec_id)``."""

    key = KernelHandlerType

    @bound_function("kernel_handler.get_specialization_constant")
    def resolve_get_specialization_constant(self, kh: KernelHandlerType, args: tuple,
                                            kws: dict) -> object:
        if len(args) != 1 or kws:
            raise errors.TypingError("kh.get_specialization_constant takes one argument, a "
                                     "captured sycl.specialization_id")
        (sid,) = args
        if not isinstance(sid, SpecConstRefType):
            raise errors.TypingError(
                f"kh.get_specialization_constant takes a sycl.specialization_id captured by "
                f"the kernel (a closure variable or module global), not a value of type {sid}")
        return signature(sid.dtype, sid)


# ================================================================== lowering
_MANGLE = {"b1": "b", "i1": "a", "u1": "h", "i2": "s", "u2": "t", "i4": "i", "u4": "j",
           "i8": "l", "u8": "m", "f2": "Dh", "f4": "f", "f8": "d"}


def _default_constant(llty: llir.Type, dtype: np.dtype, default: bool | int | float) -> llir.Constant:
    if dtype.kind == "b":
        return llir.Constant(llty, 1 if default else 0)
    if dtype.kind in "iu":
        bits = dtype.itemsize * 8
        v = int(default) & ((1 << bits) - 1)
        return llir.Constant(llty, v - (1 << bits) if v >= 1 << (bits - 1) else v)
    return llir.Constant(llty, float(default))


@lowering_registry.lower("kernel_handler.get_specialization_constant", KernelHandlerType,
                SpecConstRefType)
def _get_spec_constant(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                       args: Sequence[llir.Value]) -> llir.Value:
    sid = sig.args[1]
    dtype = np.dtype(str(sid.dtype)) if sid.dtype != types.boolean else np.dtype(np.bool_)
    code = _MANGLE[f"{dtype.kind}{dtype.itemsize}"]
    llty = llir.IntType(1) if dtype.kind == "b" else context.get_value_type(sid.dtype)
    fn = ocl.declare(builder.module, f"_Z20__spirv_SpecConstanti{code}", llty,
                     [llir.IntType(32), llty])
    return builder.call(fn, [llir.Constant(llir.IntType(32), sid.index),
                             _default_constant(llty, dtype, sid.default)])

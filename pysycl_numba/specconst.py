"""Specialization constants in kernels: ``kernel_handler`` and ``OpSpecConstant``.

A kernel that reads specialization constants takes a trailing ``kh``
parameter (:class:`KernelHandlerType`, no data) and captures
``sycl.specialization_id`` objects. The runtime hands those captures over as
``pysycl._core.abi.SpecConstantType``; :func:`capture_types` types the
``k``-th of them as ``SpecConstRefType(k, dtype, default)`` — a compile-time
tag, lifted like any capture but with no OpenCL argument (the wrapper passes
an ``i8 0``). ``kh.get_specialization_constant(sid)`` then lowers to a call of
the SPIR-V friendly built-in ``__spirv_SpecConstant(k, default)``, which LLVM's
SPIR-V backend (LLVM 22) emits as ``OpSpecConstant``/``OpSpecConstantTrue``/
``OpSpecConstantFalse`` decorated ``SpecId k`` (checked with spirv-val). The
call is pure, so LLVM hoists it like a constant.

Typing (``typing_registry``) and lowering (``registry``) live together here;
:func:`register_models` adds the data models (target.py calls both).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from llvmlite import ir as llir

from pysycl._core.abi import Capture, SpecConstantType
from pysycl._core.exceptions import errc, kernel_compile_error
from pysycl_numba._numba_compat import (
    AttributeTemplate,
    DataModelManager,
    LoweringRegistry,
    TypingRegistry,
    bound_function,
    errors,
    models,
    signature,
    types,
)
from pysycl_numba.targets.spirv import ocl
from pysycl_numba.types import numba_type_of_dtype

typing_registry = TypingRegistry()
registry = LoweringRegistry("pysycl.specconst")


class KernelHandlerType(types.Type):
    """``sycl.kernel_handler``: the optional last kernel parameter (carries no data)."""

    def __init__(self) -> None:
        super().__init__(name="sycl.kernel_handler")


class SpecConstRefType(types.Type):
    """A captured ``sycl.specialization_id``: SpecId ``index``, value type, default."""

    def __init__(self, index: int, dtype: types.Type, default: bool | int | float) -> None:
        self.index = index
        self.dtype = dtype
        self.default = default
        super().__init__(name=f"sycl.specialization_id<{index}, {dtype}, {default!r}>")

    @property
    def key(self) -> tuple[int, types.Type, Any]:
        return self.index, self.dtype, (type(self.default).__name__, self.default)


class _TagModel(models.PrimitiveModel):
    def __init__(self, dmm: DataModelManager, fe_type: types.Type) -> None:
        super().__init__(dmm, fe_type, llir.IntType(8))


def register_models(dmm: DataModelManager) -> None:
    """Add the data models of this module's types to the target's manager."""
    dmm.register(KernelHandlerType, _TagModel)
    dmm.register(SpecConstRefType, _TagModel)


def tag() -> llir.Constant:
    """The (unused) value of a kernel_handler or spec-id parameter."""
    return llir.Constant(llir.IntType(8), 0)


# ------------------------------------------------------------- compiler hooks
def capture_types(captures: Sequence[Capture],
                  other: Callable[[Capture], types.Type]) -> list[types.Type]:
    """Numba types of the captures: spec ids numbered 0.. in order, others by ``other``."""
    out: list[types.Type] = []
    k = 0
    for c in captures:
        if isinstance(c.type, SpecConstantType):
            out.append(SpecConstRefType(k, numba_type_of_dtype(c.type.dtype), c.type.default))
            k += 1
        else:
            out.append(other(c))
    return out


def add_kernel_handler(pyfunc: Callable[..., Any], argtypes: list[types.Type],
                       reducers: Sequence[Any], name: str, where: str) -> list[types.Type]:
    """``argtypes`` plus a :class:`KernelHandlerType` if the kernel has one more parameter."""
    if pyfunc.__code__.co_argcount != len(argtypes) + 1:
        return argtypes
    if reducers:
        raise kernel_compile_error(
            errc.feature_not_supported,
            f"kernel '{name}' ({where}): a kernel with sycl.reduction parameters cannot take a "
            "sycl.kernel_handler yet; read the specialization constant in a kernel without "
            "reductions")
    return [*argtypes, KernelHandlerType()]


def is_kernel_handler(t: types.Type) -> bool:
    """Whether ``t`` is the kernel_handler parameter type."""
    return isinstance(t, KernelHandlerType)


def is_spec_ref(t: types.Type) -> bool:
    """Whether ``t`` is a captured specialization_id (no OpenCL argument)."""
    return isinstance(t, SpecConstRefType)


# --------------------------------------------------------------------- typing
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


# ------------------------------------------------------------------- lowering
_MANGLE = {"b1": "b", "i1": "a", "u1": "h", "i2": "s", "u2": "t", "i4": "i", "u4": "j",
           "i8": "l", "u8": "m", "f2": "Dh", "f4": "f", "f8": "d"}


def _default_constant(llty: llir.Type, dtype: np.dtype, default: Any) -> llir.Constant:
    if dtype.kind == "b":
        return llir.Constant(llty, 1 if default else 0)
    if dtype.kind in "iu":
        bits = dtype.itemsize * 8
        v = int(default) & ((1 << bits) - 1)
        return llir.Constant(llty, v - (1 << bits) if v >= 1 << (bits - 1) else v)
    return llir.Constant(llty, float(default))


@registry.lower("kernel_handler.get_specialization_constant", KernelHandlerType,
                SpecConstRefType)
def _get_spec_constant(context: Any, builder: llir.IRBuilder, sig: Any, args: Any) -> Any:
    sid = sig.args[1]
    dtype = np.dtype(str(sid.dtype)) if sid.dtype != types.boolean else np.dtype(np.bool_)
    code = _MANGLE[f"{dtype.kind}{dtype.itemsize}"]
    llty = llir.IntType(1) if dtype.kind == "b" else context.get_value_type(sid.dtype)
    fn = ocl.declare(builder.module, f"_Z20__spirv_SpecConstanti{code}", llty,
                     [llir.IntType(32), llty])
    return builder.call(fn, [llir.Constant(llir.IntType(32), sid.index),
                             _default_constant(llty, dtype, sid.default)])

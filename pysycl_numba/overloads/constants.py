"""SYCL enum members and function objects in kernels: compile-time constants.

* SYCL enum members (``sycl.memory_order.relaxed``, ``sycl.access.fence_space.local_space``)
  type as :class:`~pysycl_numba.types.KernelEnumType`, which carries the member, so
  templates see the value (``atomic_ref``'s order and scope pick the LLVM ordering
  and ``syncscope`` of the instruction); enum classes and namespaces
  (``sycl.access.fence_space``) type as ``KernelEnumClassType``.
* SYCL function objects (``sycl.plus()`` ...) type as ``FunctorType(op)``.

Their values carry no data (an ``i8`` tag). The typing context resolves such
globals with :func:`resolve_kernel_value`; the runtime treats them as
compile-time constants in the kernel's cache key.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

from pysycl._core.memory_model import memory_order, memory_scope
from pysycl._core.streamfmt import stream_manipulator
from pysycl._kernels import matrix as _matrix
from pysycl._kernels.kernel_api import (
    KERNEL_ENUMS,
    _functor,
    access,
    bit_and,
    bit_or,
    bit_xor,
    logical_and,
    logical_or,
    maximum,
    minimum,
    multiplies,
    plus,
)
from pysycl_numba._numba_compat import (
    AbstractTemplate,
    AttributeTemplate,
    LoweringRegistry,
    TypingRegistry,
    signature,
    types,
)
from pysycl_numba.asserts import AssertLayout
from pysycl_numba.printing import PrintLayout
from pysycl_numba.stream_types import StreamLayoutType
from pysycl_numba.streaming import StreamLayout
from pysycl_numba.types import (
    AssertLayoutType,
    FunctorType,
    KernelEnumClassType,
    KernelEnumType,
    PrintLayoutType,
    tag,
)

if TYPE_CHECKING:
    from llvmlite import ir as llir

    from pysycl_numba._numba_compat import BaseContext

typing_registry = TypingRegistry()
lowering_registry = LoweringRegistry("pysycl.constants")
lower = lowering_registry.lower

ENUM_CLASSES: tuple[type, ...] = (memory_order, memory_scope, stream_manipulator, *KERNEL_ENUMS,
                                  _matrix.use, _matrix.layout, _matrix.matrix_type,
                                  _matrix.precision)
#: Namespaces whose attributes are enum classes (``sycl.access.fence_space``).
NAMESPACES: tuple[type, ...] = (access,)
FUNCTOR_CLASSES = (plus, multiplies, minimum, maximum, bit_and, bit_or, bit_xor, logical_and,
                   logical_or)


def resolve_kernel_value(val: object) -> types.Type | None:
    """The Numba type of a SYCL enum class/member or function object, else None."""
    if isinstance(val, type) and (val in ENUM_CLASSES or val in NAMESPACES):
        return KernelEnumClassType(val)
    if isinstance(val, enum.Enum) and type(val) in ENUM_CLASSES:
        return KernelEnumType(val)
    if isinstance(val, _functor):
        return FunctorType(val._op)
    if isinstance(val, AssertLayout):  # a kernel assert's message (pysycl_numba.asserts)
        return AssertLayoutType(val.pieces)
    if isinstance(val, PrintLayout):  # a kernel print call's layout (pysycl_numba.printing)
        return PrintLayoutType(val.pieces)
    if isinstance(val, StreamLayout):  # a stream statement's layout (pysycl_numba.streaming)
        return StreamLayoutType(val.pieces, val.continues)
    return None


def enum_member(t: types.Type, cls: type) -> enum.Enum | None:
    """The member of enum ``cls`` that type ``t`` stands for, else None."""
    return t.member if isinstance(t, KernelEnumType) and isinstance(t.member, cls) else None


# ===================================================================== enums
@typing_registry.register_attr
class EnumClassAttributes(AttributeTemplate):
    """``sycl.memory_order.relaxed`` → a compile-time constant."""

    key = KernelEnumClassType

    def generic_resolve(self, ty: KernelEnumClassType, attr: str) -> types.Type | None:
        member = getattr(ty.cls, attr, None)
        if isinstance(member, type) and member in ENUM_CLASSES:
            return KernelEnumClassType(member)
        return KernelEnumType(member) if isinstance(member, ty.cls) else None


@lowering_registry.lower_getattr_generic(KernelEnumClassType)
def lower_enum_member(context: BaseContext, builder: llir.IRBuilder, ty: KernelEnumClassType,
                      value: llir.Value, attr: str) -> llir.Value:
    """An enum member's value is implicit in its type."""
    return tag()


for _t in (KernelEnumType, KernelEnumClassType, FunctorType):
    lowering_registry.lower_constant(_t)(lambda context, builder, ty, pyval: tag())


# ================================================================== functors
def _functor_template(cls: type) -> type:
    class Make(AbstractTemplate):
        def generic(self, args: tuple, kws: dict) -> object:
            return signature(FunctorType(cls._op)) if not args and not kws else None

    return Make


for _cls in FUNCTOR_CLASSES:
    typing_registry.register_global(_cls)(_functor_template(_cls))
    lower(_cls)(lambda context, builder, sig, args: tag())

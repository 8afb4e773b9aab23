"""Numba types of the SYCL kernel objects (their data models: :mod:`pysycl_numba.type_models`).

* :class:`ItemType` -- ``sycl.item<n>``: the parameter of a ``range`` kernel.
  It holds the work-item's id and the launch range (both ``int64`` per
  dimension). A 1-D item converts implicitly to an integer, as SYCL's
  ``item<1>`` converts to ``size_t``.
* :class:`RangeType` -- ``sycl.range<n>`` values returned by ``get_range()``.
* :class:`AccessorType` -- a captured ``sycl.accessor``. Its LLVM value is a
  struct ``{T addrspace(1)* base, i64 offset, i64 range[n], i64 mem_range[1..n-1]}``
  built from the flat kernel arguments of ``pysycl._core.abi``.
* :class:`USMPointerType` -- a captured USM pointer (``sycl.malloc_*``'s
  ``usm_pointer``, or an array the device can use): one ``T addrspace(1)*``,
  the flat kernel argument itself.
* :class:`GlobalPointer` -- a data pointer in an OpenCL address space. Numba's
  own ``CPointer`` model drops the address space, and an address-space-0
  pointer in SPIR-V is *Function* storage: buffers would silently be wrong.

Ids and ranges are ``int64`` (not SYCL's unsigned ``size_t``): Numba types
``int64 op uint64`` as ``float64``, so unsigned ids would turn ``i + 1`` into
floating point.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from llvmlite import ir as llir

from pysycl_numba._numba_compat import (
    Conversion,
    numpy_support,
    types,
)
from pysycl_numba.reducer_types import (  # noqa: F401 - re-exported
    ElementReducerType,
    ReducerType,
    SpanReducerType,
    register_reducer_models,
)

#: OpenCL address spaces as LLVM's SPIR-V backend numbers them.
ADDRSPACE_PRIVATE = 0
ADDRSPACE_GLOBAL = 1
# 2 is UniformConstant (__constant), which no kernel object uses.
ADDRSPACE_LOCAL = 3

index_type = types.int64


class GlobalPointer(types.RawPointer):
    """A pointer to ``dtype`` elements in OpenCL address space ``addrspace``."""

    def __init__(self, dtype: types.Type, addrspace: int = ADDRSPACE_GLOBAL) -> None:
        self.dtype = dtype
        self.addrspace = addrspace
        super().__init__(name=f"{dtype} addrspace({addrspace})*")

    @property
    def key(self) -> tuple[types.Type, int]:
        return self.dtype, self.addrspace


def size_t_conversion(ndim: int, other: types.Type) -> Conversion | None:
    """How a 1-D item or id converts to the number type ``other`` (C++: to ``size_t``)."""
    if ndim == 1 and isinstance(other, types.Integer):
        return Conversion.safe if other == index_type else Conversion.unsafe
    if ndim == 1 and isinstance(other, types.Float):
        return Conversion.unsafe
    return None


class ItemType(types.Type):
    """``sycl.item<ndim>``: id and range of one work-item of a ``range`` launch."""

    def __init__(self, ndim: int) -> None:
        self.ndim = ndim
        super().__init__(name=f"sycl.item<{ndim}>")

    @property
    def key(self) -> int:
        return self.ndim

    def can_convert_to(self, typingctx: object, other: types.Type) -> Conversion | None:
        # SYCL: item<1> converts implicitly to size_t, so `it + 1`, `2 * it`, `it < n`
        # type as integer arithmetic on the id.
        return size_t_conversion(self.ndim, other)


class _IndexValueType(types.IterableType):
    """An id or range value: ``ndim`` ``int64`` components, iterable (``i, j = it.get_id()``)."""

    spelling = ""

    def __init__(self, ndim: int) -> None:
        self.ndim = ndim
        super().__init__(name=f"sycl.{self.spelling}<{ndim}>")

    @property
    def key(self) -> int:
        return self.ndim

    @property
    def iterator_type(self) -> IndexIterType:
        return IndexIterType(self)


class RangeType(_IndexValueType):
    """``sycl.range<ndim>``: extents of a launch or of an accessor."""

    spelling = "range"


class IdType(_IndexValueType):
    """``sycl.id<ndim>``: built in a kernel (``sycl.id(i, j)``, id arithmetic) or returned by
    ``it.get_id()``, ``it.get_global_id()``, ``g.get_group_id()``, ...: ``int64`` components."""

    spelling = "id"

    def can_convert_to(self, typingctx: object, other: types.Type) -> Conversion | None:
        # SYCL: id<1> converts implicitly to size_t ("operator size_t() const"), as item<1>:
        # `int(d)`, `d == 3`, `d < n`, `acc[i] = d` type as integer operations on d[0].
        return size_t_conversion(self.ndim, other)


class IndexIterType(types.SimpleIteratorType):
    """An iterator over the components of an id or range (``for x in r``, unpacking)."""

    def __init__(self, of: _IndexValueType) -> None:
        self.of = of
        super().__init__(f"iter({of})", index_type)


class AccessorType(types.Type):
    """A captured ``sycl.accessor`` of ``dtype`` elements, ``ndim`` dimensions.

    ``checked`` (bounds-checked mode, ``PYSYCL_BOUNDS_CHECK=1``): the value also
    carries the kernel's error buffer and the capture's slot, and every element
    access is checked against the access range (see :mod:`pysycl_numba.bounds`).
    """

    def __init__(self, dtype: types.Type, ndim: int, mode: str, space: str = "global",
                 checked: bool = False, shape: tuple[int, ...] | None = None) -> None:
        self.dtype = dtype
        self.ndim = ndim
        self.mode = mode
        self.space = space
        self.checked = checked
        #: a local accessor's range known at compile time (constant strides), or None
        self.shape = shape
        suffix = ", checked" if checked else ""
        if shape is not None:
            suffix += ", " + "x".join(map(str, shape))
        super().__init__(name=f"sycl.accessor<{dtype}, {ndim}, {mode}, {space}{suffix}>")

    @property
    def key(self) -> tuple[types.Type, int, str, str, bool, tuple[int, ...] | None]:
        return self.dtype, self.ndim, self.mode, self.space, self.checked, self.shape

    @property
    def writable(self) -> bool:
        """Whether stores through this accessor are allowed."""
        return self.mode != "read"

    @property
    def addrspace(self) -> int:
        """The OpenCL address space of the accessor's data."""
        return ADDRSPACE_LOCAL if self.space == "local" else ADDRSPACE_GLOBAL

    def member_names(self) -> list[str]:
        """Struct member names, in flat-kernel-argument order of the ABI."""
        names = ["base"]
        if self.space == "global":
            names.append("offset")
        names += [f"range{d}" for d in range(self.ndim)]
        if self.space == "global":
            names += [f"mem_range{d}" for d in range(1, self.ndim)]
        return names


class AccessorRowType(types.Type):
    """``acc[i]`` of an ``n``-D accessor (``n > 1``): the accessor and ``nfixed`` leading indices.

    ``acc[i][j]`` (C++'s chained subscripts) indexes it further; the last subscript is
    an element access of the accessor itself.
    """

    def __init__(self, accessor: AccessorType, nfixed: int) -> None:
        self.accessor = accessor
        self.nfixed = nfixed
        super().__init__(name=f"{accessor}[{nfixed}]")

    @property
    def key(self) -> tuple[AccessorType, int]:
        return self.accessor, self.nfixed


class USMPointerType(types.Type):
    """A captured USM pointer to ``dtype`` elements in global memory (C++'s ``T*``).

    Its value is one ``T addrspace(1)*`` (the flat kernel argument of
    ``pysycl._core.abi.PointerType``); ``p[i]`` is element ``i`` with no bounds
    check, also in bounds-checked mode. ``readonly`` pointers (a read-only
    array's memory) type stores and atomics, which
    :class:`pysycl_numba.passes.ValidateTypedKernel` rejects with the source line.
    """

    addrspace = ADDRSPACE_GLOBAL

    def __init__(self, dtype: types.Type, readonly: bool = False) -> None:
        self.dtype = dtype
        self.readonly = readonly
        suffix = ", readonly" if readonly else ""
        super().__init__(name=f"sycl.usm_pointer<{dtype}{suffix}>")

    @property
    def key(self) -> tuple[types.Type, bool]:
        return self.dtype, self.readonly


class PrintBufferType(USMPointerType):
    """The builtin ``print`` a kernel calls: its launch's output buffer (``uint __global *``).

    The layout is ``pysycl._core.abi.PrintType``'s; ``pysycl_numba.printing``
    rewrites each ``print(...)`` call into one record write.
    """

    def __init__(self) -> None:
        super().__init__(types.uint32)
        self.name = "sycl.kernel_print_buffer"

    @property
    def key(self) -> tuple[types.Type, bool]:
        return types.uint32, True


class PrintLayoutType(types.Type):
    """The layout of one kernel ``print`` call: string pieces and value positions (a tag).

    ``pieces`` is a tuple of ``str`` (literal text: strings, ``sep``, ``end``),
    ``int`` (the position of a value in the call's value tuple) and ``("f", position)``
    (an f-string's field, formatted as ``f"{x}"``, as in stream layouts).
    """

    def __init__(self, pieces: tuple[str | int | tuple[str, int], ...]) -> None:
        self.pieces = pieces
        super().__init__(name=f"sycl.print_layout{pieces!r}")

    @property
    def key(self) -> tuple[str | int | tuple[str, int], ...]:
        return self.pieces


class AssertLayoutType(types.Type):
    """The message layout of one kernel ``assert`` (a tag): ``str`` pieces and value
    positions, or None (no message; :mod:`pysycl_numba.asserts`)."""

    def __init__(self, pieces: tuple[str | int, ...] | None) -> None:
        self.pieces = pieces
        super().__init__(name=f"sycl.assert_layout{pieces!r}")

    @property
    def key(self) -> tuple[str | int, ...] | None:
        return self.pieces


class NdItemType(types.Type):
    """``sycl.nd_item<ndim>``: the parameter of an ``nd_range`` kernel.

    It carries no data: every query is an OpenCL work-item built-in call
    (``get_local_id``, ``get_group_id`` ...), which LLVM hoists, shares and
    deletes like arithmetic. The same holds for :class:`GroupType` and
    :class:`SubGroupType`.

    ``looped``: the nd_item of a looped nd_range (``pysycl._core.abi.IndexSpace.looped``),
    which a work-item runs as one of many: a value, its global id and the nd_range's global
    and local ranges, from which every query is computed. It has no group object, sub-group
    or barrier (a looped kernel never synchronises its work-group).
    """

    def __init__(self, ndim: int, looped: bool = False) -> None:
        self.ndim = ndim
        self.looped = looped
        super().__init__(name=f"sycl.nd_item<{ndim}>" + (" (looped)" if looped else ""))

    @property
    def key(self) -> tuple[int, bool]:
        return self.ndim, self.looped


class MultiPtrType(types.Type):
    """``acc.get_multi_ptr()`` of a 1-D accessor or local accessor (C++'s ``multi_ptr``): the
    accessor and an element offset, so that ``p + k``, ``p[i]`` and the memory operands of
    ``joint_matrix_load`` and ``async_work_group_copy`` keep the accessor's bounds checks
    and address space."""

    def __init__(self, acc: AccessorType) -> None:
        self.acc = acc
        super().__init__(name=f"sycl.multi_ptr<{acc}>")

    @property
    def key(self) -> AccessorType:
        return self.acc


class DeviceEventType(types.Type):
    """``sycl.device_event``: what ``async_work_group_copy`` returns, an ``i64``: on the PTX
    target (sm_80+) the copy's ``cp.async`` group -- its function's tag in the high 32
    bits, the group's number in that function in the low ones -- so that ``wait_for``
    waits for it and not for the groups committed after it
    (:mod:`pysycl_numba.overloads.async_copy_ptx`); 0 elsewhere (``wait_for`` is a
    barrier)."""

    def __init__(self) -> None:
        super().__init__(name="sycl.device_event")


class GroupType(types.Type):
    """``sycl.group<ndim>``: the work-group of the calling work-item."""

    def __init__(self, ndim: int) -> None:
        self.ndim = ndim
        super().__init__(name=f"sycl.group<{ndim}>")

    @property
    def key(self) -> int:
        return self.ndim


class SubGroupType(types.Type):
    """``sycl.sub_group``: the sub-group of the calling work-item (always 1-D)."""

    def __init__(self) -> None:
        super().__init__(name="sycl.sub_group")


class NdRangeType(types.Type):
    """``sycl.nd_range<ndim>`` returned by ``it.get_nd_range()``."""

    def __init__(self, ndim: int) -> None:
        self.ndim = ndim
        super().__init__(name=f"sycl.nd_range<{ndim}>")

    @property
    def key(self) -> int:
        return self.ndim


class KernelEnumType(types.Type):
    """A member of a SYCL enum used as a compile-time constant (``memory_order.relaxed``).

    The member is part of the type, so typing templates see the value (an
    ``atomic_ref``'s order and scope choose the LLVM instruction's ordering
    and ``syncscope``); the runtime value is a dummy byte.
    """

    def __init__(self, member: object) -> None:
        self.member = member
        super().__init__(name=f"sycl.{type(member).__name__.strip('_')}.{member.name}")  # type: ignore[attr-defined]

    @property
    def key(self) -> object:
        return self.member


class KernelEnumClassType(types.Type):
    """A SYCL enum class (``sycl.memory_order``) referenced in a kernel."""

    def __init__(self, cls: type) -> None:
        self.cls = cls
        super().__init__(name=f"sycl.{cls.__name__.strip('_')}")

    @property
    def key(self) -> type:
        return self.cls


class FunctorType(types.Type):
    """A SYCL function object (``sycl.plus()``) used in a kernel."""

    def __init__(self, op: str) -> None:
        self.op = op
        super().__init__(name=f"sycl.{op}")

    @property
    def key(self) -> str:
        return self.op


class AtomicRefType(types.Type):
    """``sycl.atomic_ref`` to one element: pointer plus order/scope in the type."""

    def __init__(self, dtype: types.Type, addrspace: int, order: str, scope: str) -> None:
        self.dtype = dtype
        self.addrspace = addrspace
        self.order = order
        self.scope = scope
        super().__init__(name=f"sycl.atomic_ref<{dtype}, {order}, {scope}, as{addrspace}>")

    @property
    def key(self) -> tuple[types.Type, int, str, str]:
        return self.dtype, self.addrspace, self.order, self.scope


class PrivateArrayType(types.Type):
    """``sycl.private_array(dtype, n)``: ``n`` elements in private (Function) memory."""

    def __init__(self, dtype: types.Type, size: int, shape: tuple[int, ...] | None = None) -> None:
        self.dtype = dtype
        self.size = size
        #: the extents of a multi-dimensional array (row-major), else None
        self.shape = shape
        dims = "x".join(map(str, shape)) if shape else str(size)
        super().__init__(name=f"sycl.private_array<{dtype}, {dims}>")

    @property
    def key(self) -> tuple[types.Type, int, tuple[int, ...] | None]:
        return self.dtype, self.size, self.shape


class JointMatrixType(PrivateArrayType):
    """``joint_matrix<Group, T, Use, Rows, Cols, Layout>`` (``sycl_ext_oneapi_matrix``):
    a private ``rows*cols`` tile of ``dtype`` (row-major); ``kind``/``use``/``layout`` are
    the members of ``pysycl._kernels.matrix``'s enums (see ``overloads/matrix.py``)."""

    def __init__(self, dtype: types.Type, kind: Any, use: Any, rows: int, cols: int,
                 layout: Any, scope: str = "sub_group") -> None:
        self.kind, self.use, self.rows, self.cols, self.layout = kind, use, rows, cols, layout
        #: "sub_group" (the extension's) or "work_group" (pysycl's: ``joint_matrix(g, ...)``)
        self.scope = scope
        super().__init__(dtype, rows * cols)
        self.name = (f"joint_matrix<{scope}, {kind.name}, use.{use.name}, {rows}, {cols}, "
                     f"layout.{layout.name}>")

    @property
    def key(self) -> tuple[Any, ...]:  # type: ignore[override]
        return self.kind, self.use, self.rows, self.cols, self.layout, self.scope


class KernelHandlerType(types.Type):
    """``sycl.kernel_handler``: the optional last kernel parameter (carries no data)."""

    def __init__(self) -> None:
        super().__init__(name="sycl.kernel_handler")


class SpecConstRefType(types.Type):
    """A captured ``sycl.specialization_id``: SpecId ``index``, value type, default.

    A compile-time tag with no OpenCL argument: the value is an ``OpSpecConstant``.
    """

    def __init__(self, index: int, dtype: types.Type, default: bool | int | float) -> None:
        self.index = index
        self.dtype = dtype
        self.default = default
        super().__init__(name=f"sycl.specialization_id<{index}, {dtype}, {default!r}>")

    @property
    def key(self) -> tuple[int, types.Type, tuple[str, bool | int | float]]:
        return self.index, self.dtype, (type(self.default).__name__, self.default)


def numba_type_of_dtype(dtype: np.dtype) -> types.Type:
    """Numba scalar type of a numpy dtype (``bool`` maps to ``boolean``)."""
    return numpy_support.from_dtype(np.dtype(dtype))


def tag() -> llir.Constant:
    """The value of a tag type (:class:`NdItemType`, enums, spec ids ...): an unused ``i8 0``."""
    return llir.Constant(llir.IntType(8), 0)

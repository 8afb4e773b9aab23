"""The ``spir_kernel`` entry point around a Numba-compiled kernel function.

The entry point's parameters are the flat OpenCL arguments of the captures
(``pysycl._core.abi``), then, for a ``range`` kernel, the user's range (one ``long``
per dimension, SYCL order). It rebuilds each capture's Numba value (accessor struct,
USM pointer, scalar) and calls the kernel function with Numba's calling convention,
passing the work-item's assert record (:mod:`pysycl_numba.asserts`). An ``nd_range``
kernel's ``nd_item`` queries the OpenCL work-item built-ins (SYCL dimension ``d`` of
an ``n``-D range is OpenCL dimension ``n - 1 - d``). A ``range`` kernel is launched as
the runtime chose for the device (:mod:`pysycl._kernels.rangesize`), and its work-items
run the items of the user's range as :mod:`pysycl_numba.range_items` says (on GPUs a
loop over them), calling the kernel function with each item's ``sycl.item``: the ids
and range the kernel sees are the user's.
The status code is ignored: a failing assert is in the record, which the entry
point publishes into the error buffer at its end (kernels with asserts).

A kernel with reductions has an entry point of its own
(:mod:`pysycl_numba.reduction_entry`), built with this module's :class:`EntryPoint`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from llvmlite import ir as llir

from pysycl._core.abi import AccessorType as AbiAccessor
from pysycl._core.abi import IndexSpace, PointerType, SameAsType
from pysycl_numba import asserts, bounds
from pysycl_numba._numba_compat import cgutils, types
from pysycl_numba.hier_types import HierGroupType
from pysycl_numba.range_items import run_items
from pysycl_numba.types import (
    AccessorType,
    ItemType,
    KernelHandlerType,
    NdItemType,
    SpecConstRefType,
    USMPointerType,
    tag,
)

if TYPE_CHECKING:
    from pysycl._core.abi import CaptureType
    from pysycl_numba._numba_compat import BaseContext, FunctionDescriptor

_I64 = llir.IntType(64)


def _flat_params(context: BaseContext, capty: types.Type, abity: CaptureType | None) -> list[llir.Type]:
    if isinstance(abity, SameAsType):
        return []  # the value of an earlier capture (the same local accessor)
    if isinstance(capty, types.BaseTuple):  # a tuple of numbers: its elements' arguments
        return [p for t in capty.types for p in _flat_params(context, t, None)]
    if isinstance(capty, SpecConstRefType):
        return []  # a specialization_id: the value is an OpSpecConstant, not an argument
    if isinstance(capty, AccessorType):
        ptr = context.get_data_type(capty.dtype).as_pointer(addrspace=capty.addrspace)
        return [ptr] + [_I64] * (len(capty.member_names()) - 1)
    if isinstance(capty, USMPointerType):  # one T addrspace(1)*: the value itself
        return [context.get_data_type(capty.dtype).as_pointer(addrspace=capty.addrspace)]
    if isinstance(capty, types.Boolean):
        # OpenCL forbids bool kernel arguments; the ABI sends uchar.
        return [llir.IntType(8)]
    if isinstance(capty, types.Complex):
        # Two real arguments: a by-value {float, float} struct argument crashes
        # Intel's OpenCL CPU compiler (the process aborts in clBuildProgram).
        part = context.get_value_type(capty.underlying_float)
        return [part, part]
    return [context.get_value_type(capty)]


def _build_capture(
    context: BaseContext, builder: llir.IRBuilder, capty: types.Type, params: list[llir.Argument],
    err: llir.Value | None = None, slot: int = 0, rec: llir.Value | None = None,
) -> llir.Value:
    if isinstance(capty, AccessorType):
        acc = cgutils.create_struct_proxy(capty)(context, builder)
        for name, value in zip(capty.member_names(), params, strict=True):
            setattr(acc, name, value)
        if capty.shape is not None:  # a specialised local accessor: constant ranges
            for d, n in enumerate(capty.shape):
                setattr(acc, f"range{d}", llir.Constant(_I64, n))
        if capty.checked:  # bounds-checked mode: error buffer, violation record, slot
            acc.err = err
            acc.rec = rec
            acc.slot = llir.Constant(llir.IntType(32), slot)
        return acc._getvalue()
    if isinstance(capty, SpecConstRefType):
        return tag()
    if isinstance(capty, types.BaseTuple):
        items = []
        pos = 0
        for t in capty.types:
            n = len(_flat_params(context, t, None))
            items.append(_build_capture(context, builder, t, params[pos:pos + n]))
            pos += n
        return context.make_tuple(builder, capty, items)
    if isinstance(capty, types.Complex):
        z = context.make_complex(builder, capty)
        z.real, z.imag = params
        return z._getvalue()
    (value,) = params
    if isinstance(capty, types.Boolean):
        return builder.icmp_unsigned("!=", value, value.type(0))
    return value


ERR_PARAM = llir.IntType(32).as_pointer(addrspace=1)


class EntryPoint:
    """An entry point being built: its module, function, builder and parameters.

    Parameters: the captures' flat arguments, then ``extra`` (reduction
    kernels), then the error buffer in bounds-checked mode or when the kernel has asserts.
    """

    def __init__(self, context: BaseContext, entry_name: str, capture_types: list[types.Type],
                 abi_types: list[CaptureType], extra: list[llir.Type], bounds_checked: bool,
                 has_asserts: bool = False) -> None:
        self.context = context
        self.module = context.create_module(f"pysycl.wrapper.{entry_name}")
        self.capture_types = capture_types
        self.abi_types = abi_types
        self.per_capture = [_flat_params(context, t, a)
                            for t, a in zip(capture_types, abi_types, strict=True)]
        for params, abity in zip(self.per_capture, abi_types, strict=True):
            if isinstance(abity, (AbiAccessor, PointerType)) \
                    and len(params) != abity.flat_arg_count():
                raise AssertionError(f"capture ABI mismatch: {abity} vs {len(params)} params")
        flat = [p for params in self.per_capture for p in params] + extra
        if bounds_checked or has_asserts:
            flat.append(ERR_PARAM)
        self.fn = llir.Function(self.module, llir.FunctionType(llir.VoidType(), flat),
                                name=entry_name)
        self.fn.calling_convention = "spir_kernel"
        self.builder = llir.IRBuilder(self.fn.append_basic_block("entry"))
        self.err = self.fn.args[-1] if bounds_checked or has_asserts else None
        self.rec = bounds.new_record(self.builder) if bounds_checked else None
        self.asserts = asserts.new_record(self.builder)  # every call passes it
        self.has_asserts = has_asserts
        ncap = sum(len(params) for params in self.per_capture)
        self.extra = list(self.fn.args[ncap:ncap + len(extra)])

    def capture_values(self, transform: Callable[[types.Type, list[llir.Value]],
                                                 list[llir.Value]] | None = None,
                       ) -> list[llir.Value]:
        """The Numba values of the captures, rebuilt from their flat arguments (each
        capture's passed through ``transform(type, args)`` first, where given)."""
        values: list[llir.Value] = []
        pos = 0
        for slot, (capty, params, abity) in enumerate(zip(self.capture_types, self.per_capture,
                                                          self.abi_types, strict=True)):
            if isinstance(abity, SameAsType):
                values.append(values[abity.index])
                continue
            args = list(self.fn.args[pos:pos + len(params)])
            pos += len(params)
            if transform is not None:
                args = transform(capty, args)
            values.append(_build_capture(self.context, self.builder, capty, args, self.err,
                                         slot, self.rec))
        return values

    def call(self, fndesc: FunctionDescriptor, argtypes: list[types.Type], values: list[llir.Value],
             ) -> llir.Value:
        """Call the lowered function ``fndesc`` with Numba's calling convention; its result."""
        conv = self.context.call_conv
        callee = self.module.globals.get(fndesc.mangled_name)  # called before: one epilogue
        if callee is None:                                      # serves two like reductions
            callee = llir.Function(self.module, conv.get_function_type(fndesc.restype, argtypes),
                                   name=fndesc.mangled_name)
        return conv.call_function(self.builder, callee, fndesc.restype, argtypes, values)[1]

    def finish(self) -> llir.Module:
        """Publish a bounds violation (bounds-checked mode) and a failed assert; return;
        the module."""
        if self.rec is not None:
            bounds.publish(self.builder, self.rec, self.err)
        if self.has_asserts:
            asserts.publish(self.builder, self.asserts, self.err)
        self.builder.ret_void()
        return self.module


def build_kernel_wrapper(
    context: BaseContext,
    fndesc: FunctionDescriptor,
    index: IndexSpace,
    capture_types: list[types.Type],
    abi_types: list[CaptureType],
    entry_name: str,
    bounds_checked: bool = False,
    has_asserts: bool = False,
    linear: bool = False,
    coarsen: bool = False,
) -> llir.Module:
    """Build the module holding the ``spir_kernel`` entry point.

    Args:
        context: the target context.
        fndesc: Numba's descriptor of the lowered kernel function.
        index: the launch's index space.
        capture_types: Numba types of the captures, in order.
        abi_types: ``pysycl._core.abi`` types of the captures, in order.
        entry_name: the entry point's name.
        bounds_checked: add the error buffer as the last parameter (bounds-checked mode).
        has_asserts: the kernel has asserts: the error buffer too, and the entry point
            publishes a failed assert there.
        linear: a ``range`` kernel's work-items loop over the items (PTX, for GPUs); else
            the launch is the n-D range and each work-item runs the item of its id
            (:mod:`pysycl_numba.range_items`, :func:`~.range_items.run_items`).
        coarsen: with ``linear``: a 1-D range's work-items run blocks of consecutive
            items with vector accesses where the memory allows them (``coarsened``), a
            2-D/3-D range's an n-D launch that covers it (``nd_items``); else a 1-D
            launch's linear loop (``grid_stride``: a kernel that prints).
    """
    n_range = index.ndim if index.kind == "range" else 0
    entry = EntryPoint(context, entry_name, capture_types, abi_types, [_I64] * n_range,
                   bounds_checked, has_asserts)
    argtypes: list[types.Type] = []
    values: list[llir.Value] = []
    if index.kind == "range":
        argtypes.append(ItemType(index.ndim))
    elif index.kind == "nd_range":
        # An nd_item carries no data: its queries call the work-item built-ins.
        argtypes.append(NdItemType(index.ndim))
        values.append(tag())
    elif index.kind == "hierarchical":  # the sycl.group: work-item built-ins too
        argtypes.append(HierGroupType(index.ndim))
        values.append(tag())
    for t in fndesc.argtypes[len(argtypes):len(fndesc.argtypes) - len(capture_types)]:
        if isinstance(t, KernelHandlerType):  # the trailing kernel_handler: no data
            argtypes.append(t)
            values.append(tag())
    captured = entry.capture_values()
    if index.kind == "range":  # the user's range is the extra arguments
        def emit(item: llir.Value, caps: list[llir.Value] = captured) -> object:
            return entry.call(fndesc, [*argtypes, *capture_types], [item, *values, *caps])
        run_items(context, entry, emit, linear, coarsen)
    else:
        entry.call(fndesc, [*argtypes, *capture_types], [*values, *captured])
    return entry.finish()

"""The ``spir_kernel`` entry point around a Numba-compiled kernel function.

The entry point's parameters are exactly the flat OpenCL arguments of the
captures (``pysycl._core.abi``). It rebuilds each capture's Numba value
(accessor struct, scalar), builds the ``sycl.item`` from OpenCL work-item
built-ins (SYCL dimension ``d`` of an ``n``-D range is OpenCL dimension
``n - 1 - d``), and calls the kernel function with Numba's calling
convention. The status code is ignored: kernels cannot raise.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir as llir

from pysycl._core.abi import AccessorType as AbiAccessor
from pysycl._core.abi import IndexSpace
from pysycl_numba import bounds, specconst
from pysycl_numba._numba_compat import cgutils, types
from pysycl_numba.targets.spirv import ocl
from pysycl_numba.types import AccessorType, ItemType, NdItemType

_I64 = llir.IntType(64)


def _flat_params(context: Any, capty: types.Type, abity: Any) -> list[llir.Type]:
    if isinstance(capty, types.BaseTuple):  # a tuple of numbers: its elements' arguments
        return [p for t in capty.types for p in _flat_params(context, t, None)]
    if specconst.is_spec_ref(capty):
        return []  # a specialization_id: the value is an OpSpecConstant, not an argument
    if isinstance(capty, AccessorType):
        ptr = context.get_data_type(capty.dtype).as_pointer(addrspace=capty.addrspace)
        return [ptr] + [_I64] * (len(capty.member_names()) - 1)
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
    context: Any, builder: llir.IRBuilder, capty: types.Type, params: list[llir.Argument],
    err: Any = None, slot: int = 0, rec: Any = None,
) -> Any:
    if isinstance(capty, AccessorType):
        acc = cgutils.create_struct_proxy(capty)(context, builder)
        for name, value in zip(capty.member_names(), params, strict=True):
            setattr(acc, name, value)
        if capty.checked:  # bounds-checked mode: error buffer, violation record, slot
            acc.err = err
            acc.rec = rec
            acc.slot = llir.Constant(llir.IntType(32), slot)
        return acc._getvalue()
    if specconst.is_spec_ref(capty):
        return specconst.tag()
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


def build_item(context: Any, builder: llir.IRBuilder, ndim: int) -> Any:
    """A ``sycl.item<ndim>`` value of the current work-item."""
    item = cgutils.create_struct_proxy(ItemType(ndim))(context, builder)
    for d in range(ndim):
        ocl_dim = ndim - 1 - d
        setattr(item, f"id{d}", ocl.work_item_query(builder, "get_global_id", ocl_dim))
        setattr(item, f"range{d}", ocl.work_item_query(builder, "get_global_size", ocl_dim))
    return item._getvalue()


ERR_PARAM = llir.IntType(32).as_pointer(addrspace=1)


def build_kernel_wrapper(
    context: Any,
    fndesc: Any,
    index: IndexSpace,
    capture_types: list[types.Type],
    abi_types: list[Any],
    entry_name: str,
    bounds_checked: bool = False,
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
    """
    module = context.create_module(f"pysycl.wrapper.{entry_name}")
    per_capture = [_flat_params(context, t, a) for t, a in zip(capture_types, abi_types, strict=True)]
    for params, abity in zip(per_capture, abi_types, strict=True):
        if isinstance(abity, AbiAccessor) and len(params) != abity.flat_arg_count():
            raise AssertionError(f"accessor ABI mismatch: {abity} vs {len(params)} params")
    flat = [p for params in per_capture for p in params]
    if bounds_checked:
        flat.append(ERR_PARAM)
    fn = llir.Function(module, llir.FunctionType(llir.VoidType(), flat), name=entry_name)
    err = fn.args[-1] if bounds_checked else None
    fn.calling_convention = "spir_kernel"
    builder = llir.IRBuilder(fn.append_basic_block("entry"))
    rec = bounds.new_record(builder) if bounds_checked else None

    argtypes: list[types.Type] = []
    values: list[Any] = []
    if index.kind == "range":
        argtypes.append(ItemType(index.ndim))
        values.append(build_item(context, builder, index.ndim))
    elif index.kind == "nd_range":
        # An nd_item carries no data: its queries call the work-item built-ins.
        argtypes.append(NdItemType(index.ndim))
        values.append(llir.Constant(llir.IntType(8), 0))
    for t in fndesc.argtypes[len(argtypes):len(fndesc.argtypes) - len(capture_types)]:
        if specconst.is_kernel_handler(t):  # the trailing kernel_handler: no data
            argtypes.append(t)
            values.append(specconst.tag())
    pos = 0
    for slot, (capty, params) in enumerate(zip(capture_types, per_capture, strict=True)):
        args = list(fn.args[pos : pos + len(params)])
        pos += len(params)
        argtypes.append(capty)
        values.append(_build_capture(context, builder, capty, args, err, slot, rec))

    callee_type = context.call_conv.get_function_type(fndesc.restype, argtypes)
    callee = llir.Function(module, callee_type, name=fndesc.mangled_name)
    context.call_conv.call_function(builder, callee, fndesc.restype, argtypes, values)
    if bounds_checked:
        bounds.publish(builder, rec, err)
    builder.ret_void()
    return module

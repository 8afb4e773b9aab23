"""SYCL 2020's asynchronous work-group copies (§4.9.1.5 ``nd_item``, §4.9.1.7 ``group``).

``ev = it.async_work_group_copy(dest, src, num_elements[, stride])`` (and the same on
``it.get_group()``) copies ``num_elements`` elements between global memory and local
memory, every work-item of the group calling it with the same arguments; ``it.wait_for(ev,
...)`` (or ``ev.wait()``) waits until the copies are complete and visible to the whole
group. One operand is local memory -- a 1-D ``local_accessor`` or ``(local_accessor,
offset)`` -- the other global memory: a 1-D accessor, ``(accessor, offset)``, or a USM pointer (``p``,
``p + offset``); offsets and ``num_elements`` count elements of the accessor's type, which
both sides share. ``stride`` (default 1) is the source's element stride when the
destination is local (a gather) and the destination's when it is global (a scatter),
as in the spec.

Lowering: the group's work-items share the copy (work-item ``l`` of ``L`` copies elements
``l, l + L, ...``); ``wait_for`` is a work-group barrier fencing local and global memory.
On NVIDIA GPUs of compute capability 8.0 and newer, a global-to-local copy of 4-, 8- or
16-byte elements with stride 1 issues ``cp.async`` per element (no register staging;
:mod:`pysycl_numba.overloads.async_copy_ptx`) and ``wait_for`` waits for the copies of its
events (``cp.async.wait_group``: copies issued after them stay in flight) before the
barrier.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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
from pysycl_numba.overloads import async_copy_ptx as nv
from pysycl_numba.overloads.index import linear, product
from pysycl_numba.overloads.multi_ptr import memory_operand, operand_values
from pysycl_numba.overloads.ndrange import work_item_queries
from pysycl_numba.targets.spirv import ocl
from pysycl_numba.types import (
    AccessorType,
    DeviceEventType,
    GroupType,
    NdItemType,
    USMPointerType,
    index_type,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pysycl_numba._numba_compat import BaseContext, Signature

typing_registry = TypingRegistry()
lowering_registry = LoweringRegistry("pysycl.async_copy")
lower = lowering_registry.lower

_I32 = llir.IntType(32)
device_event = DeviceEventType()
_USAGE = ("async_work_group_copy(dest, src, num_elements[, stride]): one of dest and src is "
          "local memory (a 1-D local_accessor, (local_accessor, offset) or its get_multi_ptr() + "
          "offset), the other global memory (a 1-D accessor, (accessor, offset), "
          "acc.get_multi_ptr() + offset or a USM pointer p + offset) of the same "
          "element type; num_elements and stride integers")


# ==================================================================== typing
def _is_local(t: types.Type) -> bool:
    return isinstance(t, AccessorType) and t.space == "local"


def _copy_sig(args: tuple, kws: dict) -> Signature:
    if kws or len(args) not in (3, 4):
        raise errors.TypingError(_USAGE)
    dest, src = memory_operand(args[0]), memory_operand(args[1])
    if dest is None or src is None or not all(isinstance(a, types.Integer) for a in args[2:]):
        raise errors.TypingError(f"{_USAGE}; got {', '.join(map(str, args))}")
    if _is_local(dest[0]) == _is_local(src[0]):
        where = "local" if _is_local(dest[0]) else "global"
        raise errors.TypingError(f"async_work_group_copy copies between local and global "
                                 f"memory; dest and src are both {where} memory")
    if dest[0].dtype != src[0].dtype:
        raise errors.TypingError(f"async_work_group_copy: dest holds {dest[0].dtype}, src "
                                 f"{src[0].dtype} (the element types must be the same)")
    d = dest[0]
    if (isinstance(d, AccessorType) and not d.writable) or (
            isinstance(d, USMPointerType) and d.readonly):
        raise errors.TypingError(f"async_work_group_copy writes into dest, a read-only {d}")
    return signature(device_event, *args)


def _wait_sig(args: tuple, kws: dict) -> Signature:
    if kws or not all(isinstance(a, DeviceEventType) for a in args):
        raise errors.TypingError("wait_for(*events) takes the sycl.device_event values "
                                 f"async_work_group_copy returned; got {', '.join(map(str, args))}")
    return signature(types.none, *args)


def _copies(recv: type, name: str) -> type:
    """The typing template of ``async_work_group_copy`` and ``wait_for`` on ``recv``."""

    class Copies(AttributeTemplate):
        key = recv

        @bound_function(f"{name}.async_work_group_copy")
        def resolve_async_work_group_copy(self, t: types.Type, args: tuple,
                                          kws: dict) -> object:
            return None if getattr(t, "looped", False) else _copy_sig(args, kws)

        @bound_function(f"{name}.wait_for")
        def resolve_wait_for(self, t: types.Type, args: tuple, kws: dict) -> object:
            return None if getattr(t, "looped", False) else _wait_sig(args, kws)

    Copies.__name__ = Copies.__qualname__ = f"{recv.__name__}Copies"
    return typing_registry.register_attr(Copies)


_copies(NdItemType, "nd_item")
_copies(GroupType, "group")


@typing_registry.register_attr
class DeviceEventAttributes(AttributeTemplate):
    """``ev.wait()``."""

    key = DeviceEventType

    @bound_function("device_event.wait")
    def resolve_wait(self, ev: DeviceEventType, args: tuple, kws: dict) -> object:
        return signature(types.none) if not args and not kws else None


# ==================================================================== lowering
def _copy(dst, doff, src, soff, n, dstep, sstep, lid, size):  # type: ignore[no-untyped-def]
    k = lid
    while k < n:
        dst[doff + k * dstep] = src[soff + k * sstep]
        k += size


@lower("nd_item.async_work_group_copy", NdItemType, types.VarArg(types.Any))
@lower("group.async_work_group_copy", GroupType, types.VarArg(types.Any))
def lower_copy(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
               args: Sequence[llir.Value]) -> llir.Value:
    """The group's work-items share the copy, element ``l + kL`` by work-item ``l``."""
    ndim = sig.args[0].ndim
    dt, dv, doff = operand_values(context, builder, sig.args[1], args[1])
    st, sv, soff = operand_values(context, builder, sig.args[2], args[2])
    n = context.cast(builder, args[3], sig.args[3], index_type)
    one = context.get_constant(index_type, 1)
    stride = context.cast(builder, args[4], sig.args[4], index_type) if len(args) == 5 else one
    dstep, sstep = (one, stride) if _is_local(dt) else (stride, one)
    lid = linear(builder, work_item_queries(builder, "get_local_id", ndim),
                 work_item_queries(builder, "get_local_size", ndim))
    size = product(builder, work_item_queries(builder, "get_local_size", ndim))
    isig = signature(types.none, dt, index_type, st, index_type, *[index_type] * 5)

    def plain() -> None:
        context.compile_internal(builder, _copy, isig,
                                 [dv, doff, sv, soff, n, dstep, sstep, lid, size])
    if context.image_format == "ptx" and _is_local(dt):
        if nv.usable(dt, st):
            contiguous = builder.icmp_unsigned("==", stride, one)
            with builder.if_else(contiguous, likely=True) as (fast, strided):
                with fast:
                    nv.lower_copy(context, builder, dt, dv, doff, st, sv, soff, n, lid, size,
                                  plain)
                with strided:
                    plain()
            return nv.event(builder)
    plain()
    return _NO_EVENT


_NO_EVENT = llir.Constant(llir.IntType(64), 0)


def _wait(context: BaseContext, builder: llir.IRBuilder, events: Sequence[llir.Value]) -> None:
    if context.image_format == "ptx":
        nv.wait(builder, events)
    ocl.call(builder, ocl.mangle("barrier", "uint"), llir.VoidType(), [_I32(3)], pure=False,
             convergent=True)


@lower("nd_item.wait_for", NdItemType, types.VarArg(types.Any))
@lower("group.wait_for", GroupType, types.VarArg(types.Any))
def lower_wait_for(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                   args: Sequence[llir.Value]) -> llir.Value:
    """The events' copies complete, then a work-group barrier (local and global memory)."""
    if len(args) > 1:
        _wait(context, builder, args[1:])
    return context.get_dummy_value()


@lower("device_event.wait", DeviceEventType)
def lower_event_wait(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                     args: Sequence[llir.Value]) -> llir.Value:
    """``ev.wait()``: as ``wait_for(ev)``."""
    _wait(context, builder, args[:1])
    return context.get_dummy_value()

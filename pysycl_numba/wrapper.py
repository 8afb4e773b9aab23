"""The ``spir_kernel`` entry point around a Numba-compiled kernel function.

The entry point's parameters are the flat OpenCL arguments of the captures
(``pysycl._core.abi``), then, for a ``range`` kernel, the user's range (one ``long``
per dimension, SYCL order). It rebuilds each capture's Numba value (accessor struct,
USM pointer, scalar) and calls the kernel function with Numba's calling convention,
passing the work-item's assert record (:mod:`pysycl_numba.asserts`). An ``nd_range``
kernel's ``nd_item`` queries the OpenCL work-item built-ins (SYCL dimension ``d`` of
an ``n``-D range is OpenCL dimension ``n - 1 - d``). A ``range`` kernel is launched
1-D with as many work-items as the runtime chose for the device
(:mod:`pysycl._kernels.rangesize`), and each work-item loops over items of the user's
range (:func:`grid_stride`), calling the kernel function with each item's
``sycl.item``: the ids and range the kernel sees are the user's.
The status code is ignored: a failing assert is in the record, which the entry
point publishes into the error buffer at its end (kernels with asserts).

A kernel with reductions has an entry point of its own
(:mod:`pysycl_numba.reduction_entry`), built with this module's pieces.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from llvmlite import ir as llir

from pysycl._core.abi import AccessorType as AbiAccessor
from pysycl._core.abi import IndexSpace, PointerType, SameAsType
from pysycl_numba import asserts, bounds
from pysycl_numba._numba_compat import cgutils, types
from pysycl_numba.hier_types import HierGroupType
from pysycl_numba.targets.spirv import ocl
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


class Entry:
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
        linear: a ``range`` kernel's work-items loop over the items of a 1-D launch
            (:func:`grid_stride`: PTX, for GPUs); else the launch is the n-D range and
            each work-item runs the item of its id (:func:`native_items`).
        coarsen: with ``linear``, a 1-D range's work-items run blocks of :data:`COARSEN`
            consecutive items where the memory allows vector accesses (:func:`coarsened`).
    """
    n_range = index.ndim if index.kind == "range" else 0
    entry = Entry(context, entry_name, capture_types, abi_types, [_I64] * n_range,
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
        _range_items(context, entry, emit, linear, coarsen and index.ndim == 1)
    else:
        entry.call(fndesc, [*argtypes, *capture_types], [*values, *captured])
    return entry.finish()


def _range_items(context: BaseContext, entry: Entry, emit: Callable[..., object],
                 linear: bool, coarsen: bool) -> None:
    """A ``range`` kernel's items, each through ``emit(item)``: see :func:`native_items`,
    :func:`grid_stride`, :func:`coarsened`."""
    if not linear:
        native_items(context, entry.builder, entry.extra, entry, emit)
    elif coarsen:
        coarsened(context, entry, emit)
    else:
        with grid_stride(context, entry.builder, entry.extra, entry) as item:
            emit(item)


def native_items(context: BaseContext, builder: llir.IRBuilder, rng: list[llir.Value],
                 entry: Entry, emit: Callable[[llir.Value], object]) -> None:
    """A ``range`` kernel's item on an n-D launch of exactly the user's range ``rng``
    (kernel arguments, SYCL order; OpenCL dimension ``n - 1 - d`` is SYCL's ``d``):
    ``emit(item)`` runs the body for the work-item's own id (SPIR-V: the launch is the
    range, in work-groups the runtime chose, :mod:`pysycl._kernels.rangesize`)."""
    n = len(rng)
    ids = [ocl.work_item_query(builder, "get_global_id", n - 1 - d) for d in range(n)]
    item = cgutils.create_struct_proxy(ItemType(n))(context, builder)
    for d in range(n):
        setattr(item, f"id{d}", ids[d])
        setattr(item, f"range{d}", rng[d])
    emit(item._getvalue())
    if entry.has_asserts or entry.rec is not None:
        lin = ids[0]
        for d in range(1, n):
            lin = builder.add(builder.mul(lin, rng[d]), ids[d])
        note_item(entry, builder, lin)


def note_item(entry: Entry, builder: llir.IRBuilder, lin: llir.Value) -> None:
    """After the user's function ran item ``lin`` (linear, row-major): a failed assert or
    bounds violation it had reports that item (the host unravels it in the user's range)."""
    if entry.has_asserts:
        asserts.note_linear_id(builder, entry.asserts, lin)
    if entry.rec is not None:
        bounds.note_linear_id(builder, entry.rec, lin)


@contextmanager
def grid_stride(context: BaseContext, builder: llir.IRBuilder, rng: list[llir.Value],
                entry: Entry) -> Iterator[llir.Value]:
    """A ``range`` kernel's loop over the user's range ``rng`` (kernel arguments, SYCL
    order): the launch is 1-D with as many work-items as the runtime chose (G), and
    work-item ``g`` runs items ``g, g + G, g + 2G, ...`` in linear (row-major) order. The
    body runs with the ``sycl.item`` of each (its ids and range the user's); after it, a
    failed assert or bounds violation notes the item's linear id, not the work-item's.

    An n-D id is unravelled once per work-item; each step adds G's own unravelled digits
    with a carry (compares and selects, no division per item).
    """
    n = len(rng)
    lin = ocl.work_item_query(builder, "get_global_id", 0)
    stride = ocl.work_item_query(builder, "get_global_size", 0)
    total = rng[0]
    for e in rng[1:]:
        total = builder.mul(total, e)
    with builder.if_then(builder.icmp_signed("<", lin, total), likely=True):
        ids = [cgutils.alloca_once_value(builder, v) for v in _unravel(builder, lin, rng)]
        steps = _unravel(builder, stride, rng)  # dimension 0: may exceed its range
        with cgutils.for_range_slice(builder, lin, total, stride) as (i, _count):
            cur = [builder.load(p) for p in ids]
            item = cgutils.create_struct_proxy(ItemType(n))(context, builder)
            for d in range(n):
                setattr(item, f"id{d}", cur[d])
                setattr(item, f"range{d}", rng[d])
            yield item._getvalue()
            note_item(entry, builder, i)
            carry = _I64(0)
            for d in range(n - 1, 0, -1):
                t = builder.add(builder.add(cur[d], steps[d]), carry)
                wrap = builder.icmp_unsigned(">=", t, rng[d])
                builder.store(builder.select(wrap, builder.sub(t, rng[d]), t), ids[d])
                carry = builder.zext(wrap, _I64)
            builder.store(builder.add(builder.add(cur[0], steps[0]), carry), ids[0])


def _unravel(builder: llir.IRBuilder, lin: llir.Value, rng: list[llir.Value]) -> list[llir.Value]:
    """The row-major digits of ``lin`` in range ``rng`` (dimension 0: the rest, unbounded)."""
    out: list[llir.Value] = [lin] * len(rng)
    rest = lin
    for d in range(len(rng) - 1, 0, -1):
        out[d] = builder.urem(rest, rng[d])
        rest = builder.udiv(rest, rng[d])
    out[0] = rest
    return out


#: Consecutive items a work-item of a coarsened 1-D ``range`` kernel runs in a row (the
#: runtime sizes its launch for it: ``pysycl._kernels.rangesize.COARSEN``).
COARSEN = 4
_VECTOR_BYTES = 16  # a 128-bit load or store


def coarsened(context: BaseContext, entry: Entry, emit: Callable[..., object]) -> None:
    """A 1-D ``range`` kernel's items in blocks of :data:`COARSEN` consecutive ones (PTX).

    Where every captured global pointer (a USM pointer, an accessor's data at its offset) is
    16-byte aligned -- checked at run time, the same for all work-items -- work-item ``g``
    of ``G`` runs the blocks ``g, g + G, ...`` (:func:`_blocks`), with the captures rebuilt
    from pointers whose low bits are masked off (:func:`aligned_captures`): LLVM then knows
    their alignment, and the block's accesses of consecutive elements become 128-bit ones
    (a triad: ``ld.global.v4``/``st.global.v4``). Elsewhere (a pointer that is not aligned):
    the plain :func:`grid_stride` loop. Either way every item runs once with its own
    ``sycl.item``; work-items are never ordered, so running consecutive items in one is
    always allowed."""
    builder = entry.builder
    rng = entry.extra
    fast, every = aligned_captures(context, entry)
    with builder.if_else(every, likely=True) as (vector, plain):
        with vector:
            _blocks(context, entry, rng[0], lambda item: emit(item, fast))
        with plain, grid_stride(context, builder, rng, entry) as item:
            emit(item)


def aligned_captures(context: BaseContext, entry: Entry) -> tuple[list[llir.Value], llir.Value]:
    """(the captures rebuilt from pointers whose low 4 bits are masked off, whether every
    captured global pointer -- a USM pointer, an accessor's data at its offset -- is 16-byte
    aligned: then the masked values are the captures' own, and LLVM knows their alignment).
    A bounds-checked accessor is not masked (its accesses stay scalar)."""
    builder = entry.builder
    ok: list[llir.Value] = []

    def aligned(capty: types.Type, args: list[llir.Value]) -> list[llir.Value]:
        if isinstance(capty, AccessorType) and capty.space == "global" and not capty.checked:
            size = context.get_abi_sizeof(context.get_data_type(capty.dtype))
            step = _VECTOR_BYTES // math.gcd(size, _VECTOR_BYTES)  # elements per 16 bytes
            base, offset = _masked(builder, args[0], ok), args[1]
            if step > 1:
                mask = _I64(step - 1)
                ok.append(builder.icmp_unsigned("==", builder.and_(offset, mask), _I64(0)))
                offset = builder.and_(offset, _I64(~(step - 1)))
            return [base, offset, *args[2:]]
        if isinstance(capty, USMPointerType):
            return [_masked(builder, args[0], ok)]
        return args

    fast = entry.capture_values(aligned)
    every = ok[0] if ok else llir.Constant(llir.IntType(1), 1)
    for c in ok[1:]:
        every = builder.and_(every, c)
    return fast, every


def _masked(builder: llir.IRBuilder, p: llir.Value, ok: list[llir.Value]) -> llir.Value:
    """``p`` with its low 4 bits cleared (the same pointer where ``ok`` holds, to which its
    alignment test is appended)."""
    bits = builder.ptrtoint(p, _I64)
    ok.append(builder.icmp_unsigned("==", builder.and_(bits, _I64(_VECTOR_BYTES - 1)), _I64(0)))
    return builder.inttoptr(builder.and_(bits, _I64(-_VECTOR_BYTES)), p.type)


def run_item(context: BaseContext, entry: Entry, i: llir.Value, n: llir.Value,
             emit: Callable[[llir.Value], object]) -> list[llir.Instruction]:
    """Item ``i`` of a 1-D range of ``n`` through ``emit(item)``, then its linear id noted
    (:func:`note_item`); the instructions this added to the builder's block."""
    builder = entry.builder
    before = len(builder.block.instructions)
    item = cgutils.create_struct_proxy(ItemType(1))(context, builder)
    item.id0 = i
    item.range0 = n
    emit(item._getvalue())
    note_item(entry, builder, i)
    return builder.block.instructions[before:]


def _blocks(context: BaseContext, entry: Entry, n: llir.Value,
            emit: Callable[[llir.Value], object]) -> None:
    """Items ``0 .. n`` of a 1-D range: whole blocks of :data:`COARSEN` consecutive items
    grid-strided over the work-items, then the rest (fewer than :data:`COARSEN`) one per
    work-item, grid-strided too (a launch may have fewer work-items than that); each item
    of a block in an alias scope of its own (:class:`ItemScopes`)."""
    builder = entry.builder
    gid = ocl.work_item_query(builder, "get_global_id", 0)
    stride = ocl.work_item_query(builder, "get_global_size", 0)
    whole = builder.udiv(n, _I64(COARSEN))
    scopes = ItemScopes(builder.module, COARSEN)
    with cgutils.for_range_slice(builder, gid, whole, stride) as (b, _count):
        first = builder.mul(b, _I64(COARSEN))
        for k in range(COARSEN):
            scopes.mark(k, run_item(context, entry, builder.add(first, _I64(k)) if k else first,
                                    n, emit))
    rest = builder.add(builder.mul(whole, _I64(COARSEN)), gid)
    with cgutils.for_range_slice(builder, rest, n, stride) as (i, _count):  # < COARSEN items
        run_item(context, entry, i, n, emit)


class ItemScopes:
    """Alias scopes of the items one work-item runs together, one per item slot.

    Each item's call of the user's function is in its own scope and declared not to alias
    the other slots' (``!alias.scope``/``!noalias``, which inlining hands on to every
    access of the body): the items are distinct work-items, which SYCL never orders, so
    any interleaving of their accesses is one the device could have run. LLVM may then
    move the items' loads ahead of the others' stores, and its load/store vectoriser joins
    consecutive accesses into vector ones (fences and atomics keep their order: a fence is
    no access of a scope). What the entry point itself does between the calls (a failed
    assert's item noted) carries no scope and keeps its place."""

    def __init__(self, module: llir.Module, count: int) -> None:
        domain = Distinct(module, "pysycl.items")
        scopes = [Distinct(module, f"pysycl.item{k}", domain) for k in range(count)]
        self._mine = [module.add_metadata([s]) for s in scopes]
        self._others = [module.add_metadata([s for s in scopes if s is not mine])
                        for mine in scopes]

    def mark(self, slot: int, instructions: list[llir.Instruction]) -> None:
        """Put the calls among ``instructions`` in slot ``slot``'s scope."""
        for ins in instructions:
            if isinstance(ins, llir.CallInstr):
                ins.set_metadata("alias.scope", self._mine[slot])
                ins.set_metadata("noalias", self._others[slot])


class Distinct(llir.values.MDValue):
    """A ``distinct`` metadata node that refers to itself first: an alias scope domain
    (``name``) or a scope of ``domain``."""

    def __init__(self, module: llir.Module, name: str, domain: Distinct | None = None) -> None:
        super().__init__(module, [], name=str(len(module.metadata)))
        rest = [domain] if domain is not None else []
        self.operands = (self, *rest, llir.MetaDataString(module, name))

    def descr(self, buf: list[str]) -> None:
        buf.append("distinct ")
        super().descr(buf)

    def __eq__(self, other: object) -> bool:  # distinct: itself only (and no recursion)
        return self is other

    def __hash__(self) -> int:
        return id(self)

"""``sycl.atomic_ref`` and ``sycl.atomic_fence``: typing and lowering.

``atomic_ref(acc, i, order, scope[, space])`` is a pointer to ``acc[i]`` in
the accessor's address space (:class:`~pysycl_numba.types.AtomicRefType`);
``atomic_ref(p, i, ...)`` on a captured USM pointer one to ``p[i]`` in global
memory (a ``readonly`` pointer's atomic_ref types, and
:class:`pysycl_numba.passes.ValidateTypedKernel` rejects it at its line).
Integer operations are LLVM ``atomicrmw`` / ``cmpxchg`` (→ ``OpAtomic*``) with
the order mapped to LLVM orderings and the scope as ``syncscope``; ``load`` and
``store`` are ``__spirv_AtomicLoad``/``__spirv_AtomicStore`` for SPIR-V and
``load``/``store atomic`` for PTX (:func:`_spirv_atomic` says why);
floating-point ``fetch_add/sub/min/max``, ``exchange`` and
``compare_exchange`` work on the integer bit pattern (a ``cmpxchg`` loop), so
they never need ``SPV_EXT_shader_atomic_float_add`` (whose absence makes LLVM
abort).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir as llir

from pysycl._core.memory_model import memory_order, memory_scope
from pysycl._kernels.kernel_api import _address_space, atomic_fence, atomic_ref
from pysycl_numba._numba_compat import (
    AbstractTemplate,
    AttributeTemplate,
    LoweringRegistry,
    TypingRegistry,
    bound_function,
    signature,
    types,
)
from pysycl_numba.overloads.accessor import element_pointer, normalize_index
from pysycl_numba.overloads.constants import enum_member
from pysycl_numba.overloads.pointer import element_address, pointer_index
from pysycl_numba.targets.spirv import ocl
from pysycl_numba.types import (
    ADDRSPACE_GLOBAL,
    AccessorType,
    AtomicRefType,
    KernelEnumType,
    USMPointerType,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from pysycl_numba._numba_compat import BaseContext, Signature

typing_registry = TypingRegistry()
lowering_registry = LoweringRegistry("pysycl.atomics")
lower = lowering_registry.lower

_I32 = llir.IntType(32)
ATOMIC_TYPES = (types.int32, types.uint32, types.int64, types.uint64, types.float32,
                types.float64)


def _order_scope_space(args: tuple, space_name: str) -> tuple[str, str] | None:
    """(order, scope) names of ``atomic_ref``'s arguments 2.., if they are valid."""
    order = enum_member(args[2], memory_order)
    scope = enum_member(args[3], memory_scope)
    if order is None or scope is None:
        return None
    if len(args) == 5:
        space = enum_member(args[4], _address_space)
        if space is None or space.name not in (space_name, "generic_space"):
            return None
    return order.name, scope.name


@typing_registry.register_global(atomic_ref)
class AtomicRefCtor(AbstractTemplate):
    """``sycl.atomic_ref(acc_or_pointer, index, order, scope[, address_space])``."""

    def generic(self, args: tuple, kws: dict) -> object:
        if kws or len(args) not in (4, 5):
            return None
        target, idx = args[0], args[1]
        if isinstance(target, USMPointerType):
            norm, space, addrspace = pointer_index(idx), "global_space", ADDRSPACE_GLOBAL
        elif isinstance(target, AccessorType) and target.mode != "read":
            norm = normalize_index(idx, target.ndim)
            space = "local_space" if target.space == "local" else "global_space"
            addrspace = target.addrspace
        else:
            return None
        how = _order_scope_space(args, space)
        if norm is None or how is None or target.dtype not in ATOMIC_TYPES:
            return None
        ty = AtomicRefType(target.dtype, addrspace, *how)
        return signature(ty, target, norm, *args[2:])


@lower(atomic_ref, AccessorType, types.Any, KernelEnumType, KernelEnumType)
@lower(atomic_ref, AccessorType, types.Any, KernelEnumType, KernelEnumType, KernelEnumType)
def lower_atomic_ref(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                     args: Sequence[llir.Value]) -> llir.Value:
    """The element pointer."""
    return element_pointer(context, builder, sig.args[0], args[0], sig.args[1], args[1])


@lower(atomic_ref, USMPointerType, types.Any, KernelEnumType, KernelEnumType)
@lower(atomic_ref, USMPointerType, types.Any, KernelEnumType, KernelEnumType, KernelEnumType)
def lower_pointer_atomic_ref(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                             args: Sequence[llir.Value]) -> llir.Value:
    """``&p[i]`` (no bounds check, also in bounds-checked mode)."""
    return element_address(context, builder, sig.args[1], args[0], args[1])


_SCOPES = {"work_item": "singlethread", "sub_group": "subgroup", "work_group": "workgroup",
           "device": "device", "system": None}
_RMW_ORDER = {"relaxed": "monotonic", "acquire": "acquire", "release": "release",
              "acq_rel": "acq_rel", "seq_cst": "seq_cst"}
_LOAD_ORDER = {"relaxed": "monotonic", "acquire": "acquire", "release": "seq_cst",
               "acq_rel": "acquire", "seq_cst": "seq_cst"}
_STORE_ORDER = {"relaxed": "monotonic", "acquire": "seq_cst", "release": "release",
                "acq_rel": "release", "seq_cst": "seq_cst"}
_RELAXED = dict.fromkeys(_RMW_ORDER, "monotonic")
_FAIL_ORDER = {"relaxed": "monotonic", "acquire": "acquire", "release": "monotonic",
               "acq_rel": "acquire", "seq_cst": "seq_cst"}


def _ordering(ty: AtomicRefType, table: dict[str, str]) -> str:
    # llvmlite prints the ordering verbatim: the syncscope rides along with it.
    scope = _SCOPES[ty.scope]
    order = table[ty.order]
    return order if scope is None else f'syncscope("{scope}") {order}'


def _is_float(ty: AtomicRefType) -> bool:
    return isinstance(ty.dtype, types.Float)


def _int_type(ty: AtomicRefType) -> llir.IntType:
    return llir.IntType(ty.dtype.bitwidth)


def _to_bits(builder: llir.IRBuilder, ty: AtomicRefType, v: llir.Value) -> llir.Value:
    return builder.bitcast(v, _int_type(ty)) if _is_float(ty) else v


def _from_bits(builder: llir.IRBuilder, ty: AtomicRefType, v: llir.Value) -> llir.Value:
    if not _is_float(ty):
        return v
    return builder.bitcast(v, llir.FloatType() if ty.dtype.bitwidth == 32 else llir.DoubleType())


def _align(ty: AtomicRefType) -> int:
    return ty.dtype.bitwidth // 8


@typing_registry.register_attr
class AtomicRefAttributes(AttributeTemplate):
    """Methods of ``sycl.atomic_ref``."""

    key = AtomicRefType

    @bound_function("atomic_ref.load")
    def resolve_load(self, a: AtomicRefType, args: tuple, kws: dict) -> object:
        return signature(a.dtype) if not args and not kws else None

    def _value(self, a: AtomicRefType, args: tuple, kws: dict, ret: types.Type) -> object:
        if kws or len(args) != 1 or self.context.can_convert(args[0], a.dtype) is None:
            return None
        return signature(ret, a.dtype)

    @bound_function("atomic_ref.store")
    def resolve_store(self, a: AtomicRefType, args: tuple, kws: dict) -> object:
        return self._value(a, args, kws, types.none)

    @bound_function("atomic_ref.exchange")
    def resolve_exchange(self, a: AtomicRefType, args: tuple, kws: dict) -> object:
        return self._value(a, args, kws, a.dtype)

    def _cas(self, a: AtomicRefType, args: tuple, kws: dict) -> object:
        if kws or len(args) != 2 or any(self.context.can_convert(x, a.dtype) is None
                                         for x in args):
            return None
        return signature(types.Tuple((types.boolean, a.dtype)), a.dtype, a.dtype)

    @bound_function("atomic_ref.compare_exchange_strong")
    def resolve_compare_exchange_strong(self, a: AtomicRefType, args: tuple, kws: dict) -> object:
        return self._cas(a, args, kws)

    @bound_function("atomic_ref.compare_exchange_weak")
    def resolve_compare_exchange_weak(self, a: AtomicRefType, args: tuple, kws: dict) -> object:
        return self._cas(a, args, kws)

    def _fetch(self, a: AtomicRefType, args: tuple, kws: dict, ints_only: bool) -> object:
        if ints_only and _is_float(a):
            return None
        return self._value(a, args, kws, a.dtype)


def _add_fetch(op: str, ints_only: bool) -> None:
    @bound_function(f"atomic_ref.fetch_{op}")
    def method(self: AtomicRefAttributes, a: AtomicRefType, args: tuple, kws: dict) -> object:
        return self._fetch(a, args, kws, ints_only)

    setattr(AtomicRefAttributes, f"resolve_fetch_{op}", method)


for _op, _ints in (("add", False), ("sub", False), ("min", False), ("max", False),
                   ("and", True), ("or", True), ("xor", True)):
    _add_fetch(_op, _ints)


# SPIR-V's Scope and MemorySemantics operands (SPIR-V 1.2, 3.27 and 3.25), as LLVM's
# SPIR-V backend writes them for atomicrmw: the order's bit, no storage-class bits.
_SPV_SCOPE = {"work_item": 4, "sub_group": 3, "work_group": 2, "device": 1, "system": 0}
_SPV_ORDER = {"monotonic": 0x0, "acquire": 0x2, "release": 0x4, "acq_rel": 0x8, "seq_cst": 0x10}


def _spirv_atomic(builder: llir.IRBuilder, ty: AtomicRefType, what: str, table: dict[str, str],
                  ptr: llir.Value, *value: llir.Value) -> llir.Value:
    """``__spirv_Atomic{Load,Store}`` (→ ``OpAtomicLoad``/``OpAtomicStore``).

    LLVM 22's SPIR-V backend emits ``load atomic``/``store atomic`` as a plain
    ``OpLoad``/``OpStore``, which the device compiler may hoist out of a loop (a
    kernel spinning on a flag never saw the host's store, issue 21); the SPIR-V
    built-ins keep the atomic, its scope and its order.
    """
    ity = _int_type(ty)
    code = "i" if ity.width == 32 else "l"
    name = f"__spirv_Atomic{what}"
    mangled = f"_Z{len(name)}{name}PU3AS{ty.addrspace}{code}ii" + (code if value else "")
    args = [builder.bitcast(ptr, ity.as_pointer(addrspace=ty.addrspace)),
            _I32(_SPV_SCOPE[ty.scope]), _I32(_SPV_ORDER[table[ty.order]]), *value]
    return ocl.call(builder, mangled, llir.VoidType() if value else ity, args, pure=False)


def _load_bits(context: BaseContext, builder: llir.IRBuilder, ty: AtomicRefType,
               ptr: llir.Value, table: dict[str, str]) -> llir.Value:
    """An atomic load of the bits at ``ptr`` (an integer), by the image format's means."""
    if context.image_format == "spirv":
        return _spirv_atomic(builder, ty, "Load", table, ptr)
    # NVPTX lowers ``load atomic`` to ld.relaxed/acquire.<scope> (fence.sc first for seq_cst).
    return builder.load_atomic(ptr, _ordering(ty, table), _align(ty), typ=_int_type(ty))


@lower("atomic_ref.load", AtomicRefType)
def atomic_load(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                args: Sequence[llir.Value]) -> llir.Value:
    """``a.load()``."""
    ty = sig.args[0]
    return _from_bits(builder, ty, _load_bits(context, builder, ty, args[0], _LOAD_ORDER))


@lower("atomic_ref.store", AtomicRefType, types.Any)
def atomic_store(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                 args: Sequence[llir.Value]) -> llir.Value:
    """``a.store(v)``."""
    ty = sig.args[0]
    bits = _to_bits(builder, ty, args[1])
    if context.image_format == "spirv":
        _spirv_atomic(builder, ty, "Store", _STORE_ORDER, args[0], bits)
        return context.get_dummy_value()
    ptr = builder.bitcast(args[0], _int_type(ty).as_pointer(addrspace=ty.addrspace))
    # NVPTX: st.relaxed/release.<scope> (fence.sc first for seq_cst).
    builder.store_atomic(bits, ptr, _ordering(ty, _STORE_ORDER), _align(ty))
    return context.get_dummy_value()


@lower("atomic_ref.exchange", AtomicRefType, types.Any)
def atomic_exchange(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                    args: Sequence[llir.Value]) -> llir.Value:
    """``a.exchange(v)``: the previous value."""
    ty = sig.args[0]
    old = builder.atomic_rmw("xchg", args[0], _to_bits(builder, ty, args[1]),
                             _ordering(ty, _RMW_ORDER))
    return _from_bits(builder, ty, old)


def _cmpxchg(builder: llir.IRBuilder, ty: AtomicRefType, ptr: llir.Value, expected: llir.Value,
             desired: llir.Value) -> tuple[llir.Value, llir.Value]:
    order = _ordering(ty, _RMW_ORDER)
    pair = builder.cmpxchg(ptr, expected, desired, order, _FAIL_ORDER[ty.order])
    return builder.extract_value(pair, 1), builder.extract_value(pair, 0)


@lower("atomic_ref.compare_exchange_strong", AtomicRefType, types.Any, types.Any)
@lower("atomic_ref.compare_exchange_weak", AtomicRefType, types.Any, types.Any)
def atomic_cas(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
               args: Sequence[llir.Value]) -> llir.Value:
    """``a.compare_exchange_strong(expected, desired)`` → ``(success, observed)``.

    Floating-point values compare by bit pattern, as C++'s ``compare_exchange``.
    The weak form is the strong one (allowed: weak may only fail more often).
    """
    ty = sig.args[0]
    ok, observed = _cmpxchg(builder, ty, args[0], _to_bits(builder, ty, args[1]),
                            _to_bits(builder, ty, args[2]))
    return context.make_tuple(builder, sig.return_type, [ok, _from_bits(builder, ty, observed)])


_INT_RMW = {"add": "add", "sub": "sub", "and": "and", "or": "or", "xor": "xor"}


def _float_update(builder: llir.IRBuilder, op: str, old: llir.Value, v: llir.Value) -> llir.Value:
    if op == "add":
        return builder.fadd(old, v)
    if op == "sub":
        return builder.fsub(old, v)
    cmp = "<" if op == "min" else ">"
    return builder.select(builder.fcmp_ordered(cmp, v, old), v, old)


def _lower_fetch(op: str) -> None:
    @lower(f"atomic_ref.fetch_{op}", AtomicRefType, types.Any)
    def impl(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
             args: Sequence[llir.Value]) -> llir.Value:
        ty = sig.args[0]
        ptr, v = args
        if not _is_float(ty):
            if op in ("min", "max"):
                rmw = op if ty.dtype.signed else "u" + op
            else:
                rmw = _INT_RMW[op]
            return builder.atomic_rmw(rmw, ptr, v, _ordering(ty, _RMW_ORDER))
        if op in ("add", "sub") and context.image_format == "ptx":
            # PTX has it natively (atom.add.f32/.f64); SPIR-V would need an extension.
            return builder.atomic_rmw("fadd", ptr, v if op == "add" else builder.fneg(v),
                                      _ordering(ty, _RMW_ORDER))
        # Floating point: a compare-exchange loop on the bit pattern.
        ity = _int_type(ty)
        first = _load_bits(context, builder, ty, ptr, _RELAXED)
        pre = builder.block
        loop = builder.append_basic_block(f"atomic_{op}.loop")
        done = builder.append_basic_block(f"atomic_{op}.done")
        builder.branch(loop)
        builder.position_at_end(loop)
        cur = builder.phi(ity)
        cur.add_incoming(first, pre)
        new = _float_update(builder, op, _from_bits(builder, ty, cur), v)
        ok, observed = _cmpxchg(builder, ty, ptr, cur, builder.bitcast(new, ity))
        cur.add_incoming(observed, builder.block)
        builder.cbranch(ok, done, loop)
        builder.position_at_end(done)
        return _from_bits(builder, ty, cur)


for _op in ("add", "sub", "min", "max", "and", "or", "xor"):
    _lower_fetch(_op)


def atomic_rmw_global(builder: llir.IRBuilder, dtype: types.Integer, op: str, ptr: llir.Value,
                      v: llir.Value) -> None:
    """``*ptr = *ptr op v`` atomically (relaxed, device scope) on integer ``dtype`` at global
    pointer ``ptr``, one ``atomicrmw`` (``op``: ``add``, ``and``, ``or``, ``xor``, ``min``,
    ``max``; unsigned types compare unsigned)."""
    ty = AtomicRefType(dtype, ADDRSPACE_GLOBAL, "relaxed", "device")
    if op in ("min", "max") and not dtype.signed:
        op = "u" + op
    builder.atomic_rmw(op, ptr, v, _ordering(ty, _RMW_ORDER))


def atomic_update(context: BaseContext, builder: llir.IRBuilder, dtype: types.Type,
                  ptr: llir.Value, update: Callable[[llir.Value], llir.Value]) -> None:
    """``*ptr = update(*ptr)`` atomically (relaxed, device scope) on ``dtype`` at global
    pointer ``ptr``: a compare-exchange loop on the bit pattern (a span reduction's combine)."""
    ty = AtomicRefType(dtype, ADDRSPACE_GLOBAL, "relaxed", "device")
    ity = _int_type(ty)
    iptr = builder.bitcast(ptr, ity.as_pointer(addrspace=ADDRSPACE_GLOBAL))
    first = _load_bits(context, builder, ty, iptr, _RELAXED)
    pre = builder.block
    loop = builder.append_basic_block("reducer.cas.loop")
    done = builder.append_basic_block("reducer.cas.done")
    builder.branch(loop)
    builder.position_at_end(loop)
    cur = builder.phi(ity)
    cur.add_incoming(first, pre)
    new = _to_bits(builder, ty, update(_from_bits(builder, ty, cur)))
    ok, observed = _cmpxchg(builder, ty, iptr, cur, new)
    cur.add_incoming(observed, builder.block)
    builder.cbranch(ok, done, loop)
    builder.position_at_end(done)


@typing_registry.register_global(atomic_fence)
class AtomicFence(AbstractTemplate):
    """``sycl.atomic_fence(order, scope)``."""

    def generic(self, args: tuple, kws: dict) -> object:
        if len(args) == 2 and not kws and enum_member(args[0], memory_order) is not None \
                and enum_member(args[1], memory_scope) is not None:
            return signature(types.none, *args)
        return None


@lower(atomic_fence, KernelEnumType, KernelEnumType)
def lower_atomic_fence(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                       args: Sequence[llir.Value]) -> llir.Value:
    """An LLVM ``fence`` (→ ``OpMemoryBarrier``); a relaxed fence does nothing."""
    order = sig.args[0].member.name
    if order != "relaxed":
        builder.fence(_RMW_ORDER[order], _SCOPES[sig.args[1].member.name])
    return context.get_dummy_value()

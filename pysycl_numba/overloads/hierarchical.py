"""Hierarchical kernels on a device: ``h_item``, ``private_memory`` and the intrinsics of
``parallel_for_work_item`` (:mod:`pysycl_numba.hierarchical` writes the calls).

The kernel runs as an nd_range: every work-item runs the group-scope code, so the group's
queries are the work-item built-ins (as an nd_range kernel's ``sycl.group``). A
``parallel_for_work_item`` is a work-group barrier, a loop over the logical local ids this
work-item owns (``phys + P * k`` per dimension, below the logical range), and a barrier.
``private_memory`` is one private ``T`` per work-item: it is indexed by the physical
local id, which is the work-item itself.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any

from llvmlite import ir as llir

from pysycl._kernels.kernel_api import private_memory
from pysycl_numba._numba_compat import (
    AbstractTemplate,
    AttributeTemplate,
    LoweringRegistry,
    TypingRegistry,
    bound_function,
    cgutils,
    signature,
    types,
)
from pysycl_numba.hier_types import HierGroupType, HItemType, PrivateMemoryType
from pysycl_numba.overloads.index import dim_query, make_range, select_dim
from pysycl_numba.overloads.ndrange import _barrier, _lower_dims, _method, work_item_queries
from pysycl_numba.types import GroupType, IdType, ItemType, RangeType, index_type

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from pysycl_numba._numba_compat import BaseContext, Signature

typing_registry = TypingRegistry()
lowering_registry = LoweringRegistry("pysycl.hierarchical")
lower = lowering_registry.lower
_I64 = llir.IntType(64)


# ------------------------------------------------------------- the intrinsics
def group_sync(g: Any) -> None:
    """A work-group barrier (local and global memory) before and after each
    ``parallel_for_work_item`` and around a group-scope store."""


def group_leader(g: Any) -> bool:
    """Whether this work-item stores a group-scope value (local linear id 0)."""
    return False


def h_item_physical(g: Any) -> Any:
    """The ``h_item`` of ``parallel_for_work_item(fn)``: the logical ids are the physical ones."""


def h_item_count(g: Any, r: Any) -> int:
    """How many logical local ids of range ``r`` this work-item runs."""
    return 0


def h_item_at(g: Any, r: Any, k: int) -> Any:
    """The ``h_item`` of this work-item's ``k``-th logical local id in range ``r``."""


def _range_ok(g: types.Type, r: types.Type) -> bool:
    if isinstance(r, RangeType):
        return r.ndim == g.ndim
    return isinstance(r, types.Integer) and g.ndim == 1


def _need_group(args: tuple, what: str) -> None:
    if not args or not isinstance(args[0], HierGroupType):
        got = args[0] if args else "nothing"
        raise TypeError(f"{what} needs the sycl.group of a hierarchical kernel (the parameter "
                        f"of the kernel given to h.parallel_for_work_group), not {got}")


def _dims_error(g: types.Type, r: types.Type) -> TypeError:
    return TypeError(f"parallel_for_work_item: the logical range {r} does not have the "
                     f"{g.ndim} dimensions of the work-group: every parallel_for_work_item "
                     f"of a {g.ndim}-D hierarchical kernel takes a sycl.range of {g.ndim} "
                     "dimensions")


def _template(fn: Callable[..., Any], arity: int, ret: Callable[[tuple], types.Type]) -> None:
    @typing_registry.register_global(fn)
    class _T(AbstractTemplate):
        def generic(self, args: tuple, kws: dict) -> object:
            if len(args) != arity or kws:
                return None
            _need_group(args, "parallel_for_work_item")
            if arity >= 2 and not _range_ok(args[0], args[1]):
                raise _dims_error(args[0], args[1])
            if arity == 3 and not isinstance(args[2], types.Integer):
                return None
            return signature(ret(args), *args)


_template(group_sync, 1, lambda a: types.none)
_template(group_leader, 1, lambda a: types.boolean)
_template(h_item_physical, 1, lambda a: HItemType(a[0].ndim))
_template(h_item_count, 2, lambda a: index_type)
_template(h_item_at, 3, lambda a: HItemType(a[0].ndim))


def _builtin(builder: llir.IRBuilder, name: str, ndim: int) -> list[llir.Value]:
    return work_item_queries(builder, name, ndim)


def _logical_range(context: BaseContext, builder: llir.IRBuilder, ty: types.Type,
                   value: llir.Value) -> list[llir.Value]:
    if isinstance(ty, RangeType):
        r = cgutils.create_struct_proxy(ty)(context, builder, value=value)
        return [getattr(r, f"r{d}") for d in range(ty.ndim)]
    return [context.cast(builder, value, ty, index_type)]


def _h_item(context: BaseContext, builder: llir.IRBuilder, ndim: int, local: Sequence[llir.Value],
            lrange: Sequence[llir.Value]) -> llir.Value:
    h = cgutils.create_struct_proxy(HItemType(ndim))(context, builder)
    for d, v in enumerate(_builtin(builder, "get_global_id", ndim)):
        setattr(h, f"g{d}", v)
    for d in range(ndim):
        setattr(h, f"l{d}", local[d])
        setattr(h, f"lr{d}", lrange[d])
    return h._getvalue()


@lower(group_sync, HierGroupType)
def lower_group_sync(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                     args: Sequence[llir.Value]) -> llir.Value:
    """``barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)``."""
    _barrier(builder, False, 3)
    return context.get_dummy_value()


@lower(group_leader, HierGroupType)
def lower_group_leader(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                       args: Sequence[llir.Value]) -> llir.Value:
    """Local id 0 in every dimension."""
    zero = [builder.icmp_unsigned("==", v, _I64(0))
            for v in _builtin(builder, "get_local_id", sig.args[0].ndim)]
    out = zero[0]
    for z in zero[1:]:
        out = builder.and_(out, z)
    return out


@lower(h_item_physical, HierGroupType)
def lower_h_item_physical(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                          args: Sequence[llir.Value]) -> llir.Value:
    """The physical work-item as its own logical one."""
    n = sig.args[0].ndim
    return _h_item(context, builder, n, _builtin(builder, "get_local_id", n),
                   _builtin(builder, "get_local_size", n))


def _counts(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
            args: Sequence[llir.Value]) -> tuple[list[llir.Value], list[llir.Value],
                                                 list[llir.Value], list[llir.Value]]:
    """Per dimension: the physical local id and size, the logical range, and how many
    logical ids ``phys, phys + P, ...`` below the range this work-item runs."""
    n = sig.args[0].ndim
    phys = _builtin(builder, "get_local_id", n)
    size = _builtin(builder, "get_local_size", n)
    rng = _logical_range(context, builder, sig.args[1], args[1])
    counts = []
    for p, s, r in zip(phys, size, rng, strict=True):
        left = builder.sub(r, p)
        c = builder.udiv(builder.add(left, builder.sub(s, _I64(1))), s)
        counts.append(builder.select(builder.icmp_signed(">", r, p), c, _I64(0)))
    return phys, size, rng, counts


@lower(h_item_count, HierGroupType, types.Any)
def lower_h_item_count(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                       args: Sequence[llir.Value]) -> llir.Value:
    """The product of the per-dimension counts."""
    counts = _counts(context, builder, sig, args)[3]
    total = counts[0]
    for c in counts[1:]:
        total = builder.mul(total, c)
    return total


@lower(h_item_at, HierGroupType, types.Any, types.Integer)
def lower_h_item_at(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                    args: Sequence[llir.Value]) -> llir.Value:
    """``k`` split row-major over the counts (dimension 0 slowest): ``phys + P * k_d``."""
    phys, size, rng, counts = _counts(context, builder, sig, args)
    rest = context.cast(builder, args[2], sig.args[2], index_type)
    n = len(phys)
    local = [phys[0]] * n
    for d in range(n - 1, -1, -1):
        kd = builder.urem(rest, counts[d]) if d else rest
        rest = builder.udiv(rest, counts[d]) if d else rest
        local[d] = builder.add(phys[d], builder.mul(size[d], kd))
    return _h_item(context, builder, n, local, rng)


# ------------------------------------------------------------------- h_item
def _ids(t: HItemType) -> types.Type:
    return IdType(t.ndim)


def _rng(t: HItemType) -> types.Type:
    return RangeType(t.ndim)


def _item(t: HItemType) -> types.Type:
    return ItemType(t.ndim)


def _whole(args: tuple, kws: dict, ret: types.Type) -> object:
    return signature(ret) if not args and not kws else None


#: h_item method -> (the id's source, the range's source, the result's kind); a source is
#: a struct field prefix of the h_item or an OpenCL work-item built-in.
_QUERIES: dict[str, tuple[str, str]] = {
    "get_global_id": ("g", "id"), "get_global_range": ("get_global_size", "range"),
    "get_local_id": ("l", "id"), "get_local_range": ("lr", "range"),
    "get_logical_local_id": ("l", "id"), "get_logical_local_range": ("lr", "range"),
    "get_physical_local_id": ("get_local_id", "id"),
    "get_physical_local_range": ("get_local_size", "range"),
}
#: h_item method -> (the item's id source, its range source)
_ITEMS: dict[str, tuple[str, str]] = {
    "get_global": ("g", "get_global_size"), "get_local": ("l", "lr"),
    "get_logical_local": ("l", "lr"), "get_physical_local": ("get_local_id", "get_local_size"),
}


@typing_registry.register_attr
class HItemAttributes(AttributeTemplate):
    """Methods of ``sycl.h_item`` (§4.9.1.6)."""

    key = HItemType


for _name, (_src, _kind) in _QUERIES.items():
    setattr(HItemAttributes, f"resolve_{_name}",
            _method(f"h_item.{_name}", dim_query, _ids if _kind == "id" else _rng))
for _name in _ITEMS:
    setattr(HItemAttributes, f"resolve_{_name}", _method(f"h_item.{_name}", _whole, _item))


def _values(context: BaseContext, builder: llir.IRBuilder, ty: HItemType, value: llir.Value,
            src: str) -> list[llir.Value]:
    if src.startswith("get_"):
        return _builtin(builder, src, ty.ndim)
    h = cgutils.create_struct_proxy(ty)(context, builder, value=value)
    return [getattr(h, f"{src}{d}") for d in range(ty.ndim)]


def _lower_query(name: str, src: str, kind: str) -> None:
    def every(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
              args: Sequence[llir.Value]) -> llir.Value:
        ty = sig.args[0]
        return make_range(context, builder, ty.ndim, _values(context, builder, ty, args[0], src),
                          IdType if kind == "id" else RangeType)

    def one(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
            args: Sequence[llir.Value]) -> llir.Value:
        ty = sig.args[0]
        dim = context.cast(builder, args[1], sig.args[1], index_type)
        return select_dim(builder, _values(context, builder, ty, args[0], src), dim)

    lower(f"h_item.{name}", HItemType)(every)
    lower(f"h_item.{name}", HItemType, types.Integer)(one)


def _lower_item(name: str, ids: str, ranges: str) -> None:
    def impl(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
             args: Sequence[llir.Value]) -> llir.Value:
        ty = sig.args[0]
        it = cgutils.create_struct_proxy(ItemType(ty.ndim))(context, builder)
        for d, (i, r) in enumerate(zip(_values(context, builder, ty, args[0], ids),
                                       _values(context, builder, ty, args[0], ranges),
                                       strict=True)):
            setattr(it, f"id{d}", i)
            setattr(it, f"range{d}", r)
        return it._getvalue()

    lower(f"h_item.{name}", HItemType)(impl)


for _name, (_src, _kind) in _QUERIES.items():
    _lower_query(_name, _src, _kind)
for _name, (_i, _r) in _ITEMS.items():
    _lower_item(_name, _i, _r)


# ------------------------------------------------------------- private_memory
@typing_registry.register_global(private_memory)
class PrivateMemoryCtor(AbstractTemplate):
    """``sycl.private_memory(g, dtype)``."""

    def generic(self, args: tuple, kws: dict) -> object:
        if len(args) != 2 or kws:
            return None
        _need_group(args, "sycl.private_memory(g, dtype)")
        if not isinstance(args[1], types.NumberClass):
            raise TypeError(f"sycl.private_memory(g, dtype): dtype must be a numpy scalar type "
                            f"(np.float32, np.int32, ...), not {args[1]}")
        return signature(PrivateMemoryType(args[1].instance_type), *args)


@lower(private_memory, HierGroupType, types.NumberClass)
def lower_private_memory(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                         args: Sequence[llir.Value]) -> llir.Value:
    """One zeroed ``T`` in the work-item's private memory (the entry block's ``alloca``)."""
    ty = context.get_data_type(sig.return_type.dtype)
    slot = cgutils.alloca_once(builder, ty)
    builder.store(ty(None), slot)
    return slot


def _check_index(args: tuple) -> object:
    if not isinstance(args[1], HItemType):
        raise TypeError(f"sycl.private_memory is indexed with the sycl.h_item of "
                        f"parallel_for_work_item (pm[h]), not {args[1]}")
    return True


@typing_registry.register_global(operator.getitem)
class PrivateMemoryGet(AbstractTemplate):
    """``pm[h]``: the value of ``h``'s physical work-item."""

    def generic(self, args: tuple, kws: dict) -> object:
        if len(args) == 2 and isinstance(args[0], PrivateMemoryType) and _check_index(args):
            return signature(args[0].dtype, *args)
        return None


@typing_registry.register_global(operator.setitem)
class PrivateMemorySet(AbstractTemplate):
    """``pm[h] = v`` (C++'s ``pm(h) = v``)."""

    def generic(self, args: tuple, kws: dict) -> object:
        if len(args) == 3 and isinstance(args[0], PrivateMemoryType) and _check_index(args):
            return signature(types.none, args[0], args[1], args[0].dtype)
        return None


@typing_registry.register_attr
class PrivateMemoryAttributes(AttributeTemplate):
    """``pm(h)``: the value of ``h``'s physical work-item (as ``pm[h]``)."""

    key = PrivateMemoryType

    @bound_function("private_memory.__call__")
    def resolve___call__(self, pm: PrivateMemoryType, args: tuple, kws: dict) -> object:
        if len(args) == 1 and not kws and _check_index((pm, *args)):
            return signature(pm.dtype, *args)
        return None


@lower(PrivateMemoryType, PrivateMemoryType, HItemType)
@lower(operator.getitem, PrivateMemoryType, HItemType)
def lower_pm_get(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                 args: Sequence[llir.Value]) -> llir.Value:
    """Load the work-item's value."""
    return builder.load(args[0])


@lower(operator.setitem, PrivateMemoryType, HItemType, types.Any)
def lower_pm_set(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                 args: Sequence[llir.Value]) -> llir.Value:
    """Store the work-item's value."""
    builder.store(args[2], args[0])
    return context.get_dummy_value()


# ------------------------------------------------------------------ the group
def _no_local(what: str) -> TypeError:
    return TypeError(f"group.{what}() asks for the calling work-item, which group scope of a "
                     "hierarchical kernel has none of: use the sycl.h_item that "
                     "parallel_for_work_item passes (h.get_physical_local_id(), ...)")


@typing_registry.register_attr
class HierGroupAttributes(AttributeTemplate):
    """What a hierarchical kernel's group refuses (its other methods: ``sycl.group``'s)."""

    key = HierGroupType

    def resolve_get_local_id(self, g: HierGroupType) -> types.Type:
        raise _no_local("get_local_id")

    def resolve_get_local_linear_id(self, g: HierGroupType) -> types.Type:
        raise _no_local("get_local_linear_id")

    def resolve_leader(self, g: HierGroupType) -> types.Type:
        raise _no_local("leader")

    def resolve_parallel_for_work_item(self, g: HierGroupType) -> types.Type:
        raise TypeError(
            "parallel_for_work_item is called at group scope: in the kernel given to "
            "h.parallel_for_work_group itself, as g.parallel_for_work_item([logical_range,] "
            "fn) -- not inside another parallel_for_work_item's function, nor in a helper "
            "function the kernel calls")


# ------------------------------------------- what the group-scope rewrite calls
# Plain Python, compiled in place at each call (pysycl_numba.nested inlines them): the
# functions they receive are then called directly, so those are compiled in place too.
def work_items(g: Any, fn: Any) -> None:
    """``g.parallel_for_work_item(fn)``."""
    group_sync(g)
    fn(h_item_physical(g))
    group_sync(g)


def work_items_in(g: Any, r: Any, fn: Any) -> None:
    """``g.parallel_for_work_item(r, fn)``: this work-item's logical ids of ``r``."""
    group_sync(g)
    for k in range(h_item_count(g, r)):
        fn(h_item_at(g, r, k))
    group_sync(g)


def group_store(g: Any, target: Any, index: Any, value: Any) -> None:
    """A group-scope ``target[index] = value``: once per work-group, seen by all of it."""
    group_sync(g)
    if group_leader(g):
        target[index] = value
    group_sync(g)


#: The functions the inliner always compiles in place.
INLINED = (work_items, work_items_in, group_store)


@typing_registry.register_attr
class NdRangeGroupAttributes(AttributeTemplate):
    """``parallel_for_work_item`` on an nd_range kernel's group: refused, saying why; the
    spec's deprecated ``get_linear_id()`` and ``get_global_range()`` of every group."""

    key = GroupType

    resolve_get_linear_id = _method("group.get_group_linear_id", _whole,
                                    lambda g: index_type)
    resolve_get_global_range = _method("group.get_global_range", dim_query, _rng)

    def resolve_parallel_for_work_item(self, g: GroupType) -> types.Type:
        raise TypeError(
            "parallel_for_work_item is for hierarchical kernels: launch the kernel with "
            "h.parallel_for_work_group(num_groups, [group_size,] kernel), whose kernel "
            "receives the sycl.group; an nd_range kernel's work-items already run in parallel")


_lower_dims("group.get_global_range", GroupType, "get_global_size", "range")

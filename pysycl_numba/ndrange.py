"""Typing and lowering of ``nd_range`` kernels: ``nd_item``, ``group``, ``sub_group``, barriers.

Every query is an OpenCL work-item built-in (``get_local_id(d)`` ...), read
with SYCL dimension ``d`` of an ``n``-D launch mapped to OpenCL dimension
``n - 1 - d`` (OpenCL backend appendix). The built-ins are pure, so unused
queries vanish and repeated ones are shared. Linear ids are row-major with
dimension 0 slowest (SYCL), computed from the per-dimension ids.

Group collectives map onto the OpenCL 2.0 work-group / sub-group built-ins
(``work_group_reduce_add``, ``sub_group_broadcast`` ...), which LLVM's SPIR-V
backend lowers to ``OpGroup*`` instructions; barriers are ``barrier(flags)``
→ ``OpControlBarrier Workgroup`` with ``WorkgroupMemory``/``CrossWorkgroupMemory``
| ``SequentiallyConsistent`` semantics.

Typing (``typing_registry``) and lowering (``registry``) sit together here
because each query's two halves are one line each.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from llvmlite import ir as llir

from pysycl._kernels.kernel_api import (
    _fence_space,
    all_of_group,
    any_of_group,
    group_barrier,
    group_broadcast,
    none_of_group,
    reduce_over_group,
)
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
from pysycl_numba.impl import _select_dim, make_range
from pysycl_numba.targets.spirv import ocl
from pysycl_numba.types import (
    FunctorType,
    GroupType,
    KernelEnumType,
    NdItemType,
    NdRangeType,
    RangeType,
    SubGroupType,
    index_type,
)

typing_registry = TypingRegistry()
registry = LoweringRegistry("pysycl.ndrange")
lower = registry.lower

_I32 = llir.IntType(32)
_I64 = llir.IntType(64)
_NSW = ("nsw",)
_INT = (types.Integer, types.IntegerLiteral)


# ============================================================== typing helpers
def _dims(args: tuple, kws: dict, whole: types.Type) -> object:
    """``q()`` → ``whole``; ``q(d)`` → int64."""
    if kws:
        return None
    if not args:
        return signature(whole)
    if len(args) == 1 and isinstance(args[0], _INT):
        return signature(index_type, types.unliteral(args[0]))
    return None


def _scalar(args: tuple, kws: dict, ret: types.Type = index_type) -> object:
    return signature(ret) if not args and not kws else None


def _ids(n: int) -> types.Type:
    return types.UniTuple(index_type, n)


def _method(key: str, rule: Callable[..., object],
            ret: Callable[[Any], types.Type] | None = None) -> Any:
    """A typing-template method for ``key``: ``rule(args, kws[, ret(receiver type)])``.

    ``rule`` is :func:`_dims` (``q()`` or ``q(d)``) or :func:`_scalar` (``q()``).
    """
    @bound_function(key)
    def method(self: Any, recv: types.Type, args: tuple, kws: dict) -> object:
        return rule(args, kws) if ret is None else rule(args, kws, ret(recv))

    return method


def _ids_of(t: Any) -> types.Type:
    return _ids(t.ndim)


def _range_of(t: Any) -> types.Type:
    return RangeType(t.ndim)


@typing_registry.register_attr
class NdItemAttributes(AttributeTemplate):
    """Methods of ``sycl.nd_item`` (§4.9.1.5)."""

    key = NdItemType

    resolve_get_global_id = _method("nd_item.get_global_id", _dims, _ids_of)
    resolve_get_global_linear_id = _method("nd_item.get_global_linear_id", _scalar)
    resolve_get_local_id = _method("nd_item.get_local_id", _dims, _ids_of)
    resolve_get_local_linear_id = _method("nd_item.get_local_linear_id", _scalar)
    resolve_get_group = _method("nd_item.get_group", _dims, lambda it: GroupType(it.ndim))
    resolve_get_group_linear_id = _method("nd_item.get_group_linear_id", _scalar)
    resolve_get_group_range = _method("nd_item.get_group_range", _dims, _range_of)
    resolve_get_global_range = _method("nd_item.get_global_range", _dims, _range_of)
    resolve_get_local_range = _method("nd_item.get_local_range", _dims, _range_of)
    resolve_get_nd_range = _method("nd_item.get_nd_range", _scalar,
                                   lambda it: NdRangeType(it.ndim))
    resolve_get_sub_group = _method("nd_item.get_sub_group", _scalar, lambda it: SubGroupType())

    @bound_function("nd_item.barrier")
    def resolve_barrier(self, it: NdItemType, args: tuple, kws: dict) -> object:
        if kws:
            return None
        if not args:
            return signature(types.none)
        if len(args) == 1 and isinstance(args[0], KernelEnumType) \
                and isinstance(args[0].member, _fence_space):
            return signature(types.none, args[0])
        return None


@typing_registry.register_attr
class GroupAttributes(AttributeTemplate):
    """Methods of ``sycl.group`` (§4.9.1.7)."""

    key = GroupType

    resolve_get_group_id = _method("group.get_group_id", _dims, _ids_of)
    resolve_get_local_id = _method("group.get_local_id", _dims, _ids_of)
    resolve_get_local_range = _method("group.get_local_range", _dims, _range_of)
    resolve_get_max_local_range = _method("group.get_local_range", _scalar, _range_of)
    resolve_get_group_range = _method("group.get_group_range", _dims, _range_of)
    resolve_get_group_linear_id = _method("group.get_group_linear_id", _scalar)
    resolve_get_local_linear_id = _method("group.get_local_linear_id", _scalar)
    resolve_get_group_linear_range = _method("group.get_group_linear_range", _scalar)
    resolve_get_local_linear_range = _method("group.get_local_linear_range", _scalar)
    resolve_leader = _method("group.leader", _scalar, lambda g: types.boolean)


@typing_registry.register_attr
class SubGroupAttributes(AttributeTemplate):
    """Methods of ``sycl.sub_group`` (§4.9.1.8); ids are integers (``id<1>``)."""

    key = SubGroupType

    resolve_get_local_id = _method("sub_group.get_local_id", _scalar, lambda sg: index_type)
    resolve_get_local_linear_id = _method("sub_group.get_local_id", _scalar,
                                          lambda sg: index_type)
    resolve_get_local_range = _method("sub_group.get_local_range", _scalar,
                                      lambda sg: RangeType(1))
    resolve_get_local_linear_range = _method("sub_group.get_local_linear_range", _scalar,
                                             lambda sg: index_type)
    resolve_get_max_local_range = _method("sub_group.get_max_local_range", _scalar,
                                          lambda sg: RangeType(1))
    resolve_get_group_id = _method("sub_group.get_group_id", _scalar, lambda sg: index_type)
    resolve_get_group_linear_id = _method("sub_group.get_group_id", _scalar,
                                          lambda sg: index_type)
    resolve_get_group_range = _method("sub_group.get_group_range", _scalar,
                                      lambda sg: RangeType(1))
    resolve_get_group_linear_range = _method("sub_group.get_group_linear_range", _scalar,
                                             lambda sg: index_type)
    resolve_leader = _method("sub_group.leader", _scalar, lambda sg: types.boolean)


@typing_registry.register_attr
class NdRangeAttributes(AttributeTemplate):
    """Methods of the ``sycl.nd_range`` an ``nd_item`` returns."""

    key = NdRangeType

    resolve_get_global_range = _method("nd_range.get_global_range", _scalar, _range_of)
    resolve_get_local_range = _method("nd_range.get_local_range", _scalar, _range_of)
    resolve_get_group_range = _method("nd_range.get_group_range", _scalar, _range_of)


_GROUPS = (GroupType, SubGroupType)
#: Element types the OpenCL 2.0 work-group/sub-group collectives take.
_COLLECTIVE = {
    types.int32: "i", types.uint32: "j", types.int64: "l", types.uint64: "m",
    types.float32: "f", types.float64: "d",
}


@typing_registry.register_global(group_barrier)
class GroupBarrier(AbstractTemplate):
    """``sycl.group_barrier(g)``."""

    def generic(self, args: tuple, kws: dict) -> object:
        if len(args) in (1, 2) and not kws and isinstance(args[0], _GROUPS):
            return signature(types.none, *args)
        return None


def _collective_type(t: types.Type) -> types.Type | None:
    t = types.unliteral(t)
    if isinstance(t, types.Boolean):
        return types.int32
    if isinstance(t, types.Integer) and t not in _COLLECTIVE:
        return types.int64 if t.signed else types.uint64
    return t if t in _COLLECTIVE else None


@typing_registry.register_global(group_broadcast)
class GroupBroadcast(AbstractTemplate):
    """``sycl.group_broadcast(g, x[, local_linear_id])``."""

    def generic(self, args: tuple, kws: dict) -> object:
        if kws or len(args) not in (2, 3) or not isinstance(args[0], _GROUPS):
            return None
        t = _collective_type(args[1])
        if t is None or (len(args) == 3 and not isinstance(args[2], _INT)):
            return None
        rest = (types.unliteral(args[2]),) if len(args) == 3 else ()
        return signature(t, args[0], t, *rest)


@typing_registry.register_global(reduce_over_group)
class ReduceOverGroup(AbstractTemplate):
    """``sycl.reduce_over_group(g, x, op)`` / ``(g, x, init, op)``, op plus/minimum/maximum."""

    def generic(self, args: tuple, kws: dict) -> object:
        if kws or len(args) not in (3, 4) or not isinstance(args[0], _GROUPS):
            return None
        op = args[-1]
        if not isinstance(op, FunctorType) or op.op not in _REDUCE_OPS:
            return None
        t = _collective_type(args[1])
        if t is None or isinstance(types.unliteral(args[1]), types.Boolean):
            return None
        if len(args) == 4:
            return signature(t, args[0], t, t, op)
        return signature(t, args[0], t, op)


class _Vote(AbstractTemplate):
    def generic(self, args: tuple, kws: dict) -> object:
        if len(args) == 2 and not kws and isinstance(args[0], _GROUPS):
            return signature(types.boolean, args[0], types.boolean)
        return None


for _fn in (any_of_group, all_of_group, none_of_group):
    typing_registry.register_global(_fn)(type(f"Vote_{_fn.__name__}", (_Vote,), {}))


# ================================================================== lowering
def _q(builder: llir.IRBuilder, name: str, ndim: int) -> list[Any]:
    """OpenCL work-item query ``name`` for every SYCL dimension (as i64)."""
    return [ocl.work_item_query(builder, name, ndim - 1 - d) for d in range(ndim)]


def _linear(builder: llir.IRBuilder, ids: list[Any], ranges: list[Any]) -> Any:
    lin = ids[0]
    for d in range(1, len(ids)):
        lin = builder.add(builder.mul(lin, ranges[d], flags=_NSW), ids[d], flags=_NSW)
    return lin


def _product(builder: llir.IRBuilder, values: list[Any]) -> Any:
    total = values[0]
    for v in values[1:]:
        total = builder.mul(total, v, flags=_NSW)
    return total


def _tag(context: Any) -> Any:
    return llir.Constant(llir.IntType(8), 0)


def _lower_dims(key: str, tyclass: type, builtin: str, whole: str) -> None:
    """Register ``q()`` (a tuple or range) and ``q(d)`` lowerings of one query."""

    def one(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        values = _q(builder, builtin, sig.args[0].ndim)
        dim = context.cast(builder, args[1], sig.args[1], index_type)
        return _select_dim(builder, values, dim)

    def every(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        n = sig.args[0].ndim
        values = _q(builder, builtin, n)
        if whole == "tuple":
            return context.make_tuple(builder, sig.return_type, values)
        return make_range(context, builder, n, values)

    lower(key, tyclass, types.Integer)(one)
    lower(key, tyclass)(every)


for _key, _cls, _builtin, _whole in (
    ("nd_item.get_global_id", NdItemType, "get_global_id", "tuple"),
    ("nd_item.get_local_id", NdItemType, "get_local_id", "tuple"),
    ("nd_item.get_group_range", NdItemType, "get_num_groups", "range"),
    ("nd_item.get_global_range", NdItemType, "get_global_size", "range"),
    ("nd_item.get_local_range", NdItemType, "get_local_size", "range"),
    ("group.get_group_id", GroupType, "get_group_id", "tuple"),
    ("group.get_local_id", GroupType, "get_local_id", "tuple"),
    ("group.get_local_range", GroupType, "get_local_size", "range"),
    ("group.get_group_range", GroupType, "get_num_groups", "range"),
):
    _lower_dims(_key, _cls, _builtin, _whole)


@lower("nd_item.get_group", NdItemType, types.Integer)
def nd_item_get_group_dim(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """``it.get_group(d)``: the work-group id in dimension ``d``."""
    values = _q(builder, "get_group_id", sig.args[0].ndim)
    return _select_dim(builder, values, context.cast(builder, args[1], sig.args[1], index_type))


@lower("nd_item.get_group", NdItemType)
def nd_item_get_group(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """``it.get_group()``: the ``sycl.group``."""
    return _tag(context)


@lower("nd_item.get_sub_group", NdItemType)
def nd_item_get_sub_group(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """``it.get_sub_group()``."""
    return _tag(context)


def _lin(builder: Any, ndim: int, ids: str, ranges: str) -> Any:
    return _linear(builder, _q(builder, ids, ndim), _q(builder, ranges, ndim))


@lower("nd_item.get_global_linear_id", NdItemType)
def nd_item_global_linear(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """Row-major linear global id."""
    return _lin(builder, sig.args[0].ndim, "get_global_id", "get_global_size")


@lower("nd_item.get_local_linear_id", NdItemType)
@lower("group.get_local_linear_id", GroupType)
def local_linear(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """Row-major linear id inside the work-group."""
    return _lin(builder, sig.args[0].ndim, "get_local_id", "get_local_size")


@lower("nd_item.get_group_linear_id", NdItemType)
@lower("group.get_group_linear_id", GroupType)
def group_linear(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """Row-major linear work-group id."""
    return _lin(builder, sig.args[0].ndim, "get_group_id", "get_num_groups")


@lower("group.get_group_linear_range", GroupType)
def group_linear_range(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """Number of work-groups."""
    return _product(builder, _q(builder, "get_num_groups", sig.args[0].ndim))


@lower("group.get_local_linear_range", GroupType)
def local_linear_range(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """Work-items per group."""
    return _product(builder, _q(builder, "get_local_size", sig.args[0].ndim))


@lower("group.leader", GroupType)
def group_leader(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """Whether this is work-item 0 of the group."""
    lin = _lin(builder, sig.args[0].ndim, "get_local_id", "get_local_size")
    return builder.icmp_signed("==", lin, _I64(0))


@lower("nd_item.get_nd_range", NdItemType)
def nd_item_get_nd_range(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """``it.get_nd_range()``."""
    n = sig.args[0].ndim
    r = cgutils.create_struct_proxy(NdRangeType(n))(context, builder)
    for d, (gv, lv) in enumerate(zip(_q(builder, "get_global_size", n),
                                     _q(builder, "get_local_size", n), strict=True)):
        setattr(r, f"g{d}", gv)
        setattr(r, f"l{d}", lv)
    return r._getvalue()


def _nd_parts(context: Any, builder: Any, sig: Any, args: Any, prefix: str) -> list[Any]:
    n = sig.args[0].ndim
    r = cgutils.create_struct_proxy(NdRangeType(n))(context, builder, value=args[0])
    return [getattr(r, f"{prefix}{d}") for d in range(n)]


@lower("nd_range.get_global_range", NdRangeType)
def nd_range_global(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """``nd.get_global_range()``."""
    return make_range(context, builder, sig.args[0].ndim,
                      _nd_parts(context, builder, sig, args, "g"))


@lower("nd_range.get_local_range", NdRangeType)
def nd_range_local(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """``nd.get_local_range()``."""
    return make_range(context, builder, sig.args[0].ndim,
                      _nd_parts(context, builder, sig, args, "l"))


@lower("nd_range.get_group_range", NdRangeType)
def nd_range_groups(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """``nd.get_group_range()`` = global / local."""
    g = _nd_parts(context, builder, sig, args, "g")
    loc = _nd_parts(context, builder, sig, args, "l")
    return make_range(context, builder, sig.args[0].ndim,
                      [builder.udiv(a, b) for a, b in zip(g, loc, strict=True)])


# ----------------------------------------------------------------- sub-group
def _sg(builder: Any, name: str) -> Any:
    v = ocl.call(builder, ocl.mangle(name, "void"), _I32, [])
    return builder.zext(v, _I64)


_SG_QUERIES = {
    "get_local_id": "get_sub_group_local_id",
    "get_local_linear_range": "get_sub_group_size",
    "get_group_id": "get_sub_group_id",
    "get_group_linear_range": "get_num_sub_groups",
}


def _lower_sg(method: str, builtin: str) -> None:
    @lower(f"sub_group.{method}", SubGroupType)
    def impl(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        return _sg(builder, builtin)


for _m, _b in _SG_QUERIES.items():
    _lower_sg(_m, _b)


@lower("sub_group.get_local_range", SubGroupType)
def sg_local_range(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """``sg.get_local_range()``: the size of this sub-group."""
    return make_range(context, builder, 1, [_sg(builder, "get_sub_group_size")])


@lower("sub_group.get_max_local_range", SubGroupType)
def sg_max_local_range(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """``sg.get_max_local_range()``."""
    return make_range(context, builder, 1, [_sg(builder, "get_max_sub_group_size")])


@lower("sub_group.get_group_range", SubGroupType)
def sg_group_range(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """``sg.get_group_range()``: sub-groups in the work-group."""
    return make_range(context, builder, 1, [_sg(builder, "get_num_sub_groups")])


@lower("sub_group.leader", SubGroupType)
def sg_leader(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """Whether this is work-item 0 of the sub-group."""
    return builder.icmp_unsigned("==", _sg(builder, "get_sub_group_local_id"), _I64(0))


# ------------------------------------------------------------------ barriers
_FENCE_FLAGS = {"local_space": 1, "global_space": 2, "global_and_local": 3}


def _barrier(builder: Any, is_sub_group: bool, flags: int) -> None:
    name = "sub_group_barrier" if is_sub_group else "barrier"
    ocl.call(builder, ocl.mangle(name, "uint"), llir.VoidType(), [_I32(flags)], pure=False,
             convergent=True)


@lower("nd_item.barrier", NdItemType)
def nd_item_barrier(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """``it.barrier()``: work-group barrier fencing local and global memory."""
    _barrier(builder, False, 3)
    return context.get_dummy_value()


@lower("nd_item.barrier", NdItemType, KernelEnumType)
def nd_item_barrier_fence(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """``it.barrier(sycl.access.fence_space.local_space)``."""
    _barrier(builder, False, _FENCE_FLAGS[sig.args[1].member.name])
    return context.get_dummy_value()


@lower(group_barrier, GroupType)
@lower(group_barrier, SubGroupType)
@lower(group_barrier, GroupType, types.Any)
@lower(group_barrier, SubGroupType, types.Any)
def lower_group_barrier(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """``sycl.group_barrier(g)``: all of ``g`` waits; local and global memory fenced."""
    _barrier(builder, isinstance(sig.args[0], SubGroupType), 3)
    return context.get_dummy_value()


# --------------------------------------------------------- group collectives
_REDUCE_OPS = {"plus": "add", "minimum": "min", "maximum": "max"}


def _prefix(gty: types.Type) -> str:
    return "sub_group" if isinstance(gty, SubGroupType) else "work_group"


def _collective(builder: Any, gty: types.Type, op: str, t: types.Type, value: Any,
                extra: list[Any], extra_kinds: str = "") -> Any:
    name = f"{_prefix(gty)}_{op}"
    mangled = f"_Z{len(name)}{name}{_COLLECTIVE[t]}{extra_kinds}"
    return ocl.call(builder, mangled, value.type, [value, *extra], pure=False, convergent=True)


@lower(group_broadcast, GroupType, types.Any)
@lower(group_broadcast, SubGroupType, types.Any)
@lower(group_broadcast, GroupType, types.Any, types.Integer)
@lower(group_broadcast, SubGroupType, types.Any, types.Integer)
def lower_group_broadcast(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """``sycl.group_broadcast(g, x[, local_linear_id])``."""
    gty, t = sig.args[0], sig.args[1]
    if len(args) == 3:
        lin = context.cast(builder, args[2], sig.args[2], index_type)
    else:
        lin = _I64(0)
    if isinstance(gty, SubGroupType):
        return _collective(builder, gty, "broadcast", t, args[1], [builder.trunc(lin, _I32)], "j")
    # OpenCL takes the source's per-dimension local id, fastest dimension first.
    n = gty.ndim
    sizes = _q(builder, "get_local_size", n)
    ids = []
    rest = lin
    for d in range(n - 1, -1, -1):  # SYCL's last dimension is OpenCL's first
        ids.append(builder.urem(rest, sizes[d]))
        rest = builder.udiv(rest, sizes[d])
    return _collective(builder, gty, "broadcast", t, args[1], ids, "m" * n)


def _lower_reduce(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    gty, t, op = sig.args[0], sig.args[1], sig.args[-1]
    r = _collective(builder, gty, f"reduce_{_REDUCE_OPS[op.op]}", t, args[1], [])
    if len(args) == 4:  # init: op(init, reduction)
        init = args[2]
        is_float = isinstance(t, types.Float)
        if op.op == "plus":
            return builder.fadd(init, r) if is_float else builder.add(init, r)
        cmp = "<" if op.op == "minimum" else ">"
        if is_float:
            less = builder.fcmp_ordered(cmp, init, r)
        elif t.signed:
            less = builder.icmp_signed(cmp, init, r)
        else:
            less = builder.icmp_unsigned(cmp, init, r)
        r = builder.select(less, init, r)
    return r


for _g in _GROUPS:
    lower(reduce_over_group, _g, types.Any, FunctorType)(_lower_reduce)
    lower(reduce_over_group, _g, types.Any, types.Any, FunctorType)(_lower_reduce)


def _lower_vote(op: str, negate: bool) -> Any:
    def impl(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        pred = builder.zext(args[1], _I32)
        r = _collective(builder, sig.args[0], op, types.int32, pred, [])
        res = builder.icmp_unsigned("!=", r, _I32(0))
        return builder.not_(res) if negate else res

    return impl


for _g in _GROUPS:
    lower(any_of_group, _g, types.boolean)(_lower_vote("any", False))
    lower(all_of_group, _g, types.boolean)(_lower_vote("all", False))
    lower(none_of_group, _g, types.boolean)(_lower_vote("any", True))

"""``nd_range`` kernels: ``nd_item``, ``group``, ``sub_group``, ``nd_range``, barriers.

Every query is an OpenCL work-item built-in (``get_local_id(d)`` ...), read
with SYCL dimension ``d`` of an ``n``-D launch mapped to OpenCL dimension
``n - 1 - d`` (OpenCL backend appendix). The built-ins are pure, so unused
queries vanish and repeated ones are shared. Linear ids are row-major with
dimension 0 slowest (SYCL), computed from the per-dimension ids.

Barriers are ``barrier(flags)`` → ``OpControlBarrier Workgroup`` with
``WorkgroupMemory``/``CrossWorkgroupMemory`` | ``SequentiallyConsistent``
semantics. Group algorithms (broadcast, reductions, votes) are in
:mod:`pysycl_numba.overloads.collectives`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from llvmlite import ir as llir

from pysycl._kernels.kernel_api import _fence_space, group_barrier
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
from pysycl_numba.overloads.index import dim_query, linear, make_range, product, select_dim
from pysycl_numba.targets.spirv import ocl
from pysycl_numba.types import (
    GroupType,
    IdType,
    KernelEnumType,
    NdItemType,
    NdRangeType,
    RangeType,
    SubGroupType,
    index_type,
    tag,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pysycl_numba._numba_compat import BaseContext, Signature

typing_registry = TypingRegistry()
lowering_registry = LoweringRegistry("pysycl.ndrange")
lower = lowering_registry.lower

_I32 = llir.IntType(32)
_I64 = llir.IntType(64)
#: The group types: barriers and collectives take either.
GROUPS = (GroupType, SubGroupType)


# ==================================================================== typing
def _scalar(args: tuple, kws: dict, ret: types.Type = index_type) -> object:
    return signature(ret) if not args and not kws else None


def _ids(n: int) -> types.Type:
    return IdType(n)


def _method(key: str, rule: Callable[..., object],
            ret: Callable[[Any], types.Type] | None = None,
            ) -> Callable[[AttributeTemplate, types.Type], types.BoundFunction]:
    """A typing-template method for ``key``: ``rule(args, kws[, ret(receiver type)])``.

    ``rule`` is :func:`~pysycl_numba.overloads.index.dim_query` (``q()`` or ``q(d)``)
    or :func:`_scalar` (``q()``).
    """
    @bound_function(key)
    def method(self: AttributeTemplate, recv: types.Type, args: tuple, kws: dict) -> object:
        return rule(args, kws) if ret is None else rule(args, kws, ret(recv))

    return method


def _ids_of(t: NdItemType | GroupType) -> types.Type:
    return _ids(t.ndim)


def _range_of(t: NdItemType | GroupType | NdRangeType) -> types.Type:
    return RangeType(t.ndim)


@typing_registry.register_attr
class NdItemAttributes(AttributeTemplate):
    """Methods of ``sycl.nd_item`` (§4.9.1.5)."""

    key = NdItemType

    resolve_get_global_id = _method("nd_item.get_global_id", dim_query, _ids_of)
    resolve_get_global_linear_id = _method("nd_item.get_global_linear_id", _scalar)
    resolve_get_local_id = _method("nd_item.get_local_id", dim_query, _ids_of)
    resolve_get_local_linear_id = _method("nd_item.get_local_linear_id", _scalar)
    @bound_function("nd_item.get_group")
    def resolve_get_group(self, it: NdItemType, args: tuple, kws: dict) -> object:
        if it.looped and not args:  # no group object: its collectives need the group
            return None
        return dim_query(args, kws, GroupType(it.ndim))

    resolve_get_group_linear_id = _method("nd_item.get_group_linear_id", _scalar)
    resolve_get_group_range = _method("nd_item.get_group_range", dim_query, _range_of)
    resolve_get_global_range = _method("nd_item.get_global_range", dim_query, _range_of)
    resolve_get_local_range = _method("nd_item.get_local_range", dim_query, _range_of)
    resolve_get_nd_range = _method("nd_item.get_nd_range", _scalar,
                                   lambda it: NdRangeType(it.ndim))

    @bound_function("nd_item.get_sub_group")
    def resolve_get_sub_group(self, it: NdItemType, args: tuple, kws: dict) -> object:
        return None if it.looped else _scalar(args, kws, SubGroupType())

    @bound_function("nd_item.barrier")
    def resolve_barrier(self, it: NdItemType, args: tuple, kws: dict) -> object:
        if kws or it.looped:
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

    resolve_get_group_id = _method("group.get_group_id", dim_query, _ids_of)
    resolve_get_local_id = _method("group.get_local_id", dim_query, _ids_of)
    resolve_get_local_range = _method("group.get_local_range", dim_query, _range_of)
    resolve_get_max_local_range = _method("group.get_local_range", _scalar, _range_of)
    resolve_get_group_range = _method("group.get_group_range", dim_query, _range_of)
    resolve_get_group_linear_id = _method("group.get_group_linear_id", _scalar)
    resolve_get_local_linear_id = _method("group.get_local_linear_id", _scalar)
    resolve_get_group_linear_range = _method("group.get_group_linear_range", _scalar)
    resolve_get_local_linear_range = _method("group.get_local_linear_range", _scalar)
    resolve_leader = _method("group.leader", _scalar, lambda g: types.boolean)


@typing_registry.register_attr
class SubGroupAttributes(AttributeTemplate):
    """Methods of ``sycl.sub_group`` (§4.9.1.8): ``get_local_id()``/``get_group_id()`` are
    ``id<1>`` (which converts to an integer), the linear ones integers."""

    key = SubGroupType

    resolve_get_local_id = _method("sub_group.get_local_id", _scalar, lambda sg: IdType(1))
    resolve_get_local_linear_id = _method("sub_group.get_local_linear_id", _scalar,
                                          lambda sg: index_type)
    resolve_get_local_range = _method("sub_group.get_local_range", _scalar,
                                      lambda sg: RangeType(1))
    resolve_get_local_linear_range = _method("sub_group.get_local_linear_range", _scalar,
                                             lambda sg: index_type)
    resolve_get_max_local_range = _method("sub_group.get_max_local_range", _scalar,
                                          lambda sg: RangeType(1))
    resolve_get_group_id = _method("sub_group.get_group_id", _scalar, lambda sg: IdType(1))
    resolve_get_group_linear_id = _method("sub_group.get_group_linear_id", _scalar,
                                          lambda sg: index_type)
    resolve_get_group_range = _method("sub_group.get_group_range", _scalar,
                                      lambda sg: RangeType(1))
    resolve_get_group_linear_range = _method("sub_group.get_group_linear_range", _scalar,
                                             lambda sg: index_type)
    resolve_leader = _method("sub_group.leader", _scalar, lambda sg: types.boolean)

    def resolve_dimensions(self, sg: SubGroupType) -> types.Type:
        """``sg.dimensions``: 1."""
        return index_type


@typing_registry.register_attr
class NdRangeAttributes(AttributeTemplate):
    """Methods of the ``sycl.nd_range`` an ``nd_item`` returns."""

    key = NdRangeType

    resolve_get_global_range = _method("nd_range.get_global_range", _scalar, _range_of)
    resolve_get_local_range = _method("nd_range.get_local_range", _scalar, _range_of)
    resolve_get_group_range = _method("nd_range.get_group_range", _scalar, _range_of)



@typing_registry.register_global(group_barrier)
class GroupBarrier(AbstractTemplate):
    """``sycl.group_barrier(g)``."""

    def generic(self, args: tuple, kws: dict) -> object:
        if len(args) in (1, 2) and not kws and isinstance(args[0], GROUPS):
            return signature(types.none, *args)
        return None


# ================================================================== lowering
def work_item_queries(builder: llir.IRBuilder, name: str, ndim: int) -> list[llir.Value]:
    """OpenCL work-item query ``name`` for every SYCL dimension (as i64)."""
    return [ocl.work_item_query(builder, name, ndim - 1 - d) for d in range(ndim)]


def item_queries(context: BaseContext, builder: llir.IRBuilder, ty: types.Type,
                 value: llir.Value, name: str) -> list[llir.Value]:
    """Work-item query ``name`` (an OpenCL built-in's name) of nd_item or group ``value``
    of type ``ty`` for every SYCL dimension: the built-in's, or for a looped nd_item
    (:class:`~pysycl_numba.types.NdItemType`) computed from its global id and ranges."""
    if not getattr(ty, "looped", False):
        return work_item_queries(builder, name, ty.ndim)
    s = cgutils.create_struct_proxy(ty)(context, builder, value=value)
    ids, glob, loc = ([getattr(s, f"{f}{d}") for d in range(ty.ndim)]
                      for f in ("id", "global", "local"))
    if name == "get_global_id":
        return ids
    if name == "get_global_size":
        return glob
    if name == "get_local_size":
        return loc
    if name == "get_local_id":
        return [builder.urem(i, n) for i, n in zip(ids, loc, strict=True)]
    if name == "get_group_id":
        return [builder.udiv(i, n) for i, n in zip(ids, loc, strict=True)]
    if name == "get_num_groups":
        return [builder.udiv(g, n) for g, n in zip(glob, loc, strict=True)]
    raise NotImplementedError(f"no looped nd_item query {name}")


def _lower_dims(key: str, tyclass: type, builtin: str, whole: str) -> None:
    """Register ``q()`` (an id or range) and ``q(d)`` lowerings of one query."""

    def one(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
            args: Sequence[llir.Value]) -> llir.Value:
        values = item_queries(context, builder, sig.args[0], args[0], builtin)
        dim = context.cast(builder, args[1], sig.args[1], index_type)
        return select_dim(builder, values, dim)

    def every(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
              args: Sequence[llir.Value]) -> llir.Value:
        n = sig.args[0].ndim
        values = item_queries(context, builder, sig.args[0], args[0], builtin)
        return make_range(context, builder, n, values, IdType if whole == "id" else RangeType)

    lower(key, tyclass, types.Integer)(one)
    lower(key, tyclass)(every)


for _key, _cls, _builtin, _whole in (
    ("nd_item.get_global_id", NdItemType, "get_global_id", "id"),
    ("nd_item.get_local_id", NdItemType, "get_local_id", "id"),
    ("nd_item.get_group_range", NdItemType, "get_num_groups", "range"),
    ("nd_item.get_global_range", NdItemType, "get_global_size", "range"),
    ("nd_item.get_local_range", NdItemType, "get_local_size", "range"),
    ("group.get_group_id", GroupType, "get_group_id", "id"),
    ("group.get_local_id", GroupType, "get_local_id", "id"),
    ("group.get_local_range", GroupType, "get_local_size", "range"),
    ("group.get_group_range", GroupType, "get_num_groups", "range"),
):
    _lower_dims(_key, _cls, _builtin, _whole)


@lower("nd_item.get_group", NdItemType, types.Integer)
def nd_item_get_group_dim(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                          args: Sequence[llir.Value]) -> llir.Value:
    """``it.get_group(d)``: the work-group id in dimension ``d``."""
    values = item_queries(context, builder, sig.args[0], args[0], "get_group_id")
    return select_dim(builder, values, context.cast(builder, args[1], sig.args[1], index_type))


@lower("nd_item.get_group", NdItemType)
def nd_item_get_group(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                      args: Sequence[llir.Value]) -> llir.Value:
    """``it.get_group()``: the ``sycl.group``."""
    return tag()


@lower("nd_item.get_sub_group", NdItemType)
def nd_item_get_sub_group(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                          args: Sequence[llir.Value]) -> llir.Value:
    """``it.get_sub_group()``."""
    return tag()


def _lin(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
         args: Sequence[llir.Value], ids: str, ranges: str) -> llir.Value:
    ty, v = sig.args[0], args[0]
    return linear(builder, item_queries(context, builder, ty, v, ids),
                  item_queries(context, builder, ty, v, ranges))


@lower("nd_item.get_global_linear_id", NdItemType)
def nd_item_global_linear(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                          args: Sequence[llir.Value]) -> llir.Value:
    """Row-major linear global id."""
    return _lin(context, builder, sig, args, "get_global_id", "get_global_size")


@lower("nd_item.get_local_linear_id", NdItemType)
@lower("group.get_local_linear_id", GroupType)
def local_linear(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                 args: Sequence[llir.Value]) -> llir.Value:
    """Row-major linear id inside the work-group."""
    return _lin(context, builder, sig, args, "get_local_id", "get_local_size")


@lower("nd_item.get_group_linear_id", NdItemType)
@lower("group.get_group_linear_id", GroupType)
def group_linear(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                 args: Sequence[llir.Value]) -> llir.Value:
    """Row-major linear work-group id."""
    return _lin(context, builder, sig, args, "get_group_id", "get_num_groups")


@lower("group.get_group_linear_range", GroupType)
def group_linear_range(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                       args: Sequence[llir.Value]) -> llir.Value:
    """Number of work-groups."""
    return product(builder, work_item_queries(builder, "get_num_groups", sig.args[0].ndim))


@lower("group.get_local_linear_range", GroupType)
def local_linear_range(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                       args: Sequence[llir.Value]) -> llir.Value:
    """Work-items per group."""
    return product(builder, work_item_queries(builder, "get_local_size", sig.args[0].ndim))


@lower("group.leader", GroupType)
def group_leader(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                 args: Sequence[llir.Value]) -> llir.Value:
    """Whether this is work-item 0 of the group."""
    lin = _lin(context, builder, sig, args, "get_local_id", "get_local_size")
    return builder.icmp_signed("==", lin, _I64(0))


@lower("nd_item.get_nd_range", NdItemType)
def nd_item_get_nd_range(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                         args: Sequence[llir.Value]) -> llir.Value:
    """``it.get_nd_range()``."""
    n = sig.args[0].ndim
    r = cgutils.create_struct_proxy(NdRangeType(n))(context, builder)
    glob = item_queries(context, builder, sig.args[0], args[0], "get_global_size")
    loc = item_queries(context, builder, sig.args[0], args[0], "get_local_size")
    for d, (gv, lv) in enumerate(zip(glob, loc, strict=True)):
        setattr(r, f"g{d}", gv)
        setattr(r, f"l{d}", lv)
    return r._getvalue()


def _nd_parts(context: BaseContext, builder: llir.IRBuilder, sig: Signature, args: Sequence[llir.Value],
              prefix: str) -> list[llir.Value]:
    n = sig.args[0].ndim
    r = cgutils.create_struct_proxy(NdRangeType(n))(context, builder, value=args[0])
    return [getattr(r, f"{prefix}{d}") for d in range(n)]


@lower("nd_range.get_global_range", NdRangeType)
def nd_range_global(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                    args: Sequence[llir.Value]) -> llir.Value:
    """``nd.get_global_range()``."""
    return make_range(context, builder, sig.args[0].ndim,
                      _nd_parts(context, builder, sig, args, "g"))


@lower("nd_range.get_local_range", NdRangeType)
def nd_range_local(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                   args: Sequence[llir.Value]) -> llir.Value:
    """``nd.get_local_range()``."""
    return make_range(context, builder, sig.args[0].ndim,
                      _nd_parts(context, builder, sig, args, "l"))


@lower("nd_range.get_group_range", NdRangeType)
def nd_range_groups(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                    args: Sequence[llir.Value]) -> llir.Value:
    """``nd.get_group_range()`` = global / local."""
    g = _nd_parts(context, builder, sig, args, "g")
    loc = _nd_parts(context, builder, sig, args, "l")
    return make_range(context, builder, sig.args[0].ndim,
                      [builder.udiv(a, b) for a, b in zip(g, loc, strict=True)])


# ----------------------------------------------------------------- sub-group
def _sg(builder: llir.IRBuilder, name: str) -> llir.Value:
    v = ocl.call(builder, ocl.mangle(name, "void"), _I32, [])
    return builder.zext(v, _I64)


_SG_QUERIES = {
    "get_local_linear_id": "get_sub_group_local_id",
    "get_local_linear_range": "get_sub_group_size",
    "get_group_linear_id": "get_sub_group_id",
    "get_group_linear_range": "get_num_sub_groups",
}
#: The sub-group's ``id<1>`` queries (§4.9.1.8: ``id_type``) and their OpenCL built-ins.
_SG_ID_QUERIES = {"get_local_id": "get_sub_group_local_id", "get_group_id": "get_sub_group_id"}


def _lower_sg(method: str, builtin: str, as_id: bool) -> None:
    @lower(f"sub_group.{method}", SubGroupType)
    def impl(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
             args: Sequence[llir.Value]) -> llir.Value:
        v = _sg(builder, builtin)
        return make_range(context, builder, 1, [v], IdType) if as_id else v


for _m, _b in _SG_QUERIES.items():
    _lower_sg(_m, _b, False)
for _m, _b in _SG_ID_QUERIES.items():
    _lower_sg(_m, _b, True)


@lower("sub_group.get_local_range", SubGroupType)
def sg_local_range(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                   args: Sequence[llir.Value]) -> llir.Value:
    """``sg.get_local_range()``: the size of this sub-group."""
    return make_range(context, builder, 1, [_sg(builder, "get_sub_group_size")])


@lower("sub_group.get_max_local_range", SubGroupType)
def sg_max_local_range(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                       args: Sequence[llir.Value]) -> llir.Value:
    """``sg.get_max_local_range()``."""
    return make_range(context, builder, 1, [_sg(builder, "get_max_sub_group_size")])


@lower("sub_group.get_group_range", SubGroupType)
def sg_group_range(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                   args: Sequence[llir.Value]) -> llir.Value:
    """``sg.get_group_range()``: sub-groups in the work-group."""
    return make_range(context, builder, 1, [_sg(builder, "get_num_sub_groups")])


@lowering_registry.lower_getattr(SubGroupType, "dimensions")
def sg_dimensions(context: BaseContext, builder: llir.IRBuilder, ty: types.Type,
                  value: llir.Value) -> llir.Value:
    """``sg.dimensions``: a sub-group is 1-D."""
    return context.get_constant(index_type, 1)


@lower("sub_group.leader", SubGroupType)
def sg_leader(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
              args: Sequence[llir.Value]) -> llir.Value:
    """Whether this is work-item 0 of the sub-group."""
    return builder.icmp_unsigned("==", _sg(builder, "get_sub_group_local_id"), _I64(0))


# ------------------------------------------------------------------ barriers
_FENCE_FLAGS = {"local_space": 1, "global_space": 2, "global_and_local": 3}


def _barrier(builder: llir.IRBuilder, is_sub_group: bool, flags: int) -> None:
    name = "sub_group_barrier" if is_sub_group else "barrier"
    ocl.call(builder, ocl.mangle(name, "uint"), llir.VoidType(), [_I32(flags)], pure=False,
             convergent=True)


@lower("nd_item.barrier", NdItemType)
def nd_item_barrier(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                    args: Sequence[llir.Value]) -> llir.Value:
    """``it.barrier()``: work-group barrier fencing local and global memory."""
    _barrier(builder, False, 3)
    return context.get_dummy_value()


@lower("nd_item.barrier", NdItemType, KernelEnumType)
def nd_item_barrier_fence(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                          args: Sequence[llir.Value]) -> llir.Value:
    """``it.barrier(sycl.access.fence_space.local_space)``."""
    _barrier(builder, False, _FENCE_FLAGS[sig.args[1].member.name])
    return context.get_dummy_value()


@lower(group_barrier, GroupType)
@lower(group_barrier, SubGroupType)
@lower(group_barrier, GroupType, types.Any)
@lower(group_barrier, SubGroupType, types.Any)
def lower_group_barrier(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                        args: Sequence[llir.Value]) -> llir.Value:
    """``sycl.group_barrier(g)``: all of ``g`` waits; local and global memory fenced."""
    _barrier(builder, isinstance(sig.args[0], SubGroupType), 3)
    return context.get_dummy_value()

"""Group algorithms: ``group_broadcast``, ``reduce_over_group``, ``any/all/none_of_group``.

They map onto the OpenCL 2.0 work-group / sub-group built-ins
(``work_group_reduce_add``, ``sub_group_broadcast`` ...), called by Itanium
name; LLVM's SPIR-V backend lowers them to ``OpGroup*`` instructions
(``OpGroupBroadcast``, ``OpGroupIAdd``/``FAdd``/..., ``OpGroupAny/All``).
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

from llvmlite import ir as llir

from pysycl._kernels.kernel_api import (
    all_of_group,
    any_of_group,
    group_broadcast,
    none_of_group,
    reduce_over_group,
)
from pysycl_numba._numba_compat import (
    AbstractTemplate,
    LoweringRegistry,
    TypingRegistry,
    signature,
    types,
)
from pysycl_numba.overloads.index import INT
from pysycl_numba.overloads.ndrange import GROUPS, work_item_queries
from pysycl_numba.targets.spirv import ocl
from pysycl_numba.types import FunctorType, GroupType, IdType, SubGroupType, index_type

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from pysycl_numba._numba_compat import BaseContext, LoweringImpl, Signature

typing_registry = TypingRegistry()
lowering_registry = LoweringRegistry("pysycl.collectives")
lower = lowering_registry.lower

_I32 = llir.IntType(32)
_I64 = llir.IntType(64)
#: Element types the OpenCL 2.0 work-group/sub-group collectives take.
_COLLECTIVE = {
    types.int32: "i", types.uint32: "j", types.int64: "l", types.uint64: "m",
    types.float32: "f", types.float64: "d",
}
#: The SYCL function objects ``reduce_over_group`` takes, and OpenCL's names for them.
_REDUCE_OPS = {"plus": "add", "minimum": "min", "maximum": "max"}


# ==================================================================== typing
def _collective_type(t: types.Type) -> types.Type | None:
    t = types.unliteral(t)
    if isinstance(t, types.Boolean):
        return types.int32
    if isinstance(t, types.Integer) and t not in _COLLECTIVE:
        return types.int64 if t.signed else types.uint64
    return t if t in _COLLECTIVE else None


def _local_id_type(t: types.Type, ndim: int) -> types.Type | None:
    """The type ``group_broadcast`` reads its source as: an integer (a local linear id), or
    the local id as a ``sycl.id`` or a tuple of ``ndim`` integers (C++'s ``id_type``)."""
    if isinstance(t, INT):
        return types.unliteral(t)
    if isinstance(t, IdType) and t.ndim == ndim:
        return t
    if isinstance(t, types.BaseTuple) and len(t) == ndim and all(isinstance(e, INT) for e in t):
        return types.UniTuple(index_type, ndim)
    return None


def with_keywords(template: AbstractTemplate, args: tuple, kws: dict,
                  typer: Callable[[tuple], Signature | None]) -> Signature | None:
    """``typer(args)``, with keyword arguments (``delta=2``) bound to the parameters of the
    function the template types (its host definition) first."""
    if not kws:
        return typer(args)
    pysig = inspect.signature(type(template).key)  # (template.key: a bound method)
    try:
        args = pysig.bind(*args, **kws).args
    except TypeError:
        return None
    sig = typer(args)
    return None if sig is None else sig.replace(pysig=pysig)


@typing_registry.register_global(group_broadcast)
class GroupBroadcast(AbstractTemplate):
    """``sycl.group_broadcast(g, x[, local_id])``; a bool stays a bool."""

    def generic(self, args: tuple, kws: dict) -> object:
        return with_keywords(self, args, kws, self._typer)

    def _typer(self, args: tuple) -> Signature | None:
        if len(args) not in (2, 3) or not isinstance(args[0], GROUPS):
            return None
        t = types.unliteral(args[1])
        t = t if isinstance(t, types.Boolean) else _collective_type(t)
        ndim = args[0].ndim if isinstance(args[0], GroupType) else 1
        rest = (_local_id_type(args[2], ndim),) if len(args) == 3 else ()
        if t is None or None in rest:
            return None
        return signature(t, args[0], t, *rest)


@typing_registry.register_global(reduce_over_group)
class ReduceOverGroup(AbstractTemplate):
    """``sycl.reduce_over_group(g, x, op)`` / ``(g, x, init, op)``, op plus/minimum/maximum."""

    def generic(self, args: tuple, kws: dict) -> object:
        if kws or len(args) not in (3, 4) or not isinstance(args[0], GROUPS):
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
        if len(args) == 2 and not kws and isinstance(args[0], GROUPS):
            return signature(types.boolean, args[0], types.boolean)
        return None


for _fn in (any_of_group, all_of_group, none_of_group):
    typing_registry.register_global(_fn)(type(f"Vote_{_fn.__name__}", (_Vote,), {}))


# ================================================================== lowering
def _prefix(gty: types.Type) -> str:
    return "sub_group" if isinstance(gty, SubGroupType) else "work_group"


def _collective(builder: llir.IRBuilder, gty: types.Type, op: str, t: types.Type, value: llir.Value,
                extra: list[llir.Value], extra_kinds: str = "") -> llir.Value:
    name = f"{_prefix(gty)}_{op}"
    mangled = f"_Z{len(name)}{name}{_COLLECTIVE[t]}{extra_kinds}"
    return ocl.call(builder, mangled, value.type, [value, *extra], pure=False, convergent=True)


@lower(group_broadcast, GroupType, types.Any)
@lower(group_broadcast, SubGroupType, types.Any)
@lower(group_broadcast, GroupType, types.Any, types.Any)
@lower(group_broadcast, SubGroupType, types.Any, types.Any)
def lower_group_broadcast(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                          args: Sequence[llir.Value]) -> llir.Value:
    """``sycl.group_broadcast(g, x[, local_id])``."""
    gty, t, x = sig.args[0], sig.args[1], args[1]
    if isinstance(t, types.Boolean):  # as 0/1 in an int32
        r = lower_group_broadcast(context, builder, signature(types.int32, gty, types.int32,
                                                              *sig.args[2:]),
                                  [args[0], builder.zext(x, _I32), *args[2:]])
        return builder.icmp_unsigned("!=", r, _I32(0))
    n = gty.ndim if isinstance(gty, GroupType) else 1
    if len(args) == 3 and not isinstance(sig.args[2], types.Integer):  # an id or a tuple
        ids = [builder.extract_value(args[2], d) for d in range(n)]  # SYCL order
    else:
        lin = context.cast(builder, args[2], sig.args[2], index_type) if len(args) == 3 \
            else _I64(0)
        ids = _unlinear(builder, gty, n, lin)
    if isinstance(gty, SubGroupType):
        return _collective(builder, gty, "broadcast", t, x, [builder.trunc(ids[0], _I32)], "j")
    # OpenCL takes the source's per-dimension local id, fastest dimension first.
    return _collective(builder, gty, "broadcast", t, x, ids[::-1], "m" * n)


def _unlinear(builder: llir.IRBuilder, gty: types.Type, n: int, lin: llir.Value,
              ) -> list[llir.Value]:
    """The local id (SYCL order) of local linear id ``lin`` in a group of ``n`` dimensions."""
    if n == 1:
        return [lin]
    sizes = work_item_queries(builder, "get_local_size", n)
    ids = []
    for d in range(n - 1, -1, -1):  # row-major: the last dimension is the fastest
        ids.append(builder.urem(lin, sizes[d]))
        lin = builder.udiv(lin, sizes[d])
    return ids[::-1]


def _lower_reduce(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                  args: Sequence[llir.Value]) -> llir.Value:
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


for _g in GROUPS:
    lower(reduce_over_group, _g, types.Any, FunctorType)(_lower_reduce)
    lower(reduce_over_group, _g, types.Any, types.Any, FunctorType)(_lower_reduce)


def _lower_vote(op: str, negate: bool) -> LoweringImpl:
    def impl(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
             args: Sequence[llir.Value]) -> llir.Value:
        pred = builder.zext(args[1], _I32)
        r = _collective(builder, sig.args[0], op, types.int32, pred, [])
        res = builder.icmp_unsigned("!=", r, _I32(0))
        return builder.not_(res) if negate else res

    return impl


for _g in GROUPS:
    lower(any_of_group, _g, types.boolean)(_lower_vote("any", False))
    lower(all_of_group, _g, types.boolean)(_lower_vote("all", False))
    lower(none_of_group, _g, types.boolean)(_lower_vote("any", True))

"""Group algorithms of SYCL 2020 §4.17: sub-group shuffles, scans, generic reductions, joint_*.

**Shuffles** are ``intel_sub_group_shuffle(x, lane)`` of ``cl_intel_subgroups`` (the
SPIR-V backend lowers it to ``OpSubgroupShuffleINTEL`` of ``SPV_INTEL_subgroups``;
``cl_khr_subgroup_shuffle``'s ``OpGroupNonUniformShuffle`` needs SPIR-V 1.3, and
pysycl emits 1.2); the PTX target defines it as ``shfl.sync.idx``. A source lane
outside the sub-group is unspecified in the spec; every pysycl device returns the
caller's own ``x`` then (a ``select`` after the shuffle), so results agree between devices.

**Scans and reductions** with ``plus``/``minimum``/``maximum`` on SPIR-V are the
OpenCL 2.0 built-ins (``work_group_scan_inclusive_add`` ... → ``OpGroupIAdd
InclusiveScan``). Every other case -- the other function objects, and every scan on
PTX -- is one generic algorithm written in Python below and compiled with the
kernel (:meth:`BaseContext.compile_internal`): a Hillis-Steele scan over the
sub-group by shuffles, then for work-groups the totals of the earlier sub-groups
folded in through ``group_broadcast`` from each sub-group's leader, whose local
linear id a native reduction finds (the device lays sub-groups out: the OpenCL CPU
device gives each row of a 2-D or 3-D work-group its own). Sub-groups are runs of
consecutive local linear ids in sub-group id order on every pysycl device.
``init`` is combined last: ``op(init, scan)``.

**Joint algorithms** stride the work-items over ``data[first:last]`` and meet in
one group reduction, vote or (per chunk of the group's size) scan.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from llvmlite import ir as llir

from pysycl._kernels.group_algorithms import (
    exclusive_scan_over_group,
    inclusive_scan_over_group,
    known_identity,
    permute_group_by_xor,
    select_from_group,
    shift_group_left,
    shift_group_right,
)
from pysycl._kernels.kernel_api import (
    group_broadcast,
    plus,
    reduce_over_group,
)
from pysycl_numba._numba_compat import (
    AbstractTemplate,
    LoweringRegistry,
    TypingRegistry,
    signature,
    types,
)
from pysycl_numba.overloads.collectives import _COLLECTIVE, _collective_type, with_keywords
from pysycl_numba.overloads.collectives import _lower_reduce as lower_native_reduce
from pysycl_numba.overloads.index import INT
from pysycl_numba.overloads.ndrange import GROUPS
from pysycl_numba.targets.spirv import ocl
from pysycl_numba.types import (
    AccessorType,
    FunctorType,
    GroupType,
    IdType,
    SubGroupType,
    USMPointerType,
    index_type,
    tag,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pysycl_numba._numba_compat import BaseContext, Signature

typing_registry = TypingRegistry()
lowering_registry = LoweringRegistry("pysycl.group_algorithms")
lower = lowering_registry.lower

_I32 = llir.IntType(32)
_NATIVE = {"plus": "add", "minimum": "min", "maximum": "max"}
_BITS = ("bit_and", "bit_or", "bit_xor")
_LOGICAL = ("logical_and", "logical_or")
_CONTAINERS = (AccessorType, USMPointerType)


# ============================================================ internal helpers
def _combine(op: Any, x: Any, y: Any) -> Any:
    """``op(x, y)`` inside the generic algorithms (typed and lowered below)."""
    return op(x, y)


def _identity(op: Any, like: Any) -> Any:
    """The identity of ``op`` for the type of ``like`` (a number, accessor or pointer)."""
    raise NotImplementedError


def _this_sub_group() -> Any:
    """The calling work-item's sub-group (used by the work-group algorithms)."""
    raise NotImplementedError


def _value_type(t: types.Type) -> types.Type:
    t = types.unliteral(t)
    return t.dtype if isinstance(t, _CONTAINERS) else t


@typing_registry.register_global(_combine)
class _Combine(AbstractTemplate):
    def generic(self, args: tuple, kws: dict) -> object:
        t = types.unliteral(args[1])
        return signature(t, args[0], t, t)


@typing_registry.register_global(_identity)
class _Identity(AbstractTemplate):
    def generic(self, args: tuple, kws: dict) -> object:
        return signature(_value_type(args[1]), *args)


@typing_registry.register_global(_this_sub_group)
class _ThisSubGroup(AbstractTemplate):
    def generic(self, args: tuple, kws: dict) -> object:
        return signature(SubGroupType())


def identity_constant(op: str, t: types.Type) -> llir.Constant:
    """``sycl::known_identity`` of ``op`` for Numba type ``t``, as an LLVM constant."""
    if isinstance(t, types.Boolean):
        return llir.Constant(llir.IntType(1), int(op == "logical_and"))
    dt = np.dtype(str(t))
    value = known_identity(op, dt)
    llty = {4: llir.FloatType(), 8: llir.DoubleType()}[dt.itemsize] if dt.kind == "f" \
        else llir.IntType(dt.itemsize * 8)
    return llir.Constant(llty, value.item() if dt.kind == "f" else int(value) & ((1 << (
        dt.itemsize * 8)) - 1))


def combine(builder: llir.IRBuilder, op: str, t: types.Type, x: llir.Value,
            y: llir.Value) -> llir.Value:
    """``op(x, y)`` for values of Numba type ``t`` (a number or a boolean)."""
    fp = isinstance(t, types.Float)
    if op in _LOGICAL:
        return _logical(builder, op, fp, x, y)
    if op == "plus":
        return builder.fadd(x, y) if fp else builder.add(x, y)
    if op == "multiplies":
        return builder.fmul(x, y) if fp else builder.mul(x, y)
    if op in _BITS:
        return {"bit_and": builder.and_, "bit_or": builder.or_, "bit_xor": builder.xor}[op](x, y)
    cmp = "<" if op == "minimum" else ">"
    if fp:
        take_y = builder.fcmp_ordered(cmp, y, x)
    elif getattr(t, "signed", False):
        take_y = builder.icmp_signed(cmp, y, x)
    else:
        take_y = builder.icmp_unsigned(cmp, y, x)
    return builder.select(take_y, y, x)  # Python's min(x, y): x unless y is smaller


def _logical(builder: llir.IRBuilder, op: str, fp: bool, x: llir.Value,
             y: llir.Value) -> llir.Value:
    def truth(v: llir.Value) -> llir.Value:
        if v.type == llir.IntType(1):
            return v
        zero = llir.Constant(v.type, 0)
        return builder.fcmp_unordered("!=", v, zero) if fp else builder.icmp_unsigned("!=", v, zero)

    r = builder.and_(truth(x), truth(y)) if op == "logical_and" else builder.or_(truth(x), truth(y))
    if x.type == llir.IntType(1):
        return r
    return builder.uitofp(r, x.type) if fp else builder.zext(r, x.type)


@lower(_combine, FunctorType, types.Any, types.Any)
def _lower_combine(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                   args: Sequence[llir.Value]) -> llir.Value:
    return combine(builder, sig.args[0].op, sig.return_type, args[1], args[2])


@lower(_identity, FunctorType, types.Any)
def _lower_identity(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                    args: Sequence[llir.Value]) -> llir.Value:
    return identity_constant(sig.args[0].op, sig.return_type)


@lower(_this_sub_group)
def _lower_this_sub_group(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                          args: Sequence[llir.Value]) -> llir.Value:
    return tag()


def op_accepts(op: types.Type, t: types.Type) -> bool:
    """Whether function object type ``op`` combines values of type ``t``."""
    if not isinstance(op, FunctorType):
        return False
    if isinstance(t, types.Boolean):
        return op.op in _LOGICAL
    if op.op in _BITS:
        return isinstance(t, types.Integer)
    return t in _COLLECTIVE


# ==================================================================== shuffles
def _shuffle_type(t: types.Type) -> types.Type | None:
    t = types.unliteral(t)
    return types.boolean if isinstance(t, types.Boolean) else _collective_type(t)


class _Shuffle(AbstractTemplate):
    arity: tuple[int, ...] = (3,)

    def generic(self, args: tuple, kws: dict) -> object:
        return with_keywords(self, args, kws, self._typer)

    def _typer(self, args: tuple) -> Signature | None:
        if len(args) not in self.arity or not isinstance(args[0], SubGroupType):
            return None
        t = _shuffle_type(args[1])
        # an integer, or an id<1> (select_from_group's remote_local_id is the sub-group's
        # id_type; it converts to its component)
        idx = [types.unliteral(a) if isinstance(a, INT) else
               index_type if isinstance(a, IdType) and a.ndim == 1 else None for a in args[2:]]
        if t is None or any(i is None for i in idx):
            return None
        return signature(t, args[0], t, *idx)


class _Shift(_Shuffle):
    arity = (2, 3)


typing_registry.register_global(shift_group_left)(type("ShiftLeft", (_Shift,), {}))
typing_registry.register_global(shift_group_right)(type("ShiftRight", (_Shift,), {}))
typing_registry.register_global(permute_group_by_xor)(type("PermuteXor", (_Shuffle,), {}))
typing_registry.register_global(select_from_group)(type("SelectFrom", (_Shuffle,), {}))


def _sg_i32(builder: llir.IRBuilder, name: str) -> llir.Value:
    return ocl.call(builder, ocl.mangle(name, "void"), _I32, [])


def shuffle(builder: llir.IRBuilder, t: types.Type, x: llir.Value, src: llir.Value) -> llir.Value:
    """``x`` of sub-group lane ``src`` (i32), or ``x`` itself when ``src`` is not a lane."""
    size = _sg_i32(builder, "get_sub_group_size")
    ok = builder.icmp_unsigned("<", src, size)
    lane = builder.select(ok, src, llir.Constant(_I32, 0))  # never shuffle from outside
    is_bool = isinstance(t, types.Boolean)
    v = builder.zext(x, _I32) if is_bool else x
    code = _COLLECTIVE[types.int32 if is_bool else t]
    r = ocl.call(builder, f"_Z23intel_sub_group_shuffle{code}j", v.type, [v, lane],
                 pure=False, convergent=True)
    r = builder.trunc(r, x.type) if is_bool else r
    return builder.select(ok, r, x)


def _lower_shuffle(kind: str) -> Any:
    def impl(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
             args: Sequence[llir.Value]) -> llir.Value:
        if len(args) == 3:
            arg = builder.trunc(context.cast(builder, args[2], sig.args[2], index_type), _I32)
        else:
            arg = llir.Constant(_I32, 1)
        me = _sg_i32(builder, "get_sub_group_local_id")
        src = {"left": lambda: builder.add(me, arg), "right": lambda: builder.sub(me, arg),
               "xor": lambda: builder.xor(me, arg), "select": lambda: arg}[kind]()
        return shuffle(builder, sig.return_type, args[1], src)

    return impl


for _fn, _kind in ((shift_group_left, "left"), (shift_group_right, "right"),
                   (permute_group_by_xor, "xor"), (select_from_group, "select")):
    lower(_fn, SubGroupType, types.Any)(_lower_shuffle(_kind))
    lower(_fn, SubGroupType, types.Any, types.Integer)(_lower_shuffle(_kind))


# ========================================================= generic algorithms
# Compiled with the kernel by compile_internal: every work-item of the (sub-)group
# runs the same loops (trip counts depend only on the group's shape).
def _sg_inclusive(sg: Any, x: Any, op: Any) -> Any:
    lane = sg.get_local_linear_id()
    n = sg.get_local_linear_range()
    off = 1
    while off < n:
        y = select_from_group(sg, x, lane - off if lane >= off else lane)
        if lane >= off:
            x = _combine(op, y, x)
        off *= 2
    return x


def _sg_exclusive(sg: Any, x: Any, op: Any) -> Any:
    incl = _sg_inclusive(sg, x, op)
    lane = sg.get_local_linear_id()
    y = select_from_group(sg, incl, lane - 1 if lane > 0 else 0)
    return y if lane > 0 else _identity(op, x)


def _sg_reduce(sg: Any, x: Any, op: Any) -> Any:
    incl = _sg_inclusive(sg, x, op)
    return select_from_group(sg, incl, sg.get_local_linear_range() - 1)


def _wg_prefix(g: Any, sg: Any, incl: Any, op: Any) -> Any:
    """The combination of the sub-group totals before the caller's sub-group."""
    total = select_from_group(sg, incl, sg.get_local_linear_range() - 1)
    me = sg.get_group_linear_id()
    lin = g.get_local_linear_id()
    prefix = _identity(op, incl)
    for s in range(sg.get_group_linear_range()):
        # Where sub-group s starts is the device's choice (the OpenCL CPU device gives
        # each row of a 2-D or 3-D work-group its own sub-groups): its leader says.
        start = reduce_over_group(g, lin if s == me and sg.leader() else 0, plus())
        t = group_broadcast(g, total, start)
        if s < me:
            prefix = _combine(op, prefix, t)
    return prefix


def _wg_inclusive(g: Any, x: Any, op: Any) -> Any:
    sg = _this_sub_group()
    incl = _sg_inclusive(sg, x, op)
    return _combine(op, _wg_prefix(g, sg, incl, op), incl)


def _wg_exclusive(g: Any, x: Any, op: Any) -> Any:
    sg = _this_sub_group()
    incl = _sg_inclusive(sg, x, op)
    lane = sg.get_local_linear_id()
    y = select_from_group(sg, incl, lane - 1 if lane > 0 else 0)
    e = y if lane > 0 else _identity(op, x)
    return _combine(op, _wg_prefix(g, sg, incl, op), e)


def _wg_reduce(g: Any, x: Any, op: Any) -> Any:
    return group_broadcast(g, _wg_inclusive(g, x, op), g.get_local_linear_range() - 1)


_GENERIC = {
    ("inclusive", False): _sg_inclusive, ("exclusive", False): _sg_exclusive,
    ("reduce", False): _sg_reduce, ("inclusive", True): _wg_inclusive,
    ("exclusive", True): _wg_exclusive, ("reduce", True): _wg_reduce,
}


# ====================================================================== scans
def split_op_init(args: tuple) -> tuple[types.Type, types.Type | None] | None:
    """(function object type, init type or None) of trailing ``[init,] op`` / ``op[, init]``."""
    ops = [a for a in args if isinstance(a, FunctorType)]
    if len(args) not in (1, 2) or len(ops) != 1:
        return None
    rest = [a for a in args if not isinstance(a, FunctorType)]
    return ops[0], (types.unliteral(rest[0]) if rest else None)


class _Scan(AbstractTemplate):
    def generic(self, args: tuple, kws: dict) -> object:
        if kws or len(args) < 3 or not isinstance(args[0], GROUPS):
            return None
        parts = split_op_init(args[2:])
        t = _shuffle_type(args[1])
        if parts is None or t is None or not op_accepts(parts[0], t):
            return None
        if parts[1] is not None and not isinstance(parts[1], (types.Number, types.Boolean)):
            return None
        return signature(t, args[0], t, *(t if a is not parts[0] else a
                                          for a in args[2:]))


typing_registry.register_global(inclusive_scan_over_group)(type("InclScan", (_Scan,), {}))
typing_registry.register_global(exclusive_scan_over_group)(type("ExclScan", (_Scan,), {}))


@typing_registry.register_global(reduce_over_group)
class ReduceOverGroupGeneric(AbstractTemplate):
    """``reduce_over_group`` with the function objects OpenCL has no built-in for."""

    def generic(self, args: tuple, kws: dict) -> object:
        if kws or len(args) not in (3, 4) or not isinstance(args[0], GROUPS):
            return None
        op, t = args[-1], _shuffle_type(args[1])
        if t is None or not op_accepts(op, t) or (op.op in _NATIVE and t != types.boolean):
            return None
        return signature(t, args[0], t, *((t,) if len(args) == 4 else ()), op)


def group_algorithm(context: BaseContext, builder: llir.IRBuilder, kind: str, gty: types.Type,
                    op: str, t: types.Type, g: llir.Value, x: llir.Value) -> llir.Value:
    """``kind`` (``inclusive``/``exclusive``/``reduce``) of ``x`` over group ``g`` without init."""
    work_group = isinstance(gty, GroupType)
    if isinstance(t, types.Boolean):  # logical ops on booleans: as 0/1 in int32
        r = group_algorithm(context, builder, kind, gty, op, types.int32, g,
                            builder.zext(x, _I32))
        return builder.icmp_unsigned("!=", r, _I32(0))
    if op in _NATIVE and context.image_format == "spirv":
        prefix = "work_group" if work_group else "sub_group"
        name = f"{prefix}_{'reduce' if kind == 'reduce' else 'scan_' + kind}_{_NATIVE[op]}"
        return ocl.call(builder, f"_Z{len(name)}{name}{_COLLECTIVE[t]}", x.type, [x],
                        pure=False, convergent=True)
    impl = _GENERIC[kind, work_group]
    sig = signature(t, gty, t, FunctorType(op))
    return context.compile_internal(builder, impl, sig, [g, x, tag()])


def _lower_scan(kind: str) -> Any:
    def impl(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
             args: Sequence[llir.Value]) -> llir.Value:
        opi = next(i for i, a in enumerate(sig.args) if isinstance(a, FunctorType))
        op, t = sig.args[opi].op, sig.return_type
        if kind == "reduce" and op in _NATIVE and not isinstance(t, types.Boolean):
            # the same lowering key as collectives' reductions: keep theirs (native on PTX too)
            return lower_native_reduce(context, builder, sig, args)
        r = group_algorithm(context, builder, kind, sig.args[0], op, t, args[0], args[1])
        if len(args) == 4:
            init = args[5 - opi]  # the argument after x that is not the op
            r = combine(builder, op, t, init, r)
        return r

    return impl


for _g in GROUPS:
    for _fn, _kind in ((inclusive_scan_over_group, "inclusive"),
                       (exclusive_scan_over_group, "exclusive")):
        lower(_fn, _g, types.Any, FunctorType)(_lower_scan(_kind))
        lower(_fn, _g, types.Any, FunctorType, types.Any)(_lower_scan(_kind))
        lower(_fn, _g, types.Any, types.Any, FunctorType)(_lower_scan(_kind))
    lower(reduce_over_group, _g, types.Any, FunctorType)(_lower_scan("reduce"))
    lower(reduce_over_group, _g, types.Any, types.Any, FunctorType)(_lower_scan("reduce"))

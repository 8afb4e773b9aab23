"""Barriers, sub-groups (warps) and group collectives of OpenCL C, defined for PTX.

Every definition here is LLVM IR over NVVM intrinsics (registered with
:mod:`.builtins`); the semantics follow the PTX ISA 8.x (cited by section).

**Sub-groups are warps.** CUDA numbers the threads of a CTA by the linear id
``lin = tid.x + ntid.x*(tid.y + ntid.y*tid.z)`` and packs consecutive linear
ids into warps of 32 (CUDA C++ Programming Guide, "SIMT Architecture"); OpenCL
dimension 0 is ``x``. So ``get_sub_group_id() = lin/32``,
``get_sub_group_local_id() = lin%32``, ``get_num_sub_groups() = ceil(wg/32)`` and
``get_sub_group_size() = min(32, wg - 32*sub_group_id)``: only the last warp may
be partial. ``get_max_sub_group_size() = min(32, wg)``: SYCL's
``get_max_local_range`` is "the maximum number of work-items in any sub-group".

**Warp operations name the lanes that exist.** ``shfl.sync``, ``vote.sync`` and
``bar.warp.sync`` take a member mask; a lane in the mask that never executes the
instruction (a lane past the end of a partial warp) would hang or be undefined
(ISA §9.7.8.6, §9.7.12.2). The mask is therefore ``(1 << size) - 1``, computed as
``0xffffffff >> (32 - size)`` (``size`` is 1..32).

**Reductions in a warp** are a ``shfl.sync.down`` tree into lane 0 (offsets 16,
8, 4, 2, 1) where lane ``l`` folds in the partial of lane ``l+off`` only when
``l+off < count``: lane ``l+off`` then holds the partial of lanes
``l+off, l+off+2*off, ...`` that are all ``< count`` (by the same guard one level
down), and when ``l+off >= count`` every lane it would bring is past the end.
A butterfly (``shfl.bfly``) would be wrong for counts that are not powers of
two. A shuffle whose source lane is outside the mask returns an undefined value
(§9.7.8.6), which the guard discards. Lane 0's total is then broadcast with
``shfl.sync.idx``. 64-bit values (``long``, ``double``) travel as two 32-bit
shuffles. ``min``/``max`` of floating point are ``llvm.minnum``/``maxnum``
(PTX ``min.f32``: a NaN operand yields the other one, as OpenCL's ``fmin``).

**Work-group collectives** use one shared-memory scratch of 33 ``i64`` slots
(:data:`SCRATCH`): a slot per warp (1024 work-items at most, so 32 warps) and a
result slot. A reduction: each warp reduces, its lane 0 writes its slot,
barrier, warp 0 reduces the ``num_sub_groups`` slots and lane 0 writes the
result slot, barrier, everyone reads the result. A broadcast: barrier, the
source work-item writes the result slot, barrier, everyone reads. Two barriers
suffice back to back, without a third after the read: a collective writes the
result slot only after its own first barrier, which no work-item reaches
before it has read the previous collective's result; and the warp slots are
written before the first barrier of a reduction, after every work-item passed
the previous reduction's second barrier, after which nobody reads them.
``any``/``all`` over the work-group are one ``bar.red.or/and.pred``
(§9.7.13.1), like CUDA's ``__syncthreads_or``.

**Barriers.** ``barrier(flags)`` is ``bar.sync 0`` (CUDA's ``__syncthreads``;
``llvm.nvvm.barrier.cta.sync.aligned.all`` in LLVM 22) whatever the fence flags:
``bar{.cta}.sync`` guarantees that memory accesses requested by the threads
before the barrier are performed relative to all threads of the CTA (ISA
§9.7.13.1; in the memory model §8 it is a release/acquire pattern at CTA scope
for *all* state spaces), which is what ``CLK_LOCAL_MEM_FENCE`` and
``CLK_GLOBAL_MEM_FENCE`` ask among the work-items of one work-group, so no
extra ``membar``/``fence`` is needed. ``sub_group_barrier`` is
``bar.warp.sync mask``, which also orders memory among the participating
threads (§9.7.13.3). Barriers and collectives are ``convergent``; the aligned
form requires that every thread of the CTA runs the same barrier instruction,
which SYCL requires of group functions anyway (all work-items of the group
encounter them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pysycl_numba.targets.ptx.builtins import Decl, Definition, define, define_pattern, header
from pysycl_numba.targets.ptx.workitem import sreg_declares

WARP = 32
#: The work-group collectives' shared scratch: a slot per warp, then the result slot.
SCRATCH = "@__pysycl_wg_scratch"
_RESULT_SLOT = WARP
_SCRATCH_DEF = (f"{SCRATCH} = internal addrspace(3) global [{WARP + 1} x i64] undef, align 8")
_BARRIER = "llvm.nvvm.barrier.cta.sync.aligned.all"

#: OpenCL's element-type manglings: (LLVM type, signed); None for floating point.
_ELEM: dict[str, tuple[str, bool | None]] = {
    "i": ("i32", True), "j": ("i32", False), "l": ("i64", True), "m": ("i64", False),
    "f": ("float", None), "d": ("double", None),
}
_SUFFIX = {"i32": "i32", "i64": "i64", "float": "f32", "double": "f64"}


@dataclass
class _Body:
    """IR lines being written, the declarations they need, and a counter for fresh names."""

    lines: list[str] = field(default_factory=list)
    needs: set[str] = field(default_factory=set)
    n: int = 0

    def fresh(self, hint: str) -> str:
        self.n += 1
        return f"%{hint}.{self.n}"

    def let(self, hint: str, rhs: str) -> str:
        """``%hint.N = rhs``; returns ``%hint.N``."""
        v = self.fresh(hint)
        self.lines.append(f"  {v} = {rhs}")
        return v

    def do(self, line: str) -> None:
        self.lines.append(f"  {line}")

    def label(self, name: str) -> None:
        self.lines.append(f"{name}:")

    def intrinsic(self, declaration: str) -> None:
        self.needs.add(declaration)

    def definition(self, decl: Decl, *attrs: str) -> Definition:
        text = "\n".join([header(decl, *attrs), *self.lines, "}"])
        return Definition(text, frozenset(self.needs))


# -------------------------------------------------------------- ids and sizes
@dataclass(frozen=True)
class _Warp:
    """The IR values (i32) describing the calling work-item's sub-group."""

    lin: str    # linear local id
    wg: str     # work-group size
    sgid: str   # sub-group id = lin / 32
    lane: str   # sub-group local id = lin % 32
    size: str   # this sub-group's size
    mask: str   # (1 << size) - 1


def _sreg(b: _Body, reg: str, ax: str) -> str:
    b.needs |= sreg_declares(reg)
    return b.let(f"{reg}.{ax}", f"call i32 @llvm.nvvm.read.ptx.sreg.{reg}.{ax}()")


def _linear(b: _Body, x: str, y: str, z: str) -> str:
    """``x + ntid.x*(y + ntid.y*z)`` for i32 ``x, y, z``."""
    nx, ny = _sreg(b, "ntid", "x"), _sreg(b, "ntid", "y")
    t = b.let("t", f"mul i32 {ny}, {z}")
    t = b.let("t", f"add i32 {y}, {t}")
    t = b.let("t", f"mul i32 {nx}, {t}")
    return b.let("lin", f"add i32 {x}, {t}")


def _wg_size(b: _Body) -> str:
    nx, ny, nz = (_sreg(b, "ntid", ax) for ax in "xyz")
    t = b.let("t", f"mul i32 {nx}, {ny}")
    return b.let("wg", f"mul i32 {t}, {nz}")


def _warp(b: _Body) -> _Warp:
    lin = _linear(b, *(_sreg(b, "tid", ax) for ax in "xyz"))
    wg = _wg_size(b)
    sgid = b.let("sgid", f"lshr i32 {lin}, 5")
    lane = b.let("lane", f"and i32 {lin}, 31")
    first = b.let("t", f"shl i32 {sgid}, 5")
    left = b.let("t", f"sub i32 {wg}, {first}")
    size = _umin(b, left, str(WARP))
    gap = b.let("t", f"sub i32 32, {size}")
    mask = b.let("mask", f"lshr i32 -1, {gap}")
    return _Warp(lin, wg, sgid, lane, size, mask)


def _umin(b: _Body, x: str, y: str) -> str:
    b.intrinsic("declare i32 @llvm.umin.i32(i32, i32)")
    return b.let("min", f"call i32 @llvm.umin.i32(i32 {x}, i32 {y})")


def _num_warps(b: _Body, wg: str) -> str:
    t = b.let("t", f"add i32 {wg}, {WARP - 1}")
    return b.let("nsg", f"lshr i32 {t}, 5")


# ------------------------------------------------------------------ shuffles
def _shfl32(b: _Body, kind: str, mask: str, v: str, arg: str) -> str:
    """``shfl.sync.<kind>.b32 v, arg, 31, mask`` (clamp 31: the whole warp is one segment)."""
    b.intrinsic(f"declare i32 @llvm.nvvm.shfl.sync.{kind}.i32(i32, i32, i32, i32)")
    return b.let("shfl", f"call i32 @llvm.nvvm.shfl.sync.{kind}.i32(i32 {mask}, i32 {v}, "
                         f"i32 {arg}, i32 31)")


def _shfl(b: _Body, kind: str, ty: str, mask: str, v: str, arg: str) -> str:
    """A shuffle of a value of type ``ty``: 64-bit ones as two 32-bit halves."""
    if ty in ("i32", "float"):
        bits = v if ty == "i32" else b.let("bits", f"bitcast float {v} to i32")
        r = _shfl32(b, kind, mask, bits, arg)
        return r if ty == "i32" else b.let("f", f"bitcast i32 {r} to float")
    bits = v if ty == "i64" else b.let("bits", f"bitcast double {v} to i64")
    lo = b.let("lo", f"trunc i64 {bits} to i32")
    hi = b.let("hi", f"lshr i64 {bits}, 32")
    hi = b.let("hi", f"trunc i64 {hi} to i32")
    lo, hi = _shfl32(b, kind, mask, lo, arg), _shfl32(b, kind, mask, hi, arg)
    lo = b.let("lo", f"zext i32 {lo} to i64")
    hi = b.let("hi", f"zext i32 {hi} to i64")
    hi = b.let("hi", f"shl i64 {hi}, 32")
    r = b.let("bits", f"or i64 {hi}, {lo}")
    return r if ty == "i64" else b.let("f", f"bitcast i64 {r} to double")


# ---------------------------------------------------------------- reductions
def _combine(b: _Body, op: str, ty: str, signed: bool | None, x: str, y: str) -> str:
    if op == "add":
        return b.let("sum", f"{'add' if signed is not None else 'fadd'} {ty} {x}, {y}")
    if signed is None:
        fn = f"llvm.{op}num.{_SUFFIX[ty]}"
    else:
        fn = f"llvm.{'s' if signed else 'u'}{op}.{ty}"
    b.intrinsic(f"declare {ty} @{fn}({ty}, {ty})")
    return b.let(op, f"call {ty} @{fn}({ty} {x}, {ty} {y})")


def _warp_reduce(b: _Body, op: str, ty: str, signed: bool | None, v: str, w: _Warp,
                 count: str) -> str:
    """The ``op``-reduction of ``v`` over lanes ``0..count-1``, valid in lane 0.

    A ``shfl.sync.down`` tree; lane ``l`` takes lane ``l+off``'s partial only
    if ``l+off < count`` (see the module docstring).
    """
    off = WARP // 2
    while off:
        other = _shfl(b, "down", ty, w.mask, v, str(off))
        src = b.let("src", f"add i32 {w.lane}, {off}")
        ok = b.let("ok", f"icmp ult i32 {src}, {count}")
        both = _combine(b, op, ty, signed, v, other)
        v = b.let("acc", f"select i1 {ok}, {ty} {both}, {ty} {v}")
        off //= 2
    return v


def _elem(decl: Decl, code: str) -> tuple[str, bool | None]:
    ty, signed = _ELEM[code]
    if decl.ret != ty:
        raise NotImplementedError(f"{decl.name}: declared {decl.ret}, expected {ty}")
    return ty, signed


# ----------------------------------------------------------------- barriers
@define("_Z7barrierj", "_Z18work_group_barrierj")
def _barrier(decl: Decl) -> Definition:
    b = _Body()
    b.intrinsic(f"declare void @{_BARRIER}(i32)")
    b.do(f"call void @{_BARRIER}(i32 0)")
    b.do("ret void")
    return b.definition(decl, "convergent")


@define("_Z17sub_group_barrierj")
def _sub_group_barrier(decl: Decl) -> Definition:
    b = _Body()
    w = _warp(b)
    b.intrinsic("declare void @llvm.nvvm.bar.warp.sync(i32)")
    b.do(f"call void @llvm.nvvm.bar.warp.sync(i32 {w.mask})")
    b.do("ret void")
    return b.definition(decl, "convergent")


# ---------------------------------------------------------- sub-group queries
def _query(decl: Decl, pick: str) -> Definition:
    b = _Body()
    w = _warp(b)
    value = {"lane": w.lane, "sgid": w.sgid, "size": w.size}.get(pick)
    if pick == "max":
        value = _umin(b, w.wg, str(WARP))
    elif pick == "count":
        value = _num_warps(b, w.wg)
    b.do(f"ret i32 {value}")
    return b.definition(decl)


_QUERIES = {"_Z22get_sub_group_local_idv": "lane", "_Z16get_sub_group_idv": "sgid",
            "_Z18get_sub_group_sizev": "size", "_Z22get_max_sub_group_sizev": "max",
            "_Z18get_num_sub_groupsv": "count", "_Z27get_enqueued_num_sub_groupsv": "count"}


@define(*_QUERIES)
def _sub_group_query(decl: Decl) -> Definition:
    # CUDA blocks are all the same size, so the enqueued count is the count.
    return _query(decl, _QUERIES[decl.name])


# ---------------------------------------------------------- sub-group collectives
@define("_Z13sub_group_anyi", "_Z13sub_group_alli")
def _sub_group_vote(decl: Decl) -> Definition:
    kind = "any" if "any" in decl.name else "all"
    b = _Body()
    w = _warp(b)
    p = b.let("p", "icmp ne i32 %a0, 0")
    b.intrinsic(f"declare i1 @llvm.nvvm.vote.{kind}.sync(i32, i1)")
    r = b.let("vote", f"call i1 @llvm.nvvm.vote.{kind}.sync(i32 {w.mask}, i1 {p})")
    r = b.let("r", f"zext i1 {r} to i32")
    b.do(f"ret i32 {r}")
    return b.definition(decl, "convergent")


@define_pattern(r"_Z(?:19sub_group_broadcast|23intel_sub_group_shuffle)[ijlmfd]j")
def _sub_group_broadcast(decl: Decl) -> Definition:
    # intel_sub_group_shuffle (select_from_group and the shifts) is the same shfl.sync.idx;
    # the kernel's lowering keeps the source lane inside the sub-group.
    ty, _ = _elem(decl, decl.name[-2])
    b = _Body()
    w = _warp(b)
    r = _shfl(b, "idx", ty, w.mask, "%a0", "%a1")
    b.do(f"ret {ty} {r}")
    return b.definition(decl, "convergent")


_SG_REDUCE = re.compile(r"_Z20sub_group_reduce_(add|min|max)([ijlmfd])")


@define_pattern(_SG_REDUCE.pattern)
def _sub_group_reduce(decl: Decl) -> Definition:
    m = _SG_REDUCE.fullmatch(decl.name)
    assert m is not None
    op, (ty, signed) = m.group(1), _elem(decl, m.group(2))
    b = _Body()
    w = _warp(b)
    total = _warp_reduce(b, op, ty, signed, "%a0", w, w.size)
    r = _shfl(b, "idx", ty, w.mask, total, "0")
    b.do(f"ret {ty} {r}")
    return b.definition(decl, "convergent")


# -------------------------------------------------------- work-group collectives
def _slot(b: _Body, index: str) -> str:
    b.needs.add(_SCRATCH_DEF)
    return b.let("slot", f"getelementptr inbounds [{WARP + 1} x i64], ptr addrspace(3) "
                         f"{SCRATCH}, i32 0, i32 {index}")


def _barrier_call(b: _Body) -> None:
    b.intrinsic(f"declare void @{_BARRIER}(i32)")
    b.do(f"call void @{_BARRIER}(i32 0)")


def _when(b: _Body, cond: str, name: str) -> tuple[str, str]:
    """Branch on ``cond`` into block ``name``; returns (its label, the join label)."""
    then, join = f"{name}", f"{name}.join"
    b.do(f"br i1 {cond}, label %{then}, label %{join}")
    b.label(then)
    return then, join


_WG_REDUCE = re.compile(r"_Z21work_group_reduce_(add|min|max)([ijlmfd])")


@define_pattern(_WG_REDUCE.pattern)
def _work_group_reduce(decl: Decl) -> Definition:
    m = _WG_REDUCE.fullmatch(decl.name)
    assert m is not None
    op, (ty, signed) = m.group(1), _elem(decl, m.group(2))
    b = _Body()
    w = _warp(b)
    part = _warp_reduce(b, op, ty, signed, "%a0", w, w.size)
    lead = b.let("lead", f"icmp eq i32 {w.lane}, 0")
    _, join = _when(b, lead, "put")  # lane 0 of each warp: its warp's total into its slot
    b.do(f"store {ty} {part}, ptr addrspace(3) {_slot(b, w.sgid)}, align 8")
    b.do(f"br label %{join}")
    b.label(join)
    _barrier_call(b)
    first = b.let("first", f"icmp eq i32 {w.sgid}, 0")
    _, join = _when(b, first, "fold")  # warp 0: the total of the warps' totals
    nsg = _num_warps(b, w.wg)
    has = b.let("has", f"icmp ult i32 {w.lane}, {nsg}")
    idx = b.let("idx", f"select i1 {has}, i32 {w.lane}, i32 0")
    x = b.let("x", f"load {ty}, ptr addrspace(3) {_slot(b, idx)}, align 8")
    total = _warp_reduce(b, op, ty, signed, x, w, nsg)
    _, join2 = _when(b, lead, "publish")
    b.do(f"store {ty} {total}, ptr addrspace(3) {_slot(b, str(_RESULT_SLOT))}, align 8")
    b.do(f"br label %{join2}")
    b.label(join2)
    b.do(f"br label %{join}")
    b.label(join)
    _barrier_call(b)
    r = b.let("r", f"load {ty}, ptr addrspace(3) {_slot(b, str(_RESULT_SLOT))}, align 8")
    b.do(f"ret {ty} {r}")
    return b.definition(decl, "convergent")


@define_pattern(r"_Z20work_group_broadcast[ijlmfd]m{1,3}")
def _work_group_broadcast(decl: Decl) -> Definition:
    ty, _ = _elem(decl, decl.name[len("_Z20work_group_broadcast")])
    b = _Body()
    ids = [b.let("id", f"trunc i64 %a{k + 1} to i32") for k in range(len(decl.params) - 1)]
    ids += ["0"] * (3 - len(ids))
    src = _linear(b, *ids)
    me = _linear(b, *(_sreg(b, "tid", ax) for ax in "xyz"))
    _barrier_call(b)  # the previous collective's readers are done with the result slot
    is_src = b.let("src", f"icmp eq i32 {me}, {src}")
    _, join = _when(b, is_src, "put")
    b.do(f"store {ty} %a0, ptr addrspace(3) {_slot(b, str(_RESULT_SLOT))}, align 8")
    b.do(f"br label %{join}")
    b.label(join)
    _barrier_call(b)
    r = b.let("r", f"load {ty}, ptr addrspace(3) {_slot(b, str(_RESULT_SLOT))}, align 8")
    b.do(f"ret {ty} {r}")
    return b.definition(decl, "convergent")


@define("_Z14work_group_anyi", "_Z14work_group_alli")
def _work_group_vote(decl: Decl) -> Definition:
    kind = "or" if "any" in decl.name else "and"
    fn = f"llvm.nvvm.barrier.cta.red.{kind}.aligned.all"
    b = _Body()
    p = b.let("p", "icmp ne i32 %a0, 0")
    b.intrinsic(f"declare i1 @{fn}(i32, i1)")
    r = b.let("vote", f"call i1 @{fn}(i32 0, i1 {p})")
    r = b.let("r", f"zext i1 {r} to i32")
    b.do(f"ret i32 {r}")
    return b.definition(decl, "convergent")

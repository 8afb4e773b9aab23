"""pysycl's tensor-core built-ins for the PTX target (joint_matrix, sm_80+).

The joint_matrix lowering for PTX (``pysycl_numba/overloads/matrix_ptx.py``) calls
these by name; they are defined over NVVM intrinsics (``llvm.nvvm.mma.*``,
``llvm.nvvm.ldmatrix.*``) and inlined by the NVPTX pipeline, where the fragments
(private arrays the built-ins read and write through pointers) become registers:

* ``MMA[kind](d, a, b, c)``: ``D = A*B + C`` of a m16n16kK tile as two ``mma.sync``
  ``m16n8kK.row.col`` (the fragment orders of :mod:`pysycl._kernels.matrix_ptx`);
  tf32 operands are rounded with ``cvt.rna.tf32.f32`` first.
* ``LDSM``/``LDSM_TRANS(dst, address)``: ``ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16``
  of four 8x8 b16 matrices into 8 halves; ``address`` is the lane's row in shared memory.
* ``LANE()``: ``%laneid``.

:data:`ptx_arch` is the compute capability a compile targets (set by the compiler
around a PTX compile): the lowering checks joint_matrix combinations against it;
:data:`ptx_whole_warps` says the kernel's required work-group size makes every warp whole.
"""

from __future__ import annotations

import contextvars

from pysycl_numba.targets.ptx.builtins import Decl, Definition, define

#: "sm_90" while a kernel compiles for PTX (pysycl_numba.compiler), else "".
ptx_arch: contextvars.ContextVar[str] = contextvars.ContextVar("pysycl_ptx_arch", default="")
#: True while a kernel compiles whose required work-group size (``reqd_work_group_size``,
#: the PTX ``.reqntid`` the driver enforces) is a multiple of the warp: then every
#: sub-group is a whole warp and the lowering drops its run-time whole-warp tests.
ptx_whole_warps: contextvars.ContextVar[bool] = contextvars.ContextVar("pysycl_ptx_whole_warps",
                                                                      default=False)

LANE = "_Z19__pysycl_mma_lanev"
LDSM = "_Z19__pysycl_ldsm_x4PvS_"
LDSM_TRANS = "_Z25__pysycl_ldsm_x4_transPvS_"
MMA = {k: f"_Z{14 + len(k)}__pysycl_mma_{k}PvS_S_S_" for k in ("f16", "bf16", "tf32", "s8", "u8")}

_R4 = "{i32, i32, i32, i32}"
_F4 = "{float, float, float, float}"


@define(LANE)
def _lane(decl: Decl) -> Definition:
    body = f"""define internal i32 @{decl.name}() alwaysinline {{
  %l = call i32 @llvm.nvvm.read.ptx.sreg.laneid()
  ret i32 %l
}}"""
    return Definition(body, frozenset({"declare i32 @llvm.nvvm.read.ptx.sreg.laneid()"}))


def _ldsm(decl: Decl, trans: bool) -> Definition:
    intr = f"llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4{'.trans' if trans else ''}.b16"
    lines = [f"define internal void @{decl.name}(ptr %dst, i64 %addr) alwaysinline convergent {{",
             "  %p = inttoptr i64 %addr to ptr addrspace(3)",
             f"  %r = call {_R4} @{intr}(ptr addrspace(3) %p)"]
    for j in range(4):
        lines += [f"  %r{j} = extractvalue {_R4} %r, {j}",
                  f"  %q{j} = getelementptr inbounds i8, ptr %dst, i64 {4 * j}",
                  f"  store i32 %r{j}, ptr %q{j}, align 2"]
    lines += ["  ret void", "}"]
    return Definition("\n".join(lines), frozenset({f"declare {_R4} @{intr}(ptr addrspace(3))"}))


define(LDSM)(lambda decl: _ldsm(decl, False))
define(LDSM_TRANS)(lambda decl: _ldsm(decl, True))


def _regs(name: str, src: str, count: int, kind: str) -> list[str]:
    """IR loading ``count`` 32-bit operand registers ``%{name}{i}`` of a fragment."""
    out = []
    for i in range(count):
        out.append(f"  %{name}p{i} = getelementptr inbounds i8, ptr %{src}, i64 {4 * i}")
        if kind == "f16":
            out.append(f"  %{name}{i} = load <2 x half>, ptr %{name}p{i}, align 2")
        elif kind == "bf16":
            out += [f"  %{name}v{i} = load <2 x i16>, ptr %{name}p{i}, align 2",
                    f"  %{name}{i} = bitcast <2 x i16> %{name}v{i} to i32"]
        elif kind == "tf32":
            out += [f"  %{name}f{i} = load float, ptr %{name}p{i}, align 4",
                    f"  %{name}{i} = call i32 @llvm.nvvm.f2tf32.rna(float %{name}f{i})"]
        else:
            out += [f"  %{name}v{i} = load <4 x i8>, ptr %{name}p{i}, align 1",
                    f"  %{name}{i} = bitcast <4 x i8> %{name}v{i} to i32"]
    return out


def _mma(decl: Decl, kind: str) -> Definition:
    op = {"f16": "<2 x half>", "bf16": "i32", "tf32": "i32", "s8": "i32", "u8": "i32"}[kind]
    acc, res = ("i32", _R4) if kind in ("s8", "u8") else ("float", _F4)
    shape = {"tf32": "m16n8k8", "s8": "m16n8k32", "u8": "m16n8k32"}.get(kind, "m16n8k16")
    suffix = {"f16": "f32.f32"}.get(kind, kind)
    intr = f"llvm.nvvm.mma.{shape}.row.col.{suffix}"
    lines = [f"define internal void @{decl.name}(ptr %d, ptr %a, ptr %b, ptr %c) "
             "alwaysinline convergent {"]
    lines += _regs("a", "a", 4, kind) + _regs("b", "b", 4, kind)
    for blk in range(2):
        cs = []
        for i in range(4):
            e = 4 * blk + i
            lines += [f"  %cp{e} = getelementptr inbounds {acc}, ptr %c, i64 {e}",
                      f"  %c{e} = load {acc}, ptr %cp{e}, align 4"]
            cs.append(f"{acc} %c{e}")
        bs = [f"{op} %b{2 * blk + i}" for i in range(2)]  # the n8 tile's two B registers
        args = ", ".join([f"{op} %a{i}" for i in range(4)] + bs + cs)
        lines.append(f"  %r{blk} = call {res} @{intr}({args})")
        for i in range(4):
            e = 4 * blk + i
            lines += [f"  %d{e} = extractvalue {res} %r{blk}, {i}",
                      f"  %dp{e} = getelementptr inbounds {acc}, ptr %d, i64 {e}"]
        for i in range(4):  # stores after every load: d may be c
            e = 4 * blk + i
            lines.append(f"  store {acc} %d{e}, ptr %dp{e}, align 4")
    lines += ["  ret void", "}"]
    ops = ", ".join([op] * (4 + 2) + [acc] * 4)
    needs = {f"declare {res} @{intr}({ops})"}
    if kind == "tf32":
        needs.add("declare i32 @llvm.nvvm.f2tf32.rna(float)")
    return Definition("\n".join(lines), frozenset(needs))


for _k, _name in MMA.items():
    define(_name)(lambda decl, k=_k: _mma(decl, k))

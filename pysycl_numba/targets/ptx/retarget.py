"""A kernel's optimised SPIR-flavoured LLVM IR, retargeted to NVPTX, and PTX emission.

The compiler's lowering targets SPIR: ``spir_kernel``/``spir_func`` calling
conventions and the OpenCL C work-item built-ins by their mangled names. SPIR and
NVPTX agree on the address spaces that matter here (global 1, local/shared 3), so
retargeting is: the triple and data layout, the calling conventions, and a
definition of each work-item built-in over the PTX special registers
(``%tid``, ``%ctaid``, ``%ntid``, ``%nctaid``; OpenCL dimension 0 is ``x``). A
built-in without a mapping yet is refused by name. Verified end to end on an
NVIDIA H100 through NVIDIA's OpenCL (``tools/ptx_spike.py``, docs/design/gpu.md).
"""

from __future__ import annotations

import re

import llvmlite.binding as ll

NVPTX_TRIPLE = "nvptx64-nvidia-cuda"
NVPTX_LAYOUT = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"

# OpenCL work-item built-ins -> PTX special registers (dimension 0 is x).
_SREG = {"get_global_id": None, "get_local_id": "tid", "get_group_id": "ctaid",
         "get_local_size": "ntid", "get_num_groups": "nctaid", "get_global_size": None}
_MANGLED = {"_Z13get_global_idj": "get_global_id", "_Z12get_local_idj": "get_local_id",
            "_Z12get_group_idj": "get_group_id", "_Z14get_local_sizej": "get_local_size",
            "_Z14get_num_groupsj": "get_num_groups", "_Z15get_global_sizej": "get_global_size"}


def _sreg_fn(name: str, reg: str) -> str:
    """An ``i64 name(i32 dim)`` reading ``%reg.x/y/z``."""
    return f"""
define internal i64 @{name}(i32 %d) alwaysinline {{
  switch i32 %d, label %x [ i32 1, label %y
                            i32 2, label %z ]
x:
  %vx = call i32 @llvm.nvvm.read.ptx.sreg.{reg}.x()
  %rx = zext i32 %vx to i64
  ret i64 %rx
y:
  %vy = call i32 @llvm.nvvm.read.ptx.sreg.{reg}.y()
  %ry = zext i32 %vy to i64
  ret i64 %ry
z:
  %vz = call i32 @llvm.nvvm.read.ptx.sreg.{reg}.z()
  %rz = zext i32 %vz to i64
  ret i64 %rz
}}
"""


def _builtins(used: set[str]) -> str:
    out = []
    regs = set()
    for mangled in used:
        name = _MANGLED[mangled]
        if name == "get_global_id":
            out.append(f"""
define internal i64 @{mangled}(i32 %d) alwaysinline {{
  %g = call i64 @_sp_ctaid(i32 %d)
  %n = call i64 @_sp_ntid(i32 %d)
  %t = call i64 @_sp_tid(i32 %d)
  %m = mul i64 %g, %n
  %r = add i64 %m, %t
  ret i64 %r
}}""")
            regs |= {"ctaid", "ntid", "tid"}
        elif name == "get_global_size":
            out.append(f"""
define internal i64 @{mangled}(i32 %d) alwaysinline {{
  %a = call i64 @_sp_nctaid(i32 %d)
  %b = call i64 @_sp_ntid(i32 %d)
  %r = mul i64 %a, %b
  ret i64 %r
}}""")
            regs |= {"nctaid", "ntid"}
        else:
            reg = _SREG[name]
            out.append(_sreg_fn(mangled, reg))
    for reg in regs:
        out.append(_sreg_fn(f"_sp_{reg}", reg))
    for reg in {"tid", "ctaid", "ntid", "nctaid"}:
        for ax in "xyz":
            out.append(f"declare i32 @llvm.nvvm.read.ptx.sreg.{reg}.{ax}()")
    return "\n".join(out)


def retarget(ir: str) -> str:
    """The SPIR-flavoured optimised IR of one kernel, rewritten for NVPTX."""
    ir = re.sub(r'target triple = ".*"', f'target triple = "{NVPTX_TRIPLE}"', ir)
    ir = re.sub(r'target datalayout = ".*"', f'target datalayout = "{NVPTX_LAYOUT}"', ir)
    ir = ir.replace("spir_kernel ", "ptx_kernel ").replace("spir_func ", "")
    used = set()
    for mangled in _MANGLED:
        pat = re.compile(rf"^declare [^\n]*@{mangled}\(i32[^\n]*$", re.M)
        if pat.search(ir):
            ir = pat.sub("", ir)
            used.add(mangled)
    unknown = re.findall(r"^declare [^@]*@(_Z\w+)", ir, re.M)
    if unknown:
        raise NotImplementedError(f"OpenCL built-ins without a PTX mapping yet: {unknown}")
    return ir + "\n" + _builtins(used)


def emit_ptx(ir: str, sm: str = "sm_90") -> str:
    """PTX for compute capability ``sm`` from NVPTX IR (the built-in helpers inlined)."""
    ll.initialize_all_targets()
    ll.initialize_all_asmprinters()
    mod = ll.parse_assembly(ir)
    mod.verify()
    tm = ll.Target.from_triple(NVPTX_TRIPLE).create_target_machine(cpu=sm, opt=3)
    pto = ll.create_pipeline_tuning_options(speed_level=3)
    pb = ll.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    return tm.emit_assembly(mod)

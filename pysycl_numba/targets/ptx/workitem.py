"""Work-item built-ins over the PTX special registers.

OpenCL dimension 0 is PTX's ``x`` (the runtime already reverses SYCL's
dimensions into OpenCL's). ``get_global_id(d) = ctaid*ntid + tid``: NVIDIA's
OpenCL launches without a global offset (pysycl never passes one).
"""

from __future__ import annotations

from pysycl_numba.targets.ptx.builtins import Decl, Definition, define

_REG = {"_Z12get_local_idj": "tid", "_Z12get_group_idj": "ctaid",
        "_Z14get_local_sizej": "ntid", "_Z14get_num_groupsj": "nctaid"}


def sreg_declares(*regs: str) -> frozenset[str]:
    """Declarations of ``llvm.nvvm.read.ptx.sreg.<reg>.{x,y,z}``."""
    return frozenset(f"declare i32 @llvm.nvvm.read.ptx.sreg.{r}.{ax}()"
                     for r in regs for ax in "xyz")


def sreg_select(reg: str, dim: str, out: str) -> str:
    """IR lines setting ``%{out}`` (i64) to ``%reg.<dim>`` for an i32 ``dim`` (0..2)."""
    return f"""  %{out}.x = call i32 @llvm.nvvm.read.ptx.sreg.{reg}.x()
  %{out}.y = call i32 @llvm.nvvm.read.ptx.sreg.{reg}.y()
  %{out}.z = call i32 @llvm.nvvm.read.ptx.sreg.{reg}.z()
  %{out}.is1 = icmp eq i32 {dim}, 1
  %{out}.is2 = icmp eq i32 {dim}, 2
  %{out}.yz = select i1 %{out}.is2, i32 %{out}.z, i32 %{out}.y
  %{out}.v = select i1 %{out}.is1, i32 %{out}.y, i32 %{out}.x
  %{out}.w = select i1 %{out}.is2, i32 %{out}.yz, i32 %{out}.v
  %{out} = zext i32 %{out}.w to i64"""


@define(*_REG)
def _one_register(decl: Decl) -> Definition:
    reg = _REG[decl.name]
    body = f"""define internal i64 @{decl.name}(i32 %d) alwaysinline {{
{sreg_select(reg, "%d", "r")}
  ret i64 %r
}}"""
    return Definition(body, sreg_declares(reg))


@define("_Z13get_global_idj")
def _global_id(decl: Decl) -> Definition:
    body = f"""define internal i64 @{decl.name}(i32 %d) alwaysinline {{
{sreg_select("ctaid", "%d", "g")}
{sreg_select("ntid", "%d", "n")}
{sreg_select("tid", "%d", "t")}
  %m = mul i64 %g, %n
  %r = add i64 %m, %t
  ret i64 %r
}}"""
    return Definition(body, sreg_declares("ctaid", "ntid", "tid"))


@define("_Z15get_global_sizej")
def _global_size(decl: Decl) -> Definition:
    body = f"""define internal i64 @{decl.name}(i32 %d) alwaysinline {{
{sreg_select("nctaid", "%d", "a")}
{sreg_select("ntid", "%d", "b")}
  %r = mul i64 %a, %b
  ret i64 %r
}}"""
    return Definition(body, sreg_declares("nctaid", "ntid"))

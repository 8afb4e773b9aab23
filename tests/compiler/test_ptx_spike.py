"""The PTX spike (tools/ptx_spike.py): a real pysycl kernel's IR, retargeted, emits PTX.

The step issue #11 builds on, checked on machines without a GPU: llvmlite's NVPTX
backend accepts the retargeted module and the PTX has the kernel entry with the
ABI's parameters, indexed by the PTX special registers. (The PTX also ran on an
NVIDIA H100 through NVIDIA's OpenCL; docs/design/gpu.md.)
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest

from pysycl_numba.targets.ptx.retarget import emit_ptx, retarget

TOOL = Path(__file__).resolve().parents[2] / "tools" / "ptx_spike.py"


@pytest.fixture(scope="module")
def spike():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("ptx_spike", TOOL)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_compiled_kernel_retargets_to_ptx(spike, kernel_device, tmp_path) -> None:  # type: ignore[no-untyped-def]
    ir, entry, dtypes = spike.kernel_ir()
    assert "spir_kernel" in ir and "_Z13get_global_idj" in ir  # what the retarget rewrites
    nv = retarget(ir)
    assert "spir_" not in nv and 'target triple = "nvptx64-nvidia-cuda"' in nv
    ptx = emit_ptx(nv)
    assert f".visible .entry {entry}(" in ptx
    params = [ln for ln in ptx.splitlines()
              if ln.strip().startswith(".param") and f"{entry}_param_" in ln]
    assert len(params) == len(dtypes)  # one PTX parameter per OpenCL argument
    assert ".param .f32" in params[0] and ".ptr .global" in params[1]
    assert "%ctaid.x" in ptx and "%ntid.x" in ptx and "%tid.x" in ptx
    assert "call" not in ptx  # the built-in helpers are inlined into the entry point
    ptxas = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
    if Path(ptxas).exists():  # CUDA installed: NVIDIA's assembler accepts it too
        f = tmp_path / "k.ptx"
        f.write_text(ptx)
        subprocess.run([ptxas, "-arch=sm_90", str(f), "-o", str(tmp_path / "k.cubin")],
                       check=True)


def test_unmapped_builtins_are_named() -> None:
    ir = ('target triple = "spirv64v1.2-unknown-unknown"\n'
          "declare spir_func void @_Z7barrierj(i32)\n")
    with pytest.raises(NotImplementedError, match="_Z7barrierj"):
        retarget(ir)

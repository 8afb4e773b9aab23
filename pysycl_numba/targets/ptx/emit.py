"""PTX emission: retarget a kernel's optimised IR and let the emit worker produce PTX.

The NVPTX backend runs in the same helper process as the SPIR-V backend
(:mod:`pysycl_numba.targets.spirv.emit_worker`): an LLVM ``report_fatal_error``
(an unsupported construct deep in instruction selection) ends the worker, not
the user's interpreter, and the kernel gets ``errc.build``.
"""

from __future__ import annotations

from pysycl_numba.targets.ptx.math_builtins import libdevice_path
from pysycl_numba.targets.ptx.retarget import NVPTX_TRIPLE, retarget
from pysycl_numba.targets.spirv.codegen import emit_in_worker


def emit_ptx(ir: str, entry: str, arch: str, mads_in_flight: int = 0) -> bytes:
    """PTX text (ASCII bytes) of the kernel ``entry`` for compute capability ``arch``.

    Args:
        ir: the kernel's optimised SPIR-flavoured IR (``codegen.optimised_ir``).
        entry: the entry point's name.
        arch: ``"sm_90"`` and the like.
        mads_in_flight: the kernel's ``ext_pysycl_mads_in_flight`` (work-group matrix
            products a barrier leaves in flight: :func:`.wgmma.wait_at_barriers`).

    Raises:
        NotImplementedError: a built-in the kernel uses has no PTX definition.
        KernelSourceError: the NVPTX backend failed (``errc.build``), or libdevice
            is needed and missing.
    """
    nv = retarget(ir, mads_in_flight)
    if arch == "sm_90" and nv.wgmma:  # wgmma: the architecture-specific target only
        arch = "sm_90a"
    opts = {"cpu": arch, "entry": entry, "libdevice": libdevice_path() if nv.libdevice else ""}
    return emit_in_worker(nv.ir, NVPTX_TRIPLE, "NVPTX", entry, ptx=opts)

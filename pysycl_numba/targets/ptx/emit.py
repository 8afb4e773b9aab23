"""PTX emission: retarget a kernel's optimised IR and let the emit worker produce PTX.

The NVPTX backend runs in the same helper process as the SPIR-V backend
(:mod:`pysycl_numba.targets.spirv.emit_worker`): an LLVM ``report_fatal_error``
(an unsupported construct deep in instruction selection) ends the worker, not
the user's interpreter, and the kernel gets ``errc.build``.
"""

from __future__ import annotations

from pysycl._core.exceptions import errc
from pysycl_numba.errors import KernelSourceError
from pysycl_numba.targets.ptx.math_builtins import libdevice_path
from pysycl_numba.targets.ptx.retarget import NVPTX_TRIPLE, retarget
from pysycl_numba.targets.spirv import emit_worker


def emit_ptx(ir: str, entry: str, arch: str) -> bytes:
    """PTX text (ASCII bytes) of the kernel ``entry`` for compute capability ``arch``.

    Args:
        ir: the kernel's optimised SPIR-flavoured IR (``codegen.optimised_ir``).
        entry: the entry point's name.
        arch: ``"sm_90"`` and the like.

    Raises:
        NotImplementedError: a built-in the kernel uses has no PTX definition.
        KernelSourceError: the NVPTX backend failed (``errc.build``), or libdevice
            is needed and missing.
    """
    nv = retarget(ir)
    opts = {"cpu": arch, "entry": entry, "libdevice": libdevice_path() if nv.libdevice else ""}
    try:
        return emit_worker.client.emit(nv.ir, NVPTX_TRIPLE, ptx=opts)
    except emit_worker.EmitCrash as e:
        raise KernelSourceError(
            f"LLVM's NVPTX backend crashed on {entry} ({e}); your Python process is fine. "
            "Simplify the kernel or report this with the kernel's code", None, errc.build,
        ) from e
    except RuntimeError as e:
        raise KernelSourceError(
            f"LLVM's NVPTX backend could not emit {entry}: {e}", None, errc.build) from e

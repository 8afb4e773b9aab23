"""OpenCL C math and integer built-ins for PTX: NVVM intrinsics and libdevice.

(Definitions registered with :mod:`.builtins`.)
"""

from __future__ import annotations

import os

from pysycl._core.exceptions import errc
from pysycl_numba.errors import KernelSourceError


def libdevice_path() -> str:
    """CUDA's libdevice bitcode (``nvvm/libdevice/libdevice.10.bc``).

    Raises:
        KernelSourceError: not found (``errc.build``, naming where it was looked for).
    """
    roots = [r for r in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"),
                         "/usr/local/cuda") if r]
    for root in roots:
        p = os.path.join(root, "nvvm", "libdevice", "libdevice.10.bc")
        if os.path.isfile(p):
            return p
    raise KernelSourceError(
        "this kernel's math needs CUDA's libdevice, nvvm/libdevice/libdevice.10.bc, "
        f"found under none of {roots} (install CUDA or set CUDA_HOME)", None, errc.build)

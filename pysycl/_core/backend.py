"""``sycl::backend`` (SYCL 2020 §4.1): the backends pysycl can run on."""

from __future__ import annotations

import enum


class backend(enum.Enum):  # noqa: N801 - the spec's spelling
    """The SYCL backends of pysycl.

    ``opencl`` is the OpenCL backend (Appendix C of the spec, through pyopencl).
    ``ext_oneapi_cuda`` is NVIDIA's CUDA driver (the name of intel/llvm's
    ``sycl_ext_oneapi_backend_cuda``; through ``cuda-bindings``, the extra ``pysycl[cuda]``).
    ``ext_pysycl_host`` is the host_debuggable device (kernels in the interpreter).
    """

    opencl = "opencl"
    ext_oneapi_cuda = "ext_oneapi_cuda"
    ext_pysycl_host = "ext_pysycl_host"

    def __repr__(self) -> str:
        return f"sycl.backend.{self.name}"

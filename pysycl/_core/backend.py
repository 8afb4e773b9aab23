"""``sycl::backend`` (SYCL 2020 §4.1): the backends pysycl can run on."""

from __future__ import annotations

import enum


class backend(enum.Enum):  # noqa: N801 - the spec's spelling
    """The SYCL backends of pysycl.

    ``opencl`` is the OpenCL backend (Appendix C of the spec, through pyopencl).
    ``ext_pysycl_host`` is reserved for a pure-Python host executor.
    """

    opencl = "opencl"
    ext_pysycl_host = "ext_pysycl_host"

    def __repr__(self) -> str:
        return f"sycl.backend.{self.name}"

"""The OpenCL backend: platforms from the ICD loader, one in-order queue per sycl.queue.

Its platforms and devices are :mod:`pysycl._backends.opencl.objects`; their
info answers and aspects :mod:`pysycl._backends.opencl.device_info`.
"""

from __future__ import annotations

from typing import Any

from pysycl._backends.opencl.objects import opencl_platforms
from pysycl._core.backend import backend


class OpenCLBackend:
    """``backend.opencl`` (the spec's OpenCL backend appendix), through pyopencl."""

    kind = backend.opencl

    def platforms(self) -> list[Any]:
        return opencl_platforms()

    def executor(self, ctx: Any, dev: Any, *, profiling: bool) -> Any:
        # pyopencl and the kernel machinery load with the first OpenCL queue, not at import
        from pysycl._backends.opencl.executor import OpenCLExecutor

        return OpenCLExecutor(ctx, dev, profiling=profiling)

"""The OpenCL backend: platforms from the ICD loader, one in-order queue per sycl.queue.

Its platforms and devices are :mod:`pysycl._backends.opencl.objects`; their
info answers and aspects :mod:`pysycl._backends.opencl.device_info`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pysycl._backends.opencl.objects import opencl_platforms
from pysycl._core.backend import backend

if TYPE_CHECKING:
    import numpy as np

    from pysycl._backends.opencl.executor import OpenCLExecutor
    from pysycl._backends.opencl.usm import Borrowed, SVMMemory, Table
    from pysycl._core.backends import Programs
    from pysycl._objects.context import context
    from pysycl._objects.device import device
    from pysycl._objects.platform import platform


class OpenCLBackend:
    """``backend.opencl`` (the spec's OpenCL backend appendix), through pyopencl."""

    kind = backend.opencl

    def platforms(self) -> list[platform]:
        return opencl_platforms()

    @property
    def programs(self) -> Programs:
        """:mod:`pysycl._backends.opencl.programs` (imported on first use: pyopencl loads
        with the first bundle or queue, not at import)."""
        from pysycl._backends.opencl import programs

        return programs  # type: ignore[return-value]  # the module implements the protocol

    @property
    def interop(self) -> Any:
        """:mod:`pysycl._backends.opencl.interop`: ``get_native`` and ``make_*``."""
        from pysycl._backends.opencl import interop

        return interop

    def executor(self, ctx: context, dev: device, *, profiling: bool) -> OpenCLExecutor:
        # pyopencl and the kernel machinery load with the first OpenCL queue, not at import
        from pysycl._backends.opencl.executor import OpenCLExecutor

        return OpenCLExecutor(ctx, dev, profiling=profiling)

    def usm_alloc(self, ctx: context, dev: device | None, kind: str, nbytes: int,
                  alignment: int) -> SVMMemory:
        from pysycl._backends.opencl.usm import usm_alloc

        return usm_alloc(ctx, dev, kind, nbytes, alignment)

    def usm_borrow(self, owner: np.ndarray) -> Borrowed:
        from pysycl._backends.opencl.usm import Borrowed

        return Borrowed(owner)

    def usm_table(self, arr: np.ndarray, ctx: context) -> Table:
        from pysycl._backends.opencl.usm import Table

        return Table(ctx.native, arr)

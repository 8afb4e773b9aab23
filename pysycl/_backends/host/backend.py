"""The host_debuggable backend: its one platform and the executor of its queues."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from pysycl._backends.host.device import get_host_platform
from pysycl._backends.host.executor import HostExecutor
from pysycl._core.backend import backend

if TYPE_CHECKING:
    from pysycl._backends.host.device import host_platform
    from pysycl._objects.context import context
    from pysycl._objects.device import device


class HostBackend:
    """``backend.ext_pysycl_host``: kernels run in the Python interpreter."""

    kind = backend.ext_pysycl_host
    #: no programs: kernel bundles and OpenCL kernels do not run on the host device
    programs = None

    def platforms(self) -> list[host_platform]:
        return [get_host_platform()]

    def executor(self, ctx: context, dev: device, *, profiling: bool) -> HostExecutor:
        return HostExecutor(ctx, dev, profiling=profiling)

    def usm_alloc(self, ctx: context, dev: device | None, kind: str, nbytes: int,
                  alignment: int) -> HostMemory:
        return HostMemory(nbytes, alignment)

    def usm_borrow(self, owner: np.ndarray) -> HostMemory:
        return HostMemory.borrowing(owner)

    def usm_table(self, arr: np.ndarray, ctx: context) -> HostMemory:
        return HostMemory.borrowing(arr.copy())  # the values at submit, as on a device


class HostMemory:
    """A USM allocation of the host device: plain host memory (numpy-owned)."""

    __slots__ = ("address", "mem")

    def __init__(self, nbytes: int, alignment: int) -> None:
        align = max(alignment, 64)
        raw = np.zeros(nbytes + align, dtype=np.uint8)
        start = -raw.ctypes.data % align
        self.mem: np.ndarray | None = raw[start:start + nbytes]
        self.address = self.mem.ctypes.data

    @classmethod
    def borrowing(cls, owner: np.ndarray) -> HostMemory:
        """Host memory a kernel uses as it is: a numpy array's."""
        self = object.__new__(cls)
        self.mem = owner
        self.address = owner.ctypes.data
        return self

    def kernel_arg(self, byte_offset: int) -> None:
        return None  # kernels on the host device read the pointer object itself

    def release(self) -> None:
        self.mem = None

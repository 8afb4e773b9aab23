"""The host_debuggable backend: its one platform and the executor of its queues."""

from __future__ import annotations

from typing import TYPE_CHECKING

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

    def platforms(self) -> list[host_platform]:
        return [get_host_platform()]

    def executor(self, ctx: context, dev: device, *, profiling: bool) -> HostExecutor:
        return HostExecutor(ctx, dev, profiling=profiling)

"""The CUDA backend (``backend.ext_oneapi_cuda``): NVIDIA GPUs through the driver API.

Registered by the package root when ``cuda-bindings`` imports (the extra ``pysycl[cuda]``);
its platform list is empty when ``cuInit`` finds no driver. Kernel bundles' programs are
PTX images built by the driver's JIT (:mod:`pysycl._backends.cuda.programs`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pysycl._core.backend import backend

if TYPE_CHECKING:
    import numpy as np

    from pysycl._backends.cuda.executor import CUDAExecutor
    from pysycl._backends.cuda.memory import Borrowed, Table, USMMemory
    from pysycl._objects.context import context
    from pysycl._objects.device import device
    from pysycl._objects.platform import platform


class CUDABackend:
    """``backend.ext_oneapi_cuda``, through NVIDIA's ``cuda-bindings``."""

    kind = backend.ext_oneapi_cuda

    @property
    def programs(self) -> Any:
        """:mod:`pysycl._backends.cuda.programs` (imported once the driver loaded: its
        modules bind the bindings at import); None without a driver."""
        from pysycl._backends.cuda import driver

        if not driver.available():
            return None
        from pysycl._backends.cuda import programs

        return programs

    def platforms(self) -> list[platform]:
        from pysycl._backends.cuda import driver

        if not driver.available():  # no driver, or no bindings: no platform, no warning
            return []
        from pysycl._backends.cuda.objects import cuda_platforms

        return cuda_platforms()

    @property
    def interop(self) -> Any:
        """:mod:`pysycl._backends.cuda.interop`: ``get_native`` and ``make_*``."""
        from pysycl._backends.cuda import interop

        return interop

    def executor(self, ctx: context, dev: device, *, profiling: bool) -> CUDAExecutor:
        from pysycl._backends.cuda.executor import CUDAExecutor

        return CUDAExecutor(ctx, dev, profiling=profiling)

    def usm_alloc(self, ctx: context, dev: device | None, kind: str, nbytes: int,
                  alignment: int) -> USMMemory:
        from pysycl._backends.cuda.memory import usm_alloc

        return usm_alloc(ctx, dev, kind, nbytes, alignment)

    def usm_borrow(self, owner: np.ndarray) -> Borrowed:
        from pysycl._backends.cuda.memory import Borrowed

        return Borrowed(owner)

    def usm_table(self, arr: np.ndarray, ctx: context) -> Table:
        from pysycl._backends.cuda.memory import Table
        from pysycl._backends.cuda.objects import primary_context

        return Table(primary_context(ctx.devices[0].ordinal), arr)  # type: ignore[attr-defined]

    def foreign_memory(self, v: Any, q: Any, who: str) -> tuple[Any, ...] | None:
        """Another library's CUDA array on the queue's device, ordered before the queue's next
        command: ``(native, shape, strides in bytes or None, dtype, read-only)``; None when
        ``v`` is no CUDA array (:mod:`pysycl._backends.cuda.arrays`)."""
        from pysycl._backends.cuda.arrays import foreign_memory
        from pysycl._backends.cuda.memory import Foreign

        got = foreign_memory(v, q, who)
        if got is None:
            return None
        address, shape, strides, dt, ro, owner = got
        return Foreign(address, owner), shape, strides, dt, ro

    def pointer_kind(self, address: int, ctx: context) -> tuple[str, device] | None:
        """``(USM kind name, device)`` of a raw CUDA address of ``ctx``, or None."""
        from pysycl._backends.cuda.arrays import pointer_kind

        return pointer_kind(address, ctx)

"""Memory of the CUDA backend: buffers' device copies, USM allocations, lookup tables.

* A buffer's device copy is ``cuMemAlloc`` memory, a :class:`DeviceMem` (an ``int``: the
  kernel argument is the address itself).
* USM: ``malloc_device`` is ``cuMemAlloc``; ``malloc_shared`` is managed memory
  (``cuMemAllocManaged``, ``CU_MEM_ATTACH_GLOBAL``: host and every device of the context see
  it, the driver migrates pages); ``malloc_host`` is pinned host memory
  (``cuMemHostAlloc(PORTABLE | DEVICEMAP)``: kernels read it over the bus). Under unified
  addressing every kind's device pointer is its host address, so one ``int`` stands for it,
  and CuPy, PyTorch and JAX, which use the same primary context, see the same memory.
* Two GPUs: :func:`peer_access` enables peer access between their primary contexts (both
  ways, on the first copy between them) where ``cuDeviceCanAccessPeer`` allows it; copies
  between their memory then go device to device, else the driver stages them through
  the host. :data:`between_devices` counts the bytes of each kind.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

import numpy as np

from pysycl._backends.cuda import driver as d
from pysycl._backends.cuda.driver import cu
from pysycl._backends.cuda.objects import make_current, primary_context
from pysycl._core.exceptions import errc

_log = logging.getLogger("pysycl.cuda")

#: cuMemAlloc's alignment (the driver's promise); a larger one over-allocates
_NATIVE_ALIGN = 256


class DeviceMem(int):
    """Device memory from ``cuMemAlloc``: the address, an ``int`` (what a kernel argument
    packs); :meth:`release` frees it (the owner calls it once)."""

    __slots__ = ()

    def release(self) -> None:
        cu.cuMemFree(int(self))


def alloc_device(ctx: Any, nbytes: int, what: str) -> DeviceMem:
    """``cuMemAlloc`` of at least one byte in ``ctx`` (made current)."""
    make_current(ctx)
    return DeviceMem(int(d.call(cu.cuMemAlloc, max(int(nbytes), 1), what=what)))


#: DLPack device type by USM kind (dlpack.h: kDLCUDA, kDLCUDAHost, kDLCUDAManaged)
_DLPACK_TYPES = {"device": 2, "host": 3, "shared": 13}


class USMMemory:
    """One USM allocation: the native side of a ``pysycl._memory.usm.Allocation``.

    ``dlpack_device`` is its DLPack device (type by kind, the CUDA ordinal);
    :meth:`sync_consumer` and :meth:`cai_stream` order a consumer after the context's
    queues (:mod:`pysycl._backends.cuda.arrays`). Freed by ``release`` or, for an
    allocation nobody freed, when it is collected.
    """

    __slots__ = ("address", "base", "dlpack_device", "kind", "ordinal")

    def __init__(self, ctx: Any, kind: str, nbytes: int, alignment: int, ordinal: int = 0) -> None:
        extra = alignment if alignment > _NATIVE_ALIGN else 0
        n = max(int(nbytes), 1) + extra
        what = f"{kind} USM allocation of {nbytes} bytes"
        make_current(ctx)
        if kind == "device":
            base = int(d.call(cu.cuMemAlloc, n, what=what, default=errc.memory_allocation))
        elif kind == "shared":
            base = int(d.call(cu.cuMemAllocManaged, n,
                              cu.CUmemAttach_flags.CU_MEM_ATTACH_GLOBAL.value, what=what,
                              default=errc.memory_allocation))
        else:
            flags = cu.CU_MEMHOSTALLOC_PORTABLE | cu.CU_MEMHOSTALLOC_DEVICEMAP
            base = int(d.call(cu.cuMemHostAlloc, n, flags, what=what,
                              default=errc.memory_allocation))
        self.kind, self.base, self.ordinal = kind, base, ordinal
        self.address: int = base + (-base % extra if extra else 0)
        self.dlpack_device = (_DLPACK_TYPES[kind], ordinal)

    def kernel_arg(self, byte_offset: int) -> int:
        """The kernel argument of a pointer ``byte_offset`` bytes into this allocation."""
        return self.address + byte_offset

    def host_bytes(self, nbytes: int) -> np.ndarray:
        """The first ``nbytes`` as a numpy array (shared and host memory only)."""
        return np.ctypeslib.as_array((np.ctypeslib.ctypes.c_uint8 * max(nbytes, 1))
                                     .from_address(self.address))[:nbytes]

    def sync_consumer(self, ctx_key: int, stream: Any) -> None:
        """DLPack's stream protocol: the consumer's ``stream`` waits for the context's queues."""
        from pysycl._backends.cuda.arrays import consumer_waits

        consumer_waits(ctx_key, self.ordinal, stream)

    def cai_stream(self, ctx_key: int) -> int | None:
        """``__cuda_array_interface__``'s ``stream``: one that follows the context's queues."""
        from pysycl._backends.cuda.arrays import export_stream

        return export_stream(ctx_key, self.ordinal)

    def release(self) -> None:
        base, self.base = self.base, 0
        if not base:
            return
        if self.kind == "host":
            cu.cuMemFreeHost(base)
        else:
            cu.cuMemFree(base)

    def __del__(self) -> None:
        try:
            self.release()
        except Exception:  # interpreter shutdown: the driver may be gone
            pass


class Borrowed:
    """Host memory a kernel uses as it is (a device with pageable memory access)."""

    __slots__ = ("address", "owner")

    def __init__(self, owner: np.ndarray) -> None:
        self.owner = owner
        self.address: int = owner.ctypes.data

    def kernel_arg(self, byte_offset: int) -> int:
        return self.address + byte_offset

    def release(self) -> None:
        pass


class Table:
    """A read-only device copy of a host array, made when created (a lookup table)."""

    __slots__ = ("address", "mem")

    def __init__(self, ctx: Any, arr: np.ndarray) -> None:
        self.mem = alloc_device(ctx, arr.nbytes, f"a lookup table of {arr.nbytes} bytes")
        if arr.nbytes:
            d.call(cu.cuMemcpyHtoD, int(self.mem), arr.ctypes.data, arr.nbytes)
        self.address = 0  # device memory: no address the host could use

    def kernel_arg(self, byte_offset: int) -> int:
        return int(self.mem) + byte_offset

    def release(self) -> None:
        pass  # freed with this object (below)

    def __del__(self) -> None:
        try:
            self.mem.release()
        except Exception:
            pass


def usm_alloc(ctx: Any, dev: Any, kind: str, nbytes: int, alignment: int) -> USMMemory:
    """A ``kind`` allocation of ``nbytes`` in sycl context ``ctx`` (of device ``dev``, or
    its first device)."""
    target = dev if dev is not None else ctx.devices[0]
    return USMMemory(primary_context(target.ordinal), kind, nbytes, alignment,
                     target.ordinal)


class Foreign:
    """Another library's CUDA memory a kernel or copy uses where it lies (CuPy, PyTorch, JAX,
    numba-cuda): ``owner`` (the array, or its DLPack capsule's holder) keeps it alive."""

    __slots__ = ("address", "owner")

    def __init__(self, address: int, owner: object) -> None:
        self.address, self.owner = address, owner

    def kernel_arg(self, byte_offset: int) -> int:
        return self.address + byte_offset

    def release(self) -> None:
        pass  # the owner's


#: Bytes copied between the memory of two GPUs by USM copies (device allocations at both
#: ends) and buffers' device-to-device updates: ``"peer"`` directly (peer access enabled),
#: ``"staged"`` USM copies the driver stages through the host (no peer access); buffers
#: without peer access go through their host copy (``coherence.moves``)
between_devices: dict[str, int] = {"peer": 0, "staged": 0}
_peer: dict[tuple[int, int], bool] = {}
_peer_lock = threading.Lock()
#: CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED (CuPy or PyTorch in this process enabled it)
_ALREADY_ENABLED = 704


def peer_access(a: int, b: int) -> bool:
    """Whether GPUs ``a`` and ``b`` (ordinals) read each other's memory directly: on the
    first ask, ``cuDeviceCanAccessPeer`` both ways, then ``cuCtxEnablePeerAccess`` between
    their primary contexts, both ways. ``PYSYCL_CUDA_PEER=0`` says no (copies go through
    the host, as between GPUs without peer access)."""
    if a == b:
        return True
    pair = (min(a, b), max(a, b))
    ok = _peer.get(pair)
    if ok is None:
        with _peer_lock:
            ok = _peer.get(pair)
            if ok is None:
                ok = _peer[pair] = _enable_peer(*pair)
    return ok


def _enable_peer(a: int, b: int) -> bool:
    if os.environ.get("PYSYCL_CUDA_PEER", "1") == "0":
        return False
    da, db = d.call(cu.cuDeviceGet, a), d.call(cu.cuDeviceGet, b)
    if not (d.call(cu.cuDeviceCanAccessPeer, da, db) and d.call(cu.cuDeviceCanAccessPeer, db, da)):
        _log.info("pysycl: CUDA devices %d and %d have no peer access: copies between them "
                  "go through the host", a, b)
        return False
    for x, y in ((a, b), (b, a)):
        make_current(primary_context(x))  # the context that gets access to y's memory
        code = d.code_of(cu.cuCtxEnablePeerAccess(primary_context(y), 0))
        if code not in (0, _ALREADY_ENABLED):
            _log.info("pysycl: cuCtxEnablePeerAccess(%d -> %d): %s; copies between them go "
                      "through the host", x, y, d.error_name(code))
            return False
    return True


def count_between(a: int, b: int, nbytes: int) -> None:
    """Count ``nbytes`` copied from GPU ``a``'s memory to GPU ``b``'s (:data:`between_devices`)."""
    if a != b:
        between_devices["peer" if peer_access(a, b) else "staged"] += nbytes

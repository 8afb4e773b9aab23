"""USM on OpenCL: shared virtual memory (OpenCL 2.0 SVM), through pyopencl.

Why SVM and not ``cl_intel_unified_shared_memory``: SVM is core OpenCL (Intel's
CPU runtime, NVIDIA's driver and PoCL all have it), pyopencl binds it, and on
Intel's CPU runtime it measured the same as Intel's USM entry points
(docs/design/usm.md). The mapping:

* ``malloc_device`` -- coarse-grained SVM (``CL_MEM_READ_WRITE``): kernels and
  ``clEnqueueSVMMemcpy`` use it; the host does not touch it.
* ``malloc_host`` / ``malloc_shared`` -- fine-grained buffer SVM
  (``CL_MEM_SVM_FINE_GRAIN_BUFFER``, plus ``CL_MEM_SVM_ATOMICS`` where the device
  has SVM atomics): host and device read and write the same bytes, no map.
* kernel arguments -- ``clSetKernelArgSVMPointer`` of the pointer's address
  (``cl.SVM`` over a one-byte numpy view of that address).
* copies -- ``clEnqueueSVMMemcpy`` (either end may also be plain host memory);
  fills -- ``clEnqueueSVMMemFill`` (of host memory that is no SVM, on a device
  without system SVM: a copy from a host array of the pattern, :func:`fill_by_copy`);
  prefetch -- ``clEnqueueSVMMigrateMem``.

Aspects (``device_info``): ``usm_device_allocations`` with coarse-grained
buffer SVM, ``usm_host_allocations``/``usm_shared_allocations`` with fine-grained
buffer SVM (``usm_atomic_*`` with SVM atomics), ``usm_system_allocations`` with
fine-grained system SVM (then any host memory, a numpy array, is a kernel
argument as it is).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyopencl as cl

from pysycl._backends.opencl.exec import translate
from pysycl._core.exceptions import errc, exception

COARSE, FINE, SYSTEM, ATOMICS = 1, 2, 4, 8
_MAX_SVM_ALIGN = 128  # sizeof(long16): the largest alignment clSVMAlloc must honour


class _At:
    """A one-byte numpy-visible view of an address (what ``cl.SVM`` needs)."""

    __slots__ = ("__array_interface__",)

    def __init__(self, address: int, nbytes: int = 1) -> None:
        self.__array_interface__ = {"data": (address, False), "shape": (max(nbytes, 1),),
                                    "typestr": "|u1", "version": 3}


def at(address: int, nbytes: int = 1) -> cl.SVM:
    """``cl.SVM`` of ``nbytes`` at ``address`` (SVM or, where allowed, host memory)."""
    return cl.SVM(np.asarray(_At(address, nbytes)))


class SVMMemory:
    """One SVM allocation: the native side of a ``pysycl._memory.usm.Allocation``."""

    __slots__ = ("address", "mem")

    def __init__(self, ctx: cl.Context, caps: int, kind: str, nbytes: int, alignment: int) -> None:
        flags = cl.svm_mem_flags.READ_WRITE
        if kind != "device":
            flags |= cl.svm_mem_flags.SVM_FINE_GRAIN_BUFFER
            if caps & ATOMICS:
                flags |= cl.svm_mem_flags.SVM_ATOMICS
        # clSVMAlloc aligns to at most the largest OpenCL type (128 bytes): a larger
        # alignment is a larger allocation, the pointer rounded up inside it.
        extra = alignment if alignment > _MAX_SVM_ALIGN else 0
        try:
            self.mem = cl.SVMAllocation(ctx, nbytes + extra, min(alignment, _MAX_SVM_ALIGN),
                                        flags)
        except cl.Error as e:
            raise translate(e, f"clSVMAlloc of {nbytes} bytes ({kind} allocation) failed",
                            errc.memory_allocation) from e
        base = int(self.mem.svm_ptr)
        self.address: int = base + (-base % extra if extra else 0)
        if not base:
            raise translate(cl.Error("clSVMAlloc returned NULL"),  # type: ignore[arg-type]
                            f"clSVMAlloc of {nbytes} bytes ({kind} allocation) returned no "
                            "memory", errc.memory_allocation)

    def kernel_arg(self, byte_offset: int) -> cl.SVM:
        """The kernel argument of a pointer ``byte_offset`` bytes into this allocation."""
        return at(self.address + byte_offset)

    def host_bytes(self, nbytes: int) -> np.ndarray:
        """The first ``nbytes`` as a numpy array (fine-grained: the host's own view; the
        array does not keep this allocation alive)."""
        return np.asarray(_At(self.address, nbytes))

    def release(self) -> None:
        self.mem.release()


class Borrowed:
    """Host memory a kernel uses as it is (fine-grained system SVM): a numpy array's."""

    __slots__ = ("address", "owner")

    def __init__(self, owner: np.ndarray) -> None:
        self.owner = owner
        self.address: int = owner.ctypes.data

    def kernel_arg(self, byte_offset: int) -> cl.SVM:
        return at(self.address + byte_offset)

    def release(self) -> None:
        pass


class Table:
    """A read-only device copy of a host array, made when created: a lookup table
    (:mod:`pysycl._memory.tables`). A buffer, not SVM: the copy needs no command on
    the queue, and OpenCL keeps a released buffer until the kernels using it complete.
    """

    __slots__ = ("address", "mem")

    def __init__(self, ctx: cl.Context, arr: np.ndarray) -> None:
        flags = cl.mem_flags.READ_ONLY
        try:
            if arr.nbytes:
                self.mem = cl.Buffer(ctx, flags | cl.mem_flags.COPY_HOST_PTR, hostbuf=arr)
            else:  # OpenCL has no empty buffers
                self.mem = cl.Buffer(ctx, flags, size=1)
        except cl.Error as e:
            raise translate(e, f"cannot copy a lookup table of {arr.nbytes} bytes to the "
                            "device", errc.memory_allocation) from e
        self.address = 0  # device memory: no address the host could use

    def kernel_arg(self, byte_offset: int) -> cl.Buffer:
        return self.mem  # a `T __global *` argument may be a buffer (tables start at 0)

    def release(self) -> None:
        pass  # the buffer goes with its last reference


def svm_caps(cl_device: cl.Device) -> int:
    """``CL_DEVICE_SVM_CAPABILITIES`` (0 before OpenCL 2.0 or when the query fails)."""
    try:
        return int(cl_device.svm_capabilities)
    except (cl.Error, AttributeError):
        return 0


def memcpy(q: cl.CommandQueue, dst: int, src: int, nbytes: int,
           wait_for: Sequence[cl.Event] | None) -> cl.Event:
    """``clEnqueueSVMMemcpy`` of ``nbytes`` (either address may be host memory)."""
    try:
        return cl._cl._enqueue_svm_memcpy(q, 0, at(dst, nbytes), at(src, nbytes),
                                          wait_for=wait_for, byte_count=nbytes)
    except cl.Error as e:
        raise translate(e, f"USM copy of {nbytes} bytes failed") from e


def fill(q: cl.CommandQueue, dst: int, pattern: np.ndarray, nbytes: int,
         wait_for: Sequence[cl.Event] | None) -> cl.Event:
    """``clEnqueueSVMMemFill`` of ``nbytes`` with the bytes of ``pattern``."""
    try:
        return cl._cl._enqueue_svm_memfill(q, at(dst, nbytes), pattern, byte_count=nbytes,
                                           wait_for=wait_for)
    except cl.Error as e:
        raise translate(e, f"USM fill of {nbytes} bytes failed") from e


def fill_by_copy(q: cl.CommandQueue, dst: int, pattern: np.ndarray, nbytes: int,
                 wait_for: Sequence[cl.Event] | None) -> tuple[cl.Event, np.ndarray]:
    """A fill of host memory that is no SVM of the context, on a device without
    fine-grained system SVM: ``clEnqueueSVMMemFill`` takes such memory only with system
    SVM (NVIDIA's and PoCL's drivers: ``CL_INVALID_OPERATION``), while
    ``clEnqueueSVMMemcpy`` takes host memory at either end. So the bytes are copied from
    a host array of the repeated pattern, as a copy from a numpy array is. Returns the
    event and that array, which must live until the event completes."""
    src = np.tile(pattern.view(np.uint8), nbytes // pattern.nbytes)
    try:
        ev = cl._cl._enqueue_svm_memcpy(q, 0, at(dst, nbytes), at(src.ctypes.data, nbytes),
                                        wait_for=wait_for, byte_count=nbytes)
    except cl.Error as e:
        raise translate(e, f"USM fill of {nbytes} bytes of host memory failed") from e
    return ev, src


def migrate(q: cl.CommandQueue, address: int, nbytes: int,
            wait_for: Sequence[cl.Event] | None) -> cl.Event:
    """``clEnqueueSVMMigrateMem`` towards the device (a marker where OpenCL < 2.1)."""
    try:
        return cl._cl._enqueue_svm_migrate_mem(q, [at(address, nbytes)], 0, wait_for)
    except (cl.Error, AttributeError, TypeError):
        return cl.enqueue_marker(q, wait_for=wait_for)


def usm_alloc(ctx: Any, dev: Any, kind: str, nbytes: int, alignment: int) -> SVMMemory:
    """A ``kind`` allocation of ``nbytes`` in sycl context ``ctx``."""
    if len(ctx.devices) > 1 and any(d._usm_needs_own_context() for d in ctx.devices):
        raise exception(errc.feature_not_supported, f"USM ({kind} allocation) in a context of "
                        f"{len(ctx.devices)} devices: NVIDIA's OpenCL runs kernels on such "
                        "memory only in a context of one device (in a context of several, "
                        "kernels fail or write nothing). Allocate with a queue made from the "
                        "device alone, sycl.queue(device), whose context holds only that "
                        "device; buffers work in any context")
    devs = [dev] if dev is not None else list(ctx.devices)
    caps = -1
    for d in devs:
        caps &= svm_caps(d.native)
    return SVMMemory(ctx.native, caps, kind, nbytes, alignment)

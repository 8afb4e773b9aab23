"""Allocations larger than a device allows are ``errc.memory_allocation`` (SYCL 2020 §4.13.2),
saying how many bytes were asked and the device's ``info.device.max_mem_alloc_size`` —
never pyopencl's ``TypeError`` or a ``ValueError`` — at every entry point: buffers over a
range (at construction when no memory can hold them, else at first use on the device),
``malloc_*``, ``malloc`` and ``aligned_alloc_*`` (C++ returns ``nullptr``; pysycl raises).
"""

from __future__ import annotations

import numpy as np
import pytest

import pysycl as sycl

MAX_ALLOC = sycl.info.device.max_mem_alloc_size


def test_buffer_of_2_64_bytes_is_memory_allocation_at_construction() -> None:
    with pytest.raises(sycl.exception) as ei:
        sycl.buffer(sycl.range(2**61), dtype=np.float64)  # 2**64 bytes
    assert ei.value.code() == sycl.errc.memory_allocation
    assert str(2**64) in str(ei.value) and "max_mem_alloc_size" in str(ei.value)


def test_buffer_past_the_device_limit_is_memory_allocation_at_first_use(clq: sycl.queue) -> None:
    dev = clq.get_device()
    limit = dev.get_info(MAX_ALLOC)
    # more than the device holds at all (NVIDIA's OpenCL allows buffers past
    # max_mem_alloc_size up to its global memory)
    count = (max(limit, dev.get_info(sycl.info.device.global_mem_size)) + (1 << 40)) // 4
    B = sycl.buffer(sycl.range(count), dtype=np.float32)  # no host copy is ever made
    with pytest.raises(sycl.exception) as ei:
        clq.fill(sycl.accessor(B, None, sycl.access_mode.write, properties=[sycl.no_init]),
               0.0).wait()
    assert ei.value.code() == sycl.errc.memory_allocation
    msg = str(ei.value)
    assert str(count * 4) in msg and str(limit) in msg and "max_mem_alloc_size" in msg


@pytest.mark.parametrize("first_use", ["kernel", "copy"])
def test_buffer_past_the_device_limit_names_its_bytes_at_a_kernel_or_copy(
        kq: sycl.queue, first_use: str) -> None:
    """Drivers that allocate a buffer at its first use (NVIDIA's OpenCL) fail there: a
    kernel or a copy that first touches it is ``errc.memory_allocation`` too, naming the
    buffer's bytes and the device's limit (§4.13.2), as a fill is (above)."""
    dev = kq.get_device()
    limit = dev.get_info(MAX_ALLOC)
    count = (max(limit, dev.get_info(sycl.info.device.global_mem_size)) + (1 << 40)) // 4
    B = sycl.buffer(sycl.range(count), dtype=np.float32)

    def cg(h: sycl.handler) -> None:
        a = sycl.accessor(B, h, sycl.access_mode.write, access_range=sycl.range(4),
                          properties=[sycl.no_init])
        if first_use == "kernel":
            def kernel() -> None:
                a[0] = 1.0

            h.single_task(kernel)
        else:
            h.copy(np.ones(4, np.float32), a)

    with pytest.raises(sycl.exception) as ei:
        kq.submit(cg).wait()
    assert ei.value.code() == sycl.errc.memory_allocation
    msg = str(ei.value)
    assert str(count * 4) in msg and str(limit) in msg and "max_mem_alloc_size" in msg


#: the aspect each form's allocation kind needs
NEEDS = {"malloc_shared": "usm_shared_allocations", "aligned_alloc_shared": "usm_shared_allocations",
         "aligned_alloc": "usm_shared_allocations", "malloc_host": "usm_host_allocations",
         "aligned_alloc_host": "usm_host_allocations"}
ALLOCS = {
    "malloc_device": lambda n, q: sycl.malloc_device(n, q, dtype=np.float64),
    "malloc_shared": lambda n, q: sycl.malloc_shared(n, q, dtype=np.float64),
    "malloc_host": lambda n, q: sycl.malloc_host(n, q, dtype=np.float64),
    "malloc": lambda n, q: sycl.malloc(n, q, sycl.usm.alloc.device, dtype=np.float64),
    "malloc_bytes": lambda n, q: sycl.malloc_device(n * 8, q),
    "aligned_alloc_device": lambda n, q: sycl.aligned_alloc_device(64, n, q, dtype=np.float64),
    "aligned_alloc_shared": lambda n, q: sycl.aligned_alloc_shared(64, n, q, dtype=np.float64),
    "aligned_alloc_host": lambda n, q: sycl.aligned_alloc_host(64, n, q, dtype=np.float64),
    "aligned_alloc": lambda n, q: sycl.aligned_alloc(64, n, q, sycl.usm.alloc.shared,
                                                     dtype=np.float64),
}


@pytest.mark.parametrize("alloc", list(ALLOCS), ids=list(ALLOCS))
@pytest.mark.parametrize("count", [2**61, 2**62], ids=["2**64 bytes", "2**65 bytes"])
def test_usm_allocation_of_2_64_bytes_or_more_is_memory_allocation(kq: sycl.queue, alloc: str,
                                                                   count: int) -> None:
    """On a device without the kind's aspect (NVIDIA's OpenCL: device allocations only)
    the aspect is checked first: ``errc.feature_not_supported`` whatever the size, a
    kind no size can fix (docs/memory.md gives the order)."""
    with pytest.raises(sycl.exception) as ei:
        ALLOCS[alloc](count, kq)
    msg = str(ei.value)
    need = NEEDS.get(alloc, "usm_device_allocations")
    if not kq.get_device().has(getattr(sycl.aspect, need)):
        assert ei.value.code() == sycl.errc.feature_not_supported
        assert f"has no aspect.{need}" in msg
        return
    assert ei.value.code() == sycl.errc.memory_allocation
    assert str(count * 8) in msg and "max_mem_alloc_size" in msg
    assert str(kq.get_device().get_info(MAX_ALLOC)) in msg

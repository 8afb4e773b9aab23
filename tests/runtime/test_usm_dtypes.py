"""USM allocations and pointers hold numbers, by the buffers' rule (one check): strings,
bytes, datetimes, timedeltas, void, structured and byte-swapped dtypes are refused with
a ``TypeError`` naming the call and what it holds (SYCL 2020 §4.8.3: ``malloc_*<T>``
allocates ``T``s a kernel can use; pysycl's kernels use numbers).
"""

from __future__ import annotations

import numpy as np
import pytest

import pysycl as sycl

NOT_NUMBERS = ["U4", "S4", "M8", "m8", "V4", np.dtype([("a", np.int32)]), ">i4", object]

ALLOCS = {
    "malloc_device": lambda q, dt: sycl.malloc_device(4, q, dtype=dt),
    "malloc_shared": lambda q, dt: sycl.malloc_shared(4, q, dtype=dt),
    "malloc_host": lambda q, dt: sycl.malloc_host(4, q, dtype=dt),
    "malloc": lambda q, dt: sycl.malloc(4, q, sycl.usm.alloc.shared, dtype=dt),
    "aligned_alloc_device": lambda q, dt: sycl.aligned_alloc_device(64, 4, q, dtype=dt),
    "aligned_alloc_shared": lambda q, dt: sycl.aligned_alloc_shared(64, 4, q, dtype=dt),
    "aligned_alloc_host": lambda q, dt: sycl.aligned_alloc_host(64, 4, q, dtype=dt),
    "aligned_alloc": lambda q, dt: sycl.aligned_alloc(64, 4, q, sycl.usm.alloc.host, dtype=dt),
}


@pytest.mark.parametrize("dt", NOT_NUMBERS, ids=str)
@pytest.mark.parametrize("alloc", list(ALLOCS), ids=list(ALLOCS))
def test_usm_allocations_refuse_what_buffers_refuse(kq: sycl.queue, alloc: str, dt) -> None:
    with pytest.raises(TypeError) as buf_err:
        sycl.buffer(sycl.range(4), dtype=dt)
    with pytest.raises(TypeError) as ei:
        ALLOCS[alloc](kq, dt)
    msg = str(ei.value)
    assert msg.startswith(f"sycl.{alloc}:"), msg
    # the buffers' words, the allocation's name
    assert msg.split(": ", 1)[1].replace("USM allocations", "buffers") == \
        str(buf_err.value).split(": ", 1)[1]


def test_usm_pointer_view_refuses_them_too(kq: sycl.queue) -> None:
    p = sycl.malloc_device(16, kq)  # device USM: every device has it
    try:
        for dt in NOT_NUMBERS:
            with pytest.raises(TypeError, match=r"usm_pointer\.view: .*hold numbers|byte order"):
                p.view(dt)
        assert p.view(np.int32).count == 4
    finally:
        sycl.free(p, kq)


@pytest.mark.parametrize("dt", [np.bool_, np.int8, np.uint64, np.float16, np.float64,
                                np.complex128], ids=lambda d: np.dtype(d).name)
def test_numbers_allocate(kq: sycl.queue, dt) -> None:
    p = sycl.malloc_device(4, kq, dtype=dt)
    assert p.dtype == np.dtype(dt)
    src = np.arange(4).astype(dt)
    back = np.zeros(4, dt)
    kq.copy(src, p, 4)
    kq.copy(p, back, 4).wait()
    np.testing.assert_array_equal(back, src)
    sycl.free(p, kq)

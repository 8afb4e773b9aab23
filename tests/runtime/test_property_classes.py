"""A property of another class is ``errc.invalid`` naming the property, the class that
does not take it and what it takes, at the user's line (SYCL 2020 §4.5.4: each class
lists its properties; DPC++ throws ``errc::invalid`` for others) — for every class that
takes ``properties=``. Nothing is made, nothing runs, the host data stays as it was.
"""

from __future__ import annotations

import numpy as np
import pytest

import pysycl as sycl

P = sycl.property
IN_ORDER = P.queue.in_order()
USE_HOST_PTR = P.buffer.use_host_ptr()


def _invalid(make, owner: str, prop: str) -> None:
    with pytest.raises(sycl.exception) as ei:
        make()
    assert ei.value.code() == sycl.errc.invalid
    msg = str(ei.value)
    assert f"{owner} does not take {prop}" in msg, msg
    assert f"{__file__}:" in msg, msg  # the user's line


def test_queue_takes_queue_properties_only(device: sycl.device) -> None:
    _invalid(lambda: sycl.queue(device, properties=[sycl.no_init]), "sycl.queue", "sycl.no_init")
    _invalid(lambda: sycl.queue(device, properties=[USE_HOST_PTR]), "sycl.queue",
             "sycl.property.buffer.use_host_ptr()")
    assert sycl.queue(device, properties=[IN_ORDER, P.queue.enable_profiling()]).is_in_order()


def test_buffer_and_sub_buffer_take_buffer_properties_only() -> None:
    a = np.arange(4, dtype=np.float32)
    _invalid(lambda: sycl.buffer(a, properties=[IN_ORDER]), "sycl.buffer",
             "sycl.property.queue.in_order()")
    _invalid(lambda: sycl.buffer(sycl.range(4), dtype=np.int32, properties=[sycl.no_init]),
             "sycl.buffer", "sycl.no_init")
    with sycl.buffer(a, properties=[USE_HOST_PTR]) as B:
        _invalid(lambda: sycl.buffer(B, sycl.id(0), sycl.range(2), properties=[IN_ORDER]),
                 "sycl.buffer", "sycl.property.queue.in_order()")
    np.testing.assert_array_equal(a, np.arange(4))


def test_context_takes_no_property(device: sycl.device) -> None:
    _invalid(lambda: sycl.context(device, properties=[IN_ORDER]), "sycl.context",
             "sycl.property.queue.in_order()")


def test_accessors_take_no_init_only(clq: sycl.queue) -> None:
    a = np.arange(4, dtype=np.float32)
    with sycl.buffer(a) as B:
        for make, owner in [
            (lambda h: B.get_access(h, sycl.access_mode.write, properties=[IN_ORDER]),
             "sycl.accessor"),
            (lambda h: sycl.accessor(B, h, sycl.access_mode.write, properties=[USE_HOST_PTR]),
             "sycl.accessor"),
            (lambda h: sycl.local_accessor(np.float32, sycl.range(4), h, properties=[sycl.no_init]),
             "sycl.local_accessor"),
        ]:
            with pytest.raises(sycl.exception) as ei:
                clq.submit(make)
            assert ei.value.code() == sycl.errc.invalid and f"{owner} does not take" in str(
                ei.value)
        _invalid(lambda: B.get_host_access(properties=[IN_ORDER]), "sycl.host_accessor",
                 "sycl.property.queue.in_order()")
        _invalid(lambda: sycl.host_accessor(B, sycl.access_mode.read_write,
                                            properties=[USE_HOST_PTR]),
                 "sycl.host_accessor", "sycl.property.buffer.use_host_ptr()")
        with sycl.host_accessor(B, sycl.access_mode.write, properties=[sycl.no_init]) as h:
            h[0] = 7  # no_init: the old contents need not be kept
        with pytest.raises(sycl.exception) as ei:
            sycl.host_accessor(B, sycl.access_mode.read, properties=[sycl.no_init])
        assert ei.value.code() == sycl.errc.invalid
    assert a[0] == 7


def test_reduction_and_stream_take_their_own(clq: sycl.queue) -> None:
    out = np.zeros(1, np.float32)
    with sycl.buffer(out) as O:
        for make, owner in [(lambda h: sycl.reduction(O, h, sycl.plus(), properties=[IN_ORDER]),
                             "sycl.reduction"),
                            (lambda h: sycl.stream(64, 16, h, properties=[sycl.no_init]),
                             "sycl.stream")]:
            with pytest.raises(sycl.exception) as ei:
                clq.submit(make)
            assert ei.value.code() == sycl.errc.invalid and f"{owner} does not take" in str(
                ei.value)


ALLOCS = {
    "malloc_device": lambda q, p: sycl.malloc_device(4, q, properties=p),
    "malloc_shared": lambda q, p: sycl.malloc_shared(4, q, properties=p),
    "malloc_host": lambda q, p: sycl.malloc_host(4, q, properties=p),
    "malloc": lambda q, p: sycl.malloc(4, q, sycl.usm.alloc.device, properties=p),
    "aligned_alloc_device": lambda q, p: sycl.aligned_alloc_device(64, 4, q, properties=p),
    "aligned_alloc_shared": lambda q, p: sycl.aligned_alloc_shared(64, 4, q, properties=p),
    "aligned_alloc_host": lambda q, p: sycl.aligned_alloc_host(64, 4, q, properties=p),
    "aligned_alloc": lambda q, p: sycl.aligned_alloc(64, 4, q, sycl.usm.alloc.device,
                                                     properties=p),
}


@pytest.mark.parametrize("alloc", list(ALLOCS), ids=list(ALLOCS))
def test_usm_allocations_take_no_property(kq: sycl.queue, alloc: str) -> None:
    _invalid(lambda: ALLOCS[alloc](kq, [sycl.no_init]), f"sycl.{alloc}", "sycl.no_init")


def test_bundle_builds_take_build_options_only(kq: sycl.queue) -> None:
    syclex = sycl.ext.oneapi.experimental
    if not kq.get_device().ext_oneapi_can_compile(syclex.source_language.opencl):
        pytest.skip(f"{kq.get_device()} compiles no OpenCL C (a CUDA device takes PTX source)")
    kb = syclex.create_kernel_bundle_from_source(kq.get_context(), syclex.source_language.opencl,
                                                 "__kernel void f(__global int* x) { x[0] = 1; }")
    with pytest.raises(sycl.exception) as ei:
        syclex.build(kb, properties=[IN_ORDER])
    assert ei.value.code() == sycl.errc.invalid and "a property of sycl.queue" in str(ei.value)

"""DLPack's C structures as pysycl builds and reads them (``pysycl/_memory/dlpack.py``), on
any machine: the layouts of ``dlpack.h`` 1.0, capsules of host allocations that numpy
consumes in place, the lifetime of an export (the memory stays until the consumer lets
go), reading a producer's capsule, and the interop dispatch without a CUDA driver. The
same struct code exports CUDA allocations (kDLCUDA/kDLCUDAHost/kDLCUDAManaged:
tests/cuda_backend/test_cuda_interop.py on the GPU)."""

from __future__ import annotations

import ctypes
import gc
import sys

import numpy as np
import pytest

import pysycl as sycl
from pysycl._memory import dlpack
from pysycl._memory.usm import usm_pointer

_name = ctypes.pythonapi.PyCapsule_GetName
_name.restype, _name.argtypes = ctypes.c_char_p, [ctypes.py_object]


def _host_queue() -> sycl.queue:
    for d in sycl.device.get_devices():
        if d.has(sycl.aspect.usm_shared_allocations) and d.has(sycl.aspect.usm_host_allocations):
            if d.get_backend() is not sycl.backend.ext_oneapi_cuda:
                return sycl.queue(d)
    pytest.skip("no device here makes shared and host USM")


@pytest.fixture
def q() -> sycl.queue:
    return _host_queue()


def test_the_layouts_are_dlpack_h() -> None:
    assert ctypes.sizeof(dlpack.DLDevice) == 8
    assert ctypes.sizeof(dlpack.DLDataType) == 4
    assert ctypes.sizeof(dlpack.DLTensor) == 48
    assert [dlpack.DLTensor.__dict__[f].offset for f in
            ("data", "device", "ndim", "dtype", "shape", "strides", "byte_offset")] == \
        [0, 8, 16, 20, 24, 32, 40]
    assert ctypes.sizeof(dlpack.DLManagedTensor) == 64
    assert dlpack.DLManagedTensor.manager_ctx.offset == 48
    assert dlpack.DLManagedTensor.deleter.offset == 56
    v = dlpack.DLManagedTensorVersioned
    assert (v.version.offset, v.manager_ctx.offset, v.deleter.offset, v.flags.offset,
            v.dl_tensor.offset, ctypes.sizeof(v)) == (0, 8, 16, 24, 32, 80)
    assert (dlpack.kDLCPU, dlpack.kDLCUDA, dlpack.kDLCUDAHost, dlpack.kDLCUDAManaged) == \
        (1, 2, 3, 13)


@pytest.mark.parametrize("dt", [np.int8, np.uint16, np.int32, np.int64, np.float16, np.float32,
                                np.float64, np.complex64, np.complex128, np.bool_])
def test_dtypes_round_trip(dt: type) -> None:
    t = dlpack.dl_dtype(np.dtype(dt))
    assert t.lanes == 1 and t.bits == np.dtype(dt).itemsize * 8
    assert dlpack.np_dtype(t) == np.dtype(dt)


def test_a_type_dlpack_cannot_say_is_refused() -> None:
    with pytest.raises(BufferError, match="no DLPack type"):
        dlpack.dl_dtype(np.dtype("U3"))
    with pytest.raises(BufferError, match="lanes"):
        dlpack.np_dtype(dlpack.DLDataType(2, 32, 4))


@pytest.mark.parametrize("kind", ["shared", "host"])
def test_numpy_consumes_a_host_allocation_in_place(q: sycl.queue, kind: str) -> None:
    p = getattr(sycl, f"malloc_{kind}")(16, q, dtype=np.float32)
    for i in range(16):
        p[i] = i
    assert p.__dlpack_device__() == (dlpack.kDLCPU, 0)
    before = dlpack.exported()
    a = np.from_dlpack(p)
    assert a.ctypes.data == p.address and a.shape == (16,) and a.dtype == np.float32
    assert dlpack.exported() == before + 1
    a[3] = 42.0
    assert p[3] == 42.0  # one memory, no copy
    del a
    gc.collect()
    assert dlpack.exported() == before  # the consumer called the deleter
    sycl.free(p, q)


def test_the_memory_stays_until_the_consumer_lets_go(q: sycl.queue) -> None:
    p = sycl.malloc_shared(1024, q, dtype=np.int64)
    p.host_array()[:] = np.arange(1024)
    a = np.from_dlpack(p)
    sycl.free(p, q)  # pysycl lets go; the consumer still holds the memory
    del p
    gc.collect()
    np.testing.assert_array_equal(a, np.arange(1024))
    a += 1  # still writable, still the same memory
    assert int(a.sum()) == 1024 * 1023 // 2 + 1024


def test_versioned_and_legacy_capsules(q: sycl.queue) -> None:
    p = sycl.malloc_shared(4, q, dtype=np.int32)
    assert _name(p.__dlpack__()) == b"dltensor"
    assert _name(p.__dlpack__(max_version=(0, 8))) == b"dltensor"
    assert _name(p.__dlpack__(max_version=(1, 0))) == b"dltensor_versioned"
    assert _name(p.__dlpack__(max_version=(1, 3))) == b"dltensor_versioned"

    class Legacy:  # a consumer-facing producer that knows no max_version
        def __dlpack__(self, stream: object = None) -> object:
            return p.__dlpack__(stream=stream)

        def __dlpack_device__(self) -> tuple[int, int]:
            return p.__dlpack_device__()

    a = np.from_dlpack(Legacy())
    assert a.ctypes.data == p.address and a.dtype == np.int32
    del a
    gc.collect()
    sycl.free(p, q)


def test_an_unconsumed_capsule_releases_its_export(q: sycl.queue) -> None:
    p = sycl.malloc_shared(4, q, dtype=np.int32)
    before = dlpack.exported()
    caps = [p.__dlpack__(), p.__dlpack__(max_version=(1, 0))]
    assert dlpack.exported() == before + 2
    del caps
    gc.collect()
    assert dlpack.exported() == before
    sycl.free(p, q)


def test_read_only_pointers_export_read_only(q: sycl.queue) -> None:
    p = sycl.malloc_shared(4, q, dtype=np.float64)
    ro = usm_pointer(p.allocation, 0, p.dtype, p.count, True)
    a = np.from_dlpack(ro)
    assert a.ctypes.data == p.address
    assert not a.flags.writeable
    imp = dlpack.consume(ro.__dlpack__(max_version=(1, 0)))
    assert imp.readonly and imp.address == p.address
    del a, imp
    gc.collect()
    sycl.free(p, q)


def test_the_protocol_arguments(q: sycl.queue) -> None:
    p = sycl.malloc_shared(4, q, dtype=np.float32)
    with pytest.raises(BufferError, match="DLPack device"):
        p.__dlpack__(dl_device=(dlpack.kDLCUDA, 0))
    with pytest.raises(BufferError, match="stream must be None"):
        p.__dlpack__(stream=5)
    with pytest.raises(BufferError, match="max_version"):
        p.__dlpack__(max_version="1.0")
    c = np.from_dlpack(p, copy=True)
    assert c.ctypes.data != p.address
    sycl.free(p, q)


def test_reading_a_producers_capsule() -> None:
    base = np.arange(10, dtype=np.float32)
    refs = sys.getrefcount(base)
    imp = dlpack.consume(base.__dlpack__(max_version=(1, 0)))
    assert imp.address == base.ctypes.data and imp.shape == (10,) and imp.dtype == np.float32
    assert imp.device == (dlpack.kDLCPU, 0) and not imp.readonly
    assert _name(imp.capsule) == b"used_dltensor_versioned"
    assert sys.getrefcount(base) > refs  # the producer's tensor holds the array
    del imp
    gc.collect()
    assert sys.getrefcount(base) == refs  # our holder went: the producer's deleter ran
    legacy = dlpack.consume(base[2:].__dlpack__())
    assert legacy.address == base.ctypes.data + 8 and legacy.shape == (8,)
    with pytest.raises(BufferError, match="no unused DLPack capsule"):
        dlpack.consume(legacy.capsule)  # consumed already


def test_host_pointers_have_no_cuda_array_interface(q: sycl.queue) -> None:
    p = sycl.malloc_shared(4, q, dtype=np.float32)
    assert not hasattr(p, "__cuda_array_interface__")
    sycl.free(p, q)


def test_the_interop_dispatch_without_a_cuda_driver() -> None:
    cuda = sycl.backend.ext_oneapi_cuda
    if any(d.get_backend() is cuda for d in sycl.device.get_devices()):
        pytest.skip("a CUDA device is present (tests/cuda_backend/test_cuda_interop.py)")
    with pytest.raises(sycl.exception) as e:
        sycl.make_device(0, backend=cuda)
    assert e.value.code() is sycl.errc.invalid
    d = sycl.device.get_devices()[0]
    with pytest.raises(sycl.exception) as e:
        sycl.get_native(d, cuda)
    assert e.value.code() is sycl.errc.backend_mismatch
    with pytest.raises(TypeError):
        sycl.get_native(d, "cuda")  # type: ignore[arg-type]


def test_a_refused_capsule_keeps_the_consumers_error() -> None:
    base = np.arange(6, dtype=np.float32)
    before = dlpack.exported()

    class OnAGpu:  # numpy refuses device memory: its own error reaches the caller
        def __dlpack__(self, **kw: object) -> object:
            return dlpack.capsule(base.ctypes.data, 6, base.dtype, (dlpack.kDLCUDA, 0), base,
                                  versioned=True)

        def __dlpack_device__(self) -> tuple[int, int]:
            return (dlpack.kDLCUDA, 0)

    with pytest.raises((RuntimeError, BufferError), match="Unsupported device"):  # numpy < / >= 2.5
        np.from_dlpack(OnAGpu())
    assert dlpack.exported() == before  # the refused export was let go


@pytest.mark.parametrize("kind", [dlpack.kDLCUDAHost, dlpack.kDLCUDAManaged])
def test_numpy_reads_host_accessible_cuda_kinds(kind: int) -> None:
    base = np.arange(6, dtype=np.int32)

    class Pinned:  # what a CUDA host or shared allocation exports: numpy reads it in place
        def __dlpack__(self, **kw: object) -> object:
            return dlpack.capsule(base.ctypes.data, 6, base.dtype, (kind, 0), base,
                                  versioned=True)

        def __dlpack_device__(self) -> tuple[int, int]:
            return (kind, 0)

    a = np.from_dlpack(Pinned())
    assert a.ctypes.data == base.ctypes.data
    np.testing.assert_array_equal(a, base)


def test_a_held_capsule_survives_other_exports(q: sycl.queue) -> None:
    p = sycl.malloc_shared(8, q, dtype=np.int16)
    p.host_array()[:] = np.arange(8)
    held = p.__dlpack__(max_version=(1, 0))
    for _ in range(3):
        p.__dlpack__()  # each export sweeps: the held capsule stays
    gc.collect()
    imp = dlpack.consume(held)
    assert imp.address == p.address and imp.shape == (8,) and imp.dtype == np.int16
    del imp, held
    sycl.free(p, q)

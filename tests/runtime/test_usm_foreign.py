"""Another SYCL runtime's memory, and USM pointers as Python buffers (issue 21, item 25).

* ``__sycl_usm_array_interface__`` (dpctl's protocol) objects whose memory is not
  pysycl's: host or shared memory (the object's ``usm_type``, as dpctl's and dpnp's
  arrays report it) is host memory to pysycl; device memory is refused.
* ``usm_pointer`` and the buffer protocol: PEP 688's ``__buffer__`` (Python >= 3.12).

The foreign memory here is real USM of another SYCL context (a pysycl shared
allocation in a second context: what a dpctl array's memory is to pysycl), exposed
by an object that speaks only the protocol, as dpnp arrays do.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

import pysycl as sycl

SHARED = sycl.aspect.usm_shared_allocations


class ForeignUSMArray:
    """What a dpnp/dpctl array offers pysycl: the protocol, its ``usm_type``, and a
    ``syclobj`` of its own runtime (here an object pysycl does not know)."""

    def __init__(self, ptr: sycl.usm_pointer, usm_type: str | None) -> None:
        self._ptr = ptr  # keeps the memory alive
        iface = ptr.__sycl_usm_array_interface__
        self.__sycl_usm_array_interface__ = dict(iface, syclobj=object())
        if usm_type is not None:
            self.usm_type = usm_type


@pytest.fixture
def foreign(uq_shared: sycl.queue) -> sycl.usm_pointer:
    """Shared USM of a second context on the same device (another runtime's memory)."""
    other = sycl.context(uq_shared.get_device())
    p = sycl.malloc_shared(8, uq_shared.get_device(), other, dtype=np.int32)
    np.asarray(p)[:] = np.arange(8)
    return p


@pytest.fixture(params=[d for d in sycl.device.get_devices() if d.has(SHARED)],
                ids=lambda d: d.get_info(sycl.info.device.name).split()[0])
def uq_shared(request: pytest.FixtureRequest) -> sycl.queue:
    """A queue on each device with shared allocations (the host_debuggable one too)."""
    return sycl.queue(request.param)


def test_foreign_shared_memory_is_a_copy_end(uq_shared: sycl.queue,
                                             foreign: sycl.usm_pointer) -> None:
    q = uq_shared
    f = ForeignUSMArray(foreign, "shared")
    out = np.zeros(8, np.int32)
    q.memcpy(out, f, 32).wait()
    np.testing.assert_array_equal(out, np.arange(8))
    q.fill(f, np.int32(5), 8).wait()
    np.testing.assert_array_equal(np.asarray(foreign), np.full(8, 5))  # in place
    q.copy(np.full(8, 7, np.int32), f, 8).wait()
    np.testing.assert_array_equal(np.asarray(foreign), np.full(8, 7))
    p = sycl.malloc_shared(8, q, dtype=np.int32)
    q.memcpy(p, ForeignUSMArray(foreign, "host"), 32).wait()
    np.testing.assert_array_equal(np.asarray(p), np.full(8, 7))
    sycl.free(p, q)


def test_foreign_device_memory_is_refused(uq_shared: sycl.queue,
                                          foreign: sycl.usm_pointer) -> None:
    out = np.zeros(8, np.int32)
    for usm_type, said in (("device", "its usm_type is 'device'"), (None, "it has no usm_type")):
        with pytest.raises(sycl.exception, match=f"another SYCL runtime's memory.*{said}") as e:
            uq_shared.memcpy(out, ForeignUSMArray(foreign, usm_type), 32)
        assert e.value.code() == sycl.errc.invalid
    assert not out.any()


def test_pysycl_memory_of_another_context_stays_refused(uq_shared: sycl.queue,
                                                        foreign: sycl.usm_pointer) -> None:
    """A pysycl allocation belongs to its context (§4.8): its own interface object names
    that context, so another context's queue refuses it whatever the memory kind."""
    class Wrapper:
        __sycl_usm_array_interface__ = foreign.__sycl_usm_array_interface__

    with pytest.raises(sycl.exception, match="USM pointers belong to their context") as e:
        uq_shared.memcpy(np.zeros(8, np.int32), Wrapper(), 32)
    assert e.value.code() == sycl.errc.invalid


def test_usm_pointer_buffer_protocol(uq_shared: sycl.queue) -> None:
    """PEP 688 ``__buffer__``: ``memoryview(p)`` and ``np.frombuffer(p)`` on Python >= 3.12;
    Python 3.10/3.11 have no buffer protocol for classes written in Python, so there
    ``memoryview(p)`` is a TypeError and ``memoryview(np.asarray(p))`` is the way."""
    q = uq_shared
    p = sycl.malloc_shared(4, q, dtype=np.float32)
    np.asarray(p)[:] = [1, 2, 3, 4]
    m = p.__buffer__(0)  # the method itself, on every version
    assert (m.format, m.shape, m.readonly) == ("f", (4,), False)
    np.frombuffer(m, np.float32)[0] = 9  # zero copy
    assert p[0] == 9
    if sys.version_info >= (3, 12):
        assert memoryview(p + 1).tolist() == [2, 3, 4]
        np.frombuffer(p, np.float32)[3] = -1
        assert bytes(p + 3) == np.float32(-1).tobytes()
    else:
        with pytest.raises(TypeError, match="bytes-like object is required"):
            memoryview(p)
    assert memoryview(np.asarray(p)).tolist() == [9, 2, 3, -1 if sys.version_info >= (3, 12) else 4]
    d = sycl.malloc_device(4, q, dtype=np.float32)
    with pytest.raises(BufferError, match="device allocation"):
        d.__buffer__(0)
    sycl.free(d, q)
    sycl.free(p, q)
    with pytest.raises(sycl.exception, match="freed"):
        p.__buffer__(0)


def test_usm_array_interface_counts_strides_and_offset_in_elements(
        uq_shared: sycl.queue, foreign: sycl.usm_pointer) -> None:
    """dpctl's protocol: ``strides`` and ``offset`` are in elements (a contiguous 1-D view
    has strides ``(1,)``; ``offset`` moves the first element)."""
    f = ForeignUSMArray(foreign, "shared")
    f.__sycl_usm_array_interface__.update(shape=(3,), strides=(1,), offset=4)
    out = np.zeros(3, np.int32)
    uq_shared.memcpy(out, f, 12).wait()
    np.testing.assert_array_equal(out, [4, 5, 6])
    f.__sycl_usm_array_interface__.update(strides=(2,))
    with pytest.raises(sycl.exception, match=r"not contiguous \(strides \(8,\) in bytes\)"):
        uq_shared.memcpy(out, f, 12)


@pytest.mark.parametrize("as_on_a_gpu", [False, True], ids=["as_the_device_is", "tables_forced"])
def test_fill_of_host_memory_works_on_every_device(clq: sycl.queue, as_on_a_gpu: bool,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """``q.fill``/``q.memset`` of host memory (a numpy array; another runtime's shared
    memory) on every device (SYCL 2020 §4.9.4.3: ``fill`` and ``memset`` take any pointer
    the queue's device may access). ``clEnqueueSVMMemFill`` takes memory that is no SVM
    of the context only with fine-grained system SVM: NVIDIA's OpenCL and PoCL refused it
    (``CL_INVALID_OPERATION``); where the device lacks ``usm_system_allocations`` (or
    ``PYSYCL_COPY_HOST_ARRAYS`` makes every device behave so) the pattern is copied there.
    The fill keeps the queue's order: a copy enqueued after it reads what it wrote."""
    from pysycl._memory import tables

    monkeypatch.setattr(tables, "forced", as_on_a_gpu)
    for dt, value in ((np.int32, 5), (np.bool_, True), (np.complex128, 1 - 2j),
                      (np.float16, -0.5)):
        a = np.zeros(9, dt)
        b = np.zeros(9, dt)
        clq.fill(a, dt(value), 8)
        clq.memcpy(b, a, 9 * a.itemsize).wait()  # enqueued before the fill completed
        np.testing.assert_array_equal(a, np.r_[np.full(8, dt(value)), np.zeros(1, dt)])
        np.testing.assert_array_equal(b, a)
    m = np.zeros(8, np.uint8)
    clq.memset(m, 0x1FF, 7).wait()  # its low 8 bits, as C's memset
    assert m.tolist() == [255] * 7 + [0]
    if clq.get_device().has(SHARED):
        other = sycl.context(clq.get_device())
        p = sycl.malloc_shared(8, clq.get_device(), other, dtype=np.int32)
        clq.fill(ForeignUSMArray(p, "shared"), np.int32(-3), 8).wait()
        np.testing.assert_array_equal(np.asarray(p), np.full(8, -3))
        sycl.free(p, other)

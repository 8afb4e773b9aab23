"""Unified shared memory (SYCL 2020 §4.8): allocation, queries, copies, interop, bad input.

Real devices only: every OpenCL device of the machine (Intel's CPU runtime, PoCL;
NVIDIA's OpenCL on the GPU machine) and the host_debuggable device. Kernels that use
USM pointers are in tests/kernels/test_usm_kernels.py.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pysycl as sycl
from pysycl._memory import usm as _usm
from tests.conftest import ALL_DEVICES, _dev_id

KINDS = {
    sycl.usm.alloc.device: sycl.aspect.usm_device_allocations,
    sycl.usm.alloc.host: sycl.aspect.usm_host_allocations,
    sycl.usm.alloc.shared: sycl.aspect.usm_shared_allocations,
}


def _devices() -> list[sycl.device]:
    return [*ALL_DEVICES, *sycl.device.get_devices(sycl.info.device_type.custom)]


@pytest.fixture(params=_devices(), ids=_dev_id)
def uq(request: pytest.FixtureRequest) -> sycl.queue:
    """A queue on each device, the host_debuggable one included."""
    return sycl.queue(request.param)


def _kinds(q: sycl.queue) -> list[sycl.usm.alloc]:
    return [k for k, a in KINDS.items() if q.get_device().has(a)]


def test_every_form_allocates_what_it_says(uq: sycl.queue) -> None:
    dev, ctx = uq.get_device(), uq.get_context()
    for kind in _kinds(uq):
        name = kind.name
        made = [
            getattr(sycl, f"malloc_{name}")(10, uq, dtype=np.float64),
            sycl.malloc(10, uq, kind, dtype=np.float64),
            sycl.malloc(10, *((ctx,) if kind is sycl.usm.alloc.host else (dev, ctx)), kind,
                        dtype=np.float64),
            getattr(sycl, f"aligned_alloc_{name}")(256, 10, uq, dtype=np.float64),
            sycl.aligned_alloc(4096, 10, uq, kind, dtype=np.float64),
        ]
        if kind is sycl.usm.alloc.host:
            made.append(sycl.malloc_host(10, ctx, dtype=np.float64))
        else:
            made.append(getattr(sycl, f"malloc_{name}")(10, dev, ctx, dtype=np.float64))
        for p in made:
            assert isinstance(p, sycl.usm_pointer)
            assert p.dtype == np.float64 and p.count == 10 and p.nbytes == 80
            assert sycl.get_pointer_type(p, ctx) is kind
            assert sycl.get_pointer_type(int(p) + 79, ctx) is kind  # an address inside
            want = dev if kind is not sycl.usm.alloc.host else ctx.get_devices()[0]
            assert sycl.get_pointer_device(p, ctx) == want
        assert int(made[3]) % 256 == 0 and int(made[4]) % 4096 == 0
        for p in made:
            sycl.free(p, uq)
            assert sycl.get_pointer_type(p, ctx) is sycl.usm.alloc.unknown
    raw = sycl.malloc(5, uq, _kinds(uq)[0])  # no dtype: C++'s void* forms count bytes
    assert raw.dtype == np.uint8 and raw.count == 5
    sycl.free(raw, ctx)


def test_queries_of_what_is_no_allocation(uq: sycl.queue) -> None:
    ctx = uq.get_context()
    arr = np.zeros(4)
    assert sycl.get_pointer_type(arr.ctypes.data, ctx) is sycl.usm.alloc.unknown
    assert sycl.get_pointer_type(arr, ctx) is sycl.usm.alloc.unknown
    with pytest.raises(sycl.exception) as e:
        sycl.get_pointer_device(arr.ctypes.data, ctx)
    assert e.value.code() == sycl.errc.invalid
    other = sycl.context(uq.get_device())  # another context of the same device
    p = sycl.malloc(4, uq, _kinds(uq)[0], dtype=np.int32)
    assert sycl.get_pointer_type(p, other) is sycl.usm.alloc.unknown
    with pytest.raises(sycl.exception) as e:
        sycl.get_pointer_device(p, other)
    assert e.value.code() == sycl.errc.invalid
    sycl.free(p, uq)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 3000), lo=st.integers(0, 100), span=st.integers(0, 400),
       dt=st.sampled_from([np.int8, np.uint16, np.int32, np.float32, np.float64, np.complex64]))
def test_memcpy_and_copy_round_trip_through_device_memory(n: int, lo: int, span: int,
                                                          dt: type) -> None:
    for dev in _devices():
        q = sycl.queue(dev)
        kind = _kinds(q)[0]
        src = (np.arange(n) * 3 + 1).astype(dt)
        p = sycl.malloc(n, q, kind, dtype=dt)
        q.memcpy(p, src, src.nbytes).wait()
        back = np.zeros(n, dt)
        q.copy(p, back, n).wait()
        np.testing.assert_array_equal(back, src)
        lo_, hi = min(lo, n), min(lo + span, n)  # a window through pointer arithmetic
        win = np.full(hi - lo_, 7, dt)
        e = q.copy(win, p + lo_, hi - lo_)
        q.memcpy(back, p, back.nbytes, e).wait()
        want = src.copy()
        want[lo_:hi] = 7
        np.testing.assert_array_equal(back, want)
        sycl.free(p, q)


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 2000), off=st.integers(0, 50), count=st.integers(0, 500),
       dt=st.sampled_from([np.uint8, np.int16, np.float32, np.int64, np.complex128]),
       value=st.integers(0, 255))
def test_fill_and_memset_match_numpy(n: int, off: int, count: int, dt: type,
                                     value: int) -> None:
    for dev in _devices():
        q = sycl.queue(dev)
        p = sycl.malloc(n, q, _kinds(q)[0], dtype=dt)
        q.memset(p, value, p.nbytes).wait()
        got = np.zeros(n, dt)
        q.memcpy(got, p, got.nbytes).wait()
        np.testing.assert_array_equal(got.view(np.uint8), np.full(p.nbytes, value, np.uint8))
        o, c = min(off, n), min(count, n - min(off, n))
        pattern = dt((value * 3 + 1) % 100) if dt is not np.complex128 else complex(value, -1)
        q.fill(p + o, pattern, c).wait()
        q.memcpy(got, p, got.nbytes).wait()
        want = np.full(n, 0, dt)
        want.view(np.uint8)[...] = value
        want[o:o + c] = pattern
        np.testing.assert_array_equal(got, want)
        sycl.free(p, q)


def test_host_and_shared_allocations_are_numpy_views_without_copies(uq: sycl.queue) -> None:
    for kind in (k for k in _kinds(uq) if k is not sycl.usm.alloc.device):
        p = sycl.malloc(8, uq, kind, dtype=np.float32)
        a = np.asarray(p)
        assert a.ctypes.data == int(p) and a.shape == (8,) and a.dtype == np.float32
        a[:] = np.arange(8)
        assert [p[i] for i in range(8)] == list(range(8))  # host indexing, C++'s p[i]
        p[3] = 42
        assert a[3] == 42
        d = np.from_dlpack(p + 2)
        assert d.ctypes.data == int(p) + 8 and d[1] == 42
        d[0] = -1
        assert a[2] == -1
        assert (p + 2).__dlpack_device__() == (1, 0)
        iface = p.__sycl_usm_array_interface__
        assert iface["data"] == (int(p), False) and iface["shape"] == (8,)
        assert iface["typestr"] == np.dtype(np.float32).str and iface["version"] == 1
        assert iface["syclobj"] == uq.get_context() and iface["strides"] is None
        q2 = np.zeros(8, np.float32)
        uq.memcpy(q2, p, 32).wait()
        np.testing.assert_array_equal(q2, a)
        del a, d
        sycl.free(p, uq)


def test_device_allocations_stay_off_the_host(uq: sycl.queue) -> None:
    if sycl.usm.alloc.device not in _kinds(uq):
        pytest.skip("no device allocations")
    p = sycl.malloc_device(4, uq, dtype=np.int32)
    for touch in (lambda: p[0], lambda: p.__setitem__(0, 1), lambda: np.asarray(p)):
        with pytest.raises(sycl.exception) as e:
            touch()
        assert e.value.code() == sycl.errc.invalid and "q.memcpy" in str(e.value)
    with pytest.raises(BufferError):
        p.__dlpack__()
    assert p.__sycl_usm_array_interface__["data"][0] == int(p)  # dpctl/dpnp may see it
    sycl.free(p, uq)


def test_pointer_arithmetic_is_cplusplus(uq: sycl.queue) -> None:
    p = sycl.malloc(10, uq, _kinds(uq)[0], dtype=np.int64)
    q = p + 4
    assert int(q) == int(p) + 32 and q.count == 6 and q - p == 4 and (q - 4) == p
    assert (3 + p) - p == 3 and (p + 10).count == 0  # one past the end is a pointer
    for bad in (lambda: p + 11, lambda: p - 1, lambda: q - 5):
        with pytest.raises(IndexError, match="outside its allocation"):
            bad()
    b = p.view(np.uint8)
    assert b.count == 80 and int(b) == int(p)
    with pytest.raises(ValueError):
        (b + 1).view(np.int32)
    other = sycl.malloc(2, uq, _kinds(uq)[0], dtype=np.int64)
    with pytest.raises(ValueError):
        _ = other - p
    sycl.free(other, uq)
    with pytest.raises(sycl.exception) as e:
        sycl.free(q, uq)  # not the start of the allocation
    assert e.value.code() == sycl.errc.invalid and "not the start" in str(e.value)
    sycl.free(p, uq)


@pytest.mark.parametrize("count", [0, -3, True, 2.0, "8"])
def test_bad_counts_are_refused(uq: sycl.queue, count: object) -> None:
    with pytest.raises((ValueError, TypeError)) as e:
        sycl.malloc(count, uq, _kinds(uq)[0], dtype=np.float32)  # type: ignore[arg-type]
    assert "count" in str(e.value)


def test_bad_allocation_arguments(uq: sycl.queue) -> None:
    kind = _kinds(uq)[0]
    with pytest.raises(ValueError, match="power of two"):
        sycl.aligned_alloc(48, 4, uq, kind)
    with pytest.raises(TypeError, match="kind"):
        sycl.malloc(4, uq, "device")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="hold numbers"):
        sycl.malloc(4, uq, kind, dtype=object)
    with pytest.raises(sycl.exception) as e:  # larger than the device allows
        sycl.malloc(2**61, uq, kind, dtype=np.uint8)
    assert e.value.code() == sycl.errc.memory_allocation
    assert "max_mem_alloc_size" in str(e.value)


def test_kinds_a_device_lacks_are_feature_not_supported() -> None:
    lacking = [(d, k) for d in _devices() for k, a in KINDS.items() if not d.has(a)]
    if not lacking:
        pytest.skip("every device here makes every kind (NVIDIA's OpenCL makes device only)")
    for d, k in lacking:
        with pytest.raises(sycl.exception) as e:
            sycl.malloc(4, sycl.queue(d), k)
        assert e.value.code() == sycl.errc.feature_not_supported
        assert KINDS[k].name in str(e.value)


def test_free_errors(uq: sycl.queue) -> None:
    p = sycl.malloc(4, uq, _kinds(uq)[0], dtype=np.float32)
    other_q = sycl.queue(sycl.context(uq.get_device()), uq.get_device())
    with pytest.raises(sycl.exception) as e:
        sycl.free(p, other_q)
    assert e.value.code() == sycl.errc.invalid and "allocated in" in str(e.value)
    sycl.free(p, uq)
    with pytest.raises(sycl.exception) as e:
        sycl.free(p, uq)
    assert e.value.code() == sycl.errc.invalid and "double free" in str(e.value)
    sycl.free(None, uq)  # C++'s free(nullptr)
    with pytest.raises(TypeError):
        sycl.free(np.zeros(3), uq)  # type: ignore[arg-type]


def test_bad_copies_enqueue_nothing_and_keep_host_data(uq: sycl.queue) -> None:
    kind = _kinds(uq)[0]
    p = sycl.malloc(8, uq, kind, dtype=np.float32)
    uq.fill(p, np.float32(5), 8).wait()
    host = np.arange(4, dtype=np.float32)
    before = host.copy()
    ro = np.zeros(8, np.float32)
    ro.setflags(write=False)
    cases = [
        (lambda: uq.memcpy(p, np.zeros(16, np.float32), 64), "do not fit in <sycl.usm_pointer"),
        (lambda: uq.memcpy(host, p, 32), "do not fit in the host array"),
        (lambda: uq.copy(p + 6, host, 3), "do not fit in"),
        (lambda: uq.memset(p + 2, 0, 32), "do not fit in"),
        (lambda: uq.fill(p, np.float32(1), 9), "do not fit in"),
        (lambda: uq.memcpy(np.zeros(8, np.float32)[::2], p, 16), "C-contiguous"),
        (lambda: uq.memcpy(ro, p, 16), "read-only"),
    ]
    for call, words in cases:
        with pytest.raises(sycl.exception) as e:
            call()
        assert e.value.code() == sycl.errc.invalid and words in str(e.value), str(e.value)
    with pytest.raises(TypeError, match="copy converts nothing"):
        uq.copy(p, np.zeros(8, np.float64), 8)
    with pytest.raises(ValueError, match="negative"):
        uq.memcpy(host, p, -4)
    got = np.zeros(8, np.float32)
    uq.memcpy(got, p, 32).wait()
    assert (got == 5).all() and (host == before).all()  # nothing ran, nothing changed
    other = sycl.queue(sycl.context(uq.get_device()), uq.get_device())
    with pytest.raises(sycl.exception) as e:
        other.memcpy(host, p, 16)
    assert e.value.code() == sycl.errc.invalid and "not in the queue's context" in str(e.value)
    sycl.free(p, uq)
    with pytest.raises(sycl.exception) as e:
        uq.memcpy(host, p, 16)
    assert e.value.code() == sycl.errc.invalid and "freed" in str(e.value)
    assert (host == before).all()


def test_usm_array_interface_objects_are_copy_ends(uq: sycl.queue) -> None:
    """An object exposing only ``__sycl_usm_array_interface__`` (as dpnp arrays do)."""
    p = sycl.malloc(6, uq, _kinds(uq)[0], dtype=np.int32)

    class Foreign:
        def __init__(self, iface: dict) -> None:
            self.__sycl_usm_array_interface__ = iface

    iface = dict((p + 2).__sycl_usm_array_interface__, shape=(4,))
    uq.memcpy(Foreign(iface), np.arange(4, dtype=np.int32), 16).wait()
    uq.memset(p, 0, 8).wait()
    got = np.zeros(6, np.int32)
    uq.copy(p, got, 6).wait()
    assert list(got) == [0, 0, 0, 1, 2, 3]
    stray = dict(iface, data=(12345, False))
    with pytest.raises(sycl.exception) as e:
        uq.memcpy(Foreign(stray), got, 4)
    assert e.value.code() == sycl.errc.invalid and "no USM memory" in str(e.value)
    sycl.free(p, uq)


def test_free_keeps_memory_that_numpy_views_still_use(uq: sycl.queue) -> None:
    kinds = [k for k in _kinds(uq) if k is not sycl.usm.alloc.device]
    if not kinds:
        pytest.skip("no host-accessible allocations")
    p = sycl.malloc(1000, uq, kinds[0], dtype=np.float64)
    a = np.asarray(p)
    a[:] = 2.5
    sycl.free(p, uq)
    assert (a == 2.5).all()  # the view still reads valid memory
    a[:] = 1.0
    with pytest.raises(sycl.exception):
        p[0]  # the pointer is freed, whatever the view does


def _live_allocations() -> int:
    return sum(len(by_start) for _, by_start in _usm._live.values())


def test_thousands_of_cycles_leak_nothing(uq: sycl.queue) -> None:
    gc.collect()
    before = _live_allocations()
    kinds = _kinds(uq)
    for i in range(3000):
        p = sycl.malloc(1 << 16, uq, kinds[i % len(kinds)], dtype=np.float32)
        if i % 3 == 0:
            uq.memset(p, 1, 64)
        sycl.free(p, uq)
    for _ in range(200):  # dropped without free: garbage collected like any object
        sycl.malloc(1 << 16, uq, kinds[0], dtype=np.float32)
    uq.wait()
    gc.collect()
    assert _live_allocations() == before


def test_events_order_usm_commands_across_queues(uq: sycl.queue) -> None:
    other = sycl.queue(uq.get_context(), uq.get_device())
    n = 1 << 18
    p = sycl.malloc(n, uq, _kinds(uq)[0], dtype=np.int32)
    src = np.arange(n, dtype=np.int32)
    e1 = uq.memcpy(p, src, src.nbytes)
    e2 = other.fill(p, np.int32(9), n // 2, depends_on=e1)  # after the copy
    got = np.zeros(n, np.int32)
    other.memcpy(got, p, got.nbytes, [e2]).wait()
    assert (got[: n // 2] == 9).all() and (got[n // 2:] == src[n // 2:]).all()
    sycl.free(p, uq)
    with pytest.raises(TypeError, match="given twice"):
        uq.memset(p, 0, 4, e1, depends_on=e1)


def test_handler_forms_and_hints(uq: sycl.queue) -> None:
    """``h.memcpy/memset/fill/copy/prefetch/mem_advise`` in command groups, with ``depends_on``."""
    kind = _kinds(uq)[0]
    p = sycl.malloc(16, uq, kind, dtype=np.int16)
    e = uq.submit(lambda h: h.memset(p, 0, 32))
    e = uq.submit(lambda h: (h.depends_on(e), h.fill(p + 4, np.int16(-3), 8)))
    e = uq.submit(lambda h: (h.depends_on([e]), h.copy(np.arange(2, dtype=np.int16), p + 14, 2)))
    e = uq.submit(lambda h: (h.depends_on(e), h.prefetch(p, 32)))
    e = uq.mem_advise(p, 32, 0, e)
    e = uq.prefetch(p + 8, 8, depends_on=e)
    got = np.zeros(16, np.int16)
    uq.submit(lambda h: (h.depends_on(e), h.memcpy(got, p, 32))).wait()
    assert got.tolist() == [0] * 4 + [-3] * 8 + [0, 0, 0, 1]
    with pytest.raises(TypeError, match="advice must be an int"):
        uq.mem_advise(p, 4, "read_mostly")  # type: ignore[arg-type]
    with pytest.raises(sycl.exception) as e_info:
        uq.prefetch(p, 64)
    assert e_info.value.code() == sycl.errc.invalid
    with pytest.raises(sycl.exception) as e_info:  # one command per command group
        uq.submit(lambda h: (h.memset(p, 0, 2), h.memset(p, 1, 2)))
    assert e_info.value.code() == sycl.errc.invalid
    with pytest.raises(TypeError, match="needs the element count"):
        uq.submit(lambda h: h.copy(p, got))
    sycl.free(p, uq)


def test_host_dlpack_producers_are_copy_ends(uq: sycl.queue) -> None:
    """An object that speaks only DLPack (as a CPU tensor of another library does)."""

    class Tensor:
        def __init__(self, a: np.ndarray) -> None:
            self._a = a

        def __dlpack__(self, **kw: object) -> object:
            return self._a.__dlpack__(**kw)

        def __dlpack_device__(self) -> tuple[int, int]:
            return self._a.__dlpack_device__()

    src, dst = Tensor(np.arange(6, dtype=np.float64)), Tensor(np.zeros(6))
    p = sycl.malloc(6, uq, _kinds(uq)[0], dtype=np.float64)
    uq.memcpy(p, src, 48).wait()
    uq.memcpy(dst, p, 48).wait()
    assert dst._a.tolist() == list(range(6))
    with pytest.raises(TypeError, match="expected a USM pointer"):
        uq.memcpy(object(), p, 8)
    sycl.free(p, uq)

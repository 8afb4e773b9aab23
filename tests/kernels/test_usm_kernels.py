"""Kernels that use USM pointers: the compiled device against numpy and the host_debuggable oracle.

``any_kernel_queue`` runs each test on the default kernel device (SPIR-V on Intel's
CPU runtime, PTX on an NVIDIA GPU) and on the host_debuggable interpreter.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pysycl as sycl
from pysycl._kernels.cache import kernels as _kernel_cache


def _shared_or_device(q: sycl.queue, n: int, dtype: object) -> sycl.usm_pointer:
    kind = (sycl.usm.alloc.shared if q.get_device().has(sycl.aspect.usm_shared_allocations)
            else sycl.usm.alloc.device)
    return sycl.malloc(n, q, kind, dtype=dtype)


def _to_device(q: sycl.queue, host: np.ndarray) -> sycl.usm_pointer:
    p = sycl.malloc_device(host.size, q, dtype=host.dtype)
    q.memcpy(p, host, host.nbytes).wait()
    return p


def _read(q: sycl.queue, p: sycl.usm_pointer, n: int | None = None) -> np.ndarray:
    out = np.empty(p.count if n is None else n, p.dtype)
    q.copy(p, out, out.size).wait()
    return out


def test_vector_add_through_pointers(any_kernel_queue: sycl.queue) -> None:
    q = any_kernel_queue
    n = 1000
    a_h, b_h = np.arange(n, dtype=np.float32), np.full(n, 0.5, np.float32)
    a, b = _to_device(q, a_h), _to_device(q, b_h)
    c = sycl.malloc_device(n, q, dtype=np.float32)

    def add(i: sycl.item) -> None:
        c[i] = a[i] + b[i]

    q.parallel_for(sycl.range(n), add).wait()
    np.testing.assert_array_equal(_read(q, c), a_h + b_h)
    for p in (a, b, c):
        sycl.free(p, q)


@settings(max_examples=12, deadline=None)
@given(n=st.integers(1, 700), k=st.integers(0, 40),
       dt=st.sampled_from([np.int32, np.uint8, np.int64, np.float32, np.float64]))
def test_offset_pointers_and_dtypes_match_the_oracle(n: int, k: int, dt: type) -> None:
    """``p + k`` captured by a kernel: the compiled device and the interpreter agree."""
    k = min(k, n)
    results = []
    for q in (sycl.queue(), sycl.queue(sycl.aspect_selector(sycl.aspect.host_debuggable))):
        src = (np.arange(n) % 97).astype(dt)
        p = _to_device(q, src)
        win = p + k
        m = n - k

        def twice(i: sycl.item) -> None:
            win[i] = win[i] * 2 + 1

        if m:
            q.parallel_for(sycl.range(m), twice).wait()
        results.append(_read(q, p))
        sycl.free(p, q)
    want = (np.arange(n) % 97).astype(dt)
    want[k:] = want[k:] * 2 + 1
    np.testing.assert_array_equal(results[0], want)
    np.testing.assert_array_equal(results[1], want)


def test_another_pointer_reuses_the_compiled_kernel(kq: sycl.queue) -> None:
    n = 64
    ptrs = [_to_device(kq, np.full(n, v, np.int32)) for v in (1, 2, 3)]

    def make(p: sycl.usm_pointer):  # the same code object for every pointer
        def inc(i: sycl.item) -> None:
            p[i] += 10
        return inc

    kq.parallel_for(sycl.range(n), make(ptrs[0])).wait()
    before = _kernel_cache.stats["compiles"]
    for p in ptrs[1:]:
        kq.parallel_for(sycl.range(n), make(p)).wait()
    assert _kernel_cache.stats["compiles"] == before
    assert [int(_read(kq, p)[5]) for p in ptrs] == [11, 12, 13]
    for p in ptrs:
        sycl.free(p, kq)


def test_atomic_ref_on_a_pointer_is_a_histogram(any_kernel_queue: sycl.queue) -> None:
    q = any_kernel_queue
    data_h = (np.arange(500) * 7 % 13).astype(np.int32)
    data = _to_device(q, data_h)
    hist = sycl.malloc_device(13, q, dtype=np.int32)
    q.memset(hist, 0, hist.nbytes).wait()

    def count(i: sycl.item) -> None:
        sycl.atomic_ref(hist, data[i], sycl.memory_order.relaxed,
                        sycl.memory_scope.device).fetch_add(1)

    q.parallel_for(sycl.range(data_h.size), count).wait()
    np.testing.assert_array_equal(_read(q, hist), np.bincount(data_h, minlength=13))
    sycl.free(data, q)
    sycl.free(hist, q)


def test_command_groups_mix_buffers_pointers_and_events(any_kernel_queue: sycl.queue) -> None:
    q = any_kernel_queue
    n = 256
    out = np.zeros(n, np.float32)
    scale = _shared_or_device(q, n, np.float32)
    e1 = q.fill(scale, np.float32(3), n)
    with sycl.buffer(out) as buf:
        def cg(h: sycl.handler) -> None:
            h.depends_on(e1)
            o = buf.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.range(n), lambda i: o.__setitem__(i, scale[i] * i))

        q.submit(cg)
    np.testing.assert_array_equal(out, 3 * np.arange(n, dtype=np.float32))

    dst = np.zeros(n, np.float32)

    def copy_back(h: sycl.handler) -> None:
        h.memcpy(dst, scale, n * 4)

    q.submit(copy_back).wait()
    assert (dst == 3).all()
    sycl.free(scale, q)


def test_nd_range_with_local_memory_and_a_pointer(any_kernel_queue: sycl.queue) -> None:
    q = any_kernel_queue
    n, wg = 256, 32
    src_h = np.arange(n, dtype=np.int32)
    src = _to_device(q, src_h)
    sums = sycl.malloc_device(n // wg, q, dtype=np.int32)

    def cg(h: sycl.handler) -> None:
        tile = sycl.local_accessor(np.int32, sycl.range(wg), h)

        def k(it: sycl.nd_item) -> None:
            lid = it.get_local_id(0)
            tile[lid] = src[it.get_global_id(0)]
            sycl.group_barrier(it.get_group())
            if lid == 0:
                s = 0
                for j in range(wg):
                    s += tile[j]
                sums[it.get_group(0)] = s

        h.parallel_for(sycl.nd_range(sycl.range(n), sycl.range(wg)), k)

    q.submit(cg).wait()
    np.testing.assert_array_equal(_read(q, sums), src_h.reshape(-1, wg).sum(axis=1))
    sycl.free(src, q)
    sycl.free(sums, q)


def test_single_task_and_event_forms(any_kernel_queue: sycl.queue) -> None:
    q = any_kernel_queue
    p = sycl.malloc_device(4, q, dtype=np.int64)
    e = q.memset(p, 0, 32)

    def put() -> None:
        p[3] = 42

    e2 = q.single_task([e], put)
    e3 = q.parallel_for(sycl.range(3), e2, lambda i: p.__setitem__(i, i + 1))
    e4 = q.parallel_for(sycl.range(1), lambda i: p.__setitem__(0, p[0] * 10), depends_on=[e3])
    e4.wait()
    assert list(_read(q, p)) == [10, 2, 3, 42]
    sycl.free(p, q)


def test_freed_and_foreign_pointers_are_refused_before_enqueue(any_kernel_queue: sycl.queue) -> None:
    q = any_kernel_queue
    keep = _to_device(q, np.arange(8, dtype=np.int32))
    p = sycl.malloc_device(8, q, dtype=np.int32)
    sycl.free(p, q)

    def k(i: sycl.item) -> None:
        keep[i] = p[i]

    with pytest.raises(sycl.exception) as e:
        q.parallel_for(sycl.range(8), k)
    assert e.value.code() == sycl.errc.invalid
    assert "freed" in str(e.value) and "test_usm_kernels.py:" in str(e.value) and "'p'" in str(e.value)
    other = sycl.queue(sycl.context(q.get_device()), q.get_device())
    with pytest.raises(sycl.exception) as e:
        other.parallel_for(sycl.range(8), lambda i: keep.__setitem__(i, 0))
    assert e.value.code() == sycl.errc.invalid and "not in the queue's context" in str(e.value)
    assert list(_read(q, keep)) == list(range(8))  # nothing ran
    sycl.free(keep, q)


def test_host_arrays_are_system_usm(any_kernel_queue: sycl.queue) -> None:
    q = any_kernel_queue
    if not q.get_device().has(sycl.aspect.usm_system_allocations):
        pytest.skip("the device cannot use host memory directly")
    src = np.arange(100, dtype=np.float64)
    dst = np.zeros(100)
    q.parallel_for(sycl.range(100), lambda i: dst.__setitem__(i, src[i] ** 2)).wait()
    np.testing.assert_array_equal(dst, src ** 2)
    ro = np.arange(4.0)
    ro.setflags(write=False)

    def writes_ro(i: sycl.item) -> None:
        ro[i] = 1.0

    with pytest.raises(sycl.exception) as e:
        q.parallel_for(sycl.range(4), writes_ro).wait()
    assert "test_usm_kernels.py:" in str(e.value) and (ro == np.arange(4.0)).all()


def test_usm_array_interface_objects_are_kernel_arguments(kq: sycl.queue) -> None:
    """dpnp-like arrays in compiled kernels (the host device runs the Python object itself)."""
    q = kq
    p = _to_device(q, np.zeros(10, np.int32))

    class DpnpLike:
        def __init__(self, ptr: sycl.usm_pointer) -> None:
            self.__sycl_usm_array_interface__ = ptr.__sycl_usm_array_interface__

    view = DpnpLike(p + 5)
    q.parallel_for(sycl.range(5), lambda i: view.__setitem__(i, i + 1)).wait()  # type: ignore[attr-defined]
    assert list(_read(q, p)) == [0] * 5 + [1, 2, 3, 4, 5]
    sycl.free(p, q)


def _launch_and_drop(q: sycl.queue, n: int) -> sycl.usm_pointer:
    """Submit a kernel reading a temporary allocation nothing else references."""
    tmp = _to_device(q, np.ones(n, np.float32))
    ptr_out = sycl.malloc_device(n, q, dtype=np.float32)

    def k(i: sycl.item) -> None:
        ptr_out[i] = tmp[i] * 2

    q.parallel_for(sycl.range(n), k)
    return ptr_out  # tmp goes with this frame while the kernel may still run


def test_pointers_live_until_their_kernel_completes(kq: sycl.queue) -> None:
    n = 1 << 20
    out = np.zeros(n, np.float32)
    for _ in range(3):
        ptr_out = _launch_and_drop(kq, n)
        kq.memcpy(out, ptr_out, out.nbytes).wait()
        assert (out == 2).all()
        sycl.free(ptr_out, kq)
    one = sycl.malloc_device(1, kq, dtype=np.float32)
    for _ in range(1000):  # what commands hold is released as they complete
        kq.parallel_for(sycl.range(1), lambda i: one.__setitem__(0, 1.0))
    e = kq.parallel_for(sycl.range(1), lambda i: one.__setitem__(0, 1.0))
    e.wait()  # the last command: everything before it is done too
    assert len(kq.executor.inflight) == 0
    sycl.free(one, kq)


def test_a_failing_host_kernel_leaves_usm_memory_as_it_was(hq: sycl.queue) -> None:
    p = sycl.malloc_shared(8, hq, dtype=np.int32)
    np.asarray(p)[:] = 5

    def k(i: sycl.item) -> None:
        p[i] = -1
        if i == 6:
            raise ValueError("boom")

    with pytest.raises(sycl.exception) as e:
        hq.parallel_for(sycl.range(8), k)
    assert e.value.code() == sycl.errc.kernel and "boom" in str(e.value)
    assert list(np.asarray(p)) == [5] * 8
    sycl.free(p, hq)


def test_host_device_kernels_see_device_allocations_host_code_does_not(hq: sycl.queue) -> None:
    p = sycl.malloc_device(4, hq, dtype=np.int32)
    hq.parallel_for(sycl.range(4), lambda i: p.__setitem__(i, i * i)).wait()
    with pytest.raises(sycl.exception) as e:
        p[0]
    assert e.value.code() == sycl.errc.invalid
    assert list(_read(hq, p)) == [0, 1, 4, 9]
    sycl.free(p, hq)

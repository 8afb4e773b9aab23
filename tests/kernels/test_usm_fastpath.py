"""Remembered launches of ``q.parallel_for(range, kernel)`` (pysycl/_backends/opencl/launch.py,
the refresh of pysycl/_kernels/argplan.py): a repeated launch skips the capture walk and the
cache lookups, and is still exactly the whole way's launch -- whatever the closure holds now,
the range, the cache, the bounds-check mode."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pysycl as sycl
from pysycl._backends.opencl.launch import Launch


def _remembered(q: sycl.queue, code: object) -> bool:
    """Whether the queue remembers a launch of ``code`` with a refresh of its arguments."""
    got = q.executor.launches.get(code)
    return isinstance(got, Launch) and got.refresh is not None


def _read(q: sycl.queue, p: sycl.usm_pointer) -> np.ndarray:
    out = np.empty(p.count, p.dtype)
    q.memcpy(out, p, p.nbytes).wait()
    return out


def test_a_repeated_launch_uses_the_plan_and_sees_rebound_cells(kq: sycl.queue) -> None:
    n = 16
    a = sycl.malloc_device(n, kq, dtype=np.float32)
    b = sycl.malloc_device(n, kq, dtype=np.float32)
    kq.memset(a, 0, a.nbytes)
    kq.memset(b, 0, b.nbytes).wait()
    target, scale = a, np.float32(1)

    def k(i: sycl.item) -> None:
        target[i] += scale * i

    rng = sycl.range(n)
    kq.parallel_for(rng, k).wait()
    assert _remembered(kq, k.__code__)
    kq.parallel_for(sycl.range(n), k).wait()          # a new range object, same values: plan
    scale = np.float32(10)                            # same type, new value: the plan, new value
    kq.parallel_for(rng, k).wait()
    target = b                                        # another pointer of the same type
    kq.parallel_for(rng, k).wait()
    scale = 2.5                                       # another type: the whole way, a new kernel
    kq.parallel_for(rng, k).wait()
    ramp = np.arange(n, dtype=np.float32)
    np.testing.assert_allclose(_read(kq, a), 12 * ramp)
    np.testing.assert_allclose(_read(kq, b), 12.5 * ramp)
    kq.parallel_for(sycl.range(n // 2), k).wait()     # another range: the whole way
    np.testing.assert_allclose(_read(kq, b)[: n // 2], 15 * ramp[: n // 2])
    np.testing.assert_allclose(_read(kq, b)[n // 2:], 12.5 * ramp[n // 2:])
    sycl.free(a, kq)
    sycl.free(b, kq)


def test_a_freed_pointer_is_refused_on_the_plan_too(kq: sycl.queue) -> None:
    p = sycl.malloc_device(4, kq, dtype=np.int32)
    keep = sycl.malloc_device(4, kq, dtype=np.int32)
    kq.memset(keep, 0, 16).wait()

    def k(i: sycl.item) -> None:
        keep[i] = p[i] + 1

    for _ in range(3):
        kq.parallel_for(sycl.range(4), k).wait()
    sycl.free(p, kq)
    with pytest.raises(sycl.exception) as e:
        kq.parallel_for(sycl.range(4), k)
    assert e.value.code() == sycl.errc.invalid and "freed" in str(e.value)
    assert "test_usm_fastpath.py:" in str(e.value)
    sycl.free(keep, kq)


def test_cleared_cache_and_bounds_mode_take_the_whole_way(kq: sycl.queue) -> None:
    p = sycl.malloc_device(8, kq, dtype=np.int64)
    kq.memset(p, 0, 64).wait()

    def k(i: sycl.item) -> None:
        p[i] += 1

    kq.parallel_for(sycl.range(8), k).wait()
    kq.parallel_for(sycl.range(8), k).wait()
    before = sycl.ext.kernel_cache_stats()["compiles"] + sycl.ext.kernel_cache_stats()["disk_hits"]
    sycl.ext.clear_kernel_memory_cache()
    kq.parallel_for(sycl.range(8), k).wait()  # the plan is void: compiled (or read) again
    after = sycl.ext.kernel_cache_stats()["compiles"] + sycl.ext.kernel_cache_stats()["disk_hits"]
    assert after == before + 1
    sycl.ext.set_bounds_check(True)
    try:
        kq.parallel_for(sycl.range(8), k).wait()  # bounds-checked: another kernel, no plan
    finally:
        sycl.ext.set_bounds_check(None)
    assert list(_read(kq, p)) == [4] * 8
    sycl.free(p, kq)


def test_an_nd_range_offset_is_refused_after_a_remembered_launch(kq: sycl.queue) -> None:
    """The remembered launch of an nd_range kernel does not stand for the same ranges with an
    offset: that launch takes the whole way, which refuses offsets, and nothing runs."""
    p = sycl.malloc_device(16, kq, dtype=np.int64)
    kq.memset(p, 0, 128).wait()

    def k(it: sycl.nd_item) -> None:
        p[it.get_global_id(0)] += 1

    for _ in range(2):  # the second is the remembered launch
        kq.parallel_for(sycl.nd_range(sycl.range(8), sycl.range(4)), k).wait()
    with pytest.raises(sycl.exception, match="nd_range offsets") as e:
        kq.parallel_for(sycl.nd_range(sycl.range(8), sycl.range(4), sycl.id(8)), k)
    assert e.value.code() == sycl.errc.feature_not_supported
    assert list(_read(kq, p)) == [2] * 8 + [0] * 8  # the offset launch ran nothing
    sycl.free(p, kq)


def test_kernels_reading_module_globals_or_helpers_have_no_plan(kq: sycl.queue) -> None:
    p = sycl.malloc_device(4, kq, dtype=np.int32)
    kq.memset(p, 0, 16).wait()

    def bump(x: int) -> int:
        return x + 1

    def k(i: sycl.item) -> None:
        p[i] = bump(p[i])

    for _ in range(3):
        kq.parallel_for(sycl.range(4), k).wait()
    assert kq.executor.launches.get(k.__code__) is False
    assert list(_read(kq, p)) == [3] * 4
    sycl.free(p, kq)


def test_scalar_cells_of_every_kind_are_read_on_each_launch(kq: sycl.queue) -> None:
    out = sycl.malloc_device(4, kq, dtype=np.float64)
    kq.memset(out, 0, out.nbytes).wait()
    n, flag, z = 1, True, 1 + 2j

    def k(i: sycl.item) -> None:
        if i[0] == 0:
            out[0] += n
        elif i[0] == 1:
            out[1] += 1 if flag else 100
        elif i[0] == 2:
            out[2] += z.real + 10 * z.imag

    kq.parallel_for(sycl.range(4), k).wait()
    assert _remembered(kq, k.__code__)
    hits = sycl.ext.kernel_cache_stats()["memory_hits"]
    n, flag, z = 2, False, 3 + 4j                     # same types: the plan, new values
    kq.parallel_for(sycl.range(4), k).wait()
    assert sycl.ext.kernel_cache_stats()["memory_hits"] == hits + 1  # a plan hit is a memory hit
    flag, z = np.bool_(True), np.complex64(5 + 6j)    # other types: the whole way
    kq.parallel_for(sycl.range(4), k).wait()
    kq.parallel_for(sycl.range(4), k).wait()          # ... and their plan
    np.testing.assert_allclose(_read(kq, out), [1 + 2 + 2 + 2, 1 + 100 + 1 + 1,
                                                21 + 43 + 65 + 65, 0])
    n = 1 << 63                                       # an int past int64: the whole way's error
    with pytest.raises(sycl.exception) as e:
        kq.parallel_for(sycl.range(4), k)
    assert e.value.code() == sycl.errc.kernel_argument and "int64" in str(e.value)
    sycl.free(out, kq)


def test_single_task_and_nd_range_launches_have_plans(kq: sycl.queue) -> None:
    p = sycl.malloc_device(8, kq, dtype=np.int32)
    kq.memset(p, 0, p.nbytes).wait()
    step = 1

    def one() -> None:
        p[0] += step

    def groups(it: sycl.nd_item) -> None:
        if it.get_local_id(0) == 0:
            p[1 + it.get_group(0)] += step

    for _ in range(3):
        kq.single_task(one).wait()
        kq.parallel_for(sycl.nd_range(sycl.range(8), sycl.range(4)), groups).wait()
    assert _remembered(kq, one.__code__)
    assert _remembered(kq, groups.__code__)
    step = 10
    kq.single_task(one).wait()
    kq.parallel_for(sycl.nd_range(sycl.range(8), sycl.range(2)), groups).wait()  # other groups
    assert list(_read(kq, p)[:5]) == [13, 13, 13, 10, 10]
    sycl.free(p, kq)


def test_in_order_queues_have_plans_of_their_own(kq: sycl.queue) -> None:
    q2 = sycl.queue(kq.get_context(), kq.get_device(), properties=[sycl.property.queue.in_order()])
    p = sycl.malloc_device(2, q2, dtype=np.int32)
    q2.memset(p, 0, p.nbytes)

    def k(i: sycl.item) -> None:
        p[i] += 1

    for _ in range(4):
        q2.parallel_for(sycl.range(2), k)             # no waits: the queue orders them
    q2.wait()
    assert _remembered(q2, k.__code__)
    assert k.__code__ not in kq.executor.launches
    assert list(_read(q2, p)) == [4, 4]
    sycl.free(p, q2)


def test_plans_hold_no_pointer(kq: sycl.queue) -> None:
    a = sycl.malloc_device(1, kq, dtype=np.int32)
    b = sycl.malloc_device(1, kq, dtype=np.int32)
    target = a

    def k(i: sycl.item) -> None:
        target[0] = 7

    kq.parallel_for(sycl.range(1), k).wait()
    kq.parallel_for(sycl.range(1), k).wait()          # from the plan
    gone = weakref.ref(a)
    target = b
    kq.parallel_for(sycl.range(1), k).wait()
    del a
    gc.collect()
    assert gone() is None                              # neither the plan nor a keep-alive held it
    assert list(_read(kq, b)) == [7]
    sycl.free(b, kq)


def test_an_empty_range_has_no_plan(kq: sycl.queue) -> None:
    p = sycl.malloc_device(1, kq, dtype=np.int32)

    def k(i: sycl.item) -> None:
        p[i] = 1

    for _ in range(3):
        kq.parallel_for(sycl.range(0), k).wait()      # the whole way: a marker, no kernel
    assert k.__code__ not in kq.executor.launches
    sycl.free(p, kq)


def test_a_plan_is_for_one_kind_of_launch(kq: sycl.queue) -> None:
    p = sycl.malloc_device(1, kq, dtype=np.int32)
    kq.memset(p, 0, p.nbytes).wait()

    def k(i: sycl.item) -> None:  # also an nd_item kernel: the same code, another kernel
        sycl.atomic_ref(p, 0, sycl.memory_order.relaxed, sycl.memory_scope.device).fetch_add(1)

    nd = sycl.nd_range(sycl.range(8), sycl.range(4))
    kq.parallel_for(nd, k).wait()
    kq.parallel_for(nd, k).wait()                     # the nd_range's plan: 8 work-items
    kq.parallel_for(sycl.range(8, 4), k).wait()       # a range of the same values: 32
    kq.parallel_for(sycl.range(8, 4), k).wait()
    assert list(_read(kq, p)) == [2 * 8 + 2 * 32]
    sycl.free(p, kq)


_G_PTR: sycl.usm_pointer | None = None
_G_SCALE = 1


def _global_kernel(i: sycl.item) -> None:
    _G_PTR[i] += _G_SCALE  # type: ignore[index]


def test_module_globals_are_checked_like_cells(kq: sycl.queue) -> None:
    """A kernel written at a script's top level reads its pointer and numbers as globals:
    its launches have a plan too, and a rebound global takes effect."""
    global _G_PTR, _G_SCALE
    a = sycl.malloc_device(8, kq, dtype=np.int64)
    b = sycl.malloc_device(8, kq, dtype=np.int64)
    kq.memset(a, 0, 64)
    kq.memset(b, 0, 64).wait()
    try:
        _G_PTR, _G_SCALE = a, 1
        for _ in range(3):
            kq.parallel_for(sycl.range(8), _global_kernel).wait()
        assert _remembered(kq, _global_kernel.__code__)
        _G_SCALE = 10                # another value: the plan, the new value
        kq.parallel_for(sycl.range(8), _global_kernel).wait()
        _G_PTR = b                   # another pointer
        kq.parallel_for(sycl.range(8), _global_kernel).wait()
        _G_SCALE = 0.5               # another type: the whole way (int64 += float64 truncates)
        kq.parallel_for(sycl.range(8), _global_kernel).wait()
        assert list(_read(kq, a)) == [13] * 8 and list(_read(kq, b)) == [10] * 8
        sycl.free(a, kq)
        with pytest.raises(sycl.exception) as e:
            _G_PTR = a
            kq.parallel_for(sycl.range(8), _global_kernel)
        assert e.value.code() == sycl.errc.invalid and "freed" in str(e.value)
    finally:
        _G_PTR, _G_SCALE = None, 1
        sycl.free(b, kq)


_CELLS = st.tuples(
    st.integers(-(1 << 40), 1 << 40),
    st.sampled_from([float, np.float32, bool]),
    st.floats(-1e3, 1e3, width=32),
    st.sampled_from(["a", "b", "a+1", "b-view"]),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_CELLS, min_size=1, max_size=6))
def test_generated_launches_match_numpy_for_any_sequence_of_cells(kq: sycl.queue, seq: list) -> None:
    """Launch after launch the closure changes (values, number types, pointers of other
    allocations, offsets, other dtypes): the plan's generated launch or the whole way,
    the result is always numpy's."""
    a = sycl.malloc_device(8, kq, dtype=np.float64)
    b = sycl.malloc_device(8, kq, dtype=np.float64)
    try:
        for n, ty, x, which in seq:
            kq.memset(a, 0, a.nbytes)
            kq.memset(b, 0, b.nbytes).wait()
            s = ty(x)
            p = {"a": a, "b": b, "a+1": a + 1, "b-view": b.view(np.int64)}[which]

            def k(i: sycl.item) -> None:
                p[i] = n + s * 2

            kq.parallel_for(sycl.range(4), k).wait()
            want = np.zeros(8, p.dtype)
            want[:4] = np.asarray(np.int64(n) + s * 2).astype(p.dtype)  # a captured int is int64
            base = {"a": a, "b": b, "a+1": a, "b-view": b}[which]
            got = _read(kq, base)
            off = 1 if which == "a+1" else 0
            got = got.view(p.dtype)[off:off + 8 - off]
            np.testing.assert_array_equal(got[:4], want[:4])
    finally:
        sycl.free(a, kq)
        sycl.free(b, kq)

"""Launch plans of ``q.parallel_for(range, kernel)`` (pysycl/_commands/fastpath.py): a repeated
launch skips the capture walk and the cache lookups, and is still exactly the whole way's
launch -- whatever the closure holds now, the range, the cache, the bounds-check mode."""

from __future__ import annotations

import numpy as np
import pytest

import pysycl as sycl
from pysycl._commands import fastpath


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
    assert isinstance(kq.executor.plans.get(k.__code__), fastpath.Plan)
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


def test_kernels_reading_module_globals_or_helpers_have_no_plan(kq: sycl.queue) -> None:
    p = sycl.malloc_device(4, kq, dtype=np.int32)
    kq.memset(p, 0, 16).wait()

    def bump(x: int) -> int:
        return x + 1

    def k(i: sycl.item) -> None:
        p[i] = bump(p[i])

    for _ in range(3):
        kq.parallel_for(sycl.range(4), k).wait()
    assert kq.executor.plans.get(k.__code__) is fastpath.NONE
    assert list(_read(kq, p)) == [3] * 4
    sycl.free(p, kq)

"""``assert`` inside a function defined in the kernel -- and so in the work-item functions of
hierarchical kernels -- is the kernel's assert: reported at the synchronization point with
the user's line and the work-item, on every device (Numba's inlining makes such an assert a
static raise, which the assert rewrite now also takes)."""

from __future__ import annotations

import numpy as np
import pytest

import pysycl as sycl


def _out(q: sycl.queue, n: int) -> sycl.usm_pointer:
    kind = "shared" if q.get_device().has(sycl.aspect.usm_shared_allocations) else "device"
    return getattr(sycl, f"malloc_{kind}")(n, q, dtype=np.int32)


def _read(q: sycl.queue, p: sycl.usm_pointer, n: int) -> np.ndarray:
    out = np.empty(n, np.int32)
    q.memcpy(out, p, out.nbytes).wait()
    return out


@pytest.mark.parametrize("limit", [100, 10])
def test_an_assert_in_a_nested_function(any_kernel_queue: sycl.queue, limit: int) -> None:
    q = any_kernel_queue
    p = _out(q, 8)
    q.memset(p, 0, 32).wait()

    def k(i):  # type: ignore[no-untyped-def]
        def check(v):  # type: ignore[no-untyped-def]
            assert v < limit, "too big"
            p[i] = v
        check(i * 2)

    if limit == 100:
        q.parallel_for(sycl.range(8), k).wait()
        assert _read(q, p, 8).tolist() == [0, 2, 4, 6, 8, 10, 12, 14]
    else:
        with pytest.raises(AssertionError, match=r"too big -- .*test_nested_assert.py:\d+, "
                                                 r"work-item \(5,\)"):
            q.parallel_for(sycl.range(8), k).wait()
    sycl.free(p, q)


def test_an_assert_in_a_hierarchical_work_item_function(any_kernel_queue: sycl.queue) -> None:
    q = any_kernel_queue
    out = np.zeros(16, np.int32)
    with pytest.raises(AssertionError, match="odd group"):
        with sycl.buffer(out) as b:
            def cg(h: sycl.handler) -> None:
                a = b.get_access(h, sycl.access_mode.write)

                def k(g):  # type: ignore[no-untyped-def]
                    def body(it):  # type: ignore[no-untyped-def]
                        assert g.get_group_id(0) % 2 == 0, "odd group"
                        a[it.get_global_id(0)] = 1
                    g.parallel_for_work_item(body)
                h.parallel_for_work_group(sycl.range(4), sycl.range(4), k)
            q.submit(cg)
            q.wait()

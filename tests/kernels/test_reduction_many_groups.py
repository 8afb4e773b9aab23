"""nd_range reductions of many work-groups (issue 27).

On PTX a reduction finishes in its kernel (the work-group that takes the last ticket folds
every partial and zeroes the ticket); elsewhere a final kernel folds them. Here up to 2^16
work-groups, the known operators and a custom combiner, several reductions, and repeated
launches that keep the old value (the ticket must be back at 0 for the next launch) --
against numpy, on every device.
"""

from __future__ import annotations

import numpy as np
import pytest

import pysycl as sycl

INIT = sycl.property.reduction.initialize_to_identity


@pytest.mark.parametrize(("n", "wg"), [(1 << 12, 256), (1 << 18, 64), (1 << 20, 16)])
def test_many_work_groups(kq: sycl.queue, n: int, wg: int) -> None:
    """Sum, maximum and a custom combiner (int64, exact), three launches each keeping the
    old value: the variables end with numpy's values (a ticket left non-zero would lose
    the next launch's result)."""
    x = (np.arange(n, dtype=np.int64) * 7919) % 1000 - 500
    p = sycl.malloc_device(n, kq, dtype=np.int64)
    out = sycl.malloc_device(3, kq, dtype=np.int64)
    try:
        kq.memcpy(p, x, x.nbytes).wait()
        kq.memcpy(out, np.array([5, -10**9, 1], np.int64), 24).wait()

        def k(it: sycl.nd_item, s: sycl.reducer, m: sycl.reducer, c: sycl.reducer) -> None:
            v = p[it.get_global_id(0)]
            s.combine(v)
            m.combine(v)
            c.combine(v & 3)

        for _ in range(3):
            kq.parallel_for(sycl.nd_range(sycl.range(n), sycl.range(wg)),
                            sycl.reduction(out, sycl.plus()),
                            sycl.reduction(out + 1, sycl.maximum()),
                            sycl.reduction(out + 2, lambda a, b: a ^ b, identity=np.int64(0)),
                            k)
        got = np.zeros(3, np.int64)
        kq.memcpy(got, out, 24).wait()
        xor = np.bitwise_xor.reduce(x & 3)
        assert got[0] == 5 + 3 * x.sum(), (got[0], 5 + 3 * x.sum())
        assert got[1] == x.max()
        assert got[2] == 1 ^ xor ^ xor ^ xor
    finally:
        sycl.free(p, kq)
        sycl.free(out, kq)


@pytest.mark.parametrize("wg", [32, 256])
def test_float_sum_of_many_groups_through_a_buffer(kq: sycl.queue, wg: int) -> None:
    """A float32 nd_range sum of 2^20 items through a buffer, initialized to the identity,
    twice: numpy's sum (to float32 rounding) each time."""
    n = 1 << 20
    x = np.random.default_rng(wg).random(n, np.float32)
    with sycl.buffer(x) as X, sycl.buffer(np.full(1, 99.0, np.float32)) as S:
        def cg(h: sycl.handler) -> None:
            a = X.get_access(h, sycl.access_mode.read)
            h.parallel_for(sycl.nd_range(sycl.range(n), sycl.range(wg)),
                           sycl.reduction(S, h, sycl.plus(), properties=[INIT()]),
                           lambda it, r: r.combine(a[it.get_global_id(0)]))

        for _ in range(2):
            kq.submit(cg)
            got = float(S.get_host_access()[0])
            want = float(x.sum(dtype=np.float64))
            assert abs(got - want) <= 1e-4 * want, (got, want)


@pytest.mark.parametrize("n", [1, 7, 64, 100, 256, 257, 1000, 4096, 12_288, 65_537, 1 << 18,
                               (1 << 18) + 2])
def test_range_sums_of_every_launch_shape(kq: sycl.queue, n: int) -> None:
    """1-D range reductions whose size a work-group divides (on CPU devices: an item a
    work-item, ``reduction_plan.exact_group``) and whose size none does (the grid-stride
    loop): sum, minimum and a count of the ids, each item once."""
    out = sycl.malloc_device(3, kq, dtype=np.int64)
    try:
        def k(i: sycl.id, s: sycl.reducer, lo: sycl.reducer, c: sycl.reducer) -> None:
            s.combine(i[0] * 3)
            lo.combine(n - i[0])
            c.combine(1)

        kq.parallel_for(sycl.range(n), sycl.reduction(out, sycl.plus(), [INIT()]),
                        sycl.reduction(out + 1, sycl.minimum(), [INIT()]),
                        sycl.reduction(out + 2, sycl.plus(), [INIT()]), k).wait()
        got = np.zeros(3, np.int64)
        kq.memcpy(got, out, 24).wait()
        assert got.tolist() == [3 * n * (n - 1) // 2, 1, n]
    finally:
        sycl.free(out, kq)


def test_exact_group() -> None:
    """The work-group that divides a range: the largest of at most ``wg`` and at least 64
    (or the range itself when it is smaller than ``wg``); None where none does."""
    from pysycl._kernels.reduction_plan import exact_group

    assert exact_group(1 << 24, 256) == 256
    assert exact_group(1000, 256) == 250
    assert exact_group(100, 256) == 100
    assert exact_group(7, 256) == 7
    assert exact_group(65_537, 256) is None  # prime
    assert exact_group(2 * 65_537, 256) is None  # no divisor in 64..256
    assert exact_group(12_288, 100) == 96
    assert exact_group(0, 256) is None

"""Single-pass reductions (issue 27): on PTX a kernel with reductions but no span reduction
finishes them itself -- each work-group leaves its partial and takes a ticket, and the
work-group that takes the last ticket folds every partial (and the variable's old value
unless ``initialize_to_identity``) into the variable, then zeroes the ticket for the next
launch (:func:`pysycl._core.abi.single_pass_reduction`). No final kernel runs. SPIR-V
devices keep the final kernel (on Intel's CPU runtime the ticket cost ~90 ns a work-group
of its 4096: 0.85x the OpenCL C reduction against 1.4x; docs/performance.md).

What could go wrong and is checked here, on every compiled device (the GPU runs take the
single pass, the others the two kernels the same tests must agree with), against numpy: the
ticket not reset between launches (a loop of launches of one plan, and a command graph
replayed), launches of many work-groups (nd_range in 1-3 dimensions: the group count is the
product of the group ranges), several reductions with one ticket each (known operators
through group collectives, a custom combiner through the local-memory tree), variables as
an accessor with an offset and as USM pointers, and the empty range (no work-group: the
final kernel sets the variable).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import pysycl as sycl
import pysycl.ext.oneapi.experimental as syclex
from pysycl._kernels.cache import target_of
from pysycl._kernels.reduction_plan import ReductionPlan
from tests.kernels.test_reduction_relaunch import _read, _usm

INIT = sycl.property.reduction.initialize_to_identity


def _plans(q: sycl.queue) -> list[ReductionPlan]:
    return [p for p in q.executor.launches.values() if isinstance(p, ReductionPlan)]


def test_the_last_work_group_finishes_and_no_final_kernel_is_made(kq: sycl.queue) -> None:
    """A sum over many work-groups: on PTX the plan has a ticket and no final kernel (else
    a final kernel and no ticket); 30 launches in a row (the ticket back at 0 after each)
    equal numpy, with and without the property."""
    rng = np.random.default_rng(5)
    n = 1 << 16
    x = rng.integers(-1000, 1000, n).astype(np.int64)
    p, out = _usm(kq, x), sycl.malloc_device(1, kq, dtype=np.int64)
    kq.memcpy(out, np.array([0], np.int64), 8).wait()
    scale = np.int64(1)

    def k(i: sycl.id, r: sycl.reducer) -> None:
        r.combine(p[i] * scale)

    total = 0
    for step in range(30):
        scale = np.int64(step - 7)
        init = step % 4 == 0
        kq.submit(lambda h: h.parallel_for(
            sycl.range(n), sycl.reduction(out, sycl.plus(), [INIT()] if init else []), k))
        kq.wait()
        total = (0 if init else total) + int(x.sum()) * (step - 7)
        assert _read(kq, out)[0] == total, step
    plans = _plans(kq)
    ptx = target_of(kq.get_device())[0] == "ptx"
    assert plans and all((pl.single is not None) == ptx and (pl.finals == ()) == ptx
                         for pl in plans)
    assert max(pl.groups for pl in plans) > 1  # several work-groups raced for the ticket
    sycl.free(p, kq)
    sycl.free(out, kq)


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_nd_range_of_many_groups(kq: sycl.queue, dims: int) -> None:
    """The last of all the work-groups of a 1-3-D nd_range folds: a maximum and a sum of
    the linear ids plus a value that changes between 5 launches in a row."""
    glob = {1: (4096,), 2: (64, 64), 3: (16, 16, 16)}[dims]
    loc = {1: (64,), 2: (8, 8), 3: (4, 4, 4)}[dims]
    total = int(np.prod(glob))
    s, m = sycl.malloc_device(1, kq, dtype=np.int64), sycl.malloc_device(1, kq, dtype=np.int32)
    off = np.int64(0)

    def k(it: sycl.nd_item, rs: sycl.reducer, rm: sycl.reducer) -> None:
        g = it.get_global_linear_id()
        rs.combine(g + off)
        rm.combine(g % 1000 + off)

    for step in range(5):
        off = np.int64(step * 3)
        kq.parallel_for(sycl.nd_range(sycl.range(*glob), sycl.range(*loc)),
                        sycl.reduction(s, sycl.plus(), [INIT()]),
                        sycl.reduction(m, sycl.maximum(), [INIT()]), k).wait()
        assert _read(kq, s)[0] == total * (total - 1) // 2 + total * step * 3
        assert _read(kq, m)[0] == 999 + step * 3
    sycl.free(s, kq)
    sycl.free(m, kq)


def test_several_reductions_an_accessor_with_an_offset_and_a_custom_combiner(
        kq: sycl.queue) -> None:
    """A buffer variable at element 3 of its buffer (through a sub-buffer), a USM minimum
    and a custom combiner (the tree fold) in one kernel: each variable gets its own result,
    the buffer's other elements are untouched."""
    rng = np.random.default_rng(11)
    n = 50_000
    x = rng.standard_normal(n).astype(np.float32)
    p = _usm(kq, x)
    mn = sycl.malloc_device(1, kq, dtype=np.float32)
    host = np.arange(8, dtype=np.float32)
    whole = sycl.buffer(host)
    sub = sycl.buffer(whole, sycl.id(3), sycl.range(1))
    cnt = sycl.buffer(np.array([5], np.int32))

    def count_positive(a: Any, b: Any) -> Any:
        return a + b

    def k(i: sycl.id, rs: sycl.reducer, rm: sycl.reducer, rc: sycl.reducer) -> None:
        v = p[i]
        rs.combine(v)
        rm.combine(v)
        rc.combine(1 if v > 0 else 0)

    for _ in range(3):
        def cg(h: sycl.handler) -> None:
            h.parallel_for(sycl.range(n), sycl.reduction(sub, h, sycl.plus()),
                           sycl.reduction(mn, sycl.minimum(), [INIT()]),
                           sycl.reduction(cnt, h, np.int32(0), count_positive), k)
        kq.submit(cg).wait()
    got = whole.get_host_access()
    want = np.arange(8, dtype=np.float32)
    np.testing.assert_array_equal(np.delete(np.asarray(got), 3), np.delete(want, 3))
    np.testing.assert_allclose(got[3], 3 + 3 * x.astype(np.float64).sum(), rtol=1e-4)
    assert _read(kq, mn)[0] == x.min()
    assert cnt.get_host_access()[0] == 5 + 3 * int((x > 0).sum())
    sycl.free(p, kq)
    sycl.free(mn, kq)


def test_an_empty_range_still_sets_the_variable(kq: sycl.queue) -> None:
    """No work-group runs: initialize_to_identity still writes the identity, without it the
    variable keeps its value."""
    out = _usm(kq, np.array([42], np.int32))
    x = sycl.malloc_device(1, kq, dtype=np.int32)

    def k(i: sycl.id, r: sycl.reducer) -> None:
        r.combine(x[i])

    kq.parallel_for(sycl.range(0), sycl.reduction(out, sycl.plus()), k).wait()
    assert _read(kq, out)[0] == 42
    kq.parallel_for(sycl.range(0), sycl.reduction(out, sycl.plus(), [INIT()]), k).wait()
    assert _read(kq, out)[0] == 0
    sycl.free(out, kq)
    sycl.free(x, kq)


def test_a_replayed_graph_resets_the_ticket(kq: sycl.queue) -> None:
    """A recorded reduction replayed 10 times accumulates (no initialize_to_identity): each
    replay's last work-group found the ticket at 0."""
    x = np.arange(1, 10_001, dtype=np.int64)
    p, out = _usm(kq, x), _usm(kq, np.array([0], np.int64))
    g = syclex.command_graph(kq.get_context(), kq.get_device())
    g.begin_recording(kq)
    kq.submit(lambda h: h.parallel_for(sycl.range(x.size), sycl.reduction(out, sycl.plus()),
                                       lambda i, r: r.combine(p[i])))
    g.end_recording()
    ex = g.finalize()
    for _ in range(10):
        kq.ext_oneapi_graph(ex)
    kq.wait()
    assert _read(kq, out)[0] == 10 * int(x.sum())
    sycl.free(p, kq)
    sycl.free(out, kq)

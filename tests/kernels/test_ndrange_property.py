"""Property-based tests of the index space: device queries vs the pure-Python model.

For random 1/2/3-D launches, a kernel writes every ``nd_item``/``group`` (or
``item``) query of every work-item into a buffer; the expected table comes
from the host classes ``sycl.nd_item``/``sycl.item`` (the spec's model:
row-major linearization, dimension 0 slowest), never from the device.
"""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pysycl as sycl
from pysycl.testing import strategies as sst

PER_DIM = 10   # per-dimension columns
SCALARS = 6    # linear ids and leader
SETTINGS = settings(max_examples=12, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def _launches(q: sycl.queue, ndim: int) -> st.SearchStrategy[sycl.nd_range]:
    # Work-groups of at most 256: a kernel's own limit (registers) is below the device's
    # 1024 on NVIDIA GPUs, and pysycl refuses larger groups there (errc.nd_range). The
    # host_debuggable device interprets kernels: smaller launches there.
    host = q.get_device().has(sycl.aspect.host_debuggable)
    return sst.nd_ranges(q.get_device(), dims=ndim, max_global=512 if host else 4096,
                         max_work_group_size=256)


def _model_row(gid: tuple[int, ...], nd: sycl.nd_range) -> list[int]:
    it = sycl.nd_item(gid, nd)
    g = it.get_group()
    row = []
    for d in range(len(gid)):
        row += [it.get_global_id(d), it.get_local_id(d), it.get_group(d), it.get_group_range(d),
                it.get_global_range(d), it.get_local_range(d), g.get_group_id(d),
                g.get_local_id(d), g.get_local_range(d), g.get_group_range(d)]
    row += [it.get_global_linear_id(), it.get_local_linear_id(), it.get_group_linear_id(),
            g.get_group_linear_id(), g.get_local_linear_id(), int(g.leader())]
    return row


def _run_nd(q: sycl.queue, glob: tuple[int, ...], loc: tuple[int, ...]) -> np.ndarray:
    nd_ = len(glob)
    size = int(np.prod(glob))
    out = np.full((size, PER_DIM * nd_ + SCALARS), -1, dtype=np.int64)
    with sycl.buffer(out) as OUT:
        def cg(h: sycl.handler) -> None:
            o = OUT.get_access(h, sycl.access_mode.write)
            ndims = nd_

            def k(it):
                row = it.get_global_linear_id()
                g = it.get_group()
                for d in range(ndims):   # d is a runtime value: exercises the select chains
                    c = d * 10
                    o[row, c] = it.get_global_id(d)
                    o[row, c + 1] = it.get_local_id(d)
                    o[row, c + 2] = it.get_group(d)
                    o[row, c + 3] = it.get_group_range(d)
                    o[row, c + 4] = it.get_global_range(d)
                    o[row, c + 5] = it.get_local_range(d)
                    o[row, c + 6] = g.get_group_id(d)
                    o[row, c + 7] = g.get_local_id(d)
                    o[row, c + 8] = g.get_local_range(d)
                    o[row, c + 9] = g.get_group_range(d)
                b = ndims * 10
                o[row, b] = row
                o[row, b + 1] = it.get_local_linear_id()
                o[row, b + 2] = it.get_group_linear_id()
                o[row, b + 3] = g.get_group_linear_id()
                o[row, b + 4] = g.get_local_linear_id()
                o[row, b + 5] = g.leader()

            h.parallel_for(sycl.nd_range(sycl.range(*glob), sycl.range(*loc)), k)

        q.submit(cg)
    return out


def _expected_nd(glob: tuple[int, ...], loc: tuple[int, ...]) -> np.ndarray:
    nd = sycl.nd_range(sycl.range(*glob), sycl.range(*loc))
    rows = [_model_row(gid, nd) for gid in itertools.product(*(range(n) for n in glob))]
    return np.array(rows, dtype=np.int64)


def _check_nd(q: sycl.queue, nd: sycl.nd_range) -> None:
    glob, loc = tuple(nd.get_global_range()), tuple(nd.get_local_range())
    np.testing.assert_array_equal(_run_nd(q, glob, loc), _expected_nd(glob, loc))


@SETTINGS
@given(data=st.data())
def test_nd_item_queries_1d(any_kernel_queue: sycl.queue, data: st.DataObject) -> None:
    _check_nd(any_kernel_queue, data.draw(_launches(any_kernel_queue, 1)))


@SETTINGS
@given(data=st.data())
def test_nd_item_queries_2d(any_kernel_queue: sycl.queue, data: st.DataObject) -> None:
    _check_nd(any_kernel_queue, data.draw(_launches(any_kernel_queue, 2)))


@SETTINGS
@given(data=st.data())
def test_nd_item_queries_3d(any_kernel_queue: sycl.queue, data: st.DataObject) -> None:
    _check_nd(any_kernel_queue, data.draw(_launches(any_kernel_queue, 3)))


def test_nd_item_whole_queries(any_kernel_queue: sycl.queue) -> None:
    """The no-argument forms: id tuples, ranges, the nd_range, range.size()."""
    kq = any_kernel_queue
    glob, loc = (4, 6), (2, 3)
    out = np.zeros((24, 12), dtype=np.int64)
    with sycl.buffer(out) as OUT:
        def cg(h: sycl.handler) -> None:
            o = OUT.get_access(h, sycl.access_mode.write)

            def k(it):
                r = it.get_global_linear_id()
                gi = it.get_global_id()
                li = it.get_local_id()
                o[r, 0] = gi[0]
                o[r, 1] = gi[1]
                o[r, 2] = li[0]
                o[r, 3] = li[1]
                o[r, 4] = it.get_global_range().size()
                o[r, 5] = it.get_local_range()[1]
                o[r, 6] = it.get_group_range()[0]
                nd = it.get_nd_range()
                o[r, 7] = nd.get_global_range()[0]
                o[r, 8] = nd.get_local_range()[1]
                o[r, 9] = nd.get_group_range()[1]
                o[r, 10] = it.get_group().get_local_linear_range()
                o[r, 11] = it.get_group().get_group_linear_range()

            h.parallel_for(sycl.nd_range(sycl.range(*glob), sycl.range(*loc)), k)

        kq.submit(cg)
    nd = sycl.nd_range(sycl.range(*glob), sycl.range(*loc))
    for gid in itertools.product(range(4), range(6)):
        it = sycl.nd_item(gid, nd)
        want = [*it.get_global_id(), *it.get_local_id(), it.get_global_range().size(),
                it.get_local_range(1), it.get_group_range(0), nd.get_global_range()[0],
                nd.get_local_range()[1], nd.get_group_range()[1],
                it.get_group().get_local_linear_range(), it.get_group().get_group_linear_range()]
        assert list(out[it.get_global_linear_id()]) == want


# ------------------------------------------------------------------ range / item
@SETTINGS
@given(sst.ranges(max_size=729))
def test_item_queries(any_kernel_queue: sycl.queue, rng: sycl.range) -> None:
    kq = any_kernel_queue
    shape = tuple(rng)
    n = len(shape)
    size = int(np.prod(shape))
    out = np.full((size, 2 * n + 1), -1, dtype=np.int64)
    with sycl.buffer(out) as OUT:
        def cg(h: sycl.handler) -> None:
            o = OUT.get_access(h, sycl.access_mode.write)
            ndims = n

            def k(it):
                row = it.get_linear_id()
                for d in range(ndims):
                    o[row, 2 * d] = it.get_id(d)
                    o[row, 2 * d + 1] = it.get_range(d)
                o[row, 2 * ndims] = row

            h.parallel_for(sycl.range(*shape), k)

        kq.submit(cg)
    r = sycl.range(*shape)
    want = []
    for idx in itertools.product(*(range(s) for s in shape)):
        it = sycl.item(sycl.id(*idx), r)
        row = []
        for d in range(n):
            row += [it.get_id(d), it.get_range(d)]
        want.append([*row, it.get_linear_id()])
    np.testing.assert_array_equal(out, np.array(want, dtype=np.int64))

"""ids and ranges built in kernels, ``dimensions``, ``group[d]``, ``acc[i][j]`` and
multi-dimensional private arrays: the compiled device against the host_debuggable oracle."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pysycl as sycl
from pysycl.testing import strategies as sst

HOST = sycl.aspect_selector(sycl.aspect.host_debuggable)


def _run(q: sycl.queue, shape: tuple[int, int], make, nd: tuple[int, int] | None = None
         ) -> np.ndarray:
    out = np.zeros(shape, np.int64)
    with sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            o = O.get_access(h, sycl.access_mode.read_write)
            if nd is None:
                h.parallel_for(sycl.range(*shape), make(o))
            else:
                h.parallel_for(sycl.nd_range(sycl.range(*shape), sycl.range(*nd)), make(o))
        q.submit(cg)
    return out


def _both(shape: tuple[int, int], make, nd: tuple[int, int] | None = None) -> np.ndarray:
    dev, host = _run(sycl.queue(), shape, make, nd), _run(sycl.queue(HOST), shape, make, nd)
    np.testing.assert_array_equal(dev, host)
    return dev


@settings(max_examples=10, deadline=None)
@given(shape=sst.ranges(dims=2, max_size=81), k=st.integers(1, 5))
def test_ids_and_ranges_built_in_the_kernel(shape: sycl.range, k: int) -> None:
    rows, cols = shape
    def make(o):  # type: ignore[no-untyped-def]
        def kern(it):  # type: ignore[no-untyped-def]
            i = sycl.id(it[0], it[1])
            r = sycl.range(rows, cols)
            j = (i * k + 1) // 2 - sycl.id(1, 0) + (i % 2)
            o[i] = j[0] * 1000 + j.get(1) + r.size() * 1000000 + (i == sycl.id(it.get_id())) \
                + 10 * (r != sycl.range(1, 1)) + 100 * (sycl.id(2, 3) / 2)[1]
        return kern

    out = _both((rows, cols), make)
    i0, i1 = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    j0 = (i0 * k + 1) // 2 - 1 + i0 % 2
    j1 = (i1 * k + 1) // 2 + i1 % 2
    expect = j0 * 1000 + j1 + rows * cols * 1000000 + 1 + 10 * ((rows, cols) != (1, 1)) + 100
    np.testing.assert_array_equal(out, expect)


def test_dimensions_group_index_and_chained_subscripts() -> None:
    def make(o):  # type: ignore[no-untyped-def]
        def kern(it):  # type: ignore[no-untyped-def]
            g = it.get_group()
            i, j = it.get_global_id(0), it.get_global_id(1)
            o[i][j] = g[0] * 10 + g[1] + 100 * g.dimensions + 1000 * it.dimensions
            o[i][j] += o[i][j] * 0
        return kern

    out = _both((4, 6), make, nd=(2, 3))
    i0, i1 = np.meshgrid(np.arange(4), np.arange(6), indexing="ij")
    np.testing.assert_array_equal(out, (i0 // 2) * 10 + i1 // 3 + 2200)


def test_item_dimensions_and_private_arrays_of_two_dimensions() -> None:
    def make(o):  # type: ignore[no-untyped-def]
        def kern(it):  # type: ignore[no-untyped-def]
            t = sycl.private_array(np.int64, (3, 4))
            for a in range(3):
                for b in range(4):
                    t[a, b] = a * 4 + b + it[0]
            s = 0
            for a in range(3):
                s += t[a, it[1] % 4]
            o[it] = s * 10 + it.dimensions + len(t) * 100
        return kern

    out = _both((5, 7), make)
    i0, i1 = np.meshgrid(np.arange(5), np.arange(7), indexing="ij")
    s = sum(a * 4 + i1 % 4 + i0 for a in range(3))
    np.testing.assert_array_equal(out, s * 10 + 2 + 300)


def test_id_queries_are_ids_with_elementwise_arithmetic() -> None:
    # it.get_id() and nd_item/group id queries were tuples in compiled kernels: `+` of two
    # concatenated them (a silently different result from the host_debuggable device).
    def make(o):  # type: ignore[no-untyped-def]
        def kern(it):  # type: ignore[no-untyped-def]
            g = it.get_group()
            first = it.get_global_id() - it.get_local_id()
            twice = it.get_global_id() + it.get_global_id()
            a, b = g.get_local_id()
            s = 0
            for c in it.get_local_range():
                s = s * 10 + c
            o[it.get_global_id()] = (twice[1] * 1000 + first[0] * 100 + (g.get_group_id() * 2)[1]
                                     * 10 + a + b + 10000 * len(twice)
                                     + 100000 * (it.get_local_id() == sycl.id(1, 2)) + 1000000 * s)
        return kern

    out = _both((4, 6), make, nd=(2, 3))
    i0, i1 = np.meshgrid(np.arange(4), np.arange(6), indexing="ij")
    expect = (2 * i1 * 1000 + (i0 // 2 * 2) * 100 + (i1 // 3) * 2 * 10 + i0 % 2 + i1 % 3 + 20000
              + 100000 * ((i0 % 2 == 1) & (i1 % 3 == 2)) + 23000000)
    np.testing.assert_array_equal(out, expect)


def test_unpacking_an_id_into_the_wrong_count_is_a_compile_error(kq: sycl.queue) -> None:
    def make(o):  # type: ignore[no-untyped-def]
        def kern(it):  # type: ignore[no-untyped-def]
            i, j, k = it.get_id()
            o[i, j] = k
        return kern

    with pytest.raises(sycl.kernel_compile_error, match=r"cannot unpack a sycl.id<2> into 3"):
        _run(kq, (2, 3), make)
    with pytest.raises(sycl.exception, match="not enough values to unpack"):
        _run(sycl.queue(HOST), (2, 3), make)


@settings(max_examples=8, deadline=None)
@given(n=st.integers(1, 40), k=st.integers(-3, 45))
def test_a_1d_id_converts_to_an_integer(n: int, k: int) -> None:
    """C++'s ``operator size_t()`` of ``id<1>``: ``int(d)``, ``float(d)``, ``d == k``,
    ``k != d``, ``d < k``, ``d >= k`` and ``o[...] = d`` use ``d[0]`` on both devices."""
    def make(o):  # type: ignore[no-untyped-def]
        def kern(it):  # type: ignore[no-untyped-def]
            d = sycl.id(it[0]) * 2
            o[it[0], 0] = d
            o[it[0], 1] = int(d) + 100 * (d == k) + 1000 * (k != d)
            o[it[0], 2] = (d < k) + 10 * (d >= k) + 100 * (d <= 7) + 1000 * (d > 2.5)
            o[it[0], 3] = float(d) * 1.5
        return kern

    out = _both((n, 4), make)
    d = np.arange(n) * 2
    np.testing.assert_array_equal(out[:, 0], d)
    np.testing.assert_array_equal(out[:, 1], d + 100 * (d == k) + 1000 * (k != d))
    np.testing.assert_array_equal(out[:, 2], (d < k) + 10 * (d >= k) + 100 * (d <= 7)
                                  + 1000 * (d > 2.5))
    np.testing.assert_array_equal(out[:, 3], (d * 1.5).astype(np.int64))


def test_a_1d_id_hashes_as_its_number() -> None:
    assert sycl.id(3) == 3 and hash(sycl.id(3)) == hash(3) and {sycl.id(3): "x"}[3] == "x"
    assert sycl.id(1, 2) != 3 and sycl.id(3) != sycl.range(3)
    with pytest.raises(TypeError):
        _ = sycl.id(1, 2) < 3

"""Hierarchical parallelism (SYCL 2020 §4.9.4.2.3): ``parallel_for_work_group``, ``h_item``,
``private_memory``, on the compiled device and the host_debuggable one (the oracle), with the
PTX of the kernels assembled by ``ptxas``."""

from __future__ import annotations

import contextlib
import itertools
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pysycl as sycl
from pysycl._kernels.hierarchical import default_group_size
from tests.conftest import ptxas_check


def _run(q: sycl.queue, cg_of, *arrays: np.ndarray) -> None:
    with contextlib.ExitStack() as stack:
        bufs = [stack.enter_context(sycl.buffer(a)) for a in arrays]
        q.submit(lambda h: cg_of(h, *[b.get_access(h, sycl.access_mode.read_write)
                                      for b in bufs]))


# ------------------------------------------------------------------ the basics
def test_spec_example_global_ids_and_group_scope(any_kernel_queue: sycl.queue) -> None:
    """CTS hierarchical_basic-like: each work-item writes its global id; the group scope
    writes the group id once."""
    G, L = 5, 8
    a = np.arange(G * L, dtype=np.float32) * 0.5
    out = np.zeros(G * L, np.float32)
    per_group = np.zeros(G, np.int32)

    def cg(h, ra, wo, pg):
        def k(g):
            def body(i):
                wo[i.get_global_id(0)] = ra[i.get_global_id(0)] + i.get_global_id(0)
            g.parallel_for_work_item(body)
            pg[g.get_group_id(0)] = 100 + g.get_group_id(0) * g.get_local_range(0)
        h.parallel_for_work_group(sycl.range(G), sycl.range(L), k)

    _run(any_kernel_queue, cg, a, out, per_group)
    np.testing.assert_array_equal(out, a + np.arange(G * L))
    np.testing.assert_array_equal(per_group, 100 + np.arange(G) * L)


def test_group_scope_side_effects_happen_once_per_group(any_kernel_queue: sycl.queue) -> None:
    G, L = 4, 16
    cnt = np.zeros(G, np.int32)
    hist = np.zeros(3 * G, np.int64)
    seen = np.zeros(G, np.int32)

    def cg(h, c, hs, sn):
        def k(g):
            gid = g.get_group_id(0)
            c[gid] += 1  # a read-modify-write at group scope: exactly once
            for j in range(3):
                hs[3 * gid + j] += j + 1
            g.parallel_for_work_item(lambda i: None)
            c[gid] += 10
            sn[gid] = c[gid] * 2  # reads the group's own store after it
        h.parallel_for_work_group(sycl.range(G), sycl.range(L), k)

    _run(any_kernel_queue, cg, cnt, hist, seen)
    np.testing.assert_array_equal(cnt, np.full(G, 11))
    np.testing.assert_array_equal(hist, np.tile([1, 2, 3], G))
    np.testing.assert_array_equal(seen, np.full(G, 22))


def test_private_memory_persists_across_work_item_calls(any_kernel_queue: sycl.queue) -> None:
    G, L = 3, 6
    out = np.zeros(G * L, np.int32)
    again = np.zeros(G * L, np.int32)

    def cg(h, o, ag):
        def k(g):
            pm = sycl.private_memory(g, np.int32)
            def init(i):
                pm[i] = i.get_global_id(0) * 3
            g.parallel_for_work_item(init)
            def use(i):
                o[i.get_global_id(0)] = pm[i] + 1
                pm[i] = pm(i) + 5  # pm(h) reads too
            g.parallel_for_work_item(use)
            def last(i):
                ag[i.get_global_id(0)] = pm[i]
            g.parallel_for_work_item(last)
        h.parallel_for_work_group(sycl.range(G), sycl.range(L), k)

    _run(any_kernel_queue, cg, out, again)
    n = np.arange(G * L)
    np.testing.assert_array_equal(out, n * 3 + 1)
    np.testing.assert_array_equal(again, n * 3 + 5)


def test_local_accessor_is_shared_by_the_work_items(any_kernel_queue: sycl.queue) -> None:
    G, L = 4, 8
    a = np.arange(G * L, dtype=np.int32) ** 2
    out = np.zeros(G * L, np.int32)
    sums = np.zeros(G, np.int32)

    def cg(h, ra, wo, ws):
        tile = sycl.local_accessor(np.int32, sycl.range(L), h)

        def k(g):
            def load(i):
                tile[i.get_local_id(0)] = ra[i.get_global_id(0)]
            g.parallel_for_work_item(load)
            def reverse(i):
                lid = i.get_local_id(0)
                wo[i.get_global_id(0)] = tile[i.get_local_range(0) - 1 - lid]
            g.parallel_for_work_item(reverse)
            s = 0  # a group reduction at group scope, read from local memory
            for j in range(L):
                s += tile[j]
            ws[g.get_group_id(0)] = s
        h.parallel_for_work_group(sycl.range(G), sycl.range(L), k)

    _run(any_kernel_queue, cg, a, out, sums)
    np.testing.assert_array_equal(out, a.reshape(G, L)[:, ::-1].reshape(-1))
    np.testing.assert_array_equal(sums, a.reshape(G, L).sum(axis=1))


def test_group_reduction_with_a_logical_range(any_kernel_queue: sycl.queue) -> None:
    """Each work-group sums 40 values with 8 physical work-items (5 logical ids each),
    a tree in local memory, compared with numpy."""
    G, L, N = 3, 8, 40
    x = np.random.default_rng(3).integers(-50, 50, G * N).astype(np.int64)
    out = np.zeros(G, np.int64)

    def cg(h, rx, wo):
        part = sycl.local_accessor(np.int64, sycl.range(L), h)

        def k(g):
            base = g.get_group_id(0) * N
            def zero(i):
                part[i.get_local_id(0)] = 0
            g.parallel_for_work_item(zero)
            def add(i):
                part[i.get_physical_local_id(0)] += rx[base + i.get_local_id(0)]
            g.parallel_for_work_item(sycl.range(N), add)
            s = L // 2
            while s > 0:
                def fold(i):
                    j = i.get_local_id(0)
                    if j < s:
                        part[j] += part[j + s]
                g.parallel_for_work_item(fold)
                s //= 2
            wo[g.get_group_id(0)] = part[0]
        h.parallel_for_work_group(sycl.range(G), sycl.range(L), k)

    _run(any_kernel_queue, cg, x, out)
    np.testing.assert_array_equal(out, x.reshape(G, N).sum(axis=1))


# ------------------------------------------------------- h_item and logical ranges
def _expected(groups, local, logical):
    """Per (group, logical id): the physical local id that runs it (SYCL's mapping)."""
    rows = {}
    for gid in itertools.product(*(range(n) for n in groups)):
        for lid in itertools.product(*(range(n) for n in logical)):
            phys = tuple(i % p for i, p in zip(lid, local, strict=True))
            glob = tuple(g * p + i for g, p, i in zip(gid, local, phys, strict=True))
            rows[gid, lid] = (phys, glob)
    return rows


def _h_item_table(q: sycl.queue, groups, local, logical) -> np.ndarray:
    """Run one hierarchical kernel; per (group, logical linear id): how often it ran, then
    the h_item's ids and ranges."""
    nd = len(groups)
    ng, nl = int(np.prod(groups)), int(np.prod(logical))
    cols = 2 + 6 * nd + 3
    out = np.zeros((ng * nl, cols), np.int64)
    G, L, lr = sycl.range(*groups), sycl.range(*local), tuple(logical)

    def cg(h, o):
        def k(g):
            glin = g.get_group_linear_id()
            def body(i):
                row = glin * i.get_local_range().size() + i.get_logical_local().get_linear_id()
                o[row, 0] += 1
                o[row, 1] = i.get_physical_local().get_linear_id()
                for d in range(nd):
                    o[row, 2 + d] = i.get_global_id(d)
                    o[row, 2 + nd + d] = i.get_local_id(d)
                    o[row, 2 + 2 * nd + d] = i.get_physical_local_id(d)
                    o[row, 2 + 3 * nd + d] = i.get_global_range(d)
                    o[row, 2 + 4 * nd + d] = i.get_logical_local_range(d)
                    o[row, 2 + 5 * nd + d] = i.get_physical_local_range(d)
                o[row, 2 + 6 * nd] = i.get_global().get_linear_id()
                o[row, 3 + 6 * nd] = int(i.get_local_id() == i.get_logical_local_id())
                o[row, 4 + 6 * nd] = int(i.get_physical_local_range() == g.get_local_range())
            g.parallel_for_work_item(sycl.range(*lr), body)
        h.parallel_for_work_group(G, L, k)

    _run(q, cg, out)
    return out


def _check_table(table: np.ndarray, groups, local, logical) -> None:
    nd = len(groups)
    glob_range = tuple(g * p for g, p in zip(groups, local, strict=True))
    nl = int(np.prod(logical))
    for (gid, lid), (phys, glob) in _expected(groups, local, logical).items():
        row = table[int(np.ravel_multi_index(gid, groups)) * nl
                    + int(np.ravel_multi_index(lid, logical))]
        assert row[0] == 1, (gid, lid)
        assert row[1] == np.ravel_multi_index(phys, local)
        assert tuple(row[2:2 + nd]) == glob
        assert tuple(row[2 + nd:2 + 2 * nd]) == lid
        assert tuple(row[2 + 2 * nd:2 + 3 * nd]) == phys
        assert tuple(row[2 + 3 * nd:2 + 4 * nd]) == glob_range
        assert tuple(row[2 + 4 * nd:2 + 5 * nd]) == tuple(logical)
        assert tuple(row[2 + 5 * nd:2 + 6 * nd]) == tuple(local)
        assert row[2 + 6 * nd] == np.ravel_multi_index(glob, glob_range)
        assert row[3 + 6 * nd] == 1 and row[4 + 6 * nd] == 1


@pytest.mark.parametrize(("groups", "local", "logical"), [
    ((3,), (4,), (11,)),          # bigger: 3 rounds, the last partial
    ((2,), (8,), (3,)),           # smaller: 5 work-items idle
    ((2, 2), (2, 3), (5, 2)),     # bigger in one dimension, smaller in the other
    ((1, 2, 2), (2, 2, 1), (3, 1, 4)),
    ((2,), (4,), (4,)),           # equal
])
def test_logical_ranges_map_to_physical_work_items(any_kernel_queue: sycl.queue, groups, local,
                                                   logical) -> None:
    table = _h_item_table(any_kernel_queue, groups, local, logical)
    _check_table(table, groups, local, logical)


_shapes = st.integers(1, 3).flatmap(lambda nd: st.tuples(
    st.tuples(*[st.integers(1, 3)] * nd), st.tuples(*[st.integers(1, 4)] * nd),
    st.tuples(*[st.integers(1, 6)] * nd)))


@settings(max_examples=6)
@given(shape=_shapes)
def test_device_matches_the_host_oracle(kernel_device: sycl.device, host_device: sycl.device,
                                        shape) -> None:
    groups, local, logical = shape
    kq, hq = sycl.queue(kernel_device), sycl.queue(host_device)
    on_device = _h_item_table(kq, groups, local, logical)
    np.testing.assert_array_equal(on_device, _h_item_table(hq, groups, local, logical))
    _check_table(on_device, groups, local, logical)


def test_default_work_group_size(any_kernel_queue: sycl.queue) -> None:
    dev = any_kernel_queue.get_device()
    for nd in (1, 2, 3):
        want = tuple(default_group_size(dev, nd))
        out = np.zeros(nd, np.int64)
        mark = np.zeros(2 * int(np.prod(want)), np.int32)

        def cg(h, o, m, nd=nd):
            def k(g):
                for d in range(nd):
                    o[d] = g.get_local_range(d)
                def body(i):
                    m[i.get_global().get_linear_id()] = 1
                g.parallel_for_work_item(body)
            h.parallel_for_work_group(sycl.range(*((2,) + (1,) * (nd - 1))), k)

        _run(any_kernel_queue, cg, out, mark)
        assert tuple(out) == want
        assert int(np.prod(want)) <= int(dev.get_info(sycl.info.device.max_work_group_size))
        assert mark.all()
    assert default_group_size(dev, 1).size() == min(
        64, int(dev.get_info(sycl.info.device.max_work_group_size)))


def test_ptx_of_a_hierarchical_kernel(kq: sycl.queue, ptx_images: list) -> None:
    G, L, R = 2, 4, 6
    out = np.zeros(G * R, np.int32)
    cnt = np.zeros(G, np.int32)

    def cg(h, o, c):
        def k(g):
            pm = sycl.private_memory(g, np.int32)
            def init(i):
                pm[i] = i.get_physical_local_id(0)
            g.parallel_for_work_item(init)
            def body(i):
                o[g.get_group_id(0) * R + i.get_local_id(0)] = pm[i] * 10 + i.get_local_id(0)
            g.parallel_for_work_item(sycl.range(R), body)
            c[g.get_group_id(0)] += 1
        h.parallel_for_work_group(sycl.range(G), sycl.range(L), k)

    _run(kq, cg, out, cnt)
    lid = np.tile(np.arange(R), G)
    np.testing.assert_array_equal(out, (lid % L) * 10 + lid)
    np.testing.assert_array_equal(cnt, [1, 1])
    (img,) = ptx_images
    ptxas_check(img.binary)
    ptx = img.binary.decode()
    assert len(re.findall(r"\bbar\.sync\b|\bbarrier\.sync\b", ptx)) >= 4


# ------------------------------------------------------------------ errors
def _submit(q: sycl.queue, k, groups=(2,), local=(4,)) -> None:
    groups, local = sycl.range(*groups), sycl.range(*local)
    out = np.zeros(64, np.int32)
    with sycl.buffer(out) as B:
        def cg(h):
            o = B.get_access(h, sycl.access_mode.read_write)
            h.parallel_for_work_group(groups, local, k(o))
        q.submit(cg)


def test_kernel_arity_is_checked(any_kernel_queue: sycl.queue) -> None:
    with pytest.raises(sycl.kernel_signature_error, match=r"def k\(g\)"):
        _submit(any_kernel_queue, lambda o: (lambda g, h: None))


def test_work_group_size_the_device_cannot_do(any_kernel_queue: sycl.queue) -> None:
    big = int(any_kernel_queue.get_device().get_info(sycl.info.device.max_work_group_size)) * 2
    with pytest.raises(sycl.exception) as e:
        _submit(any_kernel_queue, lambda o: (lambda g: None), local=(big,))
    assert e.value.code() == sycl.errc.nd_range
    with pytest.raises(sycl.exception) as e:
        _submit(any_kernel_queue, lambda o: (lambda g: None), local=(2, 2))
    assert e.value.code() == sycl.errc.nd_range


def _errs(q: sycl.queue) -> tuple:
    """What a refused hierarchical kernel raises: a compile error on a device, errc.invalid
    on the host device (it runs the kernel)."""
    return (sycl.kernel_compile_error, sycl.exception)


def test_nested_parallel_for_work_item_is_refused(any_kernel_queue: sycl.queue) -> None:
    def k(o):
        def kern(g):
            def outer(i):
                g.parallel_for_work_item(lambda j: None)
            g.parallel_for_work_item(outer)
        return kern
    with pytest.raises(_errs(any_kernel_queue), match="group scope"):
        _submit(any_kernel_queue, k)


def test_logical_range_of_other_dimensions_is_refused(any_kernel_queue: sycl.queue) -> None:
    def k(o):
        def kern(g):
            g.parallel_for_work_item(sycl.range(2, 2), lambda i: None)
        return kern
    with pytest.raises(_errs(any_kernel_queue), match="dimensions"):
        _submit(any_kernel_queue, k)


def test_group_functions_are_refused(any_kernel_queue: sycl.queue) -> None:
    def k(o):
        def kern(g):
            def body(i):
                sycl.group_barrier(g)
            g.parallel_for_work_item(body)
        return kern
    with pytest.raises(_errs(any_kernel_queue), match="not available in a hierarchical kernel"):
        _submit(any_kernel_queue, k)


def test_parallel_for_work_item_in_an_nd_range_kernel(any_kernel_queue: sycl.queue) -> None:
    out = np.zeros(4, np.int32)
    with sycl.buffer(out) as B:
        def cg(h):
            o = B.get_access(h, sycl.access_mode.write)
            def k(it):
                it.get_group().parallel_for_work_item(lambda i: None)
                o[0] = 1
            h.parallel_for(sycl.nd_range(sycl.range(4), sycl.range(2)), k)
        with pytest.raises(_errs(any_kernel_queue), match="for hierarchical kernels"):
            any_kernel_queue.submit(cg)


def test_group_scope_local_id_is_refused(any_kernel_queue: sycl.queue) -> None:
    def k(o):
        def kern(g):
            o[g.get_local_id(0)] = 1
        return kern
    with pytest.raises(_errs(any_kernel_queue), match="h_item"):
        _submit(any_kernel_queue, k)


def test_private_memory_outside_a_hierarchical_kernel() -> None:
    with pytest.raises(sycl.exception, match="hierarchical kernels"):
        sycl.private_memory(object(), np.int32)


# --------------------------- what a compiled device refuses at group scope (at the line)
def _store(o):
    o[0] = 1


def _array(o):
    def kern(g):
        t = sycl.private_array(np.int32, 4)
        g.parallel_for_work_item(lambda i: t.__setitem__(0, 1))
    return kern


def _print(o):
    def kern(g):
        print("group", g.get_group_id(0))
    return kern


def _atomic(o):
    def kern(g):
        sycl.atomic_ref(o, 0, sycl.memory_order.relaxed, sycl.memory_scope.device).fetch_add(1)
    return kern


def _helper(o):
    def kern(g):
        _store(o)
    return kern


@pytest.mark.parametrize(("k", "match"), [
    (_array, "sycl.local_accessor"),
    (_print, r"print\(\) output"),
    (_atomic, "atomic operation"),
    (_helper, "stores or prints"),
])
def test_group_scope_effects_a_device_cannot_do_once(kq: sycl.queue, k, match: str) -> None:
    with pytest.raises(sycl.kernel_compile_error, match=match) as e:
        _submit(kq, k)
    assert "test_hierarchical.py" in str(e.value)


def test_group_queries_at_group_scope(any_kernel_queue: sycl.queue) -> None:
    groups, local = (2, 3), (2, 2)
    out = np.zeros((6, 10), np.int64)

    def cg(h, o):
        def k(g):
            r = g.get_group_linear_id()
            o[r, 0] = g.get_group_id(0)
            o[r, 1] = g.get_group_id(1)
            o[r, 2] = g.get_linear_id()
            o[r, 3] = g.get_group_range(1)
            o[r, 4] = g.get_group_linear_range()
            o[r, 5] = g.get_local_linear_range()
            o[r, 6] = g.get_max_local_range()[1]
            o[r, 7] = g.get_global_range(0)
            o[r, 8] = g.get_global_range().size()
            o[r, 9] = g[1]
        h.parallel_for_work_group(sycl.range(*groups), sycl.range(*local), k)

    _run(any_kernel_queue, cg, out)
    for r, (a, b) in enumerate(itertools.product(range(2), range(3))):
        assert list(out[r]) == [a, b, r, 3, 6, 4, 2, 4, 24, b]


def test_a_hierarchical_kernel_loads_from_the_disk_cache(kq: sycl.queue) -> None:
    out = np.zeros(8, np.int32)

    def submit() -> None:
        def cg(h, o):
            def k(g):
                def body(i):
                    o[i.get_global_id(0)] += i.get_local_id(0) + 1
                g.parallel_for_work_item(body)
            h.parallel_for_work_group(sycl.range(2), sycl.range(4), k)
        _run(kq, cg, out)

    submit()
    sycl.ext.clear_kernel_memory_cache()
    sycl.ext.reset_kernel_cache_stats()
    submit()
    s = sycl.ext.kernel_cache_stats()
    assert s["disk_hits"] == 1 and s["compiles"] == 0, s
    np.testing.assert_array_equal(out, 2 * np.tile(np.arange(1, 5), 2))


class _Fill:
    """A function object as a hierarchical kernel."""

    def __init__(self, o, base: int) -> None:
        self.o = o
        self.base = base

    def __call__(self, g) -> None:
        o, base = self.o, self.base
        def body(i):
            o[i.get_global_id(0)] = base + i.get_local_id(0)
        g.parallel_for_work_item(body)
        o[8 + g.get_group_id(0)] = base * 2


def test_a_function_object_as_a_hierarchical_kernel(any_kernel_queue: sycl.queue) -> None:
    out = np.zeros(10, np.int32)
    _run(any_kernel_queue, lambda h, o: h.parallel_for_work_group(
        sycl.range(2), sycl.range(4), _Fill(o, 5)), out)
    np.testing.assert_array_equal(out, [5, 6, 7, 8, 5, 6, 7, 8, 10, 10])


def _twice(x):
    return 2 * x


def test_functions_called_at_group_scope(any_kernel_queue: sycl.queue) -> None:
    """A function defined in the kernel and called at group scope is group-scope code (its
    read-modify-write happens once); a plain helper that only computes may be called."""
    G, L = 3, 4
    cnt = np.zeros(G, np.int32)

    def cg(h, c):
        def k(g):
            def bump(v):
                c[g.get_group_id(0)] += v
            bump(_twice(3))
            g.parallel_for_work_item(lambda i: None)
            bump(1)
        h.parallel_for_work_group(sycl.range(G), sycl.range(L), k)

    _run(any_kernel_queue, cg, cnt)
    np.testing.assert_array_equal(cnt, np.full(G, 7))


def test_stream_output_at_group_scope_is_refused_on_a_device(kq: sycl.queue) -> None:
    def cg(h):
        os = sycl.stream(1024, 80, h)

        def k(g):
            os << "group " << g.get_group_id(0) << sycl.endl
        h.parallel_for_work_group(sycl.range(2), sycl.range(2), k)
    with pytest.raises(sycl.kernel_compile_error, match=r"sycl\.stream output") as e:
        kq.submit(cg)
    assert "test_hierarchical.py" in str(e.value)

"""atomic_ref on global and local memory, atomic_fence, private arrays, group collectives."""

from __future__ import annotations

import numpy as np
import pytest

import pysycl as sycl

MO, MS = sycl.memory_order, sycl.memory_scope
INTS = [np.int32, np.uint32, np.int64, np.uint64]


def _hist(q: sycl.queue, x: np.ndarray, nbins: int, local: bool, dtype: type) -> np.ndarray:
    hist = np.zeros(nbins, dtype=dtype)
    wg = 64
    with sycl.buffer(x) as X, sycl.buffer(hist) as H:
        def cg(h: sycl.handler) -> None:
            rx = X.get_access(h, sycl.access_mode.read)
            hh = H.get_access(h, sycl.access_mode.read_write)
            if local:
                lh = sycl.local_accessor(dtype, sycl.range(nbins), h)
                bins = nbins

                def k(it):
                    lid = it.get_local_id(0)
                    b = lid
                    while b < bins:
                        lh[b] = 0
                        b += it.get_local_range(0)
                    it.barrier(sycl.access.fence_space.local_space)
                    sycl.atomic_ref(lh, rx[it.get_global_id(0)], MO.relaxed,
                                    MS.work_group).fetch_add(1)
                    it.barrier(sycl.access.fence_space.local_space)
                    b = lid
                    while b < bins:
                        sycl.atomic_ref(hh, b, MO.relaxed, MS.device).fetch_add(lh[b])
                        b += it.get_local_range(0)
            else:
                def k(it):
                    sycl.atomic_ref(hh, rx[it.get_global_id(0)], MO.relaxed,
                                    MS.device).fetch_add(1)

            h.parallel_for(sycl.nd_range(sycl.range(x.size), sycl.range(wg)), k)

        q.submit(cg)
    return hist


@pytest.mark.parametrize("local", [False, True], ids=["global", "local"])
@pytest.mark.parametrize("dtype", INTS)
def test_histogram(any_kernel_queue: sycl.queue, local: bool, dtype: type) -> None:
    rng = np.random.default_rng(7)
    host = any_kernel_queue.get_device().has(sycl.aspect.host_debuggable)
    x = rng.integers(0, 37, 64 * (3 if host else 40)).astype(np.int32)  # the interpreter is slow
    got = _hist(any_kernel_queue, x, 37, local, dtype)
    np.testing.assert_array_equal(got, np.bincount(x, minlength=37).astype(dtype))


def _fetch_all(q: sycl.queue, vals: np.ndarray, op: str) -> tuple[np.ndarray, np.ndarray]:
    """Every work-item applies fetch_<op>(vals[i]) to cell 0; returns (cell, olds)."""
    dtype = vals.dtype
    cell = np.array([vals[0] if op in ("min", "max", "and") else 0], dtype=dtype)
    if op == "and":
        cell[0] = np.array(-1).astype(dtype)
    olds = np.zeros_like(vals)
    with sycl.buffer(vals) as V, sycl.buffer(cell) as C, sycl.buffer(olds) as O:
        def cg(h: sycl.handler) -> None:
            rv = V.get_access(h, sycl.access_mode.read)
            c = C.get_access(h, sycl.access_mode.read_write)
            o = O.get_access(h, sycl.access_mode.write)
            if op == "add":
                def k(i):
                    o[i] = sycl.atomic_ref(c, 0, MO.relaxed, MS.device).fetch_add(rv[i])
            elif op == "sub":
                def k(i):
                    o[i] = sycl.atomic_ref(c, 0, MO.acq_rel, MS.device).fetch_sub(rv[i])
            elif op == "min":
                def k(i):
                    o[i] = sycl.atomic_ref(c, 0, MO.seq_cst, MS.device).fetch_min(rv[i])
            elif op == "max":
                def k(i):
                    o[i] = sycl.atomic_ref(c, 0, MO.relaxed, MS.system).fetch_max(rv[i])
            elif op == "and":
                def k(i):
                    o[i] = sycl.atomic_ref(c, 0, MO.relaxed, MS.device).fetch_and(rv[i])
            elif op == "or":
                def k(i):
                    o[i] = sycl.atomic_ref(c, 0, MO.relaxed, MS.device).fetch_or(rv[i])
            else:
                def k(i):
                    o[i] = sycl.atomic_ref(c, 0, MO.relaxed, MS.device).fetch_xor(rv[i])
            h.parallel_for(sycl.range(vals.size), k)

        q.submit(cg)
    return cell, olds


@pytest.mark.parametrize("op", ["add", "sub", "min", "max", "and", "or", "xor"])
@pytest.mark.parametrize("dtype", INTS)
def test_integer_fetch_ops(kq: sycl.queue, op: str, dtype: type) -> None:
    rng = np.random.default_rng(11)
    vals = rng.integers(0, 1000, 500).astype(dtype)
    cell, olds = _fetch_all(kq, vals, op)
    ufunc = {"add": np.add, "sub": np.subtract, "min": np.minimum, "max": np.maximum,
             "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op]
    start = {"add": 0, "sub": 0, "or": 0, "xor": 0, "min": vals[0], "max": vals[0],
             "and": np.array(-1).astype(dtype)}[op]
    with np.errstate(over="ignore"):
        want = ufunc.reduce(np.concatenate([[start], vals]).astype(dtype))
    assert cell[0] == want
    if op in ("add", "or", "xor", "min", "max"):
        # The returned old values are the distinct intermediate states of one total order.
        assert olds.dtype == vals.dtype


@pytest.mark.parametrize("op", ["add", "min", "max", "sub"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_fetch_ops_cas_loop(kq: sycl.queue, op: str, dtype: type) -> None:
    rng = np.random.default_rng(5)
    vals = (rng.integers(-64, 64, 400) / 4).astype(dtype)  # exact in binary: order-free sums
    cell, olds = _fetch_all(kq, vals, op)
    want = {"add": vals.sum(), "sub": -vals.sum(), "min": min(vals.min(), vals[0]),
            "max": max(vals.max(), vals[0])}[op]
    assert cell[0] == want
    if op == "add":
        # Each old value is a prefix sum of some order: all distinct work-items saw a state.
        assert np.all(np.isin(olds, olds)) and len(olds) == vals.size


@pytest.mark.parametrize("dtype", [np.int32, np.uint64, np.float32, np.float64])
def test_load_store_exchange_compare_exchange(kq: sycl.queue, dtype: type) -> None:
    n = 256
    cells = np.zeros(4, dtype=dtype)
    winners = np.zeros(n, dtype=np.int32)
    seen = np.zeros(n, dtype=dtype)
    with sycl.buffer(cells) as C, sycl.buffer(winners) as W, sycl.buffer(seen) as S:
        def cg(h: sycl.handler) -> None:
            c = C.get_access(h, sycl.access_mode.read_write)
            w = W.get_access(h, sycl.access_mode.write)
            s = S.get_access(h, sycl.access_mode.write)

            def k(i):
                # Exactly one work-item wins the CAS from 0 to its id + 1.
                ok, _old = sycl.atomic_ref(c, 0, MO.acq_rel, MS.device).compare_exchange_strong(
                    0, i + 1)
                w[i] = ok
                _ok2, _old2 = sycl.atomic_ref(c, 3, MO.relaxed, MS.device).compare_exchange_weak(
                    7, 1)
                a = sycl.atomic_ref(c, 1, MO.relaxed, MS.device)
                a.exchange(5)
                s[i] = a.load()
                if i == 0:
                    sycl.atomic_ref(c, 2, MO.release, MS.device).store(42)
                    sycl.atomic_fence(MO.seq_cst, MS.device)

            h.parallel_for(sycl.range(n), k)

        kq.submit(cg)
    assert winners.sum() == 1
    assert cells[0] == np.flatnonzero(winners)[0] + 1
    assert cells[1] == 5 and cells[2] == 42 and cells[3] == 0
    assert np.all(seen == 5)


def test_int64_atomics_require_atomic64(kq: sycl.queue) -> None:
    from pysycl._kernels.cache import kernels as _kernel_cache

    x = np.zeros(1, dtype=np.int64)
    with sycl.buffer(x) as X:
        def cg(h: sycl.handler) -> None:
            a = X.get_access(h, sycl.access_mode.read_write)

            def k(i):
                sycl.atomic_ref(a, 0, MO.relaxed, MS.device).fetch_add(1)

            h.parallel_for(sycl.range(10), k)

        kq.submit(cg)
    assert x[0] == 10
    compiled = [k.compiled for k in _kernel_cache.memory.values()
                if k.compiled.source_location.startswith(__file__)
                and [(c.name, c.type.dtype) for c in k.compiled.captures] == [("a", np.int64)]]
    assert compiled and all("atomic64" in c.required_aspects for c in compiled)


def test_atomic_on_read_accessor_is_a_compile_error(kq: sycl.queue) -> None:
    x = np.zeros(4, dtype=np.int32)
    with sycl.buffer(x) as X:
        def cg(h: sycl.handler) -> None:
            a = X.get_access(h, sycl.access_mode.read)

            def k(i):
                sycl.atomic_ref(a, 0, MO.relaxed, MS.device).fetch_add(1)

            h.parallel_for(sycl.range(4), k)

        with pytest.raises(sycl.kernel_compile_error) as ei:
            kq.submit(cg)
    assert __file__ in str(ei.value)


def test_private_array_register_tile(any_kernel_queue: sycl.queue) -> None:
    """Each work-item computes 4 outputs of a row-times-matrix product in a private tile."""
    kq = any_kernel_queue
    rng = np.random.default_rng(2)
    a = rng.random((16, 8), dtype=np.float32)
    b = rng.random((8, 16), dtype=np.float32)
    c = np.zeros((16, 16), dtype=np.float32)
    with sycl.buffer(a) as A, sycl.buffer(b) as B, sycl.buffer(c) as C:
        def cg(h: sycl.handler) -> None:
            ra = A.get_access(h, sycl.access_mode.read)
            rb = B.get_access(h, sycl.access_mode.read)
            wc = C.get_access(h, sycl.access_mode.write)

            def k(it):
                i = it.get_id(0)
                j0 = it.get_id(1) * 4
                t = sycl.private_array(np.float32, 4)
                for kk in range(8):
                    x = ra[i, kk]
                    for u in range(len(t)):
                        t[u] += x * rb[kk, j0 + u]
                for u in range(4):
                    wc[i, j0 + u] = t[u]

            h.parallel_for(sycl.range(16, 4), k)

        kq.submit(cg)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.float64, np.int64])
def test_group_collectives(any_kernel_queue: sycl.queue, dtype: type) -> None:
    kq = any_kernel_queue
    wg, ngroups = 32, 6
    rng = np.random.default_rng(9)
    x = rng.integers(-100, 100, wg * ngroups).astype(dtype)
    out = np.zeros((wg * ngroups, 8), dtype=np.float64)
    with sycl.buffer(x) as X, sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            rx = X.get_access(h, sycl.access_mode.read)
            o = O.get_access(h, sycl.access_mode.write)

            def k(it):
                g = it.get_group()
                sg = it.get_sub_group()
                i = it.get_global_id(0)
                v = rx[i]
                o[i, 0] = sycl.reduce_over_group(g, v, sycl.plus())
                o[i, 1] = sycl.reduce_over_group(g, v, sycl.maximum())
                o[i, 2] = sycl.reduce_over_group(g, v, v * 0 + 1000, sycl.minimum())
                o[i, 3] = sycl.group_broadcast(g, v, 3)
                o[i, 4] = sycl.any_of_group(g, v > 98)
                o[i, 5] = sycl.all_of_group(g, v > -101)
                o[i, 6] = sycl.reduce_over_group(sg, v, sycl.plus())
                o[i, 7] = sg.get_local_id() + 1000 * sg.get_local_range()[0] \
                    + 100000 * sg.get_group_id()

            h.parallel_for(sycl.nd_range(sycl.range(x.size), sycl.range(wg)), k)

        kq.submit(cg)
    groups = x.reshape(ngroups, wg).astype(np.float64)
    for gi in range(ngroups):
        rows = out[gi * wg:(gi + 1) * wg]
        np.testing.assert_array_equal(rows[:, 0], groups[gi].sum())
        np.testing.assert_array_equal(rows[:, 1], groups[gi].max())
        np.testing.assert_array_equal(rows[:, 2], min(groups[gi].min(), 1000))
        np.testing.assert_array_equal(rows[:, 3], groups[gi][3])
        np.testing.assert_array_equal(rows[:, 4], float(np.any(groups[gi] > 98)))
        np.testing.assert_array_equal(rows[:, 5], 1.0)
        # Sub-groups: decode (local id, size, sub-group id) and check the sub-group sums.
        code = rows[:, 7].astype(np.int64)
        sg_lid, sg_size, sg_id = code % 1000, (code // 1000) % 100, code // 100000
        for s in np.unique(sg_id):
            members = np.flatnonzero(sg_id == s)
            assert sorted(sg_lid[members]) == list(range(len(members)))
            assert np.all(sg_size[members] == len(members))
            np.testing.assert_array_equal(rows[members, 6], groups[gi][members].sum())

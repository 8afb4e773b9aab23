"""Group algorithms (SYCL 2020 §4.17) on the compiled device and the host_debuggable one.

Every result is checked against a numpy model of the spec given the sub-group
shape each work-item reports (``sg.get_local_linear_range()``; sub-groups are
consecutive local linear ids): the compiled device and the interpreter must both
match it. Out-of-range shuffles return the caller's own value on every device
(pysycl's choice; the spec leaves them unspecified).
"""

from __future__ import annotations

import operator
from functools import reduce

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pysycl as sycl

OPS = ["plus", "multiplies", "minimum", "maximum", "bit_and", "bit_or", "bit_xor",
       "logical_and", "logical_or"]
DTYPES = [np.int32, np.uint32, np.int64, np.uint64, np.float32, np.float64]
_PY = {"plus": operator.add, "multiplies": operator.mul, "minimum": min, "maximum": max,
       "bit_and": operator.and_, "bit_or": operator.or_, "bit_xor": operator.xor,
       "logical_and": lambda a, b: int(bool(a) and bool(b)),
       "logical_or": lambda a, b: int(bool(a) or bool(b))}
SETTINGS = settings(max_examples=8, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def _is_host(q: sycl.queue) -> bool:
    return q.get_device().has(sycl.aspect.host_debuggable)


def _valid(op: str, dtype: type) -> bool:
    return not (op.startswith("bit") and np.dtype(dtype).kind == "f")


def _data(rng: np.random.Generator, op: str, dtype: type, n: int) -> np.ndarray:
    """Values whose combinations are exact (no rounding, no overflow) for ``op``."""
    if op == "multiplies":
        return rng.choice([1, 1, 1, 2, 3] if np.dtype(dtype).kind == "u" else [1, -1, 1, 2],
                          n).astype(dtype) if n else np.zeros(0, dtype)
    if op.startswith("logical"):
        return (rng.random(n) < (0.8 if op == "logical_and" else 0.2)).astype(dtype)
    hi = 1000 if np.dtype(dtype).kind != "f" else 64
    return rng.integers(0, hi, n).astype(dtype)


def _ident(op: str, dtype: type) -> object:
    return sycl.known_identity(op, np.dtype(dtype))


def _scan(vals: list, op: str, dtype: type, inclusive: bool, init: object = None) -> list:
    acc = _ident(op, dtype) if init is None else init
    out = []
    for v in vals:
        if inclusive:
            acc = _PY[op](acc, v)
        out.append(acc)
        if not inclusive:
            acc = _PY[op](acc, v)
    return out


def _groups(n: int, wg: int, sizes: np.ndarray) -> list[list[int]]:
    """Global ids of each sub-group: consecutive runs of the reported size within each group."""
    out = []
    for g0 in range(0, n, wg):
        i = g0
        while i < g0 + wg:
            out.append(list(range(i, i + int(sizes[i]))))
            i += int(sizes[i])
    return out


# ------------------------------------------------------------------ shuffles
def _shuffles(q: sycl.queue, x: np.ndarray, wg: int, delta: int) -> np.ndarray:
    out = np.zeros((7, x.size), dtype=x.dtype)
    with sycl.buffer(x) as X, sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            rx = X.get_access(h, sycl.access_mode.read)
            o = O.get_access(h, sycl.access_mode.write)

            def k(it):
                sg = it.get_sub_group()
                i = it.get_global_id(0)
                v = rx[i]
                o[0, i] = sycl.shift_group_left(sg, v, delta)
                o[1, i] = sycl.shift_group_right(sg, v, delta)
                o[2, i] = sycl.permute_group_by_xor(sg, v, delta)
                o[3, i] = sycl.select_from_group(sg, v, delta)
                o[4, i] = sycl.shift_group_left(sg, v)
                o[5, i] = sycl.group_broadcast(sg, v, delta % sg.get_local_linear_range())
                o[6, i] = sg.get_local_linear_range()

            h.parallel_for(sycl.nd_range(sycl.range(x.size), sycl.range(wg)), k)

        q.submit(cg)
    return out


def _shuffle_model(x: np.ndarray, wg: int, delta: int, sizes: np.ndarray) -> np.ndarray:
    want = np.zeros((6, x.size), dtype=x.dtype)
    for ids in _groups(x.size, wg, sizes):
        n = len(ids)
        for lane, i in enumerate(ids):
            def at(src: int, i: int = i) -> object:
                return x[ids[src]] if 0 <= src < n else x[i]
            want[:, i] = [at(lane + delta), at(lane - delta), at(lane ^ delta), at(delta),
                          at(lane + 1), x[ids[delta % n]]]
    return want


@pytest.mark.parametrize("dtype", [*DTYPES, np.int16])
def test_shuffles_every_type(any_kernel_queue: sycl.queue, dtype: type) -> None:
    wg = 16 if _is_host(any_kernel_queue) else 64
    x = np.arange(2 * wg).astype(dtype) * 3
    got = _shuffles(any_kernel_queue, x, wg, 3)
    np.testing.assert_array_equal(got[:6], _shuffle_model(x, wg, 3, got[6].astype(int)))


@SETTINGS
@given(wg=st.sampled_from([1, 3, 8, 12, 32, 40]), delta=st.integers(0, 9), seed=st.integers(0, 99))
def test_shuffles_property(any_kernel_queue: sycl.queue, wg: int, delta: int, seed: int) -> None:
    x = np.random.default_rng(seed).integers(-1000, 1000, 2 * wg).astype(np.int32)
    got = _shuffles(any_kernel_queue, x, wg, delta)
    np.testing.assert_array_equal(got[:6], _shuffle_model(x, wg, delta, got[6].astype(int)))


def test_shuffle_of_bool(any_kernel_queue: sycl.queue) -> None:
    x = np.array([True, False, False, True] * 4)
    out = np.zeros(x.size, dtype=np.bool_)
    with sycl.buffer(x) as X, sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            rx = X.get_access(h, sycl.access_mode.read)
            o = O.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.nd_range(sycl.range(16), sycl.range(4)), lambda it: o.__setitem__(
                it.get_global_id(0),
                sycl.permute_group_by_xor(it.get_sub_group(), rx[it.get_global_id(0)], 1)))
        any_kernel_queue.submit(cg)
    assert out.tolist() == [False, True, True, False] * 4


# --------------------------------------------------------------------- scans
def _scans(q: sycl.queue, x: np.ndarray, wg: int, op: object, init: object) -> np.ndarray:
    """Columns: sub-group incl, excl, incl+init, excl+init, reduce, reduce+init; then the same
    over the work-group; then the sub-group size."""
    out = np.zeros((13, x.size), dtype=x.dtype)
    with sycl.buffer(x) as X, sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            rx = X.get_access(h, sycl.access_mode.read)
            o = O.get_access(h, sycl.access_mode.write)

            def k(it):
                sg = it.get_sub_group()
                g = it.get_group()
                i = it.get_global_id(0)
                v = rx[i]
                o[0, i] = sycl.inclusive_scan_over_group(sg, v, op)
                o[1, i] = sycl.exclusive_scan_over_group(sg, v, op)
                o[2, i] = sycl.inclusive_scan_over_group(sg, v, op, init)
                o[3, i] = sycl.exclusive_scan_over_group(sg, v, init, op)
                o[4, i] = sycl.reduce_over_group(sg, v, op)
                o[5, i] = sycl.reduce_over_group(sg, v, init, op)
                o[6, i] = sycl.inclusive_scan_over_group(g, v, op)
                o[7, i] = sycl.exclusive_scan_over_group(g, v, op)
                o[8, i] = sycl.inclusive_scan_over_group(g, v, op, init)
                o[9, i] = sycl.exclusive_scan_over_group(g, v, init, op)
                o[10, i] = sycl.reduce_over_group(g, v, op)
                o[11, i] = sycl.reduce_over_group(g, v, init, op)
                o[12, i] = sg.get_local_linear_range()

            h.parallel_for(sycl.nd_range(sycl.range(x.size), sycl.range(wg)), k)

        q.submit(cg)
    return out


def _scan_model(x: np.ndarray, wg: int, op: str, init: object, sizes: np.ndarray) -> np.ndarray:
    dt = x.dtype.type
    want = np.zeros((12, x.size), dtype=x.dtype)
    with np.errstate(over="ignore"):
        for col, chunks in ((0, _groups(x.size, wg, sizes)),
                            (6, [list(range(g, g + wg)) for g in range(0, x.size, wg)])):
            for ids in chunks:
                vals = [x[i] for i in ids]
                total = reduce(_PY[op], vals)
                for k, cols in enumerate(zip(
                        _scan(vals, op, dt, True), _scan(vals, op, dt, False),
                        _scan(vals, op, dt, True, init), _scan(vals, op, dt, False, init),
                        [total] * len(ids), [_PY[op](init, total)] * len(ids), strict=True)):
                    want[col:col + 6, ids[k]] = cols
    return want


def _check_scans(q: sycl.queue, op: str, dtype: type, wg: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = _data(rng, op, dtype, 2 * wg)
    init = _data(rng, op, dtype, 1)[0]
    got = _scans(q, x, wg, getattr(sycl, op)(), init)
    np.testing.assert_array_equal(got[:12], _scan_model(x, wg, op, init, got[12].astype(int)))


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_scans_every_op_and_type(any_kernel_queue: sycl.queue, op: str, dtype: type) -> None:
    if not _valid(op, dtype):
        pytest.skip("bit operations take integers")
    _check_scans(any_kernel_queue, op, dtype, 12 if _is_host(any_kernel_queue) else 40, 1)


@SETTINGS
@given(op=st.sampled_from(OPS), dtype=st.sampled_from(DTYPES),
       wg=st.sampled_from([1, 2, 5, 8, 16, 24, 64]), seed=st.integers(0, 999))
def test_scans_property(kq: sycl.queue, op: str, dtype: type, wg: int, seed: int) -> None:
    if _valid(op, dtype):
        _check_scans(kq, op, dtype, wg, seed)


@SETTINGS
@given(op=st.sampled_from(OPS), wg=st.sampled_from([1, 3, 8, 20]), seed=st.integers(0, 999))
def test_scans_host_oracle(hq: sycl.queue, op: str, wg: int, seed: int) -> None:
    _check_scans(hq, op, np.int64, wg, seed)



def _scans_nd(q: sycl.queue, x: np.ndarray, glob: tuple, loc: tuple, op: object) -> np.ndarray:
    """Work-group inclusive, exclusive scan and reduction of ``x`` (by global linear id)."""
    out = np.zeros((3, x.size), dtype=x.dtype)
    with sycl.buffer(x) as X, sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            rx = X.get_access(h, sycl.access_mode.read)
            o = O.get_access(h, sycl.access_mode.write)

            def k(it):
                g = it.get_group()
                i = it.get_global_linear_id()
                o[0, i] = sycl.inclusive_scan_over_group(g, rx[i], op)
                o[1, i] = sycl.exclusive_scan_over_group(g, rx[i], op)
                o[2, i] = sycl.reduce_over_group(g, rx[i], op)

            h.parallel_for(sycl.nd_range(sycl.range(*glob), sycl.range(*loc)), k)

        q.submit(cg)
    return out


@pytest.mark.parametrize("op", ["multiplies", "bit_xor", "logical_and", "plus"])
@pytest.mark.parametrize(("glob", "loc"), [((4, 6), (2, 3)), ((4, 40), (2, 20)),
                                           ((2, 6, 10), (2, 3, 5)), ((3, 4, 6), (3, 2, 6))])
def test_scans_over_multi_dimensional_work_groups(any_kernel_queue: sycl.queue, op: str,
                                                  glob: tuple, loc: tuple) -> None:
    """Scans run in local linear id order, however the device lays out its sub-groups (the
    CPU device gives each row of a 2-D/3-D work-group its own)."""
    x = _data(np.random.default_rng(3), op, np.int64, int(np.prod(glob)))
    got = _scans_nd(any_kernel_queue, x, glob, loc, getattr(sycl, op)())
    idx = np.indices(glob).reshape(len(glob), -1)
    ll = np.array(loc)[:, None]
    group = np.ravel_multi_index(idx // ll, tuple(np.array(glob) // np.array(loc)))
    local = np.ravel_multi_index(idx % ll, loc)
    want = np.zeros_like(got)
    for b in np.unique(group):
        ids = np.flatnonzero(group == b)[np.argsort(local[group == b])]
        vals = list(x[ids])
        want[0, ids] = _scan(vals, op, np.int64, True)
        want[1, ids] = _scan(vals, op, np.int64, False)
        want[2, ids] = reduce(_PY[op], vals)
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------- joint algorithms
def _is_even(v):
    return v % 2 == 0


def _is_big(v):
    return v > 900


def _joint(q: sycl.queue, x: np.ndarray, wg: int, first: int, last: int, op: object,
           init: object, use_sg: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each group: joint_reduce (without, with init) and votes of x[first:last], and the
    inclusive/exclusive scans (with init) into out rows (one row per group)."""
    ngroups, n = 2, x.size
    red = np.zeros((ngroups * wg, 2), dtype=x.dtype)
    votes = np.zeros((ngroups * wg, 4), dtype=np.int32)
    incl = np.zeros(ngroups * n, dtype=x.dtype)
    excl = np.zeros(ngroups * n, dtype=x.dtype)
    with sycl.buffer(x) as X, sycl.buffer(red) as R, sycl.buffer(votes) as V, \
            sycl.buffer(incl) as IN, sycl.buffer(excl) as EX:
        def cg(h: sycl.handler) -> None:
            rx = X.get_access(h, sycl.access_mode.read)
            r = R.get_access(h, sycl.access_mode.write)
            v = V.get_access(h, sycl.access_mode.write)
            oi = IN.get_access(h, sycl.access_mode.write)
            oe = EX.get_access(h, sycl.access_mode.write)

            def body(it, g):
                i = it.get_global_id(0)
                row = it.get_group(0)
                r[i, 0] = sycl.joint_reduce(g, rx, first, last, op)
                r[i, 1] = sycl.joint_reduce(g, rx, first, last, op, init)
                v[i, 0] = sycl.joint_any_of(g, rx, first, last, _is_even)
                v[i, 1] = sycl.joint_all_of(g, rx, first, last, _is_even)
                v[i, 2] = sycl.joint_none_of(g, rx, first, last, _is_big)
                if it.get_sub_group().get_group_linear_id() == 0 or not use_sg:
                    sycl.joint_inclusive_scan(g, rx, first, last, oi, row * n, op, init)
                    sycl.joint_exclusive_scan(g, rx, first, last, oe, row * n, init, op)

            def k_sg(it):
                body(it, it.get_sub_group())

            def k_g(it):
                body(it, it.get_group())

            k = k_sg if use_sg else k_g
            h.parallel_for(sycl.nd_range(sycl.range(ngroups * wg), sycl.range(wg)), k)

        q.submit(cg)
    return red, votes, incl.reshape(ngroups, n), excl.reshape(ngroups, n)


@pytest.mark.parametrize("use_sg", [False, True], ids=["group", "sub_group"])
@pytest.mark.parametrize(("op", "dtype"), [("plus", np.int32), ("plus", np.float64),
                                           ("multiplies", np.int64), ("maximum", np.float32),
                                           ("minimum", np.uint32), ("bit_xor", np.uint64),
                                           ("logical_or", np.int32)])
def test_joint_algorithms(any_kernel_queue: sycl.queue, op: str, dtype: type,
                          use_sg: bool) -> None:
    host = _is_host(any_kernel_queue)
    wg = 8 if host else 32
    rng = np.random.default_rng(7)
    x = _data(rng, op, dtype, 37 if host else 301)
    init = _data(rng, op, dtype, 1)[0]
    first, last = 3, x.size - 2
    if use_sg and not host:
        wg = 16  # one sub-group per group on the CPU device (its sub-groups are 16 wide here)
    red, votes, incl, excl = _joint(any_kernel_queue, x, wg, first, last, getattr(sycl, op)(),
                                    init, use_sg)
    vals = list(x[first:last])
    with np.errstate(over="ignore"):
        total = reduce(_PY[op], vals)
        np.testing.assert_array_equal(red[:, 0], total)
        np.testing.assert_array_equal(red[:, 1], _PY[op](init, total))
        want_i = _scan(vals, op, x.dtype.type, True, init)
        want_e = _scan(vals, op, x.dtype.type, False, init)
    for row in range(2):
        np.testing.assert_array_equal(incl[row, :len(vals)], want_i)
        np.testing.assert_array_equal(excl[row, :len(vals)], want_e)
    assert (votes[:, 0] == any(v % 2 == 0 for v in vals)).all()
    assert (votes[:, 1] == all(v % 2 == 0 for v in vals)).all()
    assert (votes[:, 2] == (not any(v > 900 for v in vals))).all()


def test_joint_over_usm_and_empty_range(any_kernel_queue: sycl.queue) -> None:
    q = any_kernel_queue
    x = np.arange(1, 101, dtype=np.int64)
    p = sycl.malloc_device(x.size, q, dtype=np.int64)  # every USM device has device allocations
    out = sycl.malloc_device(4, q, dtype=np.int64)
    try:
        q.copy(x, p, x.size).wait()
        def k(it):
            g = it.get_group()
            s = sycl.joint_reduce(g, p, 0, 100, sycl.plus())
            e = sycl.joint_reduce(g, p, 5, 5, sycl.maximum())
            a = sycl.joint_any_of(g, p, 10, 10, _is_even)
            if g.leader():
                out[0] = s
                out[1] = e
                out[2] = a
        q.parallel_for(sycl.nd_range(sycl.range(16), sycl.range(16)), k).wait()
        got = np.zeros(4, np.int64)
        q.copy(out, got, 4).wait()
        assert got[0] == x.sum() and got[1] == np.iinfo(np.int64).min and got[2] == 0
    finally:
        sycl.free(p, q)
        sycl.free(out, q)


# ------------------------------------------- votes, broadcasts, types: every device alike
def _negative(v):
    return v < 0


def test_votes_of_a_value_and_predicate(any_kernel_queue: sycl.queue) -> None:
    """C++'s any_of_group(g, x, pred) / all_of_group / none_of_group, on groups and sub-groups."""
    x = np.arange(32, dtype=np.int32) - 5  # the first work-group holds the negatives
    out = np.zeros((32, 4), dtype=np.int32)
    with sycl.buffer(x) as X, sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            rx = X.get_access(h, sycl.access_mode.read)
            o = O.get_access(h, sycl.access_mode.write)

            def k(it):
                g, i = it.get_group(), it.get_global_id(0)
                o[i, 0] = sycl.any_of_group(g, rx[i], _negative)
                o[i, 1] = sycl.all_of_group(g, rx[i], lambda v: v > -100)
                o[i, 2] = sycl.none_of_group(g, rx[i], _negative)
                o[i, 3] = sycl.all_of_group(it.get_sub_group(), rx[i], lambda v: v < 100)

            h.parallel_for(sycl.nd_range(sycl.range(32), sycl.range(16)), k)

        any_kernel_queue.submit(cg)
    assert out[:, 0].tolist() == [1] * 16 + [0] * 16
    assert out[:, 2].tolist() == [0] * 16 + [1] * 16
    assert (out[:, [1, 3]] == 1).all()


def test_broadcast_from_a_local_id(any_kernel_queue: sycl.queue) -> None:
    """group_broadcast's id_type overload: a sycl.id or a tuple of the group's dimensions."""
    x = np.arange(24, dtype=np.int64).reshape(4, 6) * 10
    out = np.zeros((24, 4), dtype=np.int64)
    with sycl.buffer(x) as X, sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            rx = X.get_access(h, sycl.access_mode.read)
            o = O.get_access(h, sycl.access_mode.write)

            def k(it):
                g, i = it.get_group(), it.get_global_linear_id()
                v = rx[it.get_global_id()]
                o[i, 0] = sycl.group_broadcast(g, v, sycl.id(1, 2))
                o[i, 1] = sycl.group_broadcast(g, v, (0, 1))
                o[i, 2] = sycl.group_broadcast(g, v, 4)  # local linear id 4 = local id (1, 1)
                lead = sycl.group_broadcast(it.get_sub_group(), v, sycl.id(0))
                o[i, 3] = 1 if sycl.group_broadcast(it.get_sub_group(), v >= lead) else 0

            h.parallel_for(sycl.nd_range(sycl.range(4, 6), sycl.range(2, 3)), k)

        any_kernel_queue.submit(cg)
    for gi, gj in np.ndindex(2, 2):
        block = x[2 * gi:2 * gi + 2, 3 * gj:3 * gj + 3]
        rows = [(2 * gi + a) * 6 + 3 * gj + b for a in range(2) for b in range(3)]
        assert (out[rows, 0] == block[1, 2]).all()
        assert (out[rows, 1] == block[0, 1]).all()
        assert (out[rows, 2] == block[1, 1]).all()
    assert (out[:, 3] == 1).all()  # a bool broadcast (sub-group lane 0 holds its least)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16])
def test_narrow_integers_widen_on_every_device(any_kernel_queue: sycl.queue, dtype: type) -> None:
    """Group functions compute int8/16 values in 64 bits on every device, as numpy's sums do
    (the interpreter used to wrap around in the narrow type where the compiled kernel did not)."""
    x = (np.arange(32) * 37 % 256).astype(dtype)
    out = np.zeros((32, 3), dtype=np.int64)
    with sycl.buffer(x) as X, sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            rx = X.get_access(h, sycl.access_mode.read)
            o = O.get_access(h, sycl.access_mode.write)

            def k(it):
                g, i = it.get_group(), it.get_global_id(0)
                o[i, 0] = sycl.inclusive_scan_over_group(g, rx[i], sycl.plus())
                o[i, 1] = sycl.reduce_over_group(g, rx[i], sycl.multiplies()) % 1000
                o[i, 2] = sycl.joint_reduce(g, rx, 0, 32, sycl.plus(), 1)

            h.parallel_for(sycl.nd_range(sycl.range(32), sycl.range(32)), k)

        any_kernel_queue.submit(cg)
    wide = x.astype(np.int64 if np.dtype(dtype).kind == "i" else np.uint64)
    np.testing.assert_array_equal(out[:, 0], np.cumsum(wide))
    np.testing.assert_array_equal(out[:, 1], int(np.prod(wide)) % 1000)
    np.testing.assert_array_equal(out[:, 2], 1 + wide.sum())


def test_sub_group_dimensions(any_kernel_queue: sycl.queue) -> None:
    out = np.zeros(8, dtype=np.int64)
    with sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            o = O.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.nd_range(sycl.range(8), sycl.range(4)), lambda it: o.__setitem__(
                it.get_global_id(0), it.get_sub_group().dimensions * 10 + it.get_group().dimensions))

        any_kernel_queue.submit(cg)
    assert (out == 11).all()


@pytest.mark.parametrize(("expr", "match"), [
    ("sycl.shift_group_left(it.get_sub_group(), np.float16(rx[i]), 1)", "shift_group_left"),
    ("sycl.reduce_over_group(it.get_group(), rx[i] > 0, sycl.plus())", "reduce_over_group"),
    ("sycl.inclusive_scan_over_group(it.get_group(), float(rx[i]), sycl.bit_or())",
     "inclusive_scan_over_group"),
    ("sycl.group_broadcast(it.get_group(), complex(rx[i], 1.0)).real", "group_broadcast"),
])
def test_what_no_device_compiles_the_interpreter_refuses(any_kernel_queue: sycl.queue,
                                                         expr: str, match: str) -> None:
    """The host_debuggable device rejects the values and function objects the compiler does."""
    k = eval(f"lambda rx, o: lambda it: o.__setitem__(it.get_global_id(0), "
             f"(i := it.get_global_id(0), {expr})[1])", {"sycl": sycl, "np": np})
    x = np.arange(8, dtype=np.int32)
    out = np.zeros(8, dtype=np.float64)
    with pytest.raises(sycl.exception, match=match), sycl.buffer(x) as X, sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            rx = X.get_access(h, sycl.access_mode.read)
            o = O.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.nd_range(sycl.range(8), sycl.range(8)), k(rx, o))

        any_kernel_queue.submit(cg)


def test_keyword_arguments(any_kernel_queue: sycl.queue) -> None:
    """The spec's parameter names work as keywords: delta=, mask=, remote_local_id=, local_id=."""
    x = np.arange(16, dtype=np.int32) * 3
    out = np.zeros((16, 5), dtype=np.int32)
    with sycl.buffer(x) as X, sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            rx = X.get_access(h, sycl.access_mode.read)
            o = O.get_access(h, sycl.access_mode.write)

            def k(it):
                sg, i = it.get_sub_group(), it.get_global_id(0)
                o[i, 0] = sycl.shift_group_left(sg, rx[i], delta=1)
                o[i, 1] = sycl.shift_group_left(sg, rx[i], 1)
                o[i, 2] = sycl.permute_group_by_xor(sg, rx[i], mask=1) - sycl.permute_group_by_xor(
                    sg, rx[i], 1)
                o[i, 3] = sycl.select_from_group(sg, rx[i], remote_local_id=0) \
                    - sycl.group_broadcast(sg, rx[i], local_id=0)
                o[i, 4] = sycl.group_broadcast(it.get_group(), rx[i], local_id=5)

            h.parallel_for(sycl.nd_range(sycl.range(16), sycl.range(16)), k)

        any_kernel_queue.submit(cg)
    np.testing.assert_array_equal(out[:, 0], out[:, 1])
    assert (out[:, 2:4] == 0).all() and (out[:, 4] == 15).all()


def _shuffle_a_work_group(rx, o):
    return lambda it: o.__setitem__(it.get_global_id(0), sycl.shift_group_left(
        it.get_group(), rx[it.get_global_id(0)], 1))


def _lambda_as_op(rx, o):
    return lambda it: o.__setitem__(it.get_global_id(0), sycl.reduce_over_group(
        it.get_group(), rx[it.get_global_id(0)], lambda a, b: a + b))


def _joint_over_2d(rx, o):
    return lambda it: o.__setitem__(it.get_global_id(0), sycl.joint_reduce(
        it.get_group(), o, 0, 4, sycl.plus()))


@pytest.mark.parametrize(("make", "fragments"), [
    (_shuffle_a_work_group, ["sycl.shift_group_left(sycl.group<1>", "sg a sycl.sub_group",
                             "a work-group has no shuffles"]),
    (_lambda_as_op, ["sycl.reduce_over_group(sycl.group<1>, int32", "op a SYCL function object"]),
    (_joint_over_2d, ["sycl.joint_reduce(sycl.group<1>, sycl.accessor<float64, 2",
                      "data a 1-D accessor", "C++'s pointer pair"]),
])
def test_misused_group_function_is_named_with_its_usage(kq: sycl.queue, make, fragments) -> None:
    """A group function call the compiler refuses names the call, the user's line and how the
    function is called -- not Numba's 'No implementation of function'."""
    x = np.arange(8, dtype=np.int32)
    out = np.zeros((8, 2), dtype=np.float64)
    with pytest.raises(sycl.kernel_compile_error) as info, sycl.buffer(x) as X, \
            sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            rx = X.get_access(h, sycl.access_mode.read)
            o = O.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.nd_range(sycl.range(8), sycl.range(8)), make(rx, o))

        kq.submit(cg)
    msg = str(info.value)
    assert f"{__file__}:{make.__code__.co_firstlineno + 1}" in msg, msg
    assert "No implementation" not in msg, msg
    for f in fragments:
        assert f in msg, msg


def test_sub_group_ids_are_ids(any_kernel_queue: sycl.queue) -> None:
    """``sg.get_local_id()``/``sg.get_group_id()`` are ``id<1>`` (§4.9.1.8 ``id_type``):
    C++'s ``sg.get_local_id()[0]`` works, the id converts to an integer, and
    ``select_from_group`` takes it as ``remote_local_id``; the linear ones are integers."""
    n = 32
    out = np.zeros((6, n), np.int64)
    with sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            o = O.get_access(h, sycl.access_mode.write)

            def k(it):  # type: ignore[no-untyped-def]
                sg = it.get_sub_group()
                i = it.get_global_id(0)
                lid = sg.get_local_id()
                o[0, i] = lid[0]
                o[1, i] = sg.get_group_id()[0]
                o[2, i] = int(lid * 2) + 1000 * (lid == 0)
                o[3, i] = sycl.select_from_group(sg, i, lid ^ 1)
                o[4, i] = sg.get_local_linear_id() - lid[0] + sg.get_group_linear_id() * 0
                o[5, i] = sg.get_max_local_range()[0]

            h.parallel_for(sycl.nd_range(sycl.range(n), sycl.range(n)), k)
        any_kernel_queue.submit(cg)
    size = int(out[5, 0])
    lane, group = np.arange(n) % size, np.arange(n) // size
    np.testing.assert_array_equal(out[0], lane)
    np.testing.assert_array_equal(out[1], group)
    np.testing.assert_array_equal(out[2], 2 * lane + 1000 * (lane == 0))
    np.testing.assert_array_equal(out[3], np.arange(n) ^ 1)
    np.testing.assert_array_equal(out[4], 0)

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


@pytest.mark.parametrize("dtype", DTYPES + [np.int16])
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

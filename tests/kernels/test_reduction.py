"""sycl.reduction: every operator and dtype vs numpy, range and nd_range, custom combiners, errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pysycl as sycl

INIT = sycl.property.reduction.initialize_to_identity
INTS = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]
FLOATS = [np.float32, np.float64]
INT_OPS = ["plus", "multiplies", "minimum", "maximum", "bit_and", "bit_or", "bit_xor"]
FLOAT_OPS = ["plus", "multiplies", "minimum", "maximum"]


def _numpy_reduce(op: str, x: np.ndarray, old: np.generic | None) -> np.generic:
    dt = x.dtype
    with np.errstate(over="ignore"):
        if op == "plus":
            r = np.sum(x, dtype=dt if dt.kind in "iu" else np.float64)
        elif op == "multiplies":
            r = np.prod(x, dtype=dt if dt.kind in "iu" else np.float64)
        elif op == "minimum":
            r = x.min(initial=sycl.known_identity(op, dt))
        elif op == "maximum":
            r = x.max(initial=sycl.known_identity(op, dt))
        else:
            ufunc = {"bit_and": np.bitwise_and, "bit_or": np.bitwise_or,
                     "bit_xor": np.bitwise_xor}[op]
            r = ufunc.reduce(x, initial=sycl.known_identity(op, dt))
        if old is not None:
            r = {"plus": np.add, "multiplies": np.multiply, "minimum": np.minimum,
                 "maximum": np.maximum, "bit_and": np.bitwise_and, "bit_or": np.bitwise_or,
                 "bit_xor": np.bitwise_xor}[op](np.asarray(r).astype(dt)
                                                if dt.kind in "iu" else r, old)
    return r


def _values(rng: np.random.Generator, dtype: type, op: str, n: int) -> np.ndarray:
    dt = np.dtype(dtype)
    if op == "multiplies":  # no overflow: mostly ones, some -1 and 2 (exact in every type)
        if dt.kind == "f":  # products near 1 (no overflow, rounding within tolerance)
            return (rng.choice([1, -1], n) * rng.uniform(0.99, 1.01, n)).astype(dt)
        x = rng.choice([1, 1, 1, 2] + ([-1] if dt.kind != "u" else []), n)  # wraps exactly
        return x.astype(dt)
    if dt.kind == "f":
        return rng.uniform(-100, 100, n).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)


def _run_all_ops(q: sycl.queue, dtype: type, n: int, init: bool, seed: int) -> None:
    """One range kernel with one reduction per operator (several reductions in one kernel)."""
    ops = INT_OPS if np.dtype(dtype).kind in "iu" else FLOAT_OPS
    rng = np.random.default_rng(seed)
    xs = [_values(rng, dtype, op, n) for op in ops]
    olds = [_values(rng, dtype, op, 1) for op in ops]
    outs = [o.copy() for o in olds]
    props = [INIT()] if init else []
    bufs = [sycl.buffer(x if n else np.zeros(1, dtype)) for x in xs]
    obufs = [sycl.buffer(o) for o in outs]

    def cg(h: sycl.handler) -> None:
        accs = [b.get_access(h, sycl.access_mode.read) for b in bufs]
        reds = [sycl.reduction(ob, h, getattr(sycl, op)(), properties=props)
                for ob, op in zip(obufs, ops, strict=True)]
        if len(ops) == 7:
            a0, a1, a2, a3, a4, a5, a6 = accs

            def k(i, r0, r1, r2, r3, r4, r5, r6):
                r0 += a0[i]
                r1 *= a1[i]
                r2.combine(a2[i])
                r3.combine(a3[i])
                r4 &= a4[i]
                r5 |= a5[i]
                r6 ^= a6[i]
        else:
            a0, a1, a2, a3 = accs

            def k(i, r0, r1, r2, r3):
                r0 += a0[i]
                r1 *= a1[i]
                r2.combine(a2[i])
                r3.combine(a3[i])

        h.parallel_for(sycl.range(n), *reds, k)

    q.submit(cg).wait()
    for ob in obufs:
        ob.__exit__(None, None, None)
    for op, x, old, got in zip(ops, xs, olds, outs, strict=True):
        want = _numpy_reduce(op, x, None if init else old[0])
        if np.dtype(dtype).kind == "f" and op in ("plus", "multiplies"):
            np.testing.assert_allclose(got[0], want, rtol=1e-5 if dtype == np.float32 else 1e-12,
                                       atol=1e-3 if op == "plus" else 0, err_msg=op)
        else:
            assert got[0] == np.asarray(want).astype(dtype), (op, got[0], want)


@pytest.mark.parametrize("dtype", INTS + FLOATS, ids=lambda d: np.dtype(d).name)
def test_every_operator(any_kernel_queue: sycl.queue, dtype: type) -> None:
    sizes = [(1, False), (3, True), (257, False), (1000, True), (4099, False)]
    if any_kernel_queue.get_device().has(sycl.aspect.host_debuggable):
        sizes = sizes[:3]  # the interpreter is slow
    for seed, (n, init) in enumerate(sizes):
        _run_all_ops(any_kernel_queue, dtype, n, init, seed)


def test_empty_range_keeps_or_resets(any_kernel_queue: sycl.queue) -> None:
    kq = any_kernel_queue
    a = np.array([7], np.int32)
    b = np.array([7], np.int32)
    with sycl.buffer(a) as A, sycl.buffer(b) as B:
        def cg(h: sycl.handler) -> None:
            ra = sycl.reduction(A, h, sycl.plus())
            rb = sycl.reduction(B, h, sycl.maximum(), properties=[INIT()])
            h.parallel_for(sycl.range(0), ra, rb, lambda i, x, y: (x.combine(1), y.combine(1)))
        kq.submit(cg)
    assert a[0] == 7
    assert b[0] == np.iinfo(np.int32).min  # identity of maximum


def test_nd_range_2d_and_range_3d(any_kernel_queue: sycl.queue) -> None:
    kq = any_kernel_queue
    s1 = np.zeros(1, np.int64)
    s2 = np.zeros(1, np.int64)
    mx = np.zeros(1, np.int64)
    with sycl.buffer(s1) as S1, sycl.buffer(s2) as S2, sycl.buffer(mx) as MX:
        def cg(h: sycl.handler) -> None:
            r = sycl.reduction(S1, h, sycl.plus())
            m = sycl.reduction(MX, h, sycl.maximum())

            def k(it, acc, hi):
                v = it.get_global_id(0) * 1000 + it.get_global_id(1)
                acc += v
                hi.combine(it.get_group_linear_id())
            h.parallel_for(sycl.nd_range(sycl.range(12, 30), sycl.range(4, 6)), r, m, k)
        kq.submit(cg)

        def cg3(h: sycl.handler) -> None:
            r = sycl.reduction(S2, h, sycl.plus())
            h.parallel_for(sycl.range(5, 7, 3), r,
                           lambda it, acc: acc.combine(it[0] * 100 + it[1] * 10 + it[2]
                                                       + it.get_linear_id() * 100000))
        kq.submit(cg3)
    i, j = np.meshgrid(np.arange(12), np.arange(30), indexing="ij")
    assert s1[0] == (i * 1000 + j).sum()
    assert mx[0] == 3 * 5 - 1
    i, j, k = np.meshgrid(np.arange(5), np.arange(7), np.arange(3), indexing="ij")
    assert s2[0] == (i * 100 + j * 10 + k).sum() + 100000 * np.arange(5 * 7 * 3).sum()


def test_custom_combiner_and_spec_argument_order(any_kernel_queue: sycl.queue) -> None:
    kq = any_kernel_queue
    x = np.random.default_rng(3).uniform(-5, 5, 999).astype(np.float32)
    out = np.array([123.0], np.float32)
    out2 = np.array([10], np.int32)

    def absmax(a, b):
        return max(abs(a), abs(b))

    with sycl.buffer(x) as X, sycl.buffer(out) as O, sycl.buffer(out2) as O2:
        def cg(h: sycl.handler) -> None:
            rx = X.get_access(h, sycl.access_mode.read)
            r = sycl.reduction(O, h, absmax, identity=0.0, properties=[INIT()])
            r2 = sycl.reduction(O2.get_access(h, sycl.access_mode.read_write), h, 0,
                                lambda a, b: a + b)  # the spec's (var, h, identity, op)
            h.parallel_for(sycl.range(x.size), r, r2,
                           lambda i, m, c: (m.combine(rx[i]), c.combine(1)))
        kq.submit(cg)
    assert out[0] == np.abs(x).max()
    assert out2[0] == x.size + 10  # combined with the old value


def test_one_compile_for_many_submits(kq: sycl.queue) -> None:
    from pysycl._kernels.cache import kernels as _kernel_cache

    def total(values: np.ndarray) -> float:
        out = np.zeros(1, np.float32)
        with sycl.buffer(values) as V, sycl.buffer(out) as O:
            def cg(h: sycl.handler) -> None:
                v = V.get_access(h, sycl.access_mode.read)
                h.parallel_for(sycl.range(values.size), sycl.reduction(O, h, sycl.plus()),
                               lambda i, r: r.combine(v[i]))
            kq.submit(cg)
        return float(out[0])

    total(np.ones(10, np.float32))
    before = _kernel_cache.stats["compiles"]
    for n in (1, 100, 12345):
        assert total(np.ones(n, np.float32)) == n
    assert _kernel_cache.stats["compiles"] == before


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(0, 5000), wg=st.sampled_from([1, 7, 32, 64]), seed=st.integers(0, 2**16))
def test_float_sum_property(kq: sycl.queue, n: int, wg: int, seed: int) -> None:
    """range and nd_range sums of random float32 vs numpy (float rounding tolerance)."""
    x = np.random.default_rng(seed).standard_normal(n).astype(np.float32)
    got = np.zeros(2, np.float32)
    a = np.zeros(1, np.float32)
    b = np.zeros(1, np.float32)
    m = -(-max(n, 1) // wg) * wg
    xp = np.zeros(m, np.float32)
    xp[:n] = x
    with sycl.buffer(xp) as X, sycl.buffer(a) as A, sycl.buffer(b) as B:
        def cg(h: sycl.handler) -> None:
            rx = X.get_access(h, sycl.access_mode.read)
            h.parallel_for(sycl.range(n), sycl.reduction(A, h, sycl.plus()),
                           lambda i, r: r.combine(rx[i]))
        kq.submit(cg)

        def cg2(h: sycl.handler) -> None:
            rx = X.get_access(h, sycl.access_mode.read)

            def k(it, r):
                r += rx[it.get_global_id(0)]
            h.parallel_for(sycl.nd_range(sycl.range(m), sycl.range(wg)),
                           sycl.reduction(B, h, sycl.plus()), k)
        kq.submit(cg2)
    got[:] = a[0], b[0]
    want = x.astype(np.float64).sum()
    tol = 1e-5 * np.abs(x).sum() + 1e-6
    assert abs(got[0] - want) <= tol and abs(got[1] - want) <= tol, (got, want)


# ------------------------------------------------------------------- errors
def _submit(q: sycl.queue, cg) -> None:
    q.submit(cg).wait()


def test_variable_must_have_one_element(kq: sycl.queue) -> None:
    data = np.array([1, 2], np.int32)
    with sycl.buffer(data) as B:
        with pytest.raises(sycl.exception, match=r"test_reduction.py:\d+.*exactly one") as e:
            _submit(kq, lambda h: sycl.reduction(B, h, sycl.plus()))
        assert e.value.code() == sycl.errc.invalid
    assert list(data) == [1, 2]


def test_custom_combiner_needs_identity(kq: sycl.queue) -> None:
    with sycl.buffer(np.zeros(1, np.int32)) as B:
        with pytest.raises(sycl.exception, match="identity") as e:
            _submit(kq, lambda h: sycl.reduction(B, h, lambda a, b: a + b))
        assert e.value.code() == sycl.errc.invalid


def test_argument_type_errors(kq: sycl.queue) -> None:
    with sycl.buffer(np.zeros(1, np.float32)) as B:
        with pytest.raises(TypeError, match="integer type"):
            _submit(kq, lambda h: sycl.reduction(B, h, sycl.bit_and()))
        with pytest.raises(TypeError, match="combiner"):
            _submit(kq, lambda h: sycl.reduction(B, h, "plus"))
        with pytest.raises(TypeError, match=r"sycl\.reduction objects"):
            _submit(kq, lambda h: h.parallel_for(sycl.range(4), B, lambda i, r: None))
        with pytest.raises(sycl.exception, match=r"access_mode\.read") as e:
            _submit(kq, lambda h: sycl.reduction(B.get_access(h, sycl.access_mode.read), h,
                                                 sycl.plus()))
        assert e.value.code() == sycl.errc.invalid


def test_wrong_number_of_reducer_parameters(kq: sycl.queue) -> None:
    with sycl.buffer(np.zeros(1, np.int32)) as B:
        def cg(h: sycl.handler) -> None:
            h.parallel_for(sycl.range(4), sycl.reduction(B, h, sycl.plus()), lambda i: None)
        with pytest.raises(sycl.exception, match=r"test_reduction.py:\d+.*2 parameters") as e:
            _submit(kq, cg)
        assert e.value.code() == sycl.errc.invalid


def test_operator_must_match_reducer(kq: sycl.queue) -> None:
    data = np.array([5], np.int32)
    with sycl.buffer(data) as B:
        def cg(h: sycl.handler) -> None:
            def k(i, r):
                r += 1
            h.parallel_for(sycl.range(4), sycl.reduction(B, h, sycl.maximum()), k)
        with pytest.raises(sycl.kernel_compile_error,
                           match=r"test_reduction.py:\d+: the operator \+= on a sycl.reducer and an "
                                 r"int.*no operator op=.*sycl.plus") as e:
            _submit(kq, cg)
        assert e.value.code() == sycl.errc.kernel
    assert data[0] == 5


def test_bad_nd_range_leaves_data(kq: sycl.queue) -> None:
    data = np.array([5], np.int32)
    with sycl.buffer(data) as B:
        def cg(h: sycl.handler) -> None:
            h.parallel_for(sycl.nd_range(sycl.range(10), sycl.range(4)),
                           sycl.reduction(B, h, sycl.plus()), lambda it, r: r.combine(1))
        with pytest.raises(sycl.exception) as e:
            _submit(kq, cg)
        assert e.value.code() == sycl.errc.nd_range
    assert data[0] == 5


def test_captured_flag_is_not_folded_at_first_compile(kq: sycl.queue) -> None:
    """Regression: LiftCaptures left stale definitions; `if flag:` was folded to the first value."""
    def run(flag: object) -> int:
        o = np.zeros(1, np.int32)
        with sycl.buffer(o) as O:
            def cg(h: sycl.handler) -> None:
                w = O.get_access(h, sycl.access_mode.write)

                def k(i):
                    if flag:
                        w[0] = 1
                    else:
                        w[0] = 2
                h.parallel_for(sycl.range(1), k)
            kq.submit(cg)
        return int(o[0])

    assert [run(0), run(1), run(7), run(False), run(True), run(False)] == [2, 1, 1, 2, 1, 2]

"""``sycl.vec`` / ``sycl.marray`` in kernels: the compiled device against the host_debuggable
oracle and numpy (every construct; hypothesis over values, dtypes and sizes)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pysycl as sycl

HOST = sycl.aspect_selector(sycl.aspect.host_debuggable)
ALIAS = {np.int8: "char", np.uint8: "uchar", np.int16: "short", np.uint16: "ushort",
         np.int32: "int", np.uint32: "uint", np.int64: "long", np.uint64: "ulong",
         np.float32: "float", np.float64: "double"}


def _run(q: sycl.queue, make, src: np.ndarray, out: np.ndarray, items: int) -> np.ndarray:
    """Run ``make(x, o)`` over ``items`` work-items; returns a copy of ``out``."""
    out = out.copy()
    with sycl.buffer(src) as S, sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            x = S.get_access(h, sycl.access_mode.read)
            o = O.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.range(items), make(x, o))
        q.submit(cg)
    return out


def _both(make, src: np.ndarray, out: np.ndarray, items: int) -> tuple[np.ndarray, np.ndarray]:
    return (_run(sycl.queue(), make, src, out, items), _run(sycl.queue(HOST), make, src, out, items))


def test_construct_load_swizzle_store_convert() -> None:
    n = 8
    src = np.arange(4 * n, dtype=np.float32) - 7.5

    def make(x, o):  # type: ignore[no-untyped-def]
        def k(i):  # type: ignore[no-untyped-def]
            v = sycl.float4.load(i, x)
            w = sycl.float4(v.x(), v.y(), 0.0, v.w()) + sycl.float4(1.0)
            s = sycl.float4(w.wzyx().xy(), v.s2(), v[3]) * 2.0 - v
            (s + v.convert(np.int32).convert(np.float32)).store(i, o)
        return k

    dev, host = _both(make, src, np.zeros_like(src), n)
    v = src.reshape(n, 4)
    w = np.stack([v[:, 0], v[:, 1], np.zeros(n, np.float32), v[:, 3]], 1) + 1
    s = np.stack([w[:, 3], w[:, 2], v[:, 2], v[:, 3]], 1) * np.float32(2) - v
    expect = (s + np.trunc(v)).ravel()
    np.testing.assert_array_equal(dev, expect)
    np.testing.assert_array_equal(host, expect)


@settings(max_examples=15, deadline=None)
@given(dt=st.sampled_from(list(ALIAS)), n=st.sampled_from([2, 3, 4, 8, 16]),
       seed=st.integers(0, 2**32 - 1))
@pytest.mark.slow
def test_elementwise_arithmetic_matches_numpy_and_the_oracle(dt: type, n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    items = 5
    info = np.iinfo(dt) if np.dtype(dt).kind in "iu" else None
    lo, hi = (max(info.min, -1000), min(info.max, 1000)) if info else (-100, 100)
    src = rng.uniform(lo, hi, 2 * n * items).astype(dt)
    if info is None:
        src[src == 0] = 1
    else:
        src[src == 0] = 3
    vt = getattr(sycl, f"{ALIAS[dt]}{n}")

    def make(x, o):  # type: ignore[no-untyped-def]
        def k(i):  # type: ignore[no-untyped-def]
            a = vt.load(2 * i, x)
            b = vt.load(2 * i + 1, x)
            (a + b).store(6 * i, o)
            (a - b).store(6 * i + 1, o)
            (a * b).store(6 * i + 2, o)
            (a / b).store(6 * i + 3, o)
            (-a + 2).store(6 * i + 4, o)
            (a < b).as_(vt).store(6 * i + 5, o)
        return k

    dev, host = _both(make, src, np.zeros(6 * n * items, dt), items)
    ref = np.zeros(6 * n * items, dt).reshape(items, 6, n)
    a = src.reshape(items, 2, n)[:, 0]
    b = src.reshape(items, 2, n)[:, 1]
    with np.errstate(all="ignore"):
        ref[:, 0], ref[:, 1], ref[:, 2] = a + b, a - b, a * b
        if info is None:
            ref[:, 3] = a / b
        else:
            ref[:, 3] = np.trunc(a.astype(np.float64) / b.astype(np.float64)).astype(np.int64
                                                                                        ).astype(dt)
        ref[:, 4] = -a + dt(2)
    ref[:, 5] = np.where(a < b, -1, 0).astype(f"i{np.dtype(dt).itemsize}").view(dt)
    np.testing.assert_array_equal(host, ref.ravel())
    np.testing.assert_array_equal(dev, ref.ravel())


def test_integer_operators_and_comparisons() -> None:
    src = np.array([7, -7, 5, -3, 2, 3, -2, 1], np.int32)

    def make(x, o):  # type: ignore[no-untyped-def]
        def k(i):  # type: ignore[no-untyped-def]
            a = sycl.int4.load(0, x)
            b = sycl.int4.load(1, x)
            (a // b).store(0, o)
            (a % b).store(1, o)
            ((a & 6) | (b ^ 1)).store(2, o)
            ((a << 2) >> b.s1()).store(3, o)
            (~a).store(4, o)
            (a >= b).store(5, o)
            (a != 7).store(6, o)
        return k

    dev, host = _both(make, src, np.zeros(28, np.int32), 1)
    a, b = src[:4], src[4:]
    expect = np.concatenate([np.trunc(a / b).astype(np.int32), np.fmod(a, b), (a & 6) | (b ^ 1),
                             (a << 2) >> (b[1] & 31), ~a, np.where(a >= b, -1, 0),
                             np.where(a != 7, -1, 0)]).astype(np.int32)
    np.testing.assert_array_equal(host, expect)
    np.testing.assert_array_equal(dev, expect)


def test_host_vec_class() -> None:
    v = sycl.float4(1, 2, 3, 4)
    assert v.size() == len(v) == 4 and v.dtype == np.float32
    assert v.y() == 2 and v.s3() == 4 and v.zw().to_numpy().tolist() == [3, 4]
    assert (v == 2.0).to_numpy().tolist() == [0, -1, 0, 0]
    assert (v < v).dtype == np.int32 and (sycl.double2(1.0) > 0).dtype == np.int64
    assert sycl.float4(2.0).to_numpy().tolist() == [2, 2, 2, 2]
    assert sycl.vec(1, 2, dtype=np.int16).dtype == np.int16
    assert sycl.vec(7, dtype=np.uint8, num_elements=3).to_numpy().tolist() == [7, 7, 7]
    assert sycl.float2(1.5, -2.5).convert(np.int32).to_numpy().tolist() == [1, -2]
    assert sycl.float4(1.0).as_(sycl.uint4)[0] == 0x3F800000
    assert (sycl.mint3(1, 2, 3) < 2).to_numpy().tolist() == [True, False, False]
    assert sycl.marray(1, 2, 3, 4, 5, dtype=np.float32).size() == 5
    with pytest.raises(AttributeError):
        sycl.mfloat4(1.0).x()  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        bool(v)
    with pytest.raises(TypeError):
        sycl.vec(1, 2, 3, 4, 5, dtype=np.float32)
    with pytest.raises(TypeError):
        sycl.float4(1.0).as_(sycl.int2)


def test_geometric_functions(any_kernel_queue: sycl.queue) -> None:
    rng = np.random.default_rng(3)
    src = rng.uniform(-3, 3, 8 * 4).astype(np.float32)

    def make(x, o):  # type: ignore[no-untyped-def]
        def k(i):  # type: ignore[no-untyped-def]
            a = sycl.float4.load(2 * i, x)
            b = sycl.float4.load(2 * i + 1, x)
            c3 = sycl.cross(a.xyz(), b.xyz())
            n = sycl.normalize(a)
            sycl.float4(sycl.dot(a, b), sycl.length(a), sycl.distance(a, b), sycl.dot(a.x(), b.x())
                        ).store(3 * i, o)
            sycl.float4(c3, sycl.length(sycl.float3(0.0))).store(3 * i + 1, o)
            (n + sycl.cross(a, b)).store(3 * i + 2, o)
        return k

    out = _run(any_kernel_queue, make, src, np.zeros(4 * 3 * 4, np.float32), 4).reshape(4, 3, 4)
    a = src.reshape(4, 2, 4)[:, 0].astype(np.float64)
    b = src.reshape(4, 2, 4)[:, 1].astype(np.float64)
    c = np.cross(a[:, :3], b[:, :3])
    kw = {"rtol": 2e-6, "atol": 2e-6}
    np.testing.assert_allclose(out[:, 0, 0], (a * b).sum(1), **kw)
    np.testing.assert_allclose(out[:, 0, 1], np.linalg.norm(a, axis=1), **kw)
    np.testing.assert_allclose(out[:, 0, 2], np.linalg.norm(a - b, axis=1), **kw)
    np.testing.assert_allclose(out[:, 0, 3], a[:, 0] * b[:, 0], **kw)
    np.testing.assert_allclose(out[:, 1, :3], c, **kw)
    assert (out[:, 1, 3] == 0).all()
    norm = a / np.linalg.norm(a, axis=1)[:, None]
    np.testing.assert_allclose(out[:, 2], norm + np.concatenate([c, np.zeros((4, 1))], 1), **kw)


def test_usm_pointer_load_store(any_kernel_queue: sycl.queue) -> None:
    q = any_kernel_queue
    n = 6
    host = np.arange(8 * n, dtype=np.float64)
    p = sycl.malloc_device(host.size, q, dtype=np.float64)
    r = sycl.malloc_device(3 * n, q, dtype=np.float64)
    q.memcpy(p, host, host.nbytes).wait()

    def k(i):  # type: ignore[no-untyped-def]
        v = sycl.double8.load(i, p)
        (v.s024() + v.s135() * 10.0).store(i, r)

    q.parallel_for(sycl.range(n), k).wait()
    out = np.empty(3 * n, np.float64)
    q.copy(r, out, out.size).wait()
    v = host.reshape(n, 8)
    np.testing.assert_array_equal(out.reshape(n, 3), v[:, [0, 2, 4]] + v[:, [1, 3, 5]] * 10)
    sycl.free(p, q)
    sycl.free(r, q)


def test_marray_comparisons_give_bools(any_kernel_queue: sycl.queue) -> None:
    src = np.array([1, 5, 3, 8, 2], np.int32)
    out = np.zeros(5, np.int32)

    def make(x, o):  # type: ignore[no-untyped-def]
        def k(i):  # type: ignore[no-untyped-def]
            m = sycl.mint4(x[0], x[1], x[2], x[3])
            c = m > x[4]
            o[0] = c[0]
            o[1] = c[1]
            o[2] = (m * 2)[3]
            o[3] = len(m)
            o[4] = c.convert(np.int32)[3]
        return k

    res = _run(any_kernel_queue, make, src, out, 1)
    assert res.tolist() == [0, 1, 16, 4, 1]


def test_bad_vector_use_is_a_compile_error_naming_the_line(kq: sycl.queue) -> None:
    out = np.zeros(4, np.float32)
    with sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            o = O.get_access(h, sycl.access_mode.write)

            def k(i):  # type: ignore[no-untyped-def]
                v = sycl.float4(1.0)
                o[i] = (v + sycl.int4(1))[0]
            h.parallel_for(sycl.range(4), k)
        with pytest.raises(sycl.kernel_compile_error, match=r"test_vec\.py:\d+"):
            kq.submit(cg)


def test_numpy_scalars_and_scalar_shifts_on_the_left() -> None:
    # Accessor elements are numpy scalars on the host_debuggable device: x[k] * v must be a
    # vector there too (numpy once turned it into an ndarray), and 2 << v is the spec's.
    src = np.arange(8, dtype=np.int32) + 1

    def make(x, o):  # type: ignore[no-untyped-def]
        def k(i):  # type: ignore[no-untyped-def]
            v = sycl.int4.load(0, x)
            (x[5] * v - x[6]).store(0, o)
            (x[1] << v).store(1, o)
            (x[7] >> v).store(2, o)
        return k

    dev, host = _both(make, src, np.zeros(12, np.int32), 1)
    a = src[:4]
    expect = np.concatenate([6 * a - 7, 2 << a, 8 >> a]).astype(np.int32)
    np.testing.assert_array_equal(host, expect)
    np.testing.assert_array_equal(dev, expect)
    assert isinstance(np.float32(2) * sycl.float4(1.0), sycl.vec)
    assert (np.float64(1) - sycl.float2(3.0, 4.0)).to_numpy().tolist() == [-2, -3]


@pytest.mark.parametrize("expr", ["v[4]", "v[-1]", "v.s01()[2]", "t[2, 0]", "t[0, -1]", "u[4]"])
def test_a_constant_index_out_of_bounds_is_an_error_on_both_devices(expr: str) -> None:
    ns: dict = {}
    exec(f"def make(x, o):\n    def k(i):\n        v = sycl.float4(1.0)\n"
         f"        t = sycl.private_array(np.float32, (2, 3))\n"
         f"        u = sycl.private_array(np.float32, 4)\n        o[i] = {expr}\n    return k\n",
         {"sycl": sycl, "np": np}, ns)
    src = np.zeros(4, np.float32)
    with pytest.raises(sycl.kernel_compile_error, match=r"out of bounds.*do not wrap around"):
        _run(sycl.queue(), ns["make"], src, src, 1)
    with pytest.raises(sycl.exception, match="IndexError"):
        _run(sycl.queue(HOST), ns["make"], src, src, 1)


def test_the_host_vector_rejects_what_kernels_reject() -> None:
    v = sycl.float4(1, 2, 3, 4)
    hq = sycl.queue(HOST)
    p = sycl.malloc_shared(4, hq, dtype=np.float32)
    for bad in (lambda: np.sqrt(v), lambda: sycl.float4(sycl.mfloat2(1, 2), 3, 4),
                lambda: sycl.float4((1, 2, 3, 4)), lambda: sycl.mbool2(True) + 1, lambda: ~v,
                lambda: sycl.dot(v, sycl.double4(1)), lambda: sycl.length(sycl.half2(1)),
                lambda: sycl.cross(sycl.float2(1), sycl.float2(1)), lambda: sycl.length(2),
                lambda: sycl.distance(v, sycl.mfloat4(1)), lambda: v[4], lambda: v[-1],
                lambda: sycl.int4.load(0, p), lambda: v.store(0, p.view(np.int32))):
        with pytest.raises((TypeError, IndexError)):
            bad()
    sycl.free(p, hq)
    with np.errstate(over="raise"):  # C++ conversion: no warning, as in kernels
        assert np.isinf(sycl.float2(1e40).to_numpy()).all()


def test_a_1d_item_or_id_indexes_a_vector() -> None:
    """``v[i]`` with a 1-D item or id (C++: ``item<1>``/``id<1>`` convert to size_t)."""
    src = np.arange(4, dtype=np.float32) * 10 + 1

    def make(x, o):  # type: ignore[no-untyped-def]
        def k(i):  # type: ignore[no-untyped-def]
            v = sycl.float4.load(0, x)
            o[i] = v[i] + v[sycl.id(3) - i] * 100
        return k

    dev, host = _both(make, src, np.zeros(4, np.float32), 4)
    np.testing.assert_array_equal(dev, src + src[::-1] * 100)
    np.testing.assert_array_equal(host, dev)


@pytest.mark.parametrize("off", [0, 1, 2, 3, 4])  # elements: 16-byte aligned at 0 and 4 only
def test_vectors_through_usm_pointers_at_any_alignment(any_kernel_queue: sycl.queue,
                                                       off: int) -> None:
    # on PTX a 16-byte (8-byte) vector of global memory is one access where its address is
    # aligned, element accesses elsewhere: both must move the same elements
    q = any_kernel_queue
    n = 8
    host = np.arange(4 * n + 8, dtype=np.float32) * 1.5
    half = (np.arange(8 * n + 8) % 251).astype(np.float16)
    p = sycl.malloc_device(host.size, q, dtype=np.float32)
    h = sycl.malloc_device(half.size, q, dtype=np.float16)
    r = sycl.malloc_device(host.size, q, dtype=np.float32)
    rh = sycl.malloc_device(half.size, q, dtype=np.float16)
    r2 = sycl.malloc_device(host.size, q, dtype=np.float32)
    q.memcpy(p, host, host.nbytes).wait()
    q.memcpy(h, half, half.nbytes).wait()
    q.memset(r, 0, host.nbytes).wait()
    q.memset(rh, 0, half.nbytes).wait()
    q.memset(r2, 0, host.nbytes).wait()

    def k(i):  # type: ignore[no-untyped-def]
        v = sycl.float4.load(i, p + off)
        (v * 2.0).store(i, r + off)
        sycl.half8.load(i, h + off).store(i, rh + off)
        sycl.float2.load(2 * i + 1, p + off).store(2 * i + 1, r2 + off)

    q.parallel_for(sycl.range(n), k).wait()
    out, outh, out2 = np.empty_like(host), np.empty_like(half), np.empty_like(host)
    q.memcpy(out, r, host.nbytes).wait()
    q.memcpy(outh, rh, half.nbytes).wait()
    q.memcpy(out2, r2, host.nbytes).wait()
    want = np.zeros_like(host)
    want[off:off + 4 * n] = host[off:off + 4 * n] * 2
    np.testing.assert_array_equal(out, want)
    wanth = np.zeros_like(half)
    wanth[off:off + 8 * n] = half[off:off + 8 * n]
    np.testing.assert_array_equal(outh, wanth)
    want2 = np.zeros_like(host)
    odd = np.concatenate([np.arange(4 * i + 2, 4 * i + 4) for i in range(n)]) + off
    want2[odd] = host[odd]
    np.testing.assert_array_equal(out2, want2)
    for m in (p, h, r, rh, r2):
        sycl.free(m, q)

"""Kernel features compiled to SPIR-V and run on the OpenCL device, vs numpy."""

from __future__ import annotations

import math

import numpy as np
import pytest

from .conftest import RW, R, W, spirv_validate


def add_one(x):
    return x + 1


def twice_plus_one(x):
    return 2 * add_one(x) - 1  # helper calling a helper


OFFSET = 3


def uses_global(x):
    return x + OFFSET  # a helper's global is frozen as a constant


def test_nested_def_with_statements(run, tmp_path):
    a = np.arange(64, dtype=np.int32)
    out = np.zeros_like(a)
    ra, wo = R(a), W(out)

    def kern(it):
        i = it[0]
        acc = 0
        for k in range(i % 5):
            acc += k
        j = 0
        while j < 3:
            acc += 1
            j += 1
        if i % 2 == 0:
            wo[i] = acc + ra[i]
            return
        pair = (acc, ra[i])
        wo[i] = pair[0] - pair[1]

    ck = run(kern, a.size)
    expect = np.array(
        [sum(range(i % 5)) + 3 + a[i] if i % 2 == 0 else sum(range(i % 5)) + 3 - a[i] for i in range(64)]
    )
    np.testing.assert_array_equal(out, expect)
    spirv_validate(ck.binary, tmp_path)


def test_item_queries_2d(run, tmp_path):
    shape = (5, 7)
    ids = np.zeros(shape, np.int64)
    lin = np.zeros(shape, np.int64)
    rng = np.zeros(shape, np.int64)
    wi, wl, wr = W(ids), W(lin), W(rng)

    def kern(it):
        i, j = it[0], it.get_id(1)
        wi[i, j] = 100 * it.get_id()[0] + j
        wl[it] = it.get_linear_id()
        wr[it.get_id()] = it.get_range(0) * 10 + it.get_range()[1]

    ck = run(kern, shape)
    ii, jj = np.indices(shape)
    np.testing.assert_array_equal(ids, 100 * ii + jj)
    np.testing.assert_array_equal(lin, ii * shape[1] + jj)
    np.testing.assert_array_equal(rng, np.full(shape, 57))
    spirv_validate(ck.binary, tmp_path)


def test_item_3d_runtime_dim(run):
    shape = (2, 3, 4)
    out = np.zeros(shape, np.int64)
    wo = W(out)

    def kern(it):
        s = 0
        for d in range(3):
            s = s * 10 + it[d]
        wo[it[0], it[1], it[2]] = s

    run(kern, shape)
    ii, jj, kk = np.indices(shape)
    np.testing.assert_array_equal(out, ii * 100 + jj * 10 + kk)


def test_item_1d_arithmetic(run):
    n = 32
    out = np.zeros((n, 5), np.int64)
    wo = W(out)

    def kern(it):
        wo[int(it), 0] = it + 1
        wo[int(it), 1] = 2 * it
        wo[int(it), 2] = int(it)
        wo[int(it), 3] = 1 if it < 10 else 0
        wo[int(it), 4] = it.get_range()[0] + it.get_range().size()

    run(kern, n)
    i = np.arange(n)
    np.testing.assert_array_equal(out[:, 0], i + 1)
    np.testing.assert_array_equal(out[:, 1], 2 * i)
    np.testing.assert_array_equal(out[:, 2], i)
    np.testing.assert_array_equal(out[:, 3], (i < 10).astype(np.int64))
    np.testing.assert_array_equal(out[:, 4], 2 * n)


def test_single_task_sum(run, tmp_path):
    a = np.arange(100, dtype=np.float64)
    out = np.zeros(1, np.float64)
    ra, wo = R(a), W(out)

    def kern():
        s = 0.0
        for k in range(ra.get_range()[0]):
            s += ra[k]
        wo[0] = s

    ck = run(kern, None)
    assert out[0] == a.sum()
    assert "fp64" in ck.required_aspects
    spirv_validate(ck.binary, tmp_path)


def test_augmented_assignment_and_read_write(run):
    a = np.arange(10, dtype=np.float32)
    b = np.ones_like(a)
    rwa, rb = RW(a), R(b)
    expect = a * 3 + 1
    run(lambda i: rwa.__setitem__(i, rwa[i] * 3), a.size)

    def inc(i):
        rwa[i] += rb[i]

    run(inc, a.size)
    np.testing.assert_array_equal(a, expect)


def test_accessor_range_size_and_offset(run):
    base = np.arange(6 * 8, dtype=np.int32).reshape(6, 8)
    out = np.zeros((2, 3), np.int32)
    sizes = np.zeros(3, np.int64)
    ra = R(base, offset=(1, 2), range=(2, 3))
    wo, ws = W(out), W(sizes)

    def kern(it):
        wo[it] = ra[it]
        if it.get_linear_id() == 0:
            ws[0] = ra.get_range()[0]
            ws[1] = ra.get_range()[1]
            ws[2] = ra.size()

    run(kern, (2, 3))
    np.testing.assert_array_equal(out, base[1:3, 2:5])
    np.testing.assert_array_equal(sizes, [2, 3, 6])


def test_device_functions(run):
    a = np.arange(16, dtype=np.int64)
    out = np.zeros((16, 3), np.int64)
    ra, wo = R(a), W(out)
    k = 5

    def local_helper(x):
        return x * k  # closure helper; its cell is frozen as a constant

    def kern(i):
        wo[i, 0] = twice_plus_one(ra[i])
        wo[i, 1] = local_helper(ra[i])
        wo[i, 2] = uses_global(ra[i])

    run(kern, a.size)
    np.testing.assert_array_equal(out[:, 0], 2 * (a + 1) - 1)
    np.testing.assert_array_equal(out[:, 1], a * 5)
    np.testing.assert_array_equal(out[:, 2], a + 3)


UNARY = ["sqrt", "exp", "log", "log2", "log10", "sin", "cos", "tan", "asin", "acos",
         "atan", "sinh", "cosh", "tanh", "fabs", "erf", "erfc", "expm1", "log1p",
         "asinh", "atanh", "gamma", "lgamma"]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_math_unary(run, dtype, tmp_path):
    x = np.linspace(0.05, 0.95, 37).astype(dtype)
    out = np.zeros((len(UNARY), x.size), dtype)
    rx, wo = R(x), W(out)

    def kern(i):
        v = rx[i]
        wo[0, i] = math.sqrt(v)
        wo[1, i] = math.exp(v)
        wo[2, i] = math.log(v)
        wo[3, i] = math.log2(v)
        wo[4, i] = math.log10(v)
        wo[5, i] = math.sin(v)
        wo[6, i] = math.cos(v)
        wo[7, i] = math.tan(v)
        wo[8, i] = math.asin(v)
        wo[9, i] = math.acos(v)
        wo[10, i] = math.atan(v)
        wo[11, i] = math.sinh(v)
        wo[12, i] = math.cosh(v)
        wo[13, i] = math.tanh(v)
        wo[14, i] = math.fabs(-v)
        wo[15, i] = math.erf(v)
        wo[16, i] = math.erfc(v)
        wo[17, i] = math.expm1(v)
        wo[18, i] = math.log1p(v)
        wo[19, i] = math.asinh(v)
        wo[20, i] = math.atanh(v)
        wo[21, i] = math.gamma(v)
        wo[22, i] = math.lgamma(v)

    ck = run(kern, x.size)
    for row, name in enumerate(UNARY):
        ref = np.array([getattr(math, name)(float(v)) for v in x])
        if name == "fabs":
            ref = np.abs(x)
        rtol = 2e-6 if dtype == np.float32 else 1e-13
        np.testing.assert_allclose(out[row], ref, rtol=rtol, atol=0, err_msg=name)
    spirv_validate(ck.binary, tmp_path)
    assert ("fp64" in ck.required_aspects) == (dtype == np.float64)


def test_math_binary_and_predicates(run):
    x = np.linspace(-3, 3, 25)
    y = np.linspace(0.5, 2.5, 25)
    out = np.zeros((12, x.size))
    rx, ry, wo = R(x), R(y), W(out)

    def kern(i):
        a, b = rx[i], ry[i]
        wo[0, i] = math.atan2(a, b)
        wo[1, i] = math.pow(b, a)
        wo[2, i] = math.hypot(a, b)
        wo[3, i] = math.copysign(b, a)
        wo[4, i] = math.fmod(a, b)
        wo[5, i] = math.floor(a)
        wo[6, i] = math.ceil(a)
        wo[7, i] = math.trunc(a)
        wo[8, i] = math.isnan(a / 0.0 * 0.0)
        wo[9, i] = math.isinf(a / 0.0)
        wo[10, i] = math.isfinite(a)
        wo[11, i] = b ** a + abs(a) + min(a, b) + max(a, b)

    with np.errstate(divide="ignore", invalid="ignore"):
        run(kern, x.size)
        np.testing.assert_allclose(out[0], np.arctan2(x, y), rtol=1e-13)
        np.testing.assert_allclose(out[1], y**x, rtol=1e-13)
        np.testing.assert_allclose(out[2], np.hypot(x, y), rtol=1e-13)
        np.testing.assert_allclose(out[3], np.copysign(y, x))
        np.testing.assert_allclose(out[4], np.fmod(x, y), rtol=1e-13, atol=1e-15)
        np.testing.assert_array_equal(out[5], np.floor(x))
        np.testing.assert_array_equal(out[6], np.ceil(x))
        np.testing.assert_array_equal(out[7], np.trunc(x))
        np.testing.assert_array_equal(out[8], np.isnan(x / 0.0 * 0.0))
        np.testing.assert_array_equal(out[9], np.isinf(x / 0.0))
        np.testing.assert_array_equal(out[10], 1.0)
        np.testing.assert_allclose(out[11], y**x + abs(x) + np.minimum(x, y) + np.maximum(x, y), rtol=1e-13)


INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


@pytest.mark.parametrize("dtype", [*INT_DTYPES, np.float16, np.float32, np.float64])
def test_dtypes_roundtrip_and_scalar(run, dtype, tmp_path):
    a = (np.arange(20) % 7).astype(dtype)
    out = np.zeros_like(a)
    ra, wo = R(a), W(out)
    s = dtype(3)

    def kern(i):
        wo[i] = ra[i] * s + ra[i]

    ck = run(kern, a.size)
    np.testing.assert_array_equal(out, (a * s + a).astype(dtype))
    spirv_validate(ck.binary, tmp_path, "spv1.2" if dtype == np.float16 else "opencl2.2")
    if dtype == np.float16:
        assert "fp16" in ck.required_aspects
    if dtype != np.float64:
        assert "fp64" not in ck.required_aspects or dtype == np.uint64


def test_bool_scalar_and_accessor(run):
    a = np.array([True, False, True, True])
    out = np.zeros(4, np.bool_)
    ra, wo = R(a), W(out)
    flip = True

    def kern(i):
        wo[i] = ra[i] != flip

    run(kern, 4)
    np.testing.assert_array_equal(out, ~a)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex(run, dtype):
    a = (np.arange(8) + 1j * np.arange(8)[::-1]).astype(dtype)
    out = np.zeros_like(a)
    ra, wo = R(a), W(out)

    def kern(i):
        z = ra[i]
        wo[i] = z * z + z.conjugate() - z.real

    ck = run(kern, a.size)
    np.testing.assert_allclose(out, a * a + a.conj() - a.real, rtol=1e-6)
    assert ("fp64" in ck.required_aspects) == (dtype == np.complex128)


def test_numpy_scalar_constructors(run):
    a = np.linspace(0, 10, 11)
    out = np.zeros(11, np.float32)
    outi = np.zeros(11, np.int32)
    ra, wo, woi = R(a), W(out), W(outi)

    def kern(i):
        wo[i] = np.float32(ra[i]) * np.float32(0.5)
        woi[i] = np.int32(ra[i]) + int(ra[i]) + int(float(i))

    run(kern, a.size)
    np.testing.assert_array_equal(out, (a * 0.5).astype(np.float32))
    np.testing.assert_array_equal(outi, 2 * a.astype(np.int32) + np.arange(11))


def test_matmul(run):
    n, m, p = 17, 13, 9
    rng = np.random.default_rng(0)
    a = rng.random((n, m), dtype=np.float32)
    b = rng.random((m, p), dtype=np.float32)
    c = np.zeros((n, p), np.float32)
    ra, rb, wc = R(a), R(b), W(c)

    def mm(it):
        i, j = it[0], it[1]
        s = np.float32(0)
        for k in range(ra.get_range()[1]):
            s += ra[i, k] * rb[k, j]
        wc[i, j] = s

    ck = run(mm, (n, p))
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)
    assert ck.required_aspects == frozenset()


def test_integer_ops_and_round(run):
    a = np.arange(-8, 8, dtype=np.int64)
    f = np.linspace(-2.5, 2.5, 16)
    out = np.zeros((16, 5), np.int64)
    ra, rf, wo = R(a), R(f), W(out)

    def kern(i):
        x = ra[i]
        wo[i, 0] = x // 3
        wo[i, 1] = x % 3
        wo[i, 2] = x**2
        wo[i, 3] = round(rf[i])
        wo[i, 4] = x // 0  # numpy error model: no exception on the device

    run(kern, 16)
    np.testing.assert_array_equal(out[:, 0], a // 3)
    np.testing.assert_array_equal(out[:, 1], a % 3)
    np.testing.assert_array_equal(out[:, 2], a**2)
    np.testing.assert_array_equal(out[:, 3], [round(v) for v in f])

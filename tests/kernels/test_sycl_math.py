"""SYCL 2020 math (§4.17.5) and common (§4.17.6) functions: ``sycl.sqrt``, ``sycl.clamp`` ...

Each function runs in a kernel on the device kernels compile for and on the host_debuggable
device, on numbers and vectors, and is compared with the host reference (numpy, float64
rounded once) within OpenCL's ulp limit for the built-in (exact functions bit for bit);
integer ``min``/``max``/``clamp`` and the exact functions with hypothesis.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pysycl as sycl

SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 3.0, 0.1, -7.25, 1e-3, 100.0, -100.0,
           1e30, -1e30, math.inf, -math.inf, math.nan]
X32 = np.array(SPECIAL + list(np.linspace(-9.7, 9.7, 13)), np.float32)
#: exact functions (a correctly rounded or exact result): compared bit for bit
EXACT = {"ceil", "fabs", "floor", "rint", "round", "trunc", "copysign", "fdim", "fmax", "fmin",
         "fmod", "maxmag", "minmag", "nextafter", "remainder", "sqrt", "clamp", "min", "max",
         "step", "sign", "mix", "degrees", "radians", "smoothstep", "logb", "fma"}
UNARY = ["acos", "acosh", "acospi", "asin", "asinh", "asinpi", "atan", "atanh", "atanpi", "cbrt",
         "ceil", "cos", "cosh", "cospi", "erf", "erfc", "exp", "exp2", "exp10", "expm1", "fabs",
         "floor", "log", "log2", "log10", "log1p", "logb", "rint", "round", "rsqrt", "sin", "sinh",
         "sinpi", "sqrt", "tan", "tanh", "tanpi", "trunc", "degrees", "radians", "sign"]
BINARY = ["atan2", "atan2pi", "copysign", "fdim", "fmax", "fmin", "fmod", "hypot", "maxmag",
          "minmag", "nextafter", "pow", "powr", "remainder", "min", "max", "step"]
TERNARY = ["fma", "mad", "clamp", "mix", "smoothstep"]


def _close(got: np.ndarray, want: np.ndarray, ulps: int) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    g, w = got[~nan], want[~nan]
    if ulps == 0:
        np.testing.assert_array_equal(g, w)
        return
    inf = np.isinf(w)
    np.testing.assert_array_equal(g[inf], w[inf])
    tol = ulps * np.spacing(np.abs(w[~inf])) + np.finfo(w.dtype).smallest_subnormal
    assert np.all(np.abs(g[~inf].astype(np.float64) - w[~inf]) <= tol), (g, w)


def _run(q: sycl.queue, kernel_of, n: int, nout: int, dtype, *ins: np.ndarray) -> np.ndarray:
    out = np.zeros((nout, n), dtype)
    with contextlib.ExitStack() as stack:
        O = stack.enter_context(sycl.buffer(out))
        bufs = [stack.enter_context(sycl.buffer(a)) for a in ins]

        def cg(h: sycl.handler) -> None:
            accs = [b.get_access(h, sycl.access_mode.read) for b in bufs]
            h.parallel_for(sycl.range(n), kernel_of(O.get_access(h, sycl.access_mode.write), *accs))

        q.submit(cg)
    return out


def _unary(f):
    def of(o, x):
        def kern(i):
            o[0, i] = f(x[i])
            v = f(sycl.float4(x[i], x[i], 1.0, x[i]))  # a vector, elementwise
            o[1, i] = v[3]
        return kern
    return of


@pytest.mark.parametrize("name", UNARY)
def test_unary_float32(any_kernel_queue: sycl.queue, name: str) -> None:
    f = getattr(sycl, name)
    got = _run(any_kernel_queue, _unary(f), X32.size, 2, np.float32, X32)
    want = np.array([f(v) for v in X32])
    ulps = 0 if name in EXACT else 4
    _close(got[0], want, ulps)
    _close(got[1], want, ulps)


def _nary(f, nargs):
    def binary(o, x, y, z):
        def kern(i):
            o[0, i] = f(x[i], y[i])
            o[1, i] = f(sycl.float2(x[i], 0.0), sycl.float2(y[i], 1.0))[0]
        return kern

    def ternary(o, x, y, z):
        def kern(i):
            o[0, i] = f(x[i], y[i], z[i])
            o[1, i] = f(sycl.mfloat2(x[i], 0.0), sycl.mfloat2(y[i], 1.0),
                        sycl.mfloat2(z[i], 2.0))[0]
        return kern
    return binary if nargs == 2 else ternary


@pytest.mark.parametrize("name", BINARY + TERNARY)
def test_binary_ternary_float32(any_kernel_queue: sycl.queue, name: str) -> None:
    f = getattr(sycl, name)
    rng = np.random.default_rng(len(name))
    x = np.concatenate([X32, rng.uniform(-8, 8, 16).astype(np.float32)])
    y = np.roll(x, 7)
    z = np.roll(x, 3)
    if name == "smoothstep":  # edges in order
        x, y = np.minimum(x, y) - 1, np.maximum(x, y) + 1
    nargs = 2 if name in BINARY else 3
    got = _run(any_kernel_queue, _nary(f, nargs), x.size, 2, np.float32, x, y, z)
    want = np.array([f(*a[:nargs]) for a in zip(x, y, z, strict=True)])
    ulps = 0 if name in EXACT else 1 if name == "mad" else 16
    if name == "smoothstep":
        ulps = 0 if any_kernel_queue.get_device().has(sycl.aspect.host_debuggable) else 2
    _close(got[0], want, ulps)
    _close(got[1], want, ulps)


def _tuples(o, x, n):
    def kern(i):
        s, c = sycl.sincos(x[i])
        o[0, i], o[1, i] = s, c
        fr, ip = sycl.modf(x[i])
        o[2, i], o[3, i] = fr, ip
        fr, fl = sycl.fract(x[i])
        o[4, i], o[5, i] = fr, fl
        m, e = sycl.frexp(x[i])
        o[6, i], o[7, i] = m, e
        r, qq = sycl.remquo(x[i], 0.75)
        o[8, i], o[9, i] = r, qq % 8 if qq >= 0 else -(-qq % 8)
        lg, sg = sycl.lgamma_r(x[i])
        o[10, i], o[11, i] = lg, sg
        o[12, i] = sycl.ldexp(x[i], n[i])
        o[13, i] = sycl.pown(x[i], n[i])
        o[14, i] = sycl.rootn(x[i], n[i])
        o[15, i] = sycl.ilogb(x[i]) if math.isfinite(x[i]) and x[i] != 0 else 0
    return kern


def test_out_parameters_as_tuples(any_kernel_queue: sycl.queue) -> None:
    x = X32
    n = np.resize(np.array([3, -2, 0, 1, 5, -3, 2], np.int32), x.size)
    got = _run(any_kernel_queue, lambda o, a, b: _tuples(o, a, b), x.size, 16, np.float64, x, n)
    rows = [[], []] + [[] for _ in range(14)]
    for v, k in zip(x, n, strict=True):
        vals = (*sycl.sincos(v), *sycl.modf(v), *sycl.fract(v), *sycl.frexp(v))
        r, qq = sycl.remquo(v, np.float32(0.75))
        lg, sg = sycl.lgamma_r(v)
        ex = (int(sycl.ilogb(v)) if np.isfinite(v) and v != 0 else 0)
        vals += (r, math.copysign(abs(int(qq)) % 8, int(qq)) if qq else 0, lg, sg,
                 sycl.ldexp(v, k), sycl.pown(v, k), sycl.rootn(v, k), ex)
        for row, val in zip(rows, vals, strict=True):
            row.append(float(val))
    want = np.array(rows)
    for k, ulps in enumerate([4, 4, 0, 0, 0, 0, 0, 0, 0, 0, 16, 0, 0, 16, 16, 0]):
        if k == 10:  # lgamma: no OpenCL bound near its zeros and poles; positive x only
            mask = x > 0
            _close(got[k][mask].astype(np.float32), want[k][mask].astype(np.float32), ulps)
            continue
        _close(got[k].astype(np.float32), want[k].astype(np.float32), ulps)


def _minmax_kernel(o, a, b, c):
    def kern(i):
        o[0, i] = sycl.min(a[i], b[i])
        o[1, i] = sycl.max(a[i], b[i])
        o[2, i] = sycl.clamp(a[i], b[i], c[i])
        o[3, i] = sycl.clamp(sycl.int2(a[i], b[i]), -5, 5)[0]
        o[4, i] = sycl.min(a[i], 7)
    return kern


_I32 = st.integers(-(2**31), 2**31 - 1)


@settings(max_examples=20)
@given(st.lists(st.tuples(_I32, _I32, _I32), min_size=1, max_size=24))
def test_integer_min_max_clamp(kernel_device: sycl.device, host_device: sycl.device,
                               triples: list) -> None:
    a, b, c = (np.array(t, np.int32) for t in zip(*triples, strict=True))
    lo, hi = np.minimum(b, c), np.maximum(b, c)
    want = np.array([np.minimum(a, lo), np.maximum(a, lo), np.minimum(np.maximum(a, lo), hi),
                     np.clip(a, -5, 5), np.minimum(a, 7)], np.int64)
    for dev in (kernel_device, host_device):
        got = _run(sycl.queue(dev), _minmax_kernel, a.size, 5, np.int64, a, lo, hi)
        np.testing.assert_array_equal(got, want)


def _f64_f16(o, x, h):
    def kern(i):
        o[0, i] = sycl.sqrt(sycl.fabs(x[i]))
        o[1, i] = sycl.clamp(x[i], -1.0, 1.0)
        o[2, i] = sycl.fmax(h[i], 0.5)  # float16 stays float16 (weak literal)
        o[3, i] = sycl.mix(h[i], h[i] * 2, np.float16(0.25))
        o[4, i] = sycl.exp(x[i])
    return kern


def test_float64_and_float16(any_kernel_queue: sycl.queue) -> None:
    dev = any_kernel_queue.get_device()
    if not (dev.has(sycl.aspect.fp64) and dev.has(sycl.aspect.fp16)):
        pytest.skip("needs aspect.fp64 and aspect.fp16")
    x = np.array([*SPECIAL, 2.0, -3.5], np.float64)
    with np.errstate(over="ignore"):
        h = x.astype(np.float16)
    got = _run(any_kernel_queue, _f64_f16, x.size, 5, np.float64, x, h)
    assert sycl.fmax(h[0], 0.5).dtype == np.float16
    _close(got[0], np.array([sycl.sqrt(sycl.fabs(v)) for v in x]), 0)
    _close(got[1], np.array([sycl.clamp(v, -1.0, 1.0) for v in x]), 0)
    _close(got[2].astype(np.float16), np.array([sycl.fmax(v, 0.5) for v in h]), 0)
    _close(got[3].astype(np.float16),
           np.array([sycl.mix(v, v * 2, np.float16(0.25)) for v in h]), 0)
    _close(got[4], np.array([sycl.exp(v) for v in x]), 4)


def _native_kernel(o, x):
    def kern(i):
        v = sycl.fabs(x[i]) + 0.5
        o[0, i] = sycl.native.sin(v)
        o[1, i] = sycl.native.divide(v, 3.0)
        o[2, i] = sycl.native.recip(v)
        o[3, i] = sycl.half_precision.exp(v)
        o[4, i] = sycl.half_precision.log2(sycl.float2(v, 1.0))[0]
        o[5, i] = sycl.native.powr(v, 1.5)
    return kern


def test_native_and_half_precision(any_kernel_queue: sycl.queue) -> None:
    x = np.linspace(-4, 4, 17).astype(np.float32)
    got = _run(any_kernel_queue, _native_kernel, x.size, 6, np.float32, x)
    v = np.abs(x) + np.float32(0.5)
    want = [np.sin(v), v / 3, 1 / v, np.exp(v), np.log2(v), v ** 1.5]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w.astype(np.float32), rtol=2e-3, atol=1e-3)


def test_wrong_types_are_named() -> None:
    with pytest.raises(TypeError, match=r"sycl\.sqrt takes genfloat"):
        sycl.sqrt(sycl.int4(1))
    with pytest.raises(TypeError, match="float32"):
        sycl.native.sin(np.float64(1.0))
    with pytest.raises(TypeError, match="different element types"):
        sycl.fmin(sycl.float2(1.0), sycl.double2(1.0))
    with pytest.raises(TypeError, match="integer"):
        sycl.pown(np.float32(2), 1.5)


def test_wrong_types_in_a_kernel(kq: sycl.queue) -> None:
    def of(o, x):
        def kern(i):
            o[0, i] = sycl.sqrt(sycl.int2(x[i], 1))[0]
        return kern

    x = np.arange(4, dtype=np.int32)
    with pytest.raises(sycl.exception, match=r"test_sycl_math.py:\d+: sycl.sqrt\(.*takes genfloat"):
        _run(kq, of, 4, 1, np.float32, x)


def test_host_values_and_types() -> None:
    assert sycl.sqrt(np.float32(4)) == 2 and type(sycl.sqrt(np.float32(4))) is np.float32
    assert type(sycl.sqrt(2)) is np.float64
    assert type(sycl.clamp(np.int8(9), 0, 3)) is np.int8 and sycl.clamp(np.int8(9), 0, 3) == 3
    assert sycl.modf(np.float32(-2.5)) == (-0.5, -2.0)
    assert sycl.frexp(np.float32(8)) == (0.5, 4)
    assert sycl.sign(np.float32(-0.0)) == 0 and np.signbit(sycl.sign(np.float32(-0.0)))
    assert sycl.round(np.float32(2.5)) == 3 and sycl.round(np.float32(-0.5)) == -1
    assert isinstance(sycl.fmin(sycl.float4(1, 2, 3, 4), 2.5), sycl.vec)
    m = sycl.fmax(sycl.marray(1.0, 5.0, dtype=np.float32), 2.0)
    assert isinstance(m, sycl.marray) and list(m) == [2.0, 5.0]


def _fract_kernel(o, x, h):
    def kern(i):
        o[0, i] = sycl.fract(x[i])[0]
        o[1, i] = sycl.fract(h[i])[0]
        o[2, i] = sycl.fract(sycl.float2(x[i], 0.5))[0][0]
    return kern


def test_fract_stays_below_one(any_kernel_queue: sycl.queue) -> None:
    """A tiny negative x: x - floor(x) rounds to 1 in the element type; OpenCL's fract
    gives the largest value below 1 of that type (the host computed in float64 and rounded
    to 1.0, the device's float16 clamped in float32)."""
    dev = any_kernel_queue.get_device()
    x = np.array([-1e-10, -1e-30, -3e-8, -0.25], np.float32)
    h = np.array([-1e-4, -6e-8, -1e-4, -0.25], np.float16)
    below = [np.nextafter(t(1), t(0)) for t in (np.float32, np.float16)]
    for v in x[:3]:
        assert sycl.fract(v) == (below[0], np.float32(-1))
    for v in h[:3]:
        assert sycl.fract(v) == (below[1], np.float16(-1))
    assert list(sycl.fract(sycl.float2(-1e-10, 0.5))[0]) == [below[0], 0.5]
    if not dev.has(sycl.aspect.fp16):
        h = np.full_like(h, 0.5)
    got = _run(any_kernel_queue, _fract_kernel, x.size, 3, np.float64, x, h)
    _close(got[0].astype(np.float32), np.array([sycl.fract(v)[0] for v in x]), 0)
    _close(got[1].astype(np.float16), np.array([sycl.fract(v)[0] for v in h]), 0)
    _close(got[2].astype(np.float32), np.array([sycl.fract(v)[0] for v in x]), 0)


def _remquo_kernel(o, x, y):
    def kern(i):
        r, qq = sycl.remquo(x[i], y[i])
        o[0, i], o[1, i] = r, qq % 8 if qq >= 0 else -(-qq % 8)
    return kern


def test_remquo_low_bits_of_large_quotients(any_kernel_queue: sycl.queue) -> None:
    """The quotient's low bits are exact past 2**53 (the host took them from a float64
    ``(x - r) / y``, wrong in about half of these cases)."""
    from fractions import Fraction
    rng = np.random.default_rng(7)
    x = (rng.uniform(1, 100, 32) * 10.0 ** rng.integers(5, 30, 32)).astype(np.float32)
    x[::2] *= -1
    y = rng.uniform(0.1, 10, 32).astype(np.float32)
    exact = [round(Fraction(float(a)) / Fraction(float(b))) for a, b in zip(x, y, strict=True)]
    want = [math.copysign(abs(k) % 8, k) if k else 0 for k in exact]
    host = [sycl.remquo(a, b)[1] for a, b in zip(x, y, strict=True)]
    assert [math.copysign(abs(int(q)) % 8, q) if q else 0 for q in host] == want
    got = _run(any_kernel_queue, _remquo_kernel, x.size, 2, np.float64, x, y)
    assert list(got[1]) == want
    _close(got[0].astype(np.float32), np.array([sycl.remquo(a, b)[0] for a, b in
                                                zip(x, y, strict=True)]), 0)

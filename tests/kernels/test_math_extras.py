"""``math.ldexp``, ``frexp``, ``nextafter``, ``gcd`` and ``log(x, base)`` give Python's results.

On the device kernels compile for and on the host_debuggable device (the oracle),
compared with Python's ``math`` on the same values; hypothesis draws them. Their
PTX assembles (libdevice's ``__nv_ldexp``, ``__nv_frexp``, ``__nv_nextafter``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pysycl as sycl
from tests.conftest import ptxas_check

N = 16
SPECIAL = [0.0, -0.0, 1.0, -1.5, 0.1, 5e-324, 1e308, math.inf, -math.inf, math.nan]
_I64 = st.integers(-(2**63) + 1, 2**63 - 1)


def _kernel(o, x, y, k, a, b):
    def kern(i):
        m, e = math.frexp(x[i])
        o[0, i] = m
        o[1, i] = e
        o[2, i] = math.ldexp(y[i], int(k[i]))  # Python's ldexp takes an int
        o[3, i] = math.nextafter(x[i], y[i])
        o[4, i] = math.gcd(a[i], b[i])
        o[5, i] = math.log(abs(y[i]) + 2.0, abs(x[i]) + 1.5) if math.isfinite(x[i]) else 0.0
    return kern


def _expected(x: np.ndarray, y: np.ndarray, k: np.ndarray, a: np.ndarray,
              b: np.ndarray) -> np.ndarray:
    rows = [[math.frexp(v)[0] for v in x], [math.frexp(v)[1] for v in x],
            [math.ldexp(v, int(n)) for v, n in zip(y, k, strict=True)],
            [math.nextafter(u, v) for u, v in zip(x, y, strict=True)],
            [math.gcd(int(p), int(r)) for p, r in zip(a, b, strict=True)],
            [math.log(abs(v) + 2.0, abs(u) + 1.5) if math.isfinite(u) else 0.0
             for u, v in zip(x, y, strict=True)]]
    return np.array(rows, np.float64)


def _run(q: sycl.queue, x: np.ndarray, y: np.ndarray, k: np.ndarray, a: np.ndarray,
         b: np.ndarray) -> np.ndarray:
    out = np.zeros((6, x.size))
    with (sycl.buffer(out) as O, sycl.buffer(x) as X, sycl.buffer(y) as Y, sycl.buffer(k) as K,
          sycl.buffer(a) as A, sycl.buffer(b) as B):
        def cg(h: sycl.handler) -> None:
            rd = sycl.access_mode.read
            h.parallel_for(sycl.range(x.size), _kernel(
                O.get_access(h, sycl.access_mode.write), X.get_access(h, rd), Y.get_access(h, rd),
                K.get_access(h, rd), A.get_access(h, rd), B.get_access(h, rd)))

        q.submit(cg)
    return out


def _check(q: sycl.queue, x: list[float], y: list[float], k: list[int], a: list[int],
           b: list[int]) -> None:
    args = (np.array(x), np.array(y), np.array(k, np.int32), np.array(a, np.int64),
            np.array(b, np.int64))
    got = _run(q, *args)
    want = _expected(*args)
    np.testing.assert_array_equal(got[:5], want[:5])  # exact: no rounding in these
    np.testing.assert_allclose(got[5], want[5], rtol=4e-16)


@pytest.mark.parametrize("where", ["compiled", "host"])
@settings(max_examples=12)
@given(data=st.data())
def test_ldexp_frexp_nextafter_gcd_log_match_python(request: pytest.FixtureRequest, where: str,
                                                   data: st.DataObject) -> None:
    dev = request.getfixturevalue("kernel_device" if where == "compiled" else "host_device")
    if not dev.has(sycl.aspect.fp64):
        pytest.skip("float64 kernel")
    x = data.draw(st.lists(st.floats(allow_subnormal=True) | st.sampled_from(SPECIAL),
                           min_size=N, max_size=N))
    # ldexp's results stay finite: Python (the host device) raises OverflowError beyond
    y = data.draw(st.lists(st.floats(-1e3, 1e3), min_size=N, max_size=N))
    k = data.draw(st.lists(st.integers(-1100, 1010), min_size=N, max_size=N))
    a = data.draw(st.lists(_I64 | st.integers(-100, 100), min_size=N, max_size=N))
    b = data.draw(st.lists(_I64 | st.integers(-100, 100), min_size=N, max_size=N))
    _check(sycl.queue(dev), x, y, k, a, b)


def test_edge_values(any_kernel_queue: sycl.queue) -> None:
    if not any_kernel_queue.get_device().has(sycl.aspect.fp64):
        pytest.skip("float64 kernel")
    n = len(SPECIAL)
    _check(any_kernel_queue, SPECIAL, [1.0, -0.0, 3.0, 1e-3, -7.5, 0.0, 2.0, 1.0, 1.0, 1.0],
           [0, 5, -1074, -1100, 1010, 1, 0, 3, -3, 0],
           [0, 0, 12, -12, 2**62, 7, 1, 48, -(2**63) + 1, 35][:n],
           [0, 5, 0, 18, 2**61, 7, -1, 180, 3, -49][:n])


def test_an_exponent_beyond_int_saturates(kq: sycl.queue) -> None:
    """A 64-bit exponent is not wrapped to 32 bits: 2**40 overflows to inf, -2**40 to 0
    (Python raises OverflowError for the first, as the host device does)."""
    big = 2**40
    out = np.zeros(4, np.float64)
    with sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            o = O.get_access(h, sycl.access_mode.write)

            def kern(i):
                n = np.int64(big) * (1 - 2 * (i[0] % 2))
                o[i] = math.ldexp(1.0 + i[0], n) + math.ldexp(np.float32(1), np.uint64(big) * 0)
            h.parallel_for(sycl.range(4), kern)

        kq.submit(cg)
    assert out.tolist() == [math.inf, 1.0, math.inf, 1.0]


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_types(kq: sycl.queue, dt: type) -> None:
    """float32 stays float32 in ldexp/frexp/log(x, 2) (no fp64 needed); nextafter is
    Python's float64 step, np.nextafter numpy's step in the argument's type."""
    if dt is np.float64 and not kq.get_device().has(sycl.aspect.fp64):
        pytest.skip("no fp64")
    x = np.array([1.0, 3.0, 0.75, 1024.0], dt)
    out = np.zeros((4, 4), dt)
    nxt = np.zeros(4, np.float64)
    with sycl.buffer(x) as X, sycl.buffer(out) as O, sycl.buffer(nxt) as NX:
        def cg(h: sycl.handler) -> None:
            rx = X.get_access(h, sycl.access_mode.read)
            o = O.get_access(h, sycl.access_mode.write)
            nx = NX.get_access(h, sycl.access_mode.write)

            def kern(i):
                m, e = math.frexp(rx[i])
                o[0, i] = math.ldexp(m, e + 1)
                o[1, i] = math.log(rx[i], 2)
                o[2, i] = np.nextafter(rx[i], dt(2))
                o[3, i] = math.gcd(int(rx[i]), 6)
                if dt is np.float64:
                    nx[i] = math.nextafter(rx[i], 2.0)
            h.parallel_for(sycl.range(4), kern)

        kq.submit(cg)
    np.testing.assert_array_equal(out[0], 2 * x)
    np.testing.assert_allclose(out[1], np.log2(x), rtol=4e-7 if dt is np.float32 else 1e-15)
    np.testing.assert_array_equal(out[2], np.nextafter(x, dt(2)))
    assert out[3].tolist() == [1, 3, 6, 2]
    if dt is np.float64:
        assert nxt.tolist() == [math.nextafter(v, 2.0) for v in x.tolist()]


def test_compiles_to_ptx(kq: sycl.queue, ptx_images: list) -> None:
    x = np.array([0.5, 3.0, math.inf, 6.0], np.float32)
    out = np.zeros(4, np.float32)
    with sycl.buffer(x) as X, sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            rx = X.get_access(h, sycl.access_mode.read)
            o = O.get_access(h, sycl.access_mode.write)

            def kern(i):
                m, e = math.frexp(rx[i])
                o[i] = math.ldexp(m, e) + np.nextafter(rx[i], rx[i]) + math.gcd(e, 4)
            h.parallel_for(sycl.range(4), kern)

        kq.submit(cg)
    assert out.tolist() == [5.0, 8.0, math.inf, 13.0]
    (img,) = ptx_images
    ptx = img.binary.decode()
    assert "__nv_" not in ptx and ".extern" not in ptx and "_Z" not in ptx
    ptxas_check(img.binary)

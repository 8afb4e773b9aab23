"""The SYCL math functions compile to PTX with nothing left to link: libdevice calls,
and formulas (``targets/ptx/math_formulas.py``) for the built-ins libdevice lacks
(``acospi``, ``tanpi``, ``powr``, ``pown``, ``rootn``, ``maxmag``, ``ilogb``, ``remquo``,
``native.divide`` ...). The kernel runs where the test runs (on an NVIDIA GPU: the
PTX itself) and its results equal the host device's within a few ulp."""

from __future__ import annotations

import numpy as np
import pytest

import pysycl as sycl
from tests.conftest import ptxas_check

ROWS = 16


def _run(q: sycl.queue, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    out = np.zeros((ROWS, x.size), x.dtype)
    with sycl.buffer(x) as X, sycl.buffer(y) as Y, sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            a = X.get_access(h, sycl.access_mode.read)
            b = Y.get_access(h, sycl.access_mode.read)
            o = O.get_access(h, sycl.access_mode.write)

            def k(i):  # type: ignore[no-untyped-def]
                u, v = a[i], b[i]
                o[0, i], o[1, i], o[2, i] = sycl.acospi(u), sycl.asinpi(u), sycl.atanpi(v)
                o[3, i], o[4, i] = sycl.atan2pi(u, v), sycl.tanpi(v)
                o[5, i], o[6, i] = sycl.powr(abs(v), u), sycl.pown(v, 3)
                o[7, i], o[8, i] = sycl.rootn(v, 3), sycl.maxmag(u, v)
                o[9, i] = sycl.minmag(u, v)
                o[10, i] = sycl.ilogb(v)
                r, qq = sycl.remquo(v, u)
                o[11, i], o[12, i] = r, qq % 8
                o[13, i] = sycl.sqrt(abs(v)) + sycl.clamp(v, -1.0, 1.0)

            h.parallel_for(sycl.range(x.size), k)
        q.submit(cg)
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sycl_math_compiles_to_ptx_and_matches_the_host(kq: sycl.queue, hq: sycl.queue,
                                                        ptx_images: list, dtype: type) -> None:
    if dtype == np.float64 and not kq.get_device().has(sycl.aspect.fp64):
        pytest.skip("no fp64")
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, 64).astype(dtype)
    y = (rng.uniform(-20, 20, 64) + 0.25).astype(dtype)
    got, want = _run(kq, x, y), _run(hq, x, y)
    ulps = 64 * np.finfo(dtype).eps  # OpenCL's limits (tanpi: 6 ulp) plus the reference's own
    np.testing.assert_allclose(got[:10], want[:10], rtol=ulps, atol=0)
    np.testing.assert_array_equal(got[10], want[10])
    np.testing.assert_allclose(got[11], want[11], rtol=0, atol=4 * np.finfo(dtype).eps * 20)
    np.testing.assert_allclose(got[13], want[13], rtol=4 * np.finfo(dtype).eps)
    (img,) = ptx_images
    ptx = img.binary.decode()
    assert "_Z" not in ptx and ".extern" not in ptx
    ptxas_check(img.binary)

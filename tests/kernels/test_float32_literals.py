"""float32 with Python literals stays float32 (numpy 2's weak scalars, ``overloads/float32.py``).

Expressions mixing float32 values with float, int and bool literals are computed on
float32 bit patterns drawn by hypothesis (subnormals, infinities and NaNs included);
the SPIR-V device's bits must equal numpy's and the host device's, and the kernel
must not need fp64.
"""

from __future__ import annotations

import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import pysycl as sycl

ROWS = 9
SPECIAL = [0x00000000, 0x80000000, 0x00000001, 0x3DCCCCCD, 0x3F800000, 0x7F7FFFFF, 0x7F800000,
           0xFF800000, 0x7FC00000, 0x3E800000, 0xBF000000]


def _reference(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    f = np.float32
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = np.stack([(x * f(1.1) + f(0.3)) * (x - f(0.7)), x / f(3) + f(1), x - f(7),
                        x // f(0.3), x % f(0.7), x * np.int16(3) + True,
                        np.array([max(v, f(0.25)) for v in x], np.float32),
                        np.array([min(v, f(-0.5), f(0.5)) for v in x], np.float32),
                        x * f(1e-40)])
        cmp = np.stack([x > f(0.1), x == f(0.1), x <= 2])
    return out, cmp


def _run(q: sycl.queue, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    out = np.zeros((ROWS, x.size), np.float32)
    cmp = np.zeros((3, x.size), np.bool_)
    three = np.int16(3)
    with sycl.buffer(x) as X, sycl.buffer(out) as O, sycl.buffer(cmp) as C:
        def cg(h: sycl.handler) -> None:
            a = X.get_access(h, sycl.access_mode.read)
            o = O.get_access(h, sycl.access_mode.write)
            c = C.get_access(h, sycl.access_mode.write)

            def k(i: sycl.item) -> None:
                v = a[i]
                o[0, i] = (v * 1.1 + 0.3) * (v - 0.7)
                o[1, i], o[2, i] = v / 3 + 1, v - 7
                o[3, i], o[4, i] = v // 0.3, v % 0.7
                o[5, i] = v * three + True
                o[6, i], o[7, i] = max(v, 0.25), min(v, -0.5, 0.5)
                o[8, i] = v * 1e-40
                c[0, i], c[1, i], c[2, i] = v > 0.1, v == 0.1, v <= 2

            h.parallel_for(sycl.range(x.size), k)

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # the host device's inf/nan
            q.submit(cg)
    return out, cmp


@settings(max_examples=15, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(SPECIAL), st.integers(0, 2**32 - 1)),
                min_size=32, max_size=32))
def test_float32_with_literals_matches_numpy(kernel_device: sycl.device, host_device: sycl.device,
                                             bits: list[int]) -> None:
    x = np.array(bits, np.uint32).view(np.float32)
    want, want_cmp = _reference(x)
    for dev in (kernel_device, host_device):
        got, cmp = _run(sycl.queue(dev), x)
        same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
        assert same.all(), (str(dev), x[~same.any(axis=0)], got[~same], want[~same])
        np.testing.assert_array_equal(cmp, want_cmp, err_msg=str(dev))

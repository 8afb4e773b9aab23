"""float16 arithmetic rounds to half after each operation, as numpy float16 does.

One kernel computes ``+ - * /``, ``sqrt``, negation, ``abs``, ``min``/``max``,
comparisons and expressions with Python literals (weak, numpy 2's NEP 50) on float16
values drawn as bit patterns (subnormals, infinities and NaNs included); the device's
bits must equal numpy's, on the SPIR-V device and on the host_debuggable device.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pysycl as sycl

ROWS = 12
SPECIAL_BITS = [0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x3C00, 0xBC00, 0x7BFF, 0xFBFF,
                0x7C00, 0xFC00, 0x7E00, 0x7C01, 0xFE00, 0x3555]


def _reference(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    h = np.float16
    with np.errstate(all="ignore"):
        out = np.stack([x + y, x - y, x * y, x / y, np.sqrt(x), x * x + x,
                        x * h(2.1) - h(1), -x + abs(y), (x + h(0.1)) * y,
                        x * h(3), np.sqrt(np.abs(y)) * y, x * h(100000)])
    cmp = np.stack([x < y, x == y, x >= h(0.1), x != y])
    return out, cmp


def _run(q: sycl.queue, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    out = np.zeros((ROWS, x.size), np.float16)
    cmp = np.zeros((4, x.size), np.bool_)
    with sycl.buffer(x) as X, sycl.buffer(y) as Y, sycl.buffer(out) as O, sycl.buffer(cmp) as C:
        def cg(h: sycl.handler) -> None:
            a = X.get_access(h, sycl.access_mode.read)
            b = Y.get_access(h, sycl.access_mode.read)
            o = O.get_access(h, sycl.access_mode.write)
            c = C.get_access(h, sycl.access_mode.write)

            def k(i: sycl.item) -> None:
                u = a[i]
                v = b[i]
                o[0, i] = u + v
                o[1, i] = u - v
                o[2, i] = u * v
                o[3, i] = u / v
                o[4, i] = np.sqrt(u)
                o[5, i] = u * u + u
                o[6, i] = u * 2.1 - 1
                o[7, i] = -u + abs(v)
                t = u
                t += 0.1
                t *= v
                o[8, i] = t
                o[9, i] = u * np.int8(3)
                o[10, i] = math.sqrt(abs(v)) * v
                o[11, i] = u * 100000
                c[0, i] = u < v
                c[1, i] = u == v
                c[2, i] = u >= 0.1
                c[3, i] = u != v

            h.parallel_for(sycl.range(x.size), k)

        with np.errstate(all="ignore"):  # the host device computes with numpy scalars
            q.submit(cg)
    return out, cmp


def _same_bits(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Equal bits, or both NaN (NaN payloads are not specified by IEEE arithmetic)."""
    return (got.view(np.uint16) == want.view(np.uint16)) | (np.isnan(got) & np.isnan(want))


def _check(q: sycl.queue, xb: list[int], yb: list[int]) -> None:
    x = np.array(xb, np.uint16).view(np.float16)
    y = np.array(yb, np.uint16).view(np.float16)
    want, want_cmp = _reference(x, y)
    got, got_cmp = _run(q, x, y)
    for r in range(ROWS):
        bad = ~_same_bits(got[r], want[r])
        assert not bad.any(), (f"row {r}: x={x[bad][:4]} y={y[bad][:4]} got={got[r][bad][:4]} "
                               f"want={want[r][bad][:4]}")
    np.testing.assert_array_equal(got_cmp, want_cmp)


def _min_max_row(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    # Python's min/max: the first extreme value is kept (max(nan, 1) is nan, max(1, nan) 1).
    return np.array([min(a, b) + max(a, np.float16(0.3)) for a, b in zip(x, y, strict=True)],
                    np.float16)


bits = st.integers(0, 0xFFFF)


@pytest.mark.parametrize("where", ["compiled", "host"])
def test_float16_arithmetic_matches_numpy_bits(where: str, kernel_device: sycl.device,
                                               host_device: sycl.device) -> None:
    q = sycl.queue(kernel_device if where == "compiled" else host_device)

    @settings(max_examples=20)
    @given(xb=st.lists(bits, min_size=48, max_size=48),
           yb=st.lists(bits, min_size=48, max_size=48))
    def prop(xb: list[int], yb: list[int]) -> None:
        _check(q, SPECIAL_BITS + xb, SPECIAL_BITS[::-1] + yb)

    prop()


def test_float16_every_value(kq: sycl.queue) -> None:
    """All 65536 float16 values against a shuffled copy (``sqrt`` on every value)."""
    xb = np.arange(65536, dtype=np.uint32)
    yb = np.random.default_rng(13).permutation(xb)
    _check(kq, xb.tolist(), yb.tolist())


def test_float16_min_max_like_python(any_kernel_queue: sycl.queue) -> None:
    x = np.array([1.0, np.nan, 2.0, -0.0, 0.25, 7.0], np.float16)
    y = np.array([np.nan, 1.0, 2.0, 0.0, 0.5, -7.0], np.float16)
    out = np.zeros_like(x)
    with sycl.buffer(x) as X, sycl.buffer(y) as Y, sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            a = X.get_access(h, sycl.access_mode.read)
            b = Y.get_access(h, sycl.access_mode.read)
            o = O.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.range(x.size), lambda i: o.__setitem__(
                i, min(a[i], b[i]) + max(a[i], 0.3)))

        any_kernel_queue.submit(cg)
    want = _min_max_row(x, y)
    assert _same_bits(out, want).all(), (out, want)


def test_float16_kernel_requires_fp16(kq: sycl.queue) -> None:
    x = np.ones(4, np.float16)
    with sycl.buffer(x) as X:
        def cg(h: sycl.handler) -> None:
            a = X.get_access(h, sycl.access_mode.read_write)
            h.parallel_for(sycl.range(4), lambda i: a.__setitem__(i, a[i] * 3.0 + a[i]))

        if not kq.get_device().has(sycl.aspect.fp16):
            with pytest.raises(sycl.exception) as ei:
                kq.submit(cg)
            assert ei.value.code() == sycl.errc.kernel_not_supported
            return
        kq.submit(cg)
    np.testing.assert_array_equal(x, np.full(4, 4.0, np.float16))

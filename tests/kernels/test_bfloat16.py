"""``sycl.ext.oneapi.bfloat16``: float32 -> bfloat16 rounds to nearest even (NaN kept),
bfloat16 -> float32 is exact; on the host, the SPIR-V device and the host_debuggable
device, against an independent reference (nearest of the two neighbours, in float64)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pysycl as sycl
from pysycl.ext.oneapi import bfloat16

SPECIAL = [0x00000000, 0x80000000, 0x00000001, 0x3F808000, 0x3F818000, 0x3F80FFFF, 0x3F7FFFFF,
           0x7F7FFFFF, 0x7F7F8000, 0xFF7F8000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001,
           0xFF800001, 0x7FFFFFFF, 0x007FFFFF, 0x00008000, 0x00018000]


def reference(u: int) -> int:
    """bfloat16 bits nearest to float32 bits ``u``, ties to the even one."""
    f = np.uint32(u).view(np.float32)
    if np.isnan(f):
        return -1  # any NaN
    lo = u >> 16
    if (u & 0xFFFF) == 0:
        return lo
    hi = lo + 1
    x = float(f)
    dlo = abs(x - float(np.uint32(lo << 16).view(np.float32)))
    hi_val = float(np.uint32((hi & 0xFFFF) << 16).view(np.float32))
    if np.isinf(hi_val):  # rounding up past the largest finite: inf sits at 2**128
        hi_val = np.copysign(2.0 ** 128, x)
    dhi = abs(x - hi_val)
    if dlo < dhi or (dlo == dhi and lo % 2 == 0):
        return lo
    return hi & 0xFFFF


def _check_bits(u: np.ndarray, got: np.ndarray) -> None:
    for ui, g in zip(u.tolist(), got.tolist(), strict=True):
        want = reference(ui)
        if want < 0:
            assert (g & 0x7F80) == 0x7F80 and (g & 0x7F) != 0, hex(g)  # a NaN
            assert (g >> 15) == (ui >> 31)  # its sign
        else:
            assert g == want, (hex(ui), hex(g), hex(want))


def _kernel_round_trip(q: sycl.queue, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    bits = np.zeros(x.size, bfloat16.dtype)
    back = np.zeros(x.size, np.float32)
    with sycl.buffer(x) as X, sycl.buffer(bits) as B, sycl.buffer(back) as F:
        def cg(h: sycl.handler) -> None:
            a = X.get_access(h, sycl.access_mode.read)
            b = B.get_access(h, sycl.access_mode.write)
            f = F.get_access(h, sycl.access_mode.write)

            def k(i: sycl.item) -> None:
                v = bfloat16.from_float(a[i])
                b[i] = v
                f[i] = bfloat16.to_float(v)

            h.parallel_for(sycl.range(x.size), k)

        q.submit(cg)
    return bits, back


u32 = st.integers(0, 0xFFFFFFFF)


@settings(max_examples=200)
@given(us=st.lists(u32, min_size=1, max_size=64))
def test_host_from_float_rounds_to_nearest_even(us: list[int]) -> None:
    u = np.array(SPECIAL + us, np.uint32)
    got = bfloat16.from_float(u.view(np.float32))
    assert got.dtype == np.uint16
    _check_bits(u, got)
    for ui in us[:4]:  # scalars give scalars
        assert isinstance(bfloat16.from_float(np.uint32(ui).view(np.float32)), np.uint16)


def test_to_float_is_exact_and_round_trips() -> None:
    b = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    f = bfloat16.to_float(b)
    assert f.dtype == np.float32
    np.testing.assert_array_equal(f.view(np.uint32) >> 16, b)
    np.testing.assert_array_equal(bfloat16.from_float(f), np.where(np.isnan(f), b | 0x40, b))
    assert bfloat16.from_float(1.5) == 0x3FC0 and bfloat16.to_float(0x3FC0) == 1.5


@pytest.mark.parametrize("where", ["compiled", "host"])
def test_kernel_conversions_match_reference(where: str, kernel_device: sycl.device,
                                            host_device: sycl.device) -> None:
    q = sycl.queue(kernel_device if where == "compiled" else host_device)

    @settings(max_examples=10)
    @given(us=st.lists(u32, min_size=64, max_size=64))
    def prop(us: list[int]) -> None:
        u = np.array(SPECIAL + us, np.uint32)
        bits, back = _kernel_round_trip(q, u.view(np.float32).copy())
        _check_bits(u, bits)
        np.testing.assert_array_equal(back.view(np.uint32), bits.astype(np.uint32) << 16)

    prop()

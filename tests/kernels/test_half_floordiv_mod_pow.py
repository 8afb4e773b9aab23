"""float16 ``//``, ``%`` and ``**`` give float16, numpy 2's values bit for bit.

numpy computes them in float32 and rounds once to float16: ``HALF_floor_divide`` and
``HALF_remainder`` (``npy_divmodf``, CPython's ``float_divmod``), and ``power``'s
``e`` loop (``powf``). ``//`` and ``%`` must equal numpy exactly, signs of zeros,
infinities and NaNs included. ``**``: pysycl rounds the *correctly rounded* float32
power to float16; numpy rounds its C library's ``powf``, which on glibc is a fraction
of an ulp off for a few inputs in a million -- there (only there) the kernel gives
the float16 of the correctly rounded power, and numpy another one. Python number
literals are weak (NEP 50): ``h ** 2`` and ``h % 1.0`` stay float16.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pysycl as sycl

SPECIAL_BITS = [0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x3C00, 0xBC00, 0x4000, 0xC000,
                0x3800, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0x7C01, 0xFE00, 0x7D00, 0x3555,
                0x4200, 0x5140, 0x3E00, 0xBE00]
h = np.float16


def _kernel(a, b, o):
    def k(i: sycl.item) -> None:
        u = a[i]
        v = b[i]
        o[0, i] = u // v
        o[1, i] = u % v
        o[2, i] = u ** v
        o[3, i] = pow(u, v)
        o[4, i] = u ** 2          # weak literals: float16
        o[5, i] = u % 1.0
        o[6, i] = 3 // u
        o[7, i] = 0.5 ** u
        o[8, i] = u ** -1
        t = u
        t //= v
        o[9, i] = t
        t = u
        t %= v
        o[10, i] = t
        t = u
        t **= 0.5
        o[11, i] = t
        o[12, i] = u % np.int8(-3)  # int8 promotes to float16
        o[13, i] = (u // v) * v + u % v

    return k


def _reference(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """numpy's ufuncs (``np.power``, not ndarray ``** 0.5``, which numpy makes ``sqrt``)."""
    with np.errstate(all="ignore"):
        return np.stack([
            np.floor_divide(x, y), np.remainder(x, y), np.power(x, y), np.power(x, y),
            np.power(x, h(2)), np.remainder(x, h(1.0)), np.floor_divide(h(3), x),
            np.power(h(0.5), x), np.power(x, h(-1)), np.floor_divide(x, y), np.remainder(x, y),
            np.power(x, h(0.5)), np.remainder(x, h(-3)),
            np.floor_divide(x, y) * y + np.remainder(x, y)])


#: The rows that compute ``**``, and their operands from ``(x, y)``.
POWER_ROWS = {2: lambda x, y: (x, y), 3: lambda x, y: (x, y), 4: lambda x, y: (x, h(2)),
              7: lambda x, y: (h(0.5), x), 8: lambda x, y: (x, h(-1)),
              11: lambda x, y: (x, h(0.5))}


def _correctly_rounded_power(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """float16 of the correctly rounded float32 power (what the kernel computes)."""
    x, y = np.broadcast_arrays(np.asarray(x, np.float16), np.asarray(y, np.float16))
    with np.errstate(all="ignore"):
        r = np.array([np.float32(float(a) ** float(b)) if np.isfinite(float(a) ** float(b))
                      else np.float32(np.power(np.float64(a), np.float64(b)))
                      for a, b in zip(x.ravel().tolist(), y.ravel().tolist(), strict=True)],
                     np.float32).astype(np.float16)
    return r.reshape(x.shape)


def _run(q: sycl.queue, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    out = np.zeros((14, x.size), np.float16)
    with sycl.buffer(x) as X, sycl.buffer(y) as Y, sycl.buffer(out) as O:
        def cg(hd: sycl.handler) -> None:
            a = X.get_access(hd, sycl.access_mode.read)
            b = Y.get_access(hd, sycl.access_mode.read)
            o = O.get_access(hd, sycl.access_mode.write)
            hd.parallel_for(sycl.range(x.size), _kernel(a, b, o))

        with np.errstate(all="ignore"):  # the host device computes with numpy scalars
            q.submit(cg)
    return out


def _same_bits(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Equal bits, or both NaN (NaN payloads are not specified by IEEE arithmetic)."""
    return (got.view(np.uint16) == want.view(np.uint16)) | (np.isnan(got) & np.isnan(want))


def _check(q: sycl.queue, xb, yb) -> None:
    x = np.asarray(xb, np.uint16).view(np.float16)
    y = np.asarray(yb, np.uint16).view(np.float16)
    got, want = _run(q, x, y), _reference(x, y)
    for r in range(want.shape[0]):
        bad = ~_same_bits(got[r], want[r])
        if r in POWER_ROWS and bad.any():
            # only where numpy's powf is not correctly rounded: then the kernel's is
            a, b = POWER_ROWS[r](x[bad], y[bad])
            cr = _correctly_rounded_power(a, b)
            ok = _same_bits(got[r][bad], cr) & ~_same_bits(want[r][bad], cr)
            bad[np.nonzero(bad)[0][ok]] = False
        assert not bad.any(), (f"row {r}: x={x[bad][:4]} y={y[bad][:4]} got={got[r][bad][:4]} "
                               f"want={want[r][bad][:4]}")


bits = st.integers(0, 0xFFFF)


@pytest.mark.parametrize("where", ["compiled", "host"])
def test_floordiv_mod_pow_match_numpy_bits(where: str, kernel_device: sycl.device,
                                           host_device: sycl.device) -> None:
    q = sycl.queue(kernel_device if where == "compiled" else host_device)

    @settings(max_examples=25)
    @given(xb=st.lists(bits, min_size=64, max_size=64), yb=st.lists(bits, min_size=64, max_size=64),
           small=st.lists(st.integers(0x3000, 0x4C00), min_size=32, max_size=32))
    def prop(xb: list[int], yb: list[int], small: list[int]) -> None:
        # every special against every special, random bit patterns, and moderate values
        # (whose quotients and powers are neither 0 nor inf)
        sx = [a for a in SPECIAL_BITS for _ in SPECIAL_BITS]
        sy = SPECIAL_BITS * len(SPECIAL_BITS)
        _check(q, sx + xb + small, sy + yb + small[::-1])

    prop()


def test_every_float16_value(kq: sycl.queue) -> None:
    """All 65536 float16 values against three shuffled copies."""
    xb = np.arange(65536, dtype=np.uint32)
    for seed in (3, 5, 7):
        _check(kq, xb, np.random.default_rng(seed).permutation(xb))


def test_signed_zeros_infinities_and_nans(any_kernel_queue: sycl.queue) -> None:
    inf, nan = np.inf, np.nan
    x = np.array([-0.0, 0.0, -1.0, 1.0, 5.0, -5.0, inf, -inf, nan, 1.0, 1.0, -0.0, 2.0, -2.0],
                 np.float16)
    y = np.array([3.0, -3.0, inf, -inf, 0.0, -0.0, 2.0, 3.0, 0.0, nan, 0.5, -1.0, -inf, 0.5],
                 np.float16)
    _check(any_kernel_queue, x.view(np.uint16), y.view(np.uint16))
    got = _run(any_kernel_queue, x, y)
    # numpy's rules, spelled out
    assert got[0, 0].view(np.uint16) == 0x8000 and got[1, 0].view(np.uint16) == 0x0000  # -0.//3
    assert got[1, 1].view(np.uint16) == 0x8000          # 0.0 % -3.0 is -0.0 (divisor's sign)
    assert got[0, 2] == -1 and got[1, 2] == inf         # -1 // inf, -1 % inf
    assert np.isinf(got[0, 4]) and np.isnan(got[1, 4])  # 5 // 0 is inf, 5 % 0 NaN
    assert got[2, 8] == 1 and got[2, 9] == 1            # nan ** 0 and 1 ** nan are 1
    assert got[2, 11] == -inf                           # -0.0 ** -1
    assert got[2, 12] == 0 and np.isnan(got[2, 13])     # 2 ** -inf; (-2) ** 0.5


def test_signaling_nan_operands_give_nan_as_numpy(any_kernel_queue: sycl.queue) -> None:
    # glibc's powf (numpy's) answers NaN for a signaling NaN, where a quiet one gives 1
    snan, qnan = 0x7C01, 0x7E00
    x = np.array([0x3C00, snan, 0x3C00, qnan], np.uint16)
    y = np.array([snan, 0x0000, qnan, 0x0000], np.uint16)
    got = _run(any_kernel_queue, x.view(np.float16), y.view(np.float16))
    assert np.isnan(got[2, :2]).all() and (got[2, 2:] == 1).all(), got[2]


def test_results_are_float16(kq: sycl.queue) -> None:
    # A float16 result stored in a float64 accessor: the float16 value, not the
    # float32 one numpy's result would be without rounding.
    x = np.array([0.1], np.float16)
    out = np.zeros(3, np.float64)
    with sycl.buffer(x) as X, sycl.buffer(out) as O:
        def cg(hd: sycl.handler) -> None:
            a = X.get_access(hd, sycl.access_mode.read)
            o = O.get_access(hd, sycl.access_mode.write)

            def k() -> None:
                o[0] = a[0] ** 3
                o[1] = a[0] % 0.03
                o[2] = 1 // a[0]

            hd.single_task(k)

        kq.submit(cg)
    with np.errstate(all="ignore"):
        want = [np.power(x[0], h(3)), np.remainder(x[0], h(0.03)), np.floor_divide(h(1), x[0])]
    assert [type(w) for w in want] == [np.float16] * 3
    assert out.tolist() == [float(w) for w in want]

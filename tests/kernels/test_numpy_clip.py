"""``np.clip(x, lo, hi)`` on numbers in kernels: numpy 2's result type, values and NaN rule.

Compared with ``np.clip`` of numpy scalars on the compiled device and on the
host_debuggable device (which runs numpy itself): every float dtype with NaNs,
infinities and signed zeros in ``x`` and the bounds, integer dtypes with bounds out
of order, Python literals as weak bounds (NEP 50), ``None`` for a bound.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pysycl as sycl
from pysycl_numba._numba_compat import errors, numpy_support, types
from pysycl_numba.overloads.half import WeakFloatLiteral
from pysycl_numba.target import sycl_target

FLOATS = [np.float16, np.float32, np.float64]
SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, np.nan, np.inf, -np.inf, 2.5, -3.75]


def _run(q: sycl.queue, x: np.ndarray, lo, hi) -> np.ndarray:
    """Row 0: np.clip(x, lo, hi) with captured bounds; rows 1-3: literals and None."""
    out = np.zeros((4, x.size), x.dtype)
    with sycl.buffer(x) as X, sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            a = X.get_access(h, sycl.access_mode.read)
            o = O.get_access(h, sycl.access_mode.write)

            def k(i: sycl.item) -> None:
                v = a[i]
                o[0, i] = np.clip(v, lo, hi)
                o[1, i] = np.clip(v, -1.5, 2)      # weak literals: x's dtype
                o[2, i] = np.clip(v, None, hi)
                o[3, i] = np.clip(v, lo, None)

            h.parallel_for(sycl.range(x.size), k)

        with np.errstate(all="ignore"):
            q.submit(cg)
    return out


def _want(x: np.ndarray, lo, hi) -> np.ndarray:
    with np.errstate(all="ignore"):
        rows = [[np.clip(v, lo, hi), np.clip(v, -1.5, 2), np.clip(v, None, hi),
                 np.clip(v, lo, None)] for v in x]
    for r in rows:
        assert all(type(w) is type(x[0]) for w in r), r  # the result type is x's dtype
    return np.array(rows, x.dtype).T


def _same(got: np.ndarray, want: np.ndarray) -> bool:
    """Rows 0-1 bit for bit; rows 2-3 (``np.minimum``/``np.maximum``) by value: which zero
    numpy's minimum(-0.0, 0.0) returns depends on its SIMD loop (x86: the second)."""
    u = np.dtype(f"u{got.dtype.itemsize}")
    nan = np.isnan(got) & np.isnan(want)
    bits = (got.view(u) == want.view(u)) | nan
    return bool(bits[:2].all() and ((got[2:] == want[2:]) | nan[2:]).all())


@pytest.mark.parametrize("where", ["compiled", "host"])
@pytest.mark.parametrize("dt", FLOATS, ids=lambda d: np.dtype(d).name)
def test_clip_of_floats_matches_numpy(where: str, dt: type, kernel_device: sycl.device,
                                      host_device: sycl.device) -> None:
    q = sycl.queue(kernel_device if where == "compiled" else host_device)
    finite = st.floats(-1e4, 1e4, width=16 if dt is np.float16 else 32)
    value = st.sampled_from(SPECIAL) | finite

    @settings(max_examples=12)
    @given(xs=st.lists(value, min_size=24, max_size=24), lo=value, hi=value)
    def prop(xs: list[float], lo: float, hi: float) -> None:
        x = np.array(SPECIAL + xs, dt)
        got = _run(q, x, dt(lo), dt(hi))
        assert _same(got, _want(x, dt(lo), dt(hi))), (lo, hi, x, got)

    prop()


@pytest.mark.parametrize("dt", [np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64],
                         ids=lambda d: np.dtype(d).name)
def test_clip_of_integers_matches_numpy(any_kernel_queue: sycl.queue, dt: type) -> None:
    info = np.iinfo(dt)
    x = np.array([info.min, info.min + 1, 0, 1, 2, 3, 7, info.max - 1, info.max], dt)
    for lo, hi in ((dt(1), dt(3)), (dt(3), dt(1)), (dt(0), dt(info.max)), (dt(2), dt(2))):
        out = np.zeros((3, x.size), dt)
        with sycl.buffer(x) as X, sycl.buffer(out) as O:
            def cg(h: sycl.handler, lo=lo, hi=hi) -> None:
                a = X.get_access(h, sycl.access_mode.read)
                o = O.get_access(h, sycl.access_mode.write)

                def k(i: sycl.item) -> None:
                    o[0, i] = np.clip(a[i], lo, hi)
                    o[1, i] = np.clip(a[i], -1, 2)        # -1 beyond an unsigned range: dropped
                    o[2, i] = np.clip(a[i], 1, 300)      # beyond int8 and uint8: dropped

                h.parallel_for(sycl.range(x.size), k)

            any_kernel_queue.submit(cg)
        want = np.array([[np.clip(v, lo, hi), np.clip(v, -1, 2), np.clip(v, 1, 300)]
                         for v in x], dt).T
        np.testing.assert_array_equal(out, want)


def _resolve(*args: types.Type) -> types.Type | None:
    sycl_target.typing_context.refresh()  # its registries, also when no kernel compiled yet
    try:
        sig = sycl_target.typing_context.resolve_function_type(np.clip, args, {})
    except errors.TypingError:  # (once Numba's own np.clip overload is registered too)
        return None
    return None if sig is None else sig.return_type


@pytest.mark.parametrize(("args", "sample"), [
    ((types.float32, WeakFloatLiteral(0.0), WeakFloatLiteral(1.0)), (np.float32(2), 0.0, 1.0)),
    ((types.float16, WeakFloatLiteral(0.5), types.IntegerLiteral(3)), (np.float16(2), 0.5, 3)),
    ((types.float16, types.float32, types.IntegerLiteral(3)), (np.float16(2), np.float32(0), 3)),
    ((types.int32, WeakFloatLiteral(0.5), types.IntegerLiteral(3)), (np.int32(2), 0.5, 3)),
    ((types.int8, types.int16, types.IntegerLiteral(3)), (np.int8(2), np.int16(0), 3)),
    ((types.int8, types.IntegerLiteral(0), types.IntegerLiteral(300)), (np.int8(2), 0, 300)),
    ((types.uint8, types.IntegerLiteral(-1), types.IntegerLiteral(3)), (np.uint8(2), -1, 3)),
    ((types.int64, types.uint64, types.IntegerLiteral(9)), (np.int64(2), np.uint64(0), 9)),
    ((types.boolean, types.IntegerLiteral(0), types.IntegerLiteral(1)), (np.bool_(True), 0, 1)),
    ((types.float64, types.none, types.float32), (np.float64(2), None, np.float32(1))),
    ((types.uint16, types.none, types.none), (np.uint16(2), None, None)),
])
def test_result_types_are_numpys(args, sample) -> None:
    with np.errstate(all="ignore"):
        want = np.clip(*sample).dtype
    assert _resolve(*args) == numpy_support.from_dtype(want), (args, want)


def test_unsupported_and_out_of_bounds(kq: sycl.queue) -> None:
    assert _resolve(types.complex128, types.float64, types.float64) is None
    assert _resolve(types.float64, types.float64) is None
    with pytest.raises(OverflowError):
        np.clip(np.uint8(5), 1000, 2000)  # numpy's answer: a compile error in a kernel
    out = np.zeros(4, np.uint8)
    with sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            o = O.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.range(4), lambda i: o.__setitem__(
                i, np.clip(np.uint8(i[0]), 1000, 2000)))

        with pytest.raises(sycl.kernel_compile_error,
                           match=r"np.clip with the bound 1000, which does not fit uint8 "
                                 r"\(numpy raises OverflowError\)"):
            kq.submit(cg)

"""Integer arithmetic has numpy's result types on every device (``overloads/integers.py``).

``int8 + int8`` is an int8 that wraps around and ``uint32 - uint32`` a uint32, as numpy
computes them (and so the host_debuggable device, which runs kernels on numpy
scalars); Numba alone computes both in int64. One kernel per pair of dtypes writes
every operator's result into an array of numpy's result type, and whether ``x - y``
is negative (which tells an int64 computation from a wrapped one); the SPIR-V device
and the host device must equal numpy.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pysycl as sycl

PAIRS = [(np.int8, np.int8), (np.uint8, np.uint8), (np.int16, np.int8), (np.uint16, np.uint32),
         (np.uint32, np.uint32), (np.int32, np.int32), (np.uint8, np.int16),
         (np.uint32, np.int64), (np.int64, np.int64), (np.uint64, np.uint64)]
ROWS = 13


def _reference(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = [x + y, x - y, x * y, x // y, x % y, x & y, x | y, x ^ y,
                -x, ~x, x + 1, x - 1, abs(x)]
        rt = np.result_type(x, y)
        out = np.stack([r.astype(rt) for r in rows])
        neg = (x - y) < 0
    return out, neg


def _run(q: sycl.queue, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    rt = np.result_type(x, y)
    out = np.zeros((ROWS, x.size), rt)
    neg = np.zeros(x.size, np.bool_)
    with sycl.buffer(x) as X, sycl.buffer(y) as Y, sycl.buffer(out) as O, sycl.buffer(neg) as N:
        def cg(h: sycl.handler) -> None:
            a = X.get_access(h, sycl.access_mode.read)
            b = Y.get_access(h, sycl.access_mode.read)
            o = O.get_access(h, sycl.access_mode.write)
            n = N.get_access(h, sycl.access_mode.write)

            def k(i: sycl.item) -> None:
                s, t = a[i], b[i]
                o[0, i], o[1, i], o[2, i] = s + t, s - t, s * t
                o[3, i], o[4, i] = s // t, s % t
                o[5, i], o[6, i], o[7, i] = s & t, s | t, s ^ t
                o[8, i], o[9, i] = -s, ~s
                o[10, i], o[11, i], o[12, i] = s + 1, s - 1, abs(s)
                n[i] = (s - t) < 0

            h.parallel_for(sycl.range(x.size), k)

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # the host device's wrap-around
            q.submit(cg)
    return out, neg


def _values(dt: type) -> st.SearchStrategy[int]:
    info = np.iinfo(dt)
    edges = [info.min, info.max, 0, 1, -1 if info.min < 0 else 2, info.max // 2 + 1]
    return st.one_of(st.sampled_from(edges), st.integers(int(info.min), int(info.max)))


@pytest.mark.parametrize("dx,dy", PAIRS, ids=lambda d: np.dtype(d).name)
@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_operators_have_numpys_result_types(kernel_device: sycl.device, host_device: sycl.device,
                                            dx: type, dy: type, data: st.DataObject) -> None:
    x = np.array(data.draw(st.lists(_values(dx), min_size=16, max_size=16)), dx)
    y = np.array(data.draw(st.lists(_values(dy), min_size=16, max_size=16)), dy)
    # the one case where pysycl differs from numpy (docs/kernels.md): MIN // -1
    if np.dtype(dx).kind == "i" and np.result_type(dx, dy) == np.dtype(dx):
        y[(x == np.iinfo(dx).min) & (y == -1)] = 1
    want, want_neg = _reference(x, y)
    for dev in (kernel_device, host_device):
        got, neg = _run(sycl.queue(dev), x, y)
        np.testing.assert_array_equal(got, want, err_msg=str(dev))
        np.testing.assert_array_equal(neg, want_neg, err_msg=str(dev))


def test_a_literal_that_does_not_fit_is_a_compile_error(kq: sycl.queue) -> None:
    x = np.zeros(4, np.int8)
    with sycl.buffer(x) as X:
        def cg(h: sycl.handler) -> None:
            a = X.get_access(h, sycl.access_mode.read_write)
            h.parallel_for(sycl.range(4), lambda i: a.__setitem__(i, a[i] + 300))

        with pytest.raises(sycl.kernel_compile_error, match=r"300 .*int8") as e:
            kq.submit(cg)
    assert "test_integer_arithmetic.py" in str(e.value)
    assert (x == 0).all()

"""numpy's math functions on numbers in kernels (``np.sqrt(x)``, ...) give numpy's results.

They map to the same OpenCL built-ins as ``math.*``; results follow numpy's types
(``np.sqrt(np.float32(x))`` stays float32, integers give float64) and values within
the OpenCL built-ins' documented accuracy (a few ulp). One kernel per input dtype
computes every supported function, and hypothesis varies the values (arguments:
no recompile).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pysycl as sycl
from pysycl_numba.overloads.math import BINARY, PREDICATES, SCALE, UNARY, result_supported

UNARY_FUNCS = [*UNARY, *SCALE, *PREDICATES, np.absolute]
BINARY_FUNCS = list(BINARY)
DTYPES = [np.float16, np.float32, np.float64, np.int32, np.int64, np.bool_]
SPECIALS = [0.0, -0.0, 1.0, -1.0, 0.5, np.nan, np.inf, -np.inf]
N = 24


def _supported(uf: np.ufunc, dt: type) -> bool:
    return result_supported(uf, uf.resolve_dtypes((np.dtype(dt),) * uf.nin + (None,))[-1])


def _kernel_factory(dt: type):
    """A kernel computing every supported function of x (and of (x, y)) into o[k, i]."""
    unary = [uf for uf in UNARY_FUNCS if _supported(uf, dt)]
    binary = [uf for uf in BINARY_FUNCS if _supported(uf, dt)]
    lines = ["def make(o, x, y):", "    def k(i):"]
    for r, uf in enumerate(unary):
        lines.append(f"        o[{r}, i] = np.{uf.__name__}(x[i])")
    for r, uf in enumerate(binary, len(unary)):
        lines.append(f"        o[{r}, i] = np.{uf.__name__}(x[i], y[i])")
    lines.append("    return k")
    ns = {"np": np}
    exec(compile("\n".join(lines), f"<numpy math kernel {np.dtype(dt)}>", "exec"), ns)
    return ns["make"], unary, binary


_FACTORIES = {dt: _kernel_factory(dt) for dt in DTYPES}


def _tolerance(res: np.dtype) -> dict[str, float]:
    if res == np.float16:
        return {"rtol": 2e-3, "atol": 1e-3}
    if res == np.float32:
        return {"rtol": 1e-5, "atol": 1e-6}
    return {"rtol": 1e-13, "atol": 1e-13}


def _needs_fp16(dt: type) -> bool:
    """Whether a result of the dtype's kernel is float16 (numpy: float16 and bool inputs)."""
    _make, unary, binary = _FACTORIES[dt]
    return any(uf.resolve_dtypes((np.dtype(dt),) * uf.nin + (None,))[-1] == np.float16
               for uf in [*unary, *binary])


def _check(q: sycl.queue, dt: type, xs: np.ndarray, ys: np.ndarray) -> None:
    if _needs_fp16(dt) and not q.get_device().has(sycl.aspect.fp16):
        # A GPU without fp16 (an H100 through NVIDIA's OpenCL): refused before it runs.
        with pytest.raises(sycl.exception) as ei:
            _run(q, dt, xs, ys)
        assert ei.value.code() == sycl.errc.kernel_not_supported
        assert "aspect.fp16" in str(ei.value)
        return
    _, unary, binary = _FACTORIES[dt]
    out = _run(q, dt, xs, ys)
    with np.errstate(all="ignore"):
        for r, uf in enumerate([*unary, *binary]):
            want = uf(xs) if uf.nin == 1 else uf(xs, ys)
            np.testing.assert_allclose(out[r], want.astype(np.float64), equal_nan=True,
                                       err_msg=f"np.{uf.__name__} on {np.dtype(dt)}",
                                       **_tolerance(want.dtype))


def _run(q: sycl.queue, dt: type, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    make, unary, binary = _FACTORIES[dt]
    out = np.zeros((len(unary) + len(binary), xs.size))
    with sycl.buffer(out) as O, sycl.buffer(xs) as X, sycl.buffer(ys) as Y:
        def cg(h: sycl.handler) -> None:
            o = O.get_access(h, sycl.access_mode.write)
            x = X.get_access(h, sycl.access_mode.read)
            y = Y.get_access(h, sycl.access_mode.read)
            h.parallel_for(sycl.range(xs.size), make(o, x, y))

        q.submit(cg)
    return out


def _values(dt: type, drawn: list[float]) -> np.ndarray:
    if np.dtype(dt).kind == "f":
        return np.array(SPECIALS + drawn, np.float64).astype(dt)
    if dt is np.bool_:
        return np.array([bool(round(v)) % 2 for v in SPECIALS[:4] + drawn], np.bool_)
    return np.array([0, 1, -1, 2, -7, 100] + [int(v) for v in drawn], dt)


@settings(max_examples=15)
@given(drawn=st.lists(st.floats(-1e4, 1e4), min_size=N, max_size=N),
       other=st.lists(st.floats(-50, 50), min_size=N, max_size=N),
       dt=st.sampled_from(DTYPES))
def test_numpy_math_on_numbers_matches_numpy(kernel_device: sycl.device, drawn: list[float],
                                             other: list[float], dt: type) -> None:
    xs = _values(dt, drawn)
    ys = _values(dt, other)[:xs.size]
    ys = np.concatenate([ys, ys[: xs.size - ys.size]]) if ys.size < xs.size else ys
    _check(sycl.queue(kernel_device), dt, xs, ys)


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
def test_np_sqrt_and_friends_on_special_values(kq: sycl.queue, dt: type) -> None:
    xs = _values(dt, [2.0, 3.0, 10.0, -2.5])
    _check(kq, dt, xs, xs[::-1].copy())


def test_np_sqrt_keeps_float32(kq: sycl.queue) -> None:
    from pysycl_numba._numba_compat import types
    from pysycl_numba.overloads.math import _template

    ctx = None
    t = _template(np.sqrt)(ctx)
    assert t.generic((types.float32,), {}).return_type == types.float32
    assert t.generic((types.int64,), {}).return_type == types.float64
    assert t.generic((types.float16,), {}).return_type == types.float16
    assert t.generic((types.complex128,), {}) is None
    # ... so a float32 kernel needs no fp64.
    x = np.arange(1, 5, dtype=np.float32)
    out = np.zeros_like(x)
    with sycl.buffer(x) as X, sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            rx = X.get_access(h, sycl.access_mode.read)
            o = O.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.range(4), lambda i: o.__setitem__(i, np.sqrt(rx[i]) * rx[i]))

        kq.submit(cg).wait()
    np.testing.assert_allclose(out, np.sqrt(x) * x, rtol=1e-6)


#: Calls with a Python literal: numpy 2 converts it to the other operand's type (NEP 50).
_LITERAL_CALLS = ["np.minimum(v, 0.7)", "np.maximum(0.7, v)", "np.fmin(v, 0.3)",
                  "np.hypot(v, 2)", "np.arctan2(v, 0.7)", "np.fmod(v, 0.7)", "np.fmod(0.7, v)",
                  "np.power(v, 2)", "np.power(v, 0.5)", "np.copysign(1.5, v)",
                  "np.power(-v, 3.0)"]


@pytest.mark.parametrize("dt", [np.float16, np.float32], ids=lambda d: np.dtype(d).name)
def test_python_literals_are_weak_as_in_numpy(any_kernel_queue: sycl.queue, dt: type) -> None:
    """``np.minimum(np.float32(x), 0.7)`` is numpy's float32 (the literal rounded to the
    operand's type first), not a float64: values equal numpy's, zeros' signs included.
    Before, the literal made the call float64 (``np.power(x, 2)`` of 1e-30 gave 1e-60)."""
    q = any_kernel_queue
    if dt is np.float16 and not q.get_device().has(sycl.aspect.fp16):
        pytest.skip("no fp16")
    ns: dict = {"np": np}
    body = "\n".join(f"        o[{r}, i] = {c}" for r, c in enumerate(_LITERAL_CALLS))
    exec(f"def make(o, x):\n    def k(i):\n        v = x[i]\n{body}\n    return k", ns)
    xs = np.array([0.9, -1.5, 1e-30, 3.7, 0.1, 2.0], np.float64).astype(dt)
    out = np.zeros((len(_LITERAL_CALLS), xs.size), dt)
    with sycl.buffer(out) as O, sycl.buffer(xs) as X:
        q.submit(lambda h: h.parallel_for(sycl.range(xs.size), ns["make"](
            O.get_access(h, sycl.access_mode.write), X.get_access(h, sycl.access_mode.read))))
    for r, call in enumerate(_LITERAL_CALLS):
        fn = eval(f"lambda v: {call}", ns)
        with np.errstate(all="ignore"):
            want = np.array([fn(v) for v in xs])
        assert want.dtype == dt, call
        if call in ("np.arctan2(v, 0.7)", "np.power(v, 0.5)", "np.hypot(v, 2)"):
            np.testing.assert_allclose(out[r], want, rtol=4e-3 if dt is np.float16 else 2e-6,
                                       err_msg=call)  # built-ins within a few ulp
        else:
            same = np.array_equal(out[r], want, equal_nan=True)
            assert same and (np.signbit(out[r]) == np.signbit(want))[~np.isnan(want)].all(), (
                call, out[r], want)  # bit for bit but a NaN's sign


def test_python_literals_need_no_fp64_and_int_overflow_is_numpys_error() -> None:
    from pysycl_numba._numba_compat import errors, types
    from pysycl_numba.overloads.half import WeakFloatLiteral
    from pysycl_numba.overloads.math import _template

    t = _template(np.minimum)(None)
    assert t.generic((types.float32, WeakFloatLiteral(0.7)), {}).return_type == types.float32
    assert t.generic((types.IntegerLiteral(3), types.float16), {}).return_type == types.float16
    assert t.generic((types.uint8, types.IntegerLiteral(2)), {}).return_type == types.uint8
    with pytest.raises(errors.TypingError, match="out of bounds for int8"):
        _template(np.maximum)(None).generic((types.int8, types.IntegerLiteral(300)), {})


def _apply(q: sycl.queue, fn: object, x: np.ndarray) -> np.ndarray:
    out = np.zeros_like(x)
    g = lambda v, fn=fn: fn(v)  # noqa: E731 - a helper whose default is the function
    with sycl.buffer(x) as X, sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            rx = X.get_access(h, sycl.access_mode.read)
            o = O.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.range(x.size), lambda i: o.__setitem__(i, fn(rx[i]) + g(rx[i])))

        q.submit(cg)
    return out


def test_a_ufunc_passed_as_a_value_is_a_constant_like_math_sqrt(any_kernel_queue: sycl.queue,
                                                                fresh_stats: None) -> None:
    """``fn = np.sqrt`` captured (or a helper's default) works as ``fn = math.sqrt`` does;
    another ufunc is another kernel, in memory and on disk (before: 'a ufunc cannot be a
    kernel argument')."""
    from pysycl._kernels.cache import kernels

    x = np.array([0.25, 1.0, 4.0], np.float32)
    for fn in (np.sqrt, np.exp, np.sqrt):
        np.testing.assert_allclose(_apply(any_kernel_queue, fn, x), 2 * fn(x), rtol=1e-6)
    kernels.clear_memory()  # from the disk cache: np.exp is not np.sqrt's kernel
    np.testing.assert_allclose(_apply(any_kernel_queue, np.exp, x), 2 * np.exp(x), rtol=1e-6)

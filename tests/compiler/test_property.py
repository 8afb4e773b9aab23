"""Differential test: random arithmetic expression kernels, three ways.

numpy (the reference), the compiled SPIR-V kernel, and the very same kernel run
in the interpreter by the host_debuggable device must agree.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pysycl as sycl

from .conftest import R, W, compile_for

N = 16
# (dtype, numpy scalar type); operands are read from accessors of these types.
DTYPES = [np.int32, np.int64, np.float32, np.float64]


@st.composite
def expressions(draw, depth=3):
    """An expression over x (accessor element), y (other dtype), c (scalar)."""
    if depth == 0 or draw(st.booleans()):
        leaf = draw(st.sampled_from(["x", "y", "c", "lit"]))
        if leaf == "lit":
            return str(draw(st.integers(-5, 5)))
        return leaf
    op = draw(st.sampled_from(["+", "-", "*", "min", "max", "abs"]))
    a = draw(expressions(depth=depth - 1))
    if op == "abs":
        return f"abs({a})"
    b = draw(expressions(depth=depth - 1))
    if op in ("min", "max"):
        return f"{op}({a}, {b})"
    return f"({a} {op} {b})"


def _numpy_eval(expr, x, y, c):
    env = {"min": np.minimum, "max": np.maximum, "abs": np.abs}
    # numpy scalars give Numba's typing (e.g. int32 + int64 -> int64).
    return np.array([eval(expr, env, {"x": xv, "y": yv, "c": c}) for xv, yv in zip(x, y, strict=False)])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    expr=expressions(),
    dx=st.sampled_from(DTYPES),
    dy=st.sampled_from(DTYPES),
    cval=st.integers(-3, 3),
)
def test_random_expressions(device, expr, dx, dy, cval):
    x = (np.arange(N) - N // 2).astype(dx)
    y = (np.arange(N) % 5 - 2).astype(dy)
    out = np.zeros(N, np.float64)
    rx, ry, wo = R(x), R(y), W(out)
    c = np.int64(cval)
    ns = {"rx": rx, "ry": ry, "wo": wo, "c": c}
    src = (f"def make(rx, ry, wo, c):\n    def kern(i):\n        x = rx[i]\n"
           f"        y = ry[i]\n        wo[i] = {expr}\n    return kern\n")
    exec(src, {}, ns)
    kern = ns["make"](rx, ry, wo, c)
    ck = compile_for(kern, 1)
    vals = {"rx": rx, "ry": ry, "wo": wo, "c": c}
    device.launch(ck, [vals[cap.name] for cap in ck.captures], (N,))
    with np.errstate(over="ignore"):
        expect = _numpy_eval(expr, x, y, c).astype(np.float64)
    np.testing.assert_allclose(out, expect, rtol=1e-6, atol=1e-6, err_msg=expr)
    assert not any(math.isnan(v) for v in out)
    # The interpreter (host_debuggable device) runs the same source through the public API.
    interp = _run_on_host_device(src, x, y, c)
    np.testing.assert_allclose(interp, out, rtol=1e-6, atol=1e-6, err_msg=f"host: {expr}")


def _run_on_host_device(src: str, x: np.ndarray, y: np.ndarray, c: np.int64) -> np.ndarray:
    q = sycl.queue(sycl.aspect_selector(sycl.aspect.host_debuggable))
    out = np.zeros(N, np.float64)
    with sycl.buffer(x) as X, sycl.buffer(y) as Y, sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            ns: dict = {}
            exec(src, {}, ns)
            h.parallel_for(sycl.range(N), ns["make"](X.get_access(h, sycl.access_mode.read),
                                                     Y.get_access(h, sycl.access_mode.read),
                                                     O.get_access(h, sycl.access_mode.write), c))
        q.submit(cg)
    return out

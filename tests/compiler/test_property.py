"""Differential test: random arithmetic expression kernels vs Python/numpy."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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
    return np.array([eval(expr, env, {"x": xv, "y": yv, "c": c}) for xv, yv in zip(x, y)])  # noqa: S307


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
    src = f"def make(rx, ry, wo, c):\n    def kern(i):\n        x = rx[i]\n        y = ry[i]\n        wo[i] = {expr}\n    return kern\n"
    exec(src, {}, ns)  # noqa: S102
    kern = ns["make"](rx, ry, wo, c)
    ck = compile_for(kern, 1)
    vals = {"rx": rx, "ry": ry, "wo": wo, "c": c}
    device.launch(ck, [vals[cap.name] for cap in ck.captures], (N,))
    with np.errstate(over="ignore"):
        expect = _numpy_eval(expr, x, y, c).astype(np.float64)
    np.testing.assert_allclose(out, expect, rtol=1e-6, atol=1e-6, err_msg=expr)
    assert not any(math.isnan(v) for v in out)

"""``cmath`` on complex numbers, numpy scalar casts and ``np.minimum``/``np.maximum`` in kernels.

Each is compared with Python's ``cmath`` / numpy on the device Python kernels
compile for (SPIR-V, or PTX on an NVIDIA GPU) and on the host_debuggable device
(the interpreter, the oracle). One kernel per dtype computes every function, and
hypothesis varies the values (arguments: no recompile).

``cmath`` results are compared norm-wise: ``|got - want| <= rtol * |want|`` (a
few ulp of the result's magnitude), special values (inf, nan) component-wise.
Where Python's ``cmath`` raises (``log(0)``, ``exp(1000)``) the element is not
compared: a kernel cannot raise, and returns C99's value (inf or nan). For an
argument with a NaN part, the result has a NaN part (C99's exact other part, a
zero or an infinity, is not kept: docs/kernels.md).
"""

from __future__ import annotations

import cmath
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pysycl as sycl

COMPLEX_FUNCS = ["exp", "log", "log10", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh",
                 "asin", "acos", "atan", "asinh", "acosh", "atanh"]
#: Real-valued results: expression over z -> reference.
REAL_FUNCS = {
    "cmath.phase(z)": cmath.phase,
    "abs(z)": abs,
    "cmath.polar(z)[0]": lambda z: cmath.polar(z)[0],
    "cmath.polar(z)[1]": lambda z: cmath.polar(z)[1],
    "cmath.isnan(z)": cmath.isnan,
    "cmath.isinf(z)": cmath.isinf,
    "cmath.isfinite(z)": cmath.isfinite,
}
#: Other complex-valued expressions.
OTHER_COMPLEX = {
    "z.conjugate()": lambda z: z.conjugate(),
    "cmath.rect(z.real, z.imag)": lambda z: cmath.rect(z.real, z.imag),
    "cmath.log(z, 2 + 0j)": lambda z: cmath.log(z, 2 + 0j),
}
SPECIALS = [0j, complex(-0.0, 0.0), 1 + 0j, -1 + 0j, 1j, -1j, 0.5 + 0.5j, -2 - 3j,
            complex(math.inf, 0), complex(0, math.inf), complex(-math.inf, 1),
            complex(math.nan, 0), complex(1, math.nan), complex(math.inf, math.nan),
            complex(-math.inf, -math.inf)]
RTOL = {np.complex64: 2e-6, np.complex128: 4e-15}


def _make_kernel():
    lines = ["def make(oc, orl, z_in):", "    def k(i):", "        z = z_in[i]"]
    exprs = [f"cmath.{f}(z)" for f in COMPLEX_FUNCS] + list(OTHER_COMPLEX)
    lines += [f"        oc[{r}, i] = {e}" for r, e in enumerate(exprs)]
    lines += [f"        orl[{r}, i] = {e}" for r, e in enumerate(REAL_FUNCS)]
    lines.append("    return k")
    ns = {"cmath": cmath}
    exec(compile("\n".join(lines), "<cmath kernel>", "exec"), ns)
    refs = [getattr(cmath, f) for f in COMPLEX_FUNCS] + list(OTHER_COMPLEX.values())
    return ns["make"], exprs, refs


MAKE, COMPLEX_EXPRS, COMPLEX_REFS = _make_kernel()


def _queue(which: str, kernel_device: sycl.device, host_device: sycl.device) -> sycl.queue:
    """The compiled device's queue, or the host_debuggable device's (session-scoped devices:
    hypothesis reruns the test body, not the fixtures)."""
    return sycl.queue(kernel_device if which == "compiled" else host_device)


def _run(q: sycl.queue, zs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    oc = np.zeros((len(COMPLEX_EXPRS), zs.size), zs.dtype)
    orl = np.zeros((len(REAL_FUNCS), zs.size), np.float64)
    with sycl.buffer(oc) as OC, sycl.buffer(orl) as OR, sycl.buffer(zs) as Z:
        def cg(h: sycl.handler) -> None:
            h.parallel_for(sycl.range(zs.size), MAKE(OC.get_access(h, sycl.access_mode.write),
                                                     OR.get_access(h, sycl.access_mode.write),
                                                     Z.get_access(h, sycl.access_mode.read)))

        q.submit(cg).wait()
    return oc, orl


def _reference(fn, z: complex) -> complex | None:
    try:
        return complex(fn(z))
    except (ValueError, OverflowError):
        return None  # Python raises; C99 (and the kernel) gives inf/nan


def _close(got: complex, want: complex, rtol: float) -> bool:
    if cmath.isfinite(want):
        return abs(got - want) <= rtol * abs(want) + 1e-300 or (
            cmath.isfinite(got) and abs(got - want) <= 4 * rtol)
    return all((math.isnan(w) and math.isnan(g)) or g == w or
               (math.isfinite(w) and abs(g - w) <= 4 * rtol * max(1.0, abs(w)))
               for g, w in ((got.real, want.real), (got.imag, want.imag)))


def _check(q: sycl.queue, zs: np.ndarray) -> None:
    rtol = RTOL[zs.dtype.type]
    if q.get_device().has(sycl.aspect.host_debuggable):
        # The interpreter runs Python's cmath, which raises where C99 gives inf/nan.
        refs = [*COMPLEX_REFS, *REAL_FUNCS.values()]
        zs = np.array([z for z in zs.tolist() if all(_reference(f, z) is not None
                                                      for f in refs)], zs.dtype)
    oc, orl = _run(q, zs)
    for r, (expr, ref) in enumerate(zip(COMPLEX_EXPRS, COMPLEX_REFS, strict=True)):
        for i, z in enumerate(zs.tolist()):
            want = _reference(ref, z)
            if want is None:
                continue
            if zs.dtype == np.complex64 and cmath.isfinite(want):
                want = complex(np.complex64(want))  # what float32 can hold (inf beyond)
            got = complex(oc[r, i])
            if cmath.isnan(z) and cmath.isnan(want):  # C99 keeps a 0 or inf beside: we keep a NaN
                assert cmath.isnan(got), f"{expr} at z={z!r}: got {got!r}, want {want!r}"
                continue
            assert _close(got, want, rtol), f"{expr} at z={z!r}: got {got!r}, want {want!r}"
    for r, (expr, ref) in enumerate(REAL_FUNCS.items()):
        for i, z in enumerate(zs.tolist()):
            want = _reference(ref, z)
            if want is not None:
                assert _close(complex(orl[r, i]), want, rtol), f"{expr} at z={z!r}: {orl[r, i]}"


@pytest.mark.slow
@pytest.mark.parametrize("dt", [np.complex64, np.complex128], ids=lambda d: np.dtype(d).name)
def test_cmath_special_values_match_python(any_kernel_queue: sycl.queue, dt: type) -> None:
    _check(any_kernel_queue, np.array(SPECIALS, dt))


@pytest.mark.parametrize("which", ["compiled", "host"])
@settings(max_examples=12)
@given(parts=st.lists(st.tuples(st.floats(-20, 20), st.floats(-20, 20)), min_size=16,
                      max_size=16),
       dt=st.sampled_from([np.complex64, np.complex128]))
def test_cmath_matches_python(which: str, kernel_device: sycl.device, host_device: sycl.device,
                              parts: list, dt: type) -> None:
    _check(_queue(which, kernel_device, host_device), np.array([complex(a, b) for a, b in parts], dt))


# ------------------------------------------------------------------------- casts
CASTS = [np.float32, np.float64, np.int8, np.uint8, np.int32, np.uint32, np.int64, np.bool_]


def _cast_kernel():
    lines = ["def make(o, x):", "    def k(i):"]
    lines += [f"        o[{r}, i] = np.{np.dtype(t).name}(x[i])" for r, t in enumerate(CASTS)]
    lines.append("    return k")
    ns = {"np": np}
    exec(compile("\n".join(lines), "<cast kernel>", "exec"), ns)
    return ns["make"]


CAST_MAKE = _cast_kernel()


def _defined(t: type, xs: np.ndarray) -> np.ndarray:
    """Where C's conversion of ``xs`` to ``t`` is defined (float -> int: the truncated value fits)."""
    if np.dtype(t).kind not in "iu" or xs.dtype.kind not in "f":
        return np.ones(xs.shape, bool)
    info = np.iinfo(t)
    with np.errstate(invalid="ignore"):
        tr = np.trunc(xs.astype(np.float64))
        return np.isfinite(tr) & (tr >= info.min) & (tr <= info.max)


@pytest.mark.parametrize("which", ["compiled", "host"])
@settings(max_examples=12)
@given(drawn=st.lists(st.floats(-3e9, 3e9) | st.floats(-300, 300), min_size=16, max_size=16),
       src=st.sampled_from([np.float32, np.float64, np.int32, np.int64, np.uint8]))
def test_numpy_scalar_casts_match_numpy(which: str, kernel_device: sycl.device,
                                        host_device: sycl.device, drawn: list, src: type) -> None:
    q = _queue(which, kernel_device, host_device)
    vals = [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 255.0, 256.0, -129.0, np.nan, np.inf, *drawn]
    if np.dtype(src).kind == "f":
        xs = np.array(vals, np.float64).astype(src)
    else:  # integers wrap modulo 2**bits, as numpy's astype (and C) converts them
        info = np.iinfo(src)
        xs = np.array([int(v) % (info.max - info.min + 1) + info.min for v in vals
                       if math.isfinite(v)], np.int64).astype(src)
    out = np.zeros((len(CASTS), xs.size), np.float64)
    with sycl.buffer(out) as O, sycl.buffer(xs) as X:
        def cg(h: sycl.handler) -> None:
            h.parallel_for(sycl.range(xs.size), CAST_MAKE(O.get_access(h, sycl.access_mode.write),
                                                          X.get_access(h, sycl.access_mode.read)))

        q.submit(cg).wait()
    for r, t in enumerate(CASTS):
        ok = _defined(t, xs)
        with np.errstate(all="ignore"):
            want = xs.astype(t).astype(np.float64)
        np.testing.assert_array_equal(out[r][ok], want[ok], err_msg=f"np.{np.dtype(t).name}")


# --------------------------------------------------------------- minimum / maximum
@pytest.mark.parametrize("which", ["compiled", "host"])
@settings(max_examples=12)
@given(a=st.lists(st.floats(-1e6, 1e6) | st.sampled_from([np.nan, np.inf, -np.inf, 0.0]),
                  min_size=12, max_size=12),
       b=st.lists(st.floats(-1e6, 1e6) | st.sampled_from([np.nan, np.inf, -np.inf, 0.0]),
                  min_size=12, max_size=12),
       dt=st.sampled_from([np.float32, np.float64, np.int32, np.int64, np.uint32]))
def test_minimum_maximum_follow_numpys_nan_rules(which: str, kernel_device: sycl.device,
                                                 host_device: sycl.device, a: list, b: list,
                                                 dt: type) -> None:
    q = _queue(which, kernel_device, host_device)
    def arr(v: list) -> np.ndarray:
        x = np.array(v, np.float64)
        if np.dtype(dt).kind in "iu":
            x = np.nan_to_num(x, posinf=7, neginf=-7) % 1000
        return x.astype(dt)

    xa, xb = arr(a), arr(b)
    out = np.zeros((6, xa.size), np.float64)
    with sycl.buffer(out) as O, sycl.buffer(xa) as A, sycl.buffer(xb) as B:
        def cg(h: sycl.handler) -> None:
            o = O.get_access(h, sycl.access_mode.write)
            ra = A.get_access(h, sycl.access_mode.read)
            rb = B.get_access(h, sycl.access_mode.read)

            def k(i):  # type: ignore[no-untyped-def]
                o[0, i] = np.minimum(ra[i], rb[i])
                o[1, i] = np.maximum(ra[i], rb[i])
                o[2, i] = np.fmin(ra[i], np.float64(rb[i]))  # fmin/fmax: floats only
                o[3, i] = np.fmax(np.float64(ra[i]), rb[i])
                o[4, i] = np.minimum(np.maximum(ra[i], rb[i]), ra[i] + rb[i])  # a clip
                o[5, i] = np.maximum(ra[i], 3)

            h.parallel_for(sycl.range(xa.size), k)

        q.submit(cg).wait()
    with np.errstate(all="ignore"):
        xa64, xb64 = xa.astype(np.float64), xb.astype(np.float64)
        want = [np.minimum(xa, xb), np.maximum(xa, xb), np.fmin(xa, xb64), np.fmax(xa64, xb),
                np.clip(xa, xb, xa + xb),
                np.maximum(xa, 3)]
    for r, w in enumerate(want):
        np.testing.assert_array_equal(out[r], w.astype(np.float64), err_msg=f"row {r}")


def test_minimum_result_types_are_numpys() -> None:
    from pysycl_numba._numba_compat import types
    from pysycl_numba.overloads.math import _template

    t = _template(np.minimum)(None)
    assert t.generic((types.float32, types.float32), {}).return_type == types.float32
    assert t.generic((types.int32, types.int64), {}).return_type == types.int64
    assert t.generic((types.int32, types.float32), {}).return_type == types.float64
    assert t.generic((types.boolean, types.boolean), {}).return_type == types.boolean
    assert t.generic((types.complex64, types.complex64), {}) is None


@pytest.mark.slow
@pytest.mark.parametrize("dt", [np.complex64, np.complex128], ids=lambda d: np.dtype(d).name)
def test_cmath_compiles_to_ptx(kq: sycl.queue, ptx_images: list, dt: type) -> None:
    # PTX: the math.* calls of the cmath algorithms become libdevice/intrinsics, all defined.
    from tests.conftest import ptxas_check

    zs = np.array(SPECIALS[:8], dt)
    _check(kq, zs)
    (img,) = ptx_images
    ptx = img.binary.decode()
    assert ".target sm_90" in ptx and "__nv_" not in ptx and ".extern" not in ptx
    ptxas_check(img.binary)

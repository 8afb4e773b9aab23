"""The SYCL math functions compile to PTX with nothing left to link: libdevice calls,
and formulas (``targets/ptx/math_formulas.py``) for the built-ins libdevice lacks
(``acospi``, ``tanpi``, ``powr``, ``pown``, ``rootn``, ``maxmag``, ``ilogb``, ``remquo``,
``native.divide`` ...). The kernel runs where the test runs (on an NVIDIA GPU: the
PTX itself) and its results equal the host device's within a few ulp."""

from __future__ import annotations

import numpy as np
import pytest

import pysycl as sycl
from tests.conftest import ptxas_check

ROWS = 16


def _run(q: sycl.queue, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    out = np.zeros((ROWS, x.size), x.dtype)
    with sycl.buffer(x) as X, sycl.buffer(y) as Y, sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            a = X.get_access(h, sycl.access_mode.read)
            b = Y.get_access(h, sycl.access_mode.read)
            o = O.get_access(h, sycl.access_mode.write)

            def k(i):  # type: ignore[no-untyped-def]
                u, v = a[i], b[i]
                o[0, i], o[1, i], o[2, i] = sycl.acospi(u), sycl.asinpi(u), sycl.atanpi(v)
                o[3, i], o[4, i] = sycl.atan2pi(u, v), sycl.tanpi(v)
                o[5, i], o[6, i] = sycl.powr(abs(v), u), sycl.pown(v, 3)
                o[7, i], o[8, i] = sycl.rootn(v, 3), sycl.maxmag(u, v)
                o[9, i] = sycl.minmag(u, v)
                o[10, i] = sycl.ilogb(v)
                r, qq = sycl.remquo(v, u)
                o[11, i], o[12, i] = r, qq % 8
                o[13, i] = sycl.sqrt(abs(v)) + sycl.clamp(v, -1.0, 1.0)

            h.parallel_for(sycl.range(x.size), k)
        q.submit(cg)
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sycl_math_compiles_to_ptx_and_matches_the_host(kq: sycl.queue, hq: sycl.queue,
                                                        ptx_images: list, dtype: type) -> None:
    if dtype == np.float64 and not kq.get_device().has(sycl.aspect.fp64):
        pytest.skip("no fp64")
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, 64).astype(dtype)
    y = (rng.uniform(-20, 20, 64) + 0.25).astype(dtype)
    got, want = _run(kq, x, y), _run(hq, x, y)
    ulps = 64 * np.finfo(dtype).eps  # OpenCL's limits (tanpi: 6 ulp) plus the reference's own
    np.testing.assert_allclose(got[:10], want[:10], rtol=ulps, atol=0)
    np.testing.assert_array_equal(got[10], want[10])
    np.testing.assert_allclose(got[11], want[11], rtol=0, atol=4 * np.finfo(dtype).eps * 20)
    np.testing.assert_allclose(got[13], want[13], rtol=4 * np.finfo(dtype).eps)
    (img,) = ptx_images
    ptx = img.binary.decode()
    assert "_Z" not in ptx and ".extern" not in ptx
    ptxas_check(img.binary)


def test_ptx_ilogb_of_nan_is_int_max() -> None:
    """The PTX ``ilogb`` gives INT_MAX for NaN as the host device and the docs say
    (libdevice's ``__nv_ilogbf`` gives INT_MIN): the definition, run on this CPU with
    a stand-in for libdevice's function."""
    import ctypes
    import math

    import llvmlite.binding as llvm

    from pysycl_numba.targets.ptx.builtins import Decl, lookup

    defn = lookup("_Z5ilogbf")(Decl("_Z5ilogbf", "i32", ("float",)))
    stub = """define i32 @__nv_ilogbf(float %x) {
  %nan = fcmp uno float %x, %x
  %z = fcmp oeq float %x, 0.0
  %low = or i1 %nan, %z
  %v = select i1 %low, i32 -2147483648, i32 2147483647
  ret i32 %v
}
define i32 @probe(float %x) {
  %r = call i32 @_Z5ilogbf(float %x)
  ret i32 %r
}"""
    needs = "\n".join(n for n in defn.needs if "@__nv_" not in n)
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    mod = llvm.parse_assembly(f"{needs}\n{defn.body}\n{stub}")
    tm = llvm.Target.from_default_triple().create_target_machine()
    with llvm.create_mcjit_compiler(mod, tm) as ee:
        ee.finalize_object()
        probe = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_float)(ee.get_function_address("probe"))
        assert probe(math.nan) == 2**31 - 1
        assert probe(math.inf) == 2**31 - 1
        assert probe(0.0) == -(2**31)

"""Vector kernels (``sycl.float4`` ...) on the PTX target: structure and ``ptxas``.

The kernel runs on the SPIR-V device (checked against numpy) and its PTX image is
inspected: one entry point, nothing left to call (``sqrt`` of ``sycl.length`` is
``sqrt.rn``), and NVIDIA's assembler accepts it.
"""

from __future__ import annotations

import numpy as np

import pysycl as sycl
from tests.conftest import ptxas_check


def test_vec4_kernel_compiles_to_ptx(kq: sycl.queue, ptx_images: list) -> None:
    n = 64
    x = np.arange(4 * n, dtype=np.float32)
    y = np.zeros(4 * n, dtype=np.float32)
    ln = np.zeros(n, dtype=np.float32)
    with sycl.buffer(x) as X, sycl.buffer(y) as Y, sycl.buffer(ln) as L:
        def cg(h: sycl.handler) -> None:
            ax = X.get_access(h, sycl.access_mode.read)
            ay = Y.get_access(h, sycl.access_mode.write)
            al = L.get_access(h, sycl.access_mode.write)

            def k(i):  # type: ignore[no-untyped-def]
                v = sycl.float4.load(i, ax)
                (v.wzyx() * 2.0 + (v > 3.0).convert(np.float32)).store(i, ay)
                al[i] = sycl.length(v.xyz())
            h.parallel_for(sycl.range(n), k)
        kq.submit(cg)
    v = x.reshape(n, 4)
    np.testing.assert_array_equal(y.reshape(n, 4), v[:, ::-1] * 2 - (v > 3))
    np.testing.assert_allclose(ln, np.linalg.norm(v[:, :3], axis=1), rtol=1e-6)
    (img,) = ptx_images
    ptx = img.binary.decode()
    assert f".visible .entry {img.entry}(" in ptx
    assert "call" not in ptx and "sqrt.rn.f32" in ptx
    assert "ld.global" in ptx and "st.global" in ptx
    ptxas_check(img.binary)


def test_vec_of_doubles_and_ints_compile_to_ptx(kq: sycl.queue, ptx_images: list) -> None:
    n = 16
    a = np.arange(2 * n, dtype=np.int32)
    out = np.zeros(2 * n, dtype=np.float64)
    with sycl.buffer(a) as A, sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            aa = A.get_access(h, sycl.access_mode.read)
            oo = O.get_access(h, sycl.access_mode.write)

            def k(i):  # type: ignore[no-untyped-def]
                v = sycl.int2.load(i, aa)
                d = (v * 3 - 1).convert(np.float64)
                sycl.normalize(d).store(i, oo)
            h.parallel_for(sycl.range(n), k)
        kq.submit(cg)
    d = (a.reshape(n, 2) * 3 - 1).astype(np.float64)
    np.testing.assert_allclose(out.reshape(n, 2), d / np.linalg.norm(d, axis=1)[:, None],
                               rtol=1e-12)
    (img,) = ptx_images
    ptxas_check(img.binary)

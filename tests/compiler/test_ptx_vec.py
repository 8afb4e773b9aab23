"""Vector kernels (``sycl.float4`` ...) on the PTX target: structure and ``ptxas``.

The kernel runs on the SPIR-V device (checked against numpy) and its PTX image is
inspected: one entry point, nothing left to call (``sqrt`` of ``sycl.length`` is
``sqrt.rn``), and NVIDIA's assembler accepts it.
"""

from __future__ import annotations

import re

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


def test_global_vectors_are_wide_accesses_where_aligned(kq: sycl.queue, ptx_images: list) -> None:
    # a USM pointer's alignment is a run-time value: the address is tested, one 16-byte
    # (8-byte) access where it is aligned, the element accesses elsewhere
    n = 16
    x = np.arange(4 * n, dtype=np.float32)
    p = sycl.malloc_device(x.size, kq, dtype=np.float32)
    r = sycl.malloc_device(x.size, kq, dtype=np.float32)
    kq.memcpy(p, x, x.nbytes).wait()

    def k(i):  # type: ignore[no-untyped-def]
        (sycl.float4.load(i, p) + 1.0).store(i, r)
        sycl.float2.load(2 * i, p).store(2 * i, r)

    kq.parallel_for(sycl.range(n), k).wait()
    out = np.empty_like(x)
    kq.memcpy(out, r, x.nbytes).wait()
    want = x + 1
    want.reshape(n, 4)[:, :2] = x.reshape(n, 4)[:, :2]
    np.testing.assert_array_equal(out, want)
    (img,) = ptx_images
    ptx = img.binary.decode()
    assert re.search(r"ld\.global\.v4\.(f32|b32)", ptx) and re.search(r"st\.global\.v4", ptx)
    assert re.search(r"ld\.global\.v2\.(f32|b32)", ptx)
    assert re.search(r"ld\.global\.(f32|b32) ", ptx)  # the unaligned path's element loads
    ptxas_check(img.binary)
    sycl.free(p, kq)
    sycl.free(r, kq)

"""``acc.get_multi_ptr()`` / ``acc.get_pointer()`` in kernels (C++'s ``multi_ptr``) on every
device that runs kernels and on the host device: arithmetic and element access through
global and local accessors, and as the memory operand of ``joint_matrix_load``/``store``
and ``async_work_group_copy`` -- each compared with numpy or with the ``(acc, offset)``
spelling. A store through a read-only accessor's multi_ptr, or the multi_ptr of a 2-D
accessor, is refused at the kernel's line and loses nothing."""

from __future__ import annotations

import numpy as np
import pytest

import pysycl as sycl
from pysycl.ext.oneapi.experimental import matrix as jm
from tests.kernels.test_joint_matrix import TILE, WARP, _gemm, _operands


def test_arithmetic_and_elements(any_kernel_queue: sycl.queue) -> None:
    n = 64
    x = np.arange(n, dtype=np.float32)
    y = np.zeros(n, np.float32)
    with sycl.buffer(x) as X, sycl.buffer(y) as Y:
        def cg(h: sycl.handler) -> None:
            a = X.get_access(h, sycl.access_mode.read)
            b = Y.get_access(h, sycl.access_mode.write)

            def k(i: sycl.item) -> None:
                p = a.get_multi_ptr() + 5
                q = 2 + b.get_pointer()
                if i[0] < n - 5:
                    (q - 2)[i[0]] = p[i[0]] * 3 + (p - 5)[0]

            h.parallel_for(sycl.range(n), k)

        any_kernel_queue.submit(cg)
    want = np.zeros(n, np.float32)
    want[:n - 5] = x[5:] * 3
    np.testing.assert_array_equal(y, want)


def test_local_memory_and_async_copies(any_kernel_queue: sycl.queue) -> None:
    """Both sides of ``async_work_group_copy`` as multi_ptrs; the tile read through one."""
    groups, wg, tile = 3, 8, 24
    x = np.arange(groups * tile, dtype=np.float32)
    out = np.zeros(groups * tile, np.float32)
    with sycl.buffer(x) as X, sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            a = X.get_access(h, sycl.access_mode.read)
            o = O.get_access(h, sycl.access_mode.write)
            loc = sycl.local_accessor(np.float32, sycl.range(tile), h)

            def k(it: sycl.nd_item) -> None:
                g = it.get_group_linear_id()
                t = loc.get_multi_ptr()
                it.wait_for(it.async_work_group_copy(t, a.get_multi_ptr() + g * tile, tile))
                for j in range(it.get_local_linear_id(), tile, wg):
                    o[g * tile + j] = t[tile - 1 - j] + 1

            h.parallel_for(sycl.nd_range(sycl.range(groups * wg), sycl.range(wg)), k)

        any_kernel_queue.submit(cg)
    np.testing.assert_array_equal(out, x.reshape(groups, tile)[:, ::-1].ravel() + 1)


@pytest.mark.parametrize("kind", ["fp16", "tf32", "int8"])
def test_joint_matrix_operands(any_kernel_queue: sycl.queue, kind: str) -> None:
    """A GEMM whose loads and store take ``acc.get_multi_ptr() + offset`` (row strides
    padded: the offsets are not multiples of a tile)."""
    m, n, k = (2 * t for t in TILE[kind])
    a, b, want = _operands(kind, np.random.default_rng(1), m, n, k)
    got = _gemm(any_kernel_queue, kind, a, b, k + 3, n + 5, n + 1, operands="multi_ptr")
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("bad,message", [
    ("store_read_only", "read-only|read accessor"),
    ("two_dims", "2-D accessor"),
])
def test_bad_multi_ptrs_are_refused_and_lose_nothing(any_kernel_queue: sycl.queue, bad: str,
                                                     message: str) -> None:
    x = np.arange(16, dtype=np.float32)
    m = np.arange(16, dtype=np.float32).reshape(4, 4)
    with pytest.raises((sycl.exception, TypeError), match=message):
        with sycl.buffer(x) as X, sycl.buffer(m) as M:
            def cg(h: sycl.handler) -> None:
                a = X.get_access(h, sycl.access_mode.read)
                b = M.get_access(h, sycl.access_mode.read_write)

                def k(i: sycl.item) -> None:
                    if bad == "store_read_only":
                        p = a.get_multi_ptr()
                        p[i[0]] = 1.0
                    else:
                        p2 = b.get_multi_ptr()
                        p2[i[0]] = 1.0

                h.parallel_for(sycl.range(4), k)

            any_kernel_queue.submit(cg)
    np.testing.assert_array_equal(x, np.arange(16, dtype=np.float32))
    np.testing.assert_array_equal(m, np.arange(16, dtype=np.float32).reshape(4, 4))


def test_the_ptx_of_multi_ptr_operands(kq: sycl.queue, ptx_images: list) -> None:
    """For sm_90 a local tile loaded through ``loc.get_multi_ptr() + off`` is ``ldmatrix``
    and its copy from ``acc.get_multi_ptr() + off`` is ``cp.async``, as the ``(acc, off)``
    spelling; ptxas takes it."""
    from tests.conftest import ptxas_check

    a = np.ones((16, 16), np.float16)
    c = np.zeros((16, 16), np.float32)
    with sycl.buffer(a.ravel()) as A, sycl.buffer(c.ravel()) as C:
        def cg(h: sycl.handler) -> None:
            ra = A.get_access(h, sycl.access_mode.read)
            wc = C.get_access(h, sycl.access_mode.write)
            loc = sycl.local_accessor(np.float16, sycl.range(16 * 24), h)

            def kernel(it: sycl.nd_item) -> None:
                sg = it.get_sub_group()
                t = loc.get_multi_ptr()
                for r in range(16):  # rows padded to 24 halves (48 bytes: 16-byte aligned)
                    it.wait_for(it.async_work_group_copy(t + r * 24, ra.get_multi_ptr() + r * 16,
                                                         16))
                ta = jm.joint_matrix(sg, np.float16, jm.use.a, 16, 16, jm.layout.row_major)
                tb = jm.joint_matrix(sg, np.float16, jm.use.b, 16, 16, jm.layout.row_major)
                acc = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
                jm.joint_matrix_fill(sg, acc, 0)
                jm.joint_matrix_load(sg, ta, t + 0, 24)
                jm.joint_matrix_load(sg, tb, t + 0, 24)
                jm.joint_matrix_mad(sg, acc, ta, tb, acc)
                jm.joint_matrix_store(sg, acc, wc.get_multi_ptr(), 16, jm.layout.row_major)

            h.parallel_for(sycl.nd_range((1, WARP), (1, WARP)), kernel)

        kq.submit(cg)
    np.testing.assert_array_equal(c, np.full((16, 16), 16, np.float32))
    (img,) = ptx_images
    ptx = img.binary.decode()
    assert "ldmatrix" in ptx and "cp.async" in ptx and "mma.sync" in ptx
    ptxas_check(img.binary)

"""A work-group joint_matrix: a float16 GEMM (float32 accumulators) in 64x64 tiles of C, one
work-group of 128 work-items each, checked against numpy.

``joint_matrix(it.get_group(), ...)`` is pysycl's work-group matrix (docs/matrix.md,
"Work-group matrices"): on an H100/H200 it is one warpgroup's ``wgmma``, which reads A and B
from local memory in the 128-byte-swizzled layout ``layout.ext_pysycl_swizzle128``. Each K
step stages 64 rows of A and 64 columns of B there (K-major rows of 64 halves: 128 bytes,
their 16-byte chunks swizzled), then multiplies them in four 16-deep mads. The Intel CPU and
host devices run the same kernel by loops and numpy. benchmarks/_matrix_wgmma.py is the fast
version (operands packed once, copied by ``async_work_group_copy`` in 4 stages).
"""

import numpy as np

import pysycl as sycl
from pysycl.ext.oneapi.experimental import matrix as jm

SWZ = jm.layout.ext_pysycl_swizzle128
KT = 64  # K of a staged row: 64 halves = 128 bytes


def gemm(q: sycl.queue, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    m, k = a.shape
    n = b.shape[1]
    c = np.zeros((m, n), np.float32)
    with sycl.buffer(a.ravel()) as A, sycl.buffer(b.ravel()) as B, sycl.buffer(c.ravel()) as C:
        def cg(h: sycl.handler) -> None:
            ra = A.get_access(h, sycl.access_mode.read)
            rb = B.get_access(h, sycl.access_mode.read)
            wc = C.get_access(h, sycl.access_mode.write)
            la = sycl.local_accessor(np.float16, sycl.range(64 * KT), h)
            lb = sycl.local_accessor(np.float16, sycl.range(64 * KT), h)

            @sycl.reqd_work_group_size(1, 128)  # one warpgroup per 64 rows of the tile
            def kernel(it: sycl.nd_item) -> None:
                g = it.get_group()
                lid = it.get_local_linear_id()
                ti, tj = it.get_group(0), it.get_group(1)
                acc = jm.joint_matrix(g, np.float32, jm.use.accumulator, 64, 64)
                jm.joint_matrix_fill(g, acc, 0.0)
                for k0 in range(0, k, KT):
                    for i in range(lid, 64 * KT, 128):  # row r, K index kk: byte x, swizzled
                        r, kk = i // KT, i % KT
                        x = 2 * i
                        s = (x ^ (((x >> 7) & 7) << 4)) // 2
                        la[s] = ra[(ti * 64 + r) * k + k0 + kk]  # A's rows
                        lb[s] = rb[(k0 + kk) * n + tj * 64 + r]  # B's columns
                    it.barrier(sycl.access.fence_space.local_space)
                    for kk in range(0, KT, 16):
                        ta = jm.joint_matrix(g, np.float16, jm.use.a, 64, 16, SWZ)
                        tb = jm.joint_matrix(g, np.float16, jm.use.b, 16, 64, SWZ)
                        jm.joint_matrix_load(g, ta, (la, kk), KT)
                        jm.joint_matrix_load(g, tb, (lb, kk), KT)
                        jm.joint_matrix_mad(g, acc, ta, tb, acc)
                    it.barrier(sycl.access.fence_space.local_space)
                jm.joint_matrix_store(g, acc, (wc, ti * 64 * n + tj * 64), n, jm.layout.row_major)

            h.parallel_for(sycl.nd_range((m // 64, n // 64 * 128), (1, 128)), kernel)

        q.submit(cg)
    return c


def offers_work_group_fp16(d: sycl.device) -> int:
    """A device selector: devices offering fp16 work-group matrices (an sm_90 GPU first, the
    host_debuggable device's numpy reference last)."""
    combos = d.get_info(sycl.info.device.ext_pysycl_work_group_matrix_combinations)
    if not any(c.atype == jm.matrix_type.fp16 and c.ctype == jm.matrix_type.fp32 for c in combos):
        return -1
    if d.get_backend() == sycl.backend.ext_pysycl_host:
        return 1
    return 3 if d.is_gpu() else 2


def main() -> None:
    q = sycl.queue(offers_work_group_fp16)
    rng = np.random.default_rng(0)
    a = rng.integers(-4, 5, (128, 128)).astype(np.float16)
    b = rng.integers(-4, 5, (128, 64)).astype(np.float16)
    c = gemm(q, a, b)
    want = a.astype(np.float32) @ b.astype(np.float32)
    assert np.array_equal(c, want), np.abs(c - want).max()
    print(f"work-group joint_matrix GEMM {a.shape} x {b.shape} on "
          f"{q.get_device().display_name}: OK")


if __name__ == "__main__":
    main()

"""joint_matrix: a float16 GEMM (float32 accumulators) in 16x16x16 tiles, checked against numpy.

Each work-group (one sub-group of 32 work-items) computes one 16x16 tile of C; its
sub-group multiplies 16x16 tiles of A and B with ``joint_matrix_mad`` along K
(``sycl_ext_oneapi_matrix``, docs/matrix.md). 16x16x16 is the tensor cores' shape on
NVIDIA GPUs (``mma.sync``, sm_80 and later); the Intel CPU and host devices run any
shape up to 32. benchmarks/bench_matrix.py is the fast version (local-memory tiles,
several sub-groups a work-group).
"""

import numpy as np

import pysycl as sycl
from pysycl.ext.oneapi.experimental import matrix as jm

TILE = 16
WARP = 32  # work-items of a work-group: one whole sub-group (a warp on NVIDIA GPUs)


def gemm(q: sycl.queue, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    m, k = a.shape
    n = b.shape[1]
    c = np.zeros((m, n), np.float32)
    with sycl.buffer(a.ravel()) as A, sycl.buffer(b.ravel()) as B, sycl.buffer(c.ravel()) as C:
        def cg(h: sycl.handler) -> None:
            ra = A.get_access(h, sycl.access_mode.read)
            rb = B.get_access(h, sycl.access_mode.read)
            wc = C.get_access(h, sycl.access_mode.write)

            # the work-group size is fixed: on NVIDIA GPUs every sub-group is then known to be a
            # whole warp, and the tensor-core calls need no run-time test (docs/matrix.md)
            @sycl.reqd_work_group_size(1, WARP)
            def kernel(it: sycl.nd_item) -> None:
                sg = it.get_sub_group()
                ti, tj = it.get_group(0), it.get_group(1)
                acc = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
                jm.joint_matrix_fill(sg, acc, 0.0)
                for kk in range(0, k, 16):
                    ta = jm.joint_matrix(sg, np.float16, jm.use.a, 16, 16, jm.layout.row_major)
                    tb = jm.joint_matrix(sg, np.float16, jm.use.b, 16, 16, jm.layout.row_major)
                    jm.joint_matrix_load(sg, ta, (ra, ti * 16 * k + kk), k)
                    jm.joint_matrix_load(sg, tb, (rb, kk * n + tj * 16), n)
                    jm.joint_matrix_mad(sg, acc, ta, tb, acc)
                jm.joint_matrix_store(sg, acc, (wc, ti * 16 * n + tj * 16), n, jm.layout.row_major)

            h.parallel_for(sycl.nd_range((m // TILE, n // TILE * WARP), (1, WARP)), kernel)

        q.submit(cg)
    return c.reshape(m, n)


def offers_fp16(d: sycl.device) -> int:
    """A device selector: devices offering fp16 x fp16 -> fp32 tiles (the host_debuggable
    device's numpy reference last)."""
    combos = d.get_info(sycl.info.device.ext_oneapi_matrix_combinations)
    if not any(c.atype == jm.matrix_type.fp16 and c.ctype == jm.matrix_type.fp32 for c in combos):
        return -1
    return 1 if d.get_backend() == sycl.backend.ext_pysycl_host else 2


def main() -> None:
    q = sycl.queue(offers_fp16)
    rng = np.random.default_rng(0)
    a = rng.integers(-4, 5, (32, 48)).astype(np.float16)
    b = rng.integers(-4, 5, (48, 32)).astype(np.float16)
    c = gemm(q, a, b)
    want = a.astype(np.float32) @ b.astype(np.float32)
    assert np.array_equal(c, want), np.abs(c - want).max()
    print(f"joint_matrix GEMM {a.shape} x {b.shape} on {q.get_device().display_name}: OK")


if __name__ == "__main__":
    main()

"""benchmarks/bench_matrix.py's joint_matrix GEMM kernels of 128x256 blocks (issue 28).

A work-group of 8 sub-groups (2 x 4, 256 work-items) computes a 128x256 block of C, each
sub-group 64x64 as 4x4 joint_matrix accumulators of 16x16 (as ``gemm_kernel_128w`` of
benchmarks/_matrix_pipelined.py, whose staging these follow: 16-byte ``sycl.uint4`` loads
of A and B as 32-bit words, stored into local memory as ``half8``/``ushort8``/``float4``,
rows padded for ``ldmatrix``). Twice the columns of a 128x128 block read each staged row
of A twice as often: 85 multiply-adds per staged element instead of 64.

* ``gemm_kernel_256w``: two local buffers, the next K step's loads in registers during the
  current step's mads (one step of latency covered), 54 KiB of local memory -- past the
  48 KiB a CUDA kernel gets without opting in (``info.device.local_mem_size`` on the CUDA
  backend is the opt-in maximum; NVIDIA's OpenCL cannot run these).
* ``gemm_kernel_256w3``: three local buffers and two register sets: the loads of step
  ``t + 2`` are issued in iteration ``t`` and stored at the end of iteration ``t + 1``
  (two steps' mads cover them), 81 KiB of local memory.

Local rows: A 32 + 8 halves (16 + 4 floats), B 256 + 8 elements of either kind.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from _matrix_pipelined import VEC, elem_type

import pysycl as sycl
from pysycl.ext.oneapi.experimental import matrix as jm

#: Local elements of one buffer of A (128 rows) and of B (256 columns), by kind.
A_STAGE = {"fp16": 128 * 40, "bf16": 128 * 40, "tf32": 128 * 20}
B_STAGE = {"fp16": 32 * 264, "bf16": 32 * 264, "tf32": 16 * 264}


# long: one kernel, written out (two mads steps a K step, 16 accumulators) as a user would
def gemm_kernel_256w(kind: str, pa: Any, pb: Any, pc: Any, n: int, la: Any, lb: Any
                     ) -> Callable:
    """128x256 blocks, 8 sub-groups of 64x64, two buffers (the module's text)."""
    T, V = elem_type(kind), VEC[kind]

    @sycl.reqd_work_group_size(1, 256)
    def kernel(it: Any) -> None:
        sg = it.get_sub_group()
        if kind == "tf32":  # mads step tk, A's local row stride sa, vector shifts
            tk, sa, sh, bsh, bmask, bvs = 8, 20, 2, 6, 63, 66
        else:
            tk, sa, sh, bsh, bmask, bvs = 16, 40, 3, 5, 31, 33
        bk = 2 * tk  # K step: two mads steps
        lid = it.get_local_linear_id()
        w = lid >> 5
        wm, wn = w >> 2, w & 3
        bi, bj = it.get_group(0), it.get_group(1)
        c00 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        c01 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        c02 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        c03 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        c10 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        c11 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        c12 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        c13 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        c20 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        c21 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        c22 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        c23 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        c30 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        c31 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        c32 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        c33 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        jm.joint_matrix_fill(sg, c00, 0.0)
        jm.joint_matrix_fill(sg, c01, 0.0)
        jm.joint_matrix_fill(sg, c02, 0.0)
        jm.joint_matrix_fill(sg, c03, 0.0)
        jm.joint_matrix_fill(sg, c10, 0.0)
        jm.joint_matrix_fill(sg, c11, 0.0)
        jm.joint_matrix_fill(sg, c12, 0.0)
        jm.joint_matrix_fill(sg, c13, 0.0)
        jm.joint_matrix_fill(sg, c20, 0.0)
        jm.joint_matrix_fill(sg, c21, 0.0)
        jm.joint_matrix_fill(sg, c22, 0.0)
        jm.joint_matrix_fill(sg, c23, 0.0)
        jm.joint_matrix_fill(sg, c30, 0.0)
        jm.joint_matrix_fill(sg, c31, 0.0)
        jm.joint_matrix_fill(sg, c32, 0.0)
        jm.joint_matrix_fill(sg, c33, 0.0)
        a0 = jm.joint_matrix(sg, T, jm.use.a, 16, tk, jm.layout.row_major)
        a1 = jm.joint_matrix(sg, T, jm.use.a, 16, tk, jm.layout.row_major)
        a2 = jm.joint_matrix(sg, T, jm.use.a, 16, tk, jm.layout.row_major)
        a3 = jm.joint_matrix(sg, T, jm.use.a, 16, tk, jm.layout.row_major)
        b0 = jm.joint_matrix(sg, T, jm.use.b, tk, 16, jm.layout.row_major)
        b1 = jm.joint_matrix(sg, T, jm.use.b, tk, 16, jm.layout.row_major)
        b2 = jm.joint_matrix(sg, T, jm.use.b, tk, 16, jm.layout.row_major)
        b3 = jm.joint_matrix(sg, T, jm.use.b, tk, 16, jm.layout.row_major)
        # this work-item's 16-byte vectors of a K step: A rows ra, ra + 64 (4 vectors a
        # row), B rows rb + s * rs (256 columns: 32 or 64 vectors a row), s = 0..3
        ra, ca = lid >> 2, lid & 3
        rb, cb = lid >> bsh, lid & bmask
        rs = 256 >> bsh
        arow, bcol = bi * 128, bj * 256
        steps = n // bk
        # step 0 into buffer 0
        ga0 = sycl.uint4.load((((arow + ra) * n) >> sh) + ca, pa)
        ga1 = sycl.uint4.load((((arow + ra + 64) * n) >> sh) + ca, pa)
        gb0 = sycl.uint4.load((((rb) * n + bcol) >> sh) + cb, pb)
        gb1 = sycl.uint4.load((((rb + rs) * n + bcol) >> sh) + cb, pb)
        gb2 = sycl.uint4.load((((rb + 2 * rs) * n + bcol) >> sh) + cb, pb)
        gb3 = sycl.uint4.load((((rb + 3 * rs) * n + bcol) >> sh) + cb, pb)
        ga0.as_(V).store(ra * 5 + ca, la)
        ga1.as_(V).store((ra + 64) * 5 + ca, la)
        gb0.as_(V).store(rb * bvs + cb, lb)
        gb1.as_(V).store((rb + rs) * bvs + cb, lb)
        gb2.as_(V).store((rb + 2 * rs) * bvs + cb, lb)
        gb3.as_(V).store((rb + 3 * rs) * bvs + cb, lb)
        sycl.group_barrier(it.get_group())
        for t in range(steps):
            # step t + 1's loads first (the last step loads itself again, unused)
            kn = min(t + 1, steps - 1) * bk
            ga0 = sycl.uint4.load((((arow + ra) * n + kn) >> sh) + ca, pa)
            ga1 = sycl.uint4.load((((arow + ra + 64) * n + kn) >> sh) + ca, pa)
            gb0 = sycl.uint4.load((((kn + rb) * n + bcol) >> sh) + cb, pb)
            gb1 = sycl.uint4.load((((kn + rb + rs) * n + bcol) >> sh) + cb, pb)
            gb2 = sycl.uint4.load((((kn + rb + 2 * rs) * n + bcol) >> sh) + cb, pb)
            gb3 = sycl.uint4.load((((kn + rb + 3 * rs) * n + bcol) >> sh) + cb, pb)
            cur = t & 1
            oa = cur * (128 * sa) + wm * 64 * sa  # this sub-group's rows of A in the buffer
            ob = cur * (bk * 264) + wn * 64  # and its columns of B
            jm.joint_matrix_load(sg, a0, (la, oa), sa)
            jm.joint_matrix_load(sg, a1, (la, oa + 16 * sa), sa)
            jm.joint_matrix_load(sg, a2, (la, oa + 32 * sa), sa)
            jm.joint_matrix_load(sg, a3, (la, oa + 48 * sa), sa)
            jm.joint_matrix_load(sg, b0, (lb, ob), 264)
            jm.joint_matrix_load(sg, b1, (lb, ob + 16), 264)
            jm.joint_matrix_load(sg, b2, (lb, ob + 32), 264)
            jm.joint_matrix_load(sg, b3, (lb, ob + 48), 264)
            jm.joint_matrix_mad(sg, c00, a0, b0, c00)
            jm.joint_matrix_mad(sg, c01, a0, b1, c01)
            jm.joint_matrix_mad(sg, c02, a0, b2, c02)
            jm.joint_matrix_mad(sg, c03, a0, b3, c03)
            jm.joint_matrix_mad(sg, c10, a1, b0, c10)
            jm.joint_matrix_mad(sg, c11, a1, b1, c11)
            jm.joint_matrix_mad(sg, c12, a1, b2, c12)
            jm.joint_matrix_mad(sg, c13, a1, b3, c13)
            jm.joint_matrix_mad(sg, c20, a2, b0, c20)
            jm.joint_matrix_mad(sg, c21, a2, b1, c21)
            jm.joint_matrix_mad(sg, c22, a2, b2, c22)
            jm.joint_matrix_mad(sg, c23, a2, b3, c23)
            jm.joint_matrix_mad(sg, c30, a3, b0, c30)
            jm.joint_matrix_mad(sg, c31, a3, b1, c31)
            jm.joint_matrix_mad(sg, c32, a3, b2, c32)
            jm.joint_matrix_mad(sg, c33, a3, b3, c33)
            jm.joint_matrix_load(sg, a0, (la, oa + tk), sa)
            jm.joint_matrix_load(sg, a1, (la, oa + 16 * sa + tk), sa)
            jm.joint_matrix_load(sg, a2, (la, oa + 32 * sa + tk), sa)
            jm.joint_matrix_load(sg, a3, (la, oa + 48 * sa + tk), sa)
            jm.joint_matrix_load(sg, b0, (lb, ob + tk * 264), 264)
            jm.joint_matrix_load(sg, b1, (lb, ob + tk * 264 + 16), 264)
            jm.joint_matrix_load(sg, b2, (lb, ob + tk * 264 + 32), 264)
            jm.joint_matrix_load(sg, b3, (lb, ob + tk * 264 + 48), 264)
            jm.joint_matrix_mad(sg, c00, a0, b0, c00)
            jm.joint_matrix_mad(sg, c01, a0, b1, c01)
            jm.joint_matrix_mad(sg, c02, a0, b2, c02)
            jm.joint_matrix_mad(sg, c03, a0, b3, c03)
            jm.joint_matrix_mad(sg, c10, a1, b0, c10)
            jm.joint_matrix_mad(sg, c11, a1, b1, c11)
            jm.joint_matrix_mad(sg, c12, a1, b2, c12)
            jm.joint_matrix_mad(sg, c13, a1, b3, c13)
            jm.joint_matrix_mad(sg, c20, a2, b0, c20)
            jm.joint_matrix_mad(sg, c21, a2, b1, c21)
            jm.joint_matrix_mad(sg, c22, a2, b2, c22)
            jm.joint_matrix_mad(sg, c23, a2, b3, c23)
            jm.joint_matrix_mad(sg, c30, a3, b0, c30)
            jm.joint_matrix_mad(sg, c31, a3, b1, c31)
            jm.joint_matrix_mad(sg, c32, a3, b2, c32)
            jm.joint_matrix_mad(sg, c33, a3, b3, c33)
            # step t + 1 into the other buffer (its last readers passed the last barrier)
            va = (1 - cur) * 640  # a buffer of A or B is 640 or 1056 16-byte vectors
            vb = (1 - cur) * 1056
            ga0.as_(V).store(va + ra * 5 + ca, la)
            ga1.as_(V).store(va + (ra + 64) * 5 + ca, la)
            gb0.as_(V).store(vb + rb * bvs + cb, lb)
            gb1.as_(V).store(vb + (rb + rs) * bvs + cb, lb)
            gb2.as_(V).store(vb + (rb + 2 * rs) * bvs + cb, lb)
            gb3.as_(V).store(vb + (rb + 3 * rs) * bvs + cb, lb)
            sycl.group_barrier(it.get_group())
        row, col = bi * 128 + wm * 64, bj * 256 + wn * 64
        jm.joint_matrix_store(sg, c00, pc + (row * n + col), n, jm.layout.row_major)
        jm.joint_matrix_store(sg, c01, pc + (row * n + col + 16), n, jm.layout.row_major)
        jm.joint_matrix_store(sg, c02, pc + (row * n + col + 32), n, jm.layout.row_major)
        jm.joint_matrix_store(sg, c03, pc + (row * n + col + 48), n, jm.layout.row_major)
        jm.joint_matrix_store(sg, c10, pc + ((row + 16) * n + col), n, jm.layout.row_major)
        jm.joint_matrix_store(sg, c11, pc + ((row + 16) * n + col + 16), n, jm.layout.row_major)
        jm.joint_matrix_store(sg, c12, pc + ((row + 16) * n + col + 32), n, jm.layout.row_major)
        jm.joint_matrix_store(sg, c13, pc + ((row + 16) * n + col + 48), n, jm.layout.row_major)
        jm.joint_matrix_store(sg, c20, pc + ((row + 32) * n + col), n, jm.layout.row_major)
        jm.joint_matrix_store(sg, c21, pc + ((row + 32) * n + col + 16), n, jm.layout.row_major)
        jm.joint_matrix_store(sg, c22, pc + ((row + 32) * n + col + 32), n, jm.layout.row_major)
        jm.joint_matrix_store(sg, c23, pc + ((row + 32) * n + col + 48), n, jm.layout.row_major)
        jm.joint_matrix_store(sg, c30, pc + ((row + 48) * n + col), n, jm.layout.row_major)
        jm.joint_matrix_store(sg, c31, pc + ((row + 48) * n + col + 16), n, jm.layout.row_major)
        jm.joint_matrix_store(sg, c32, pc + ((row + 48) * n + col + 32), n, jm.layout.row_major)
        jm.joint_matrix_store(sg, c33, pc + ((row + 48) * n + col + 48), n, jm.layout.row_major)

    return kernel


# long: one kernel, written out (two K steps a turn of the loop, 16 accumulators)
def gemm_kernel_256w3(kind: str, pa: Any, pb: Any, pc: Any, n: int, la: Any, lb: Any
                      ) -> Callable:
    """128x256 blocks, 8 sub-groups of 64x64, three buffers, loads two steps ahead."""
    T, V = elem_type(kind), VEC[kind]

    @sycl.reqd_work_group_size(1, 256)
    def kernel(it: Any) -> None:
        sg = it.get_sub_group()
        if kind == "tf32":  # mads step tk, A's local row stride sa, vector shifts
            tk, sa, sh, bsh, bmask, bvs = 8, 20, 2, 6, 63, 66
        else:
            tk, sa, sh, bsh, bmask, bvs = 16, 40, 3, 5, 31, 33
        bk = 2 * tk  # K step: two mads steps
        lid = it.get_local_linear_id()
        w = lid >> 5
        wm, wn = w >> 2, w & 3
        bi, bj = it.get_group(0), it.get_group(1)
        c00 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        c01 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        c02 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        c03 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        c10 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        c11 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        c12 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        c13 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        c20 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        c21 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        c22 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        c23 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        c30 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        c31 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        c32 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        c33 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        jm.joint_matrix_fill(sg, c00, 0.0)
        jm.joint_matrix_fill(sg, c01, 0.0)
        jm.joint_matrix_fill(sg, c02, 0.0)
        jm.joint_matrix_fill(sg, c03, 0.0)
        jm.joint_matrix_fill(sg, c10, 0.0)
        jm.joint_matrix_fill(sg, c11, 0.0)
        jm.joint_matrix_fill(sg, c12, 0.0)
        jm.joint_matrix_fill(sg, c13, 0.0)
        jm.joint_matrix_fill(sg, c20, 0.0)
        jm.joint_matrix_fill(sg, c21, 0.0)
        jm.joint_matrix_fill(sg, c22, 0.0)
        jm.joint_matrix_fill(sg, c23, 0.0)
        jm.joint_matrix_fill(sg, c30, 0.0)
        jm.joint_matrix_fill(sg, c31, 0.0)
        jm.joint_matrix_fill(sg, c32, 0.0)
        jm.joint_matrix_fill(sg, c33, 0.0)
        a0 = jm.joint_matrix(sg, T, jm.use.a, 16, tk, jm.layout.row_major)
        a1 = jm.joint_matrix(sg, T, jm.use.a, 16, tk, jm.layout.row_major)
        a2 = jm.joint_matrix(sg, T, jm.use.a, 16, tk, jm.layout.row_major)
        a3 = jm.joint_matrix(sg, T, jm.use.a, 16, tk, jm.layout.row_major)
        b0 = jm.joint_matrix(sg, T, jm.use.b, tk, 16, jm.layout.row_major)
        b1 = jm.joint_matrix(sg, T, jm.use.b, tk, 16, jm.layout.row_major)
        b2 = jm.joint_matrix(sg, T, jm.use.b, tk, 16, jm.layout.row_major)
        b3 = jm.joint_matrix(sg, T, jm.use.b, tk, 16, jm.layout.row_major)
        # this work-item's 16-byte vectors of a K step: A rows ra, ra + 64 (4 vectors a
        # row), B rows rb + s * rs (256 columns: 32 or 64 vectors a row), s = 0..3
        ra, ca = lid >> 2, lid & 3
        rb, cb = lid >> bsh, lid & bmask
        rs = 256 >> bsh
        arow, bcol = bi * 128, bj * 256
        steps = n // bk
        # step 0 into buffer 0; step 1 in registers (h*), stored by iteration 0
        ga0 = sycl.uint4.load((((arow + ra) * n) >> sh) + ca, pa)
        ga1 = sycl.uint4.load((((arow + ra + 64) * n) >> sh) + ca, pa)
        gb0 = sycl.uint4.load((((rb) * n + bcol) >> sh) + cb, pb)
        gb1 = sycl.uint4.load((((rb + rs) * n + bcol) >> sh) + cb, pb)
        gb2 = sycl.uint4.load((((rb + 2 * rs) * n + bcol) >> sh) + cb, pb)
        gb3 = sycl.uint4.load((((rb + 3 * rs) * n + bcol) >> sh) + cb, pb)
        ga0.as_(V).store(ra * 5 + ca, la)
        ga1.as_(V).store((ra + 64) * 5 + ca, la)
        gb0.as_(V).store(rb * bvs + cb, lb)
        gb1.as_(V).store((rb + rs) * bvs + cb, lb)
        gb2.as_(V).store((rb + 2 * rs) * bvs + cb, lb)
        gb3.as_(V).store((rb + 3 * rs) * bvs + cb, lb)
        ha0 = sycl.uint4.load((((arow + ra) * n + bk) >> sh) + ca, pa)
        ha1 = sycl.uint4.load((((arow + ra + 64) * n + bk) >> sh) + ca, pa)
        hb0 = sycl.uint4.load((((bk + rb) * n + bcol) >> sh) + cb, pb)
        hb1 = sycl.uint4.load((((bk + rb + rs) * n + bcol) >> sh) + cb, pb)
        hb2 = sycl.uint4.load((((bk + rb + 2 * rs) * n + bcol) >> sh) + cb, pb)
        hb3 = sycl.uint4.load((((bk + rb + 3 * rs) * n + bcol) >> sh) + cb, pb)
        sycl.group_barrier(it.get_group())
        for t in range(0, steps, 2):  # two iterations a turn: the register sets swap
            # iteration t: step t + 2 into g*, step t + 1 (h*) stored
            kn = min(t + 2, steps - 1) * bk
            ga0 = sycl.uint4.load((((arow + ra) * n + kn) >> sh) + ca, pa)
            ga1 = sycl.uint4.load((((arow + ra + 64) * n + kn) >> sh) + ca, pa)
            gb0 = sycl.uint4.load((((kn + rb) * n + bcol) >> sh) + cb, pb)
            gb1 = sycl.uint4.load((((kn + rb + rs) * n + bcol) >> sh) + cb, pb)
            gb2 = sycl.uint4.load((((kn + rb + 2 * rs) * n + bcol) >> sh) + cb, pb)
            gb3 = sycl.uint4.load((((kn + rb + 3 * rs) * n + bcol) >> sh) + cb, pb)
            cur = t % 3
            oa = cur * (128 * sa) + wm * 64 * sa
            ob = cur * (bk * 264) + wn * 64
            jm.joint_matrix_load(sg, a0, (la, oa), sa)
            jm.joint_matrix_load(sg, a1, (la, oa + 16 * sa), sa)
            jm.joint_matrix_load(sg, a2, (la, oa + 32 * sa), sa)
            jm.joint_matrix_load(sg, a3, (la, oa + 48 * sa), sa)
            jm.joint_matrix_load(sg, b0, (lb, ob), 264)
            jm.joint_matrix_load(sg, b1, (lb, ob + 16), 264)
            jm.joint_matrix_load(sg, b2, (lb, ob + 32), 264)
            jm.joint_matrix_load(sg, b3, (lb, ob + 48), 264)
            jm.joint_matrix_mad(sg, c00, a0, b0, c00)
            jm.joint_matrix_mad(sg, c01, a0, b1, c01)
            jm.joint_matrix_mad(sg, c02, a0, b2, c02)
            jm.joint_matrix_mad(sg, c03, a0, b3, c03)
            jm.joint_matrix_mad(sg, c10, a1, b0, c10)
            jm.joint_matrix_mad(sg, c11, a1, b1, c11)
            jm.joint_matrix_mad(sg, c12, a1, b2, c12)
            jm.joint_matrix_mad(sg, c13, a1, b3, c13)
            jm.joint_matrix_mad(sg, c20, a2, b0, c20)
            jm.joint_matrix_mad(sg, c21, a2, b1, c21)
            jm.joint_matrix_mad(sg, c22, a2, b2, c22)
            jm.joint_matrix_mad(sg, c23, a2, b3, c23)
            jm.joint_matrix_mad(sg, c30, a3, b0, c30)
            jm.joint_matrix_mad(sg, c31, a3, b1, c31)
            jm.joint_matrix_mad(sg, c32, a3, b2, c32)
            jm.joint_matrix_mad(sg, c33, a3, b3, c33)
            jm.joint_matrix_load(sg, a0, (la, oa + tk), sa)
            jm.joint_matrix_load(sg, a1, (la, oa + 16 * sa + tk), sa)
            jm.joint_matrix_load(sg, a2, (la, oa + 32 * sa + tk), sa)
            jm.joint_matrix_load(sg, a3, (la, oa + 48 * sa + tk), sa)
            jm.joint_matrix_load(sg, b0, (lb, ob + tk * 264), 264)
            jm.joint_matrix_load(sg, b1, (lb, ob + tk * 264 + 16), 264)
            jm.joint_matrix_load(sg, b2, (lb, ob + tk * 264 + 32), 264)
            jm.joint_matrix_load(sg, b3, (lb, ob + tk * 264 + 48), 264)
            jm.joint_matrix_mad(sg, c00, a0, b0, c00)
            jm.joint_matrix_mad(sg, c01, a0, b1, c01)
            jm.joint_matrix_mad(sg, c02, a0, b2, c02)
            jm.joint_matrix_mad(sg, c03, a0, b3, c03)
            jm.joint_matrix_mad(sg, c10, a1, b0, c10)
            jm.joint_matrix_mad(sg, c11, a1, b1, c11)
            jm.joint_matrix_mad(sg, c12, a1, b2, c12)
            jm.joint_matrix_mad(sg, c13, a1, b3, c13)
            jm.joint_matrix_mad(sg, c20, a2, b0, c20)
            jm.joint_matrix_mad(sg, c21, a2, b1, c21)
            jm.joint_matrix_mad(sg, c22, a2, b2, c22)
            jm.joint_matrix_mad(sg, c23, a2, b3, c23)
            jm.joint_matrix_mad(sg, c30, a3, b0, c30)
            jm.joint_matrix_mad(sg, c31, a3, b1, c31)
            jm.joint_matrix_mad(sg, c32, a3, b2, c32)
            jm.joint_matrix_mad(sg, c33, a3, b3, c33)
            nxt = (t + 1) % 3
            ha0.as_(V).store(nxt * 640 + ra * 5 + ca, la)
            ha1.as_(V).store(nxt * 640 + (ra + 64) * 5 + ca, la)
            hb0.as_(V).store(nxt * 1056 + rb * bvs + cb, lb)
            hb1.as_(V).store(nxt * 1056 + (rb + rs) * bvs + cb, lb)
            hb2.as_(V).store(nxt * 1056 + (rb + 2 * rs) * bvs + cb, lb)
            hb3.as_(V).store(nxt * 1056 + (rb + 3 * rs) * bvs + cb, lb)
            sycl.group_barrier(it.get_group())
            # iteration t + 1: step t + 3 into h*, step t + 2 (g*) stored
            kn = min(t + 1 + 2, steps - 1) * bk
            ha0 = sycl.uint4.load((((arow + ra) * n + kn) >> sh) + ca, pa)
            ha1 = sycl.uint4.load((((arow + ra + 64) * n + kn) >> sh) + ca, pa)
            hb0 = sycl.uint4.load((((kn + rb) * n + bcol) >> sh) + cb, pb)
            hb1 = sycl.uint4.load((((kn + rb + rs) * n + bcol) >> sh) + cb, pb)
            hb2 = sycl.uint4.load((((kn + rb + 2 * rs) * n + bcol) >> sh) + cb, pb)
            hb3 = sycl.uint4.load((((kn + rb + 3 * rs) * n + bcol) >> sh) + cb, pb)
            cur = (t + 1) % 3
            oa = cur * (128 * sa) + wm * 64 * sa
            ob = cur * (bk * 264) + wn * 64
            jm.joint_matrix_load(sg, a0, (la, oa), sa)
            jm.joint_matrix_load(sg, a1, (la, oa + 16 * sa), sa)
            jm.joint_matrix_load(sg, a2, (la, oa + 32 * sa), sa)
            jm.joint_matrix_load(sg, a3, (la, oa + 48 * sa), sa)
            jm.joint_matrix_load(sg, b0, (lb, ob), 264)
            jm.joint_matrix_load(sg, b1, (lb, ob + 16), 264)
            jm.joint_matrix_load(sg, b2, (lb, ob + 32), 264)
            jm.joint_matrix_load(sg, b3, (lb, ob + 48), 264)
            jm.joint_matrix_mad(sg, c00, a0, b0, c00)
            jm.joint_matrix_mad(sg, c01, a0, b1, c01)
            jm.joint_matrix_mad(sg, c02, a0, b2, c02)
            jm.joint_matrix_mad(sg, c03, a0, b3, c03)
            jm.joint_matrix_mad(sg, c10, a1, b0, c10)
            jm.joint_matrix_mad(sg, c11, a1, b1, c11)
            jm.joint_matrix_mad(sg, c12, a1, b2, c12)
            jm.joint_matrix_mad(sg, c13, a1, b3, c13)
            jm.joint_matrix_mad(sg, c20, a2, b0, c20)
            jm.joint_matrix_mad(sg, c21, a2, b1, c21)
            jm.joint_matrix_mad(sg, c22, a2, b2, c22)
            jm.joint_matrix_mad(sg, c23, a2, b3, c23)
            jm.joint_matrix_mad(sg, c30, a3, b0, c30)
            jm.joint_matrix_mad(sg, c31, a3, b1, c31)
            jm.joint_matrix_mad(sg, c32, a3, b2, c32)
            jm.joint_matrix_mad(sg, c33, a3, b3, c33)
            jm.joint_matrix_load(sg, a0, (la, oa + tk), sa)
            jm.joint_matrix_load(sg, a1, (la, oa + 16 * sa + tk), sa)
            jm.joint_matrix_load(sg, a2, (la, oa + 32 * sa + tk), sa)
            jm.joint_matrix_load(sg, a3, (la, oa + 48 * sa + tk), sa)
            jm.joint_matrix_load(sg, b0, (lb, ob + tk * 264), 264)
            jm.joint_matrix_load(sg, b1, (lb, ob + tk * 264 + 16), 264)
            jm.joint_matrix_load(sg, b2, (lb, ob + tk * 264 + 32), 264)
            jm.joint_matrix_load(sg, b3, (lb, ob + tk * 264 + 48), 264)
            jm.joint_matrix_mad(sg, c00, a0, b0, c00)
            jm.joint_matrix_mad(sg, c01, a0, b1, c01)
            jm.joint_matrix_mad(sg, c02, a0, b2, c02)
            jm.joint_matrix_mad(sg, c03, a0, b3, c03)
            jm.joint_matrix_mad(sg, c10, a1, b0, c10)
            jm.joint_matrix_mad(sg, c11, a1, b1, c11)
            jm.joint_matrix_mad(sg, c12, a1, b2, c12)
            jm.joint_matrix_mad(sg, c13, a1, b3, c13)
            jm.joint_matrix_mad(sg, c20, a2, b0, c20)
            jm.joint_matrix_mad(sg, c21, a2, b1, c21)
            jm.joint_matrix_mad(sg, c22, a2, b2, c22)
            jm.joint_matrix_mad(sg, c23, a2, b3, c23)
            jm.joint_matrix_mad(sg, c30, a3, b0, c30)
            jm.joint_matrix_mad(sg, c31, a3, b1, c31)
            jm.joint_matrix_mad(sg, c32, a3, b2, c32)
            jm.joint_matrix_mad(sg, c33, a3, b3, c33)
            nxt = (t + 1 + 1) % 3
            ga0.as_(V).store(nxt * 640 + ra * 5 + ca, la)
            ga1.as_(V).store(nxt * 640 + (ra + 64) * 5 + ca, la)
            gb0.as_(V).store(nxt * 1056 + rb * bvs + cb, lb)
            gb1.as_(V).store(nxt * 1056 + (rb + rs) * bvs + cb, lb)
            gb2.as_(V).store(nxt * 1056 + (rb + 2 * rs) * bvs + cb, lb)
            gb3.as_(V).store(nxt * 1056 + (rb + 3 * rs) * bvs + cb, lb)
            sycl.group_barrier(it.get_group())
        row, col = bi * 128 + wm * 64, bj * 256 + wn * 64
        jm.joint_matrix_store(sg, c00, pc + (row * n + col), n, jm.layout.row_major)
        jm.joint_matrix_store(sg, c01, pc + (row * n + col + 16), n, jm.layout.row_major)
        jm.joint_matrix_store(sg, c02, pc + (row * n + col + 32), n, jm.layout.row_major)
        jm.joint_matrix_store(sg, c03, pc + (row * n + col + 48), n, jm.layout.row_major)
        jm.joint_matrix_store(sg, c10, pc + ((row + 16) * n + col), n, jm.layout.row_major)
        jm.joint_matrix_store(sg, c11, pc + ((row + 16) * n + col + 16), n, jm.layout.row_major)
        jm.joint_matrix_store(sg, c12, pc + ((row + 16) * n + col + 32), n, jm.layout.row_major)
        jm.joint_matrix_store(sg, c13, pc + ((row + 16) * n + col + 48), n, jm.layout.row_major)
        jm.joint_matrix_store(sg, c20, pc + ((row + 32) * n + col), n, jm.layout.row_major)
        jm.joint_matrix_store(sg, c21, pc + ((row + 32) * n + col + 16), n, jm.layout.row_major)
        jm.joint_matrix_store(sg, c22, pc + ((row + 32) * n + col + 32), n, jm.layout.row_major)
        jm.joint_matrix_store(sg, c23, pc + ((row + 32) * n + col + 48), n, jm.layout.row_major)
        jm.joint_matrix_store(sg, c30, pc + ((row + 48) * n + col), n, jm.layout.row_major)
        jm.joint_matrix_store(sg, c31, pc + ((row + 48) * n + col + 16), n, jm.layout.row_major)
        jm.joint_matrix_store(sg, c32, pc + ((row + 48) * n + col + 32), n, jm.layout.row_major)
        jm.joint_matrix_store(sg, c33, pc + ((row + 48) * n + col + 48), n, jm.layout.row_major)

    return kernel

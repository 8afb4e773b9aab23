"""benchmarks/bench_matrix.py's pipelined joint_matrix GEMM kernels (issue 28).

Both compute a 128x128 block of C = A*B per work-group, one K step (32 for fp16/bf16,
16 for TF32: 16 KiB of A and B either way) after another, with the step's A and B
tiles in local memory. Unlike the first kernels (``gemm_kernel_64``/``_128``), which
load a step, wait at a barrier, multiply it and wait again, these keep **two** local
buffers: while the sub-groups multiply step ``t`` from one, each work-item has
already issued its global loads of step ``t + 1`` (16-byte ``sycl.uint4.load``s into
registers), and stores them into the other buffer afterwards -- one barrier a step,
the loads' latency under the mads. The kernels carry ``reqd_work_group_size``
(every sub-group a whole warp: no run-time whole-warp tests around ``ldmatrix`` and
``mma.sync``), and the two mads steps of a K step are written out (no inner loop).

* ``gemm_kernel_128db``: 8 sub-groups (2 x 4) of 64x32 (4x2 accumulators), 256 work-items.
* ``gemm_kernel_128w``: 4 sub-groups (2 x 2) of 64x64 (4x4 accumulators), 128 work-items:
  half the ``ldmatrix`` per ``mma.sync`` of the 64x32 tiles, twice the accumulators.

Memory: A and B as 32-bit words for every kind (fp16/bf16 pairs, float32 bits), read as
``sycl.uint4`` and stored into local memory as ``half8``/``ushort8``/``float4``. Local
rows are padded (A: 32 + 8 halves or 16 + 4 floats; B: 128 + 8) so that ``ldmatrix``
rows are 16-byte aligned and the sub-groups' reads spread over the banks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import pysycl as sycl
from pysycl.ext.oneapi import bfloat16
from pysycl.ext.oneapi.experimental import matrix as jm

#: Local elements of one buffer (of two) of A (128 rows) and of B (128 columns), by kind.
A_STAGE = {"fp16": 128 * 40, "bf16": 128 * 40, "tf32": 128 * 20}
B_STAGE = {"fp16": 32 * 136, "bf16": 32 * 136, "tf32": 16 * 136}


#: The local elements of 16 bytes, by kind.
VEC = {"fp16": sycl.half8, "bf16": sycl.ushort8, "tf32": sycl.float4}


def elem_type(kind: str) -> Any:
    return {"fp16": np.float16, "bf16": bfloat16, "tf32": jm.precision.tf32}[kind]


# long: one kernel, written out (a K step's two mads steps, 8 accumulators) as a user would
def gemm_kernel_128db(kind: str, pa: Any, pb: Any, pc: Any, n: int, la: Any, lb: Any
                      ) -> Callable:
    """128x128 blocks, 8 sub-groups of 64x32, double-buffered (the module's text)."""
    T, V = elem_type(kind), VEC[kind]

    @sycl.reqd_work_group_size(1, 256)
    def kernel(it: Any) -> None:
        sg = it.get_sub_group()
        if kind == "tf32":  # mads step tk, A's local row stride sa, vector shifts
            tk, sa, sh, bsh, bmask, bvs = 8, 20, 2, 5, 31, 34
        else:
            tk, sa, sh, bsh, bmask, bvs = 16, 40, 3, 4, 15, 17
        bk = 2 * tk  # K step: two mads steps
        lid = it.get_local_linear_id()
        w = lid >> 5
        wm, wn = w >> 2, w & 3
        bi, bj = it.get_group(0), it.get_group(1)
        c00 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        c01 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        c10 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        c11 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        c20 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        c21 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        c30 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        c31 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        jm.joint_matrix_fill(sg, c00, 0.0)
        jm.joint_matrix_fill(sg, c01, 0.0)
        jm.joint_matrix_fill(sg, c10, 0.0)
        jm.joint_matrix_fill(sg, c11, 0.0)
        jm.joint_matrix_fill(sg, c20, 0.0)
        jm.joint_matrix_fill(sg, c21, 0.0)
        jm.joint_matrix_fill(sg, c30, 0.0)
        jm.joint_matrix_fill(sg, c31, 0.0)
        a0 = jm.joint_matrix(sg, T, jm.use.a, 16, tk, jm.layout.row_major)
        a1 = jm.joint_matrix(sg, T, jm.use.a, 16, tk, jm.layout.row_major)
        a2 = jm.joint_matrix(sg, T, jm.use.a, 16, tk, jm.layout.row_major)
        a3 = jm.joint_matrix(sg, T, jm.use.a, 16, tk, jm.layout.row_major)
        b0 = jm.joint_matrix(sg, T, jm.use.b, tk, 16, jm.layout.row_major)
        b1 = jm.joint_matrix(sg, T, jm.use.b, tk, 16, jm.layout.row_major)
        # this work-item's 16-byte vectors of a K step: A rows ra, ra + 64 (4 vectors a
        # row), B rows rb, rb + 256 >> bsh (128 columns: 16 or 32 vectors a row)
        ra, ca = lid >> 2, lid & 3
        rb, cb = lid >> bsh, lid & bmask
        rb1 = rb + (256 >> bsh)
        arow, bcol = bi * 128, bj * 128
        steps = n // bk
        # step 0 into buffer 0
        ga0 = sycl.uint4.load((((arow + ra) * n) >> sh) + ca, pa)
        ga1 = sycl.uint4.load((((arow + ra + 64) * n) >> sh) + ca, pa)
        gb0 = sycl.uint4.load(((rb * n + bcol) >> sh) + cb, pb)
        gb1 = sycl.uint4.load(((rb1 * n + bcol) >> sh) + cb, pb)
        ga0.as_(V).store(ra * 5 + ca, la)
        ga1.as_(V).store((ra + 64) * 5 + ca, la)
        gb0.as_(V).store(rb * bvs + cb, lb)
        gb1.as_(V).store(rb1 * bvs + cb, lb)
        sycl.group_barrier(it.get_group())
        for t in range(steps):
            # step t + 1's loads first (the last step loads itself again, unused)
            kn = min(t + 1, steps - 1) * bk
            ga0 = sycl.uint4.load((((arow + ra) * n + kn) >> sh) + ca, pa)
            ga1 = sycl.uint4.load((((arow + ra + 64) * n + kn) >> sh) + ca, pa)
            gb0 = sycl.uint4.load((((kn + rb) * n + bcol) >> sh) + cb, pb)
            gb1 = sycl.uint4.load((((kn + rb1) * n + bcol) >> sh) + cb, pb)
            cur = t & 1
            oa = cur * (128 * sa) + wm * 64 * sa  # this sub-group's rows of A in the buffer
            ob = cur * (bk * 136) + wn * 32  # and its columns of B
            jm.joint_matrix_load(sg, a0, (la, oa), sa)
            jm.joint_matrix_load(sg, a1, (la, oa + 16 * sa), sa)
            jm.joint_matrix_load(sg, a2, (la, oa + 32 * sa), sa)
            jm.joint_matrix_load(sg, a3, (la, oa + 48 * sa), sa)
            jm.joint_matrix_load(sg, b0, (lb, ob), 136)
            jm.joint_matrix_load(sg, b1, (lb, ob + 16), 136)
            jm.joint_matrix_mad(sg, c00, a0, b0, c00)
            jm.joint_matrix_mad(sg, c01, a0, b1, c01)
            jm.joint_matrix_mad(sg, c10, a1, b0, c10)
            jm.joint_matrix_mad(sg, c11, a1, b1, c11)
            jm.joint_matrix_mad(sg, c20, a2, b0, c20)
            jm.joint_matrix_mad(sg, c21, a2, b1, c21)
            jm.joint_matrix_mad(sg, c30, a3, b0, c30)
            jm.joint_matrix_mad(sg, c31, a3, b1, c31)
            jm.joint_matrix_load(sg, a0, (la, oa + tk), sa)
            jm.joint_matrix_load(sg, a1, (la, oa + 16 * sa + tk), sa)
            jm.joint_matrix_load(sg, a2, (la, oa + 32 * sa + tk), sa)
            jm.joint_matrix_load(sg, a3, (la, oa + 48 * sa + tk), sa)
            jm.joint_matrix_load(sg, b0, (lb, ob + tk * 136), 136)
            jm.joint_matrix_load(sg, b1, (lb, ob + tk * 136 + 16), 136)
            jm.joint_matrix_mad(sg, c00, a0, b0, c00)
            jm.joint_matrix_mad(sg, c01, a0, b1, c01)
            jm.joint_matrix_mad(sg, c10, a1, b0, c10)
            jm.joint_matrix_mad(sg, c11, a1, b1, c11)
            jm.joint_matrix_mad(sg, c20, a2, b0, c20)
            jm.joint_matrix_mad(sg, c21, a2, b1, c21)
            jm.joint_matrix_mad(sg, c30, a3, b0, c30)
            jm.joint_matrix_mad(sg, c31, a3, b1, c31)
            # step t + 1 into the other buffer (its last readers passed the last barrier)
            va = (1 - cur) * 640  # a buffer of A or B is 640 or 544 16-byte vectors
            vb = (1 - cur) * 544
            ga0.as_(V).store(va + ra * 5 + ca, la)
            ga1.as_(V).store(va + (ra + 64) * 5 + ca, la)
            gb0.as_(V).store(vb + rb * bvs + cb, lb)
            gb1.as_(V).store(vb + rb1 * bvs + cb, lb)
            sycl.group_barrier(it.get_group())
        row, col = bi * 128 + wm * 64, bj * 128 + wn * 32
        jm.joint_matrix_store(sg, c00, pc + (row * n + col), n, jm.layout.row_major)
        jm.joint_matrix_store(sg, c01, pc + (row * n + col + 16), n, jm.layout.row_major)
        jm.joint_matrix_store(sg, c10, pc + ((row + 16) * n + col), n, jm.layout.row_major)
        jm.joint_matrix_store(sg, c11, pc + ((row + 16) * n + col + 16), n, jm.layout.row_major)
        jm.joint_matrix_store(sg, c20, pc + ((row + 32) * n + col), n, jm.layout.row_major)
        jm.joint_matrix_store(sg, c21, pc + ((row + 32) * n + col + 16), n, jm.layout.row_major)
        jm.joint_matrix_store(sg, c30, pc + ((row + 48) * n + col), n, jm.layout.row_major)
        jm.joint_matrix_store(sg, c31, pc + ((row + 48) * n + col + 16), n, jm.layout.row_major)

    return kernel


# long: one kernel, written out (two mads steps a K step, 16 accumulators) as a user would
def gemm_kernel_128w(kind: str, pa: Any, pb: Any, pc: Any, n: int, la: Any, lb: Any
                     ) -> Callable:
    """128x128 blocks, 4 sub-groups of 64x64, double-buffered (the module's text)."""
    T, V = elem_type(kind), VEC[kind]

    @sycl.reqd_work_group_size(1, 128)
    def kernel(it: Any) -> None:
        sg = it.get_sub_group()
        if kind == "tf32":  # mads step tk, A's local row stride sa, vector shifts
            tk, sa, sh, bsh, bmask, bvs = 8, 20, 2, 5, 31, 34
        else:
            tk, sa, sh, bsh, bmask, bvs = 16, 40, 3, 4, 15, 17
        bk = 2 * tk
        lid = it.get_local_linear_id()
        w = lid >> 5
        wm, wn = w >> 1, w & 1
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
        # this work-item's 16-byte vectors of a K step: A rows ra + 32s (4 vectors a row),
        # B rows rb + s * (128 >> bsh) (16 or 32 vectors a row), s = 0..3
        ra, ca = lid >> 2, lid & 3
        rb, cb = lid >> bsh, lid & bmask
        rs = 128 >> bsh
        arow, bcol = bi * 128, bj * 128
        steps = n // bk
        # step 0 into buffer 0
        ga0 = sycl.uint4.load((((arow + ra) * n) >> sh) + ca, pa)
        ga1 = sycl.uint4.load((((arow + ra + 32) * n) >> sh) + ca, pa)
        ga2 = sycl.uint4.load((((arow + ra + 64) * n) >> sh) + ca, pa)
        ga3 = sycl.uint4.load((((arow + ra + 96) * n) >> sh) + ca, pa)
        gb0 = sycl.uint4.load(((rb * n + bcol) >> sh) + cb, pb)
        gb1 = sycl.uint4.load((((rb + rs) * n + bcol) >> sh) + cb, pb)
        gb2 = sycl.uint4.load((((rb + 2 * rs) * n + bcol) >> sh) + cb, pb)
        gb3 = sycl.uint4.load((((rb + 3 * rs) * n + bcol) >> sh) + cb, pb)
        ga0.as_(V).store(ra * 5 + ca, la)
        ga1.as_(V).store((ra + 32) * 5 + ca, la)
        ga2.as_(V).store((ra + 64) * 5 + ca, la)
        ga3.as_(V).store((ra + 96) * 5 + ca, la)
        gb0.as_(V).store(rb * bvs + cb, lb)
        gb1.as_(V).store((rb + rs) * bvs + cb, lb)
        gb2.as_(V).store((rb + 2 * rs) * bvs + cb, lb)
        gb3.as_(V).store((rb + 3 * rs) * bvs + cb, lb)
        sycl.group_barrier(it.get_group())
        for t in range(steps):
            # step t + 1's loads first (the last step loads itself again, unused)
            kn = min(t + 1, steps - 1) * bk
            ga0 = sycl.uint4.load((((arow + ra) * n + kn) >> sh) + ca, pa)
            ga1 = sycl.uint4.load((((arow + ra + 32) * n + kn) >> sh) + ca, pa)
            ga2 = sycl.uint4.load((((arow + ra + 64) * n + kn) >> sh) + ca, pa)
            ga3 = sycl.uint4.load((((arow + ra + 96) * n + kn) >> sh) + ca, pa)
            gb0 = sycl.uint4.load((((kn + rb) * n + bcol) >> sh) + cb, pb)
            gb1 = sycl.uint4.load((((kn + rb + rs) * n + bcol) >> sh) + cb, pb)
            gb2 = sycl.uint4.load((((kn + rb + 2 * rs) * n + bcol) >> sh) + cb, pb)
            gb3 = sycl.uint4.load((((kn + rb + 3 * rs) * n + bcol) >> sh) + cb, pb)
            cur = t & 1
            oa = cur * (128 * sa) + wm * 64 * sa  # this sub-group's rows of A in the buffer
            ob = cur * (bk * 136) + wn * 64  # and its columns of B
            jm.joint_matrix_load(sg, a0, (la, oa), sa)
            jm.joint_matrix_load(sg, a1, (la, oa + 16 * sa), sa)
            jm.joint_matrix_load(sg, a2, (la, oa + 32 * sa), sa)
            jm.joint_matrix_load(sg, a3, (la, oa + 48 * sa), sa)
            jm.joint_matrix_load(sg, b0, (lb, ob), 136)
            jm.joint_matrix_load(sg, b1, (lb, ob + 16), 136)
            jm.joint_matrix_load(sg, b2, (lb, ob + 32), 136)
            jm.joint_matrix_load(sg, b3, (lb, ob + 48), 136)
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
            jm.joint_matrix_load(sg, b0, (lb, ob + tk * 136), 136)
            jm.joint_matrix_load(sg, b1, (lb, ob + tk * 136 + 16), 136)
            jm.joint_matrix_load(sg, b2, (lb, ob + tk * 136 + 32), 136)
            jm.joint_matrix_load(sg, b3, (lb, ob + tk * 136 + 48), 136)
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
            va = (1 - cur) * 640  # a buffer of A or B is 640 or 544 16-byte vectors
            vb = (1 - cur) * 544
            ga0.as_(V).store(va + ra * 5 + ca, la)
            ga1.as_(V).store(va + (ra + 32) * 5 + ca, la)
            ga2.as_(V).store(va + (ra + 64) * 5 + ca, la)
            ga3.as_(V).store(va + (ra + 96) * 5 + ca, la)
            gb0.as_(V).store(vb + rb * bvs + cb, lb)
            gb1.as_(V).store(vb + (rb + rs) * bvs + cb, lb)
            gb2.as_(V).store(vb + (rb + 2 * rs) * bvs + cb, lb)
            gb3.as_(V).store(vb + (rb + 3 * rs) * bvs + cb, lb)
            sycl.group_barrier(it.get_group())
        row, col = bi * 128 + wm * 64, bj * 128 + wn * 64
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

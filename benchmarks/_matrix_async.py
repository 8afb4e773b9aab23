"""benchmarks/bench_matrix.py's joint_matrix GEMM kernels fed by ``cp.async`` pipelines (issue 28).

The operands are first packed (:func:`packer`) into the tiles a work-group stages, each
contiguous in global memory with its local padding: A as ``n/128 x n/BK`` tiles of 128
rows of ``BK + PAD`` elements, B as ``n/BK x n/256`` tiles of ``BK`` rows of ``256 + PAD``
(``BK`` 32 halves or 16 floats, ``PAD`` 8 halves or 4 floats: the rows ``ldmatrix``
reads land in distinct banks). A K step's tiles are then one ``async_work_group_copy``
each -- 16-byte ``cp.async.cg`` chunks shared by the 256 work-items, no registers -- and
``it.wait_for(ev)`` waits for that step's copies only (``cp.async.wait_group``, SYCL's
``device_event`` per copy): the copies of the next ``stages - 1`` steps stay in flight
during a step's multiply-adds, as CUTLASS's and Triton's multi-stage pipelines do.

``gemm_kernel_async(kind, stages)``: 128x256 blocks of C by 8 sub-groups of 64x64 (4x4
joint_matrix accumulators of 16x16, the mads of ``gemm_kernel_256w``), ``stages`` local
buffers of A and B (3: 81 KiB, 4: 108 KiB -- the CUDA backend's opt-in local memory).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from _matrix_pipelined import elem_type

import pysycl as sycl
from pysycl.ext.oneapi.experimental import matrix as jm

#: Local (and packed) elements of one tile of A (128 rows) and of B (256 columns), by kind.
A_STAGE = {"fp16": 128 * 40, "bf16": 128 * 40, "tf32": 128 * 20}
B_STAGE = {"fp16": 32 * 264, "bf16": 32 * 264, "tf32": 16 * 264}
#: K step (elements) by kind
BK = {"fp16": 32, "bf16": 32, "tf32": 16}


def packed_sizes(kind: str, n: int) -> tuple[int, int]:
    """Elements of packed A and of packed B for ``n x n`` operands."""
    steps = n // BK[kind]
    return (n // 128) * steps * A_STAGE[kind], steps * (n // 256) * B_STAGE[kind]


def packer(kind: str, n: int, src: Any, dst: Any, is_a: bool) -> Callable:
    """A 2-D range kernel writing ``n x n`` row-major ``src`` into its packed tiles ``dst``
    (the padding is left as it is: never read)."""
    bk = BK[kind]
    steps, nb = n // bk, n // 256
    ra, rb = bk + (8 if bk == 32 else 4), 264
    asz, bsz = A_STAGE[kind], B_STAGE[kind]

    def pack(it: Any) -> None:
        i, k = it[0], it[1]
        if is_a:  # element (i, k) of A: tile (i // 128, k // bk), row i % 128, column k % bk
            at = ((i >> 7) * steps + k // bk) * asz + (i & 127) * ra + (k & (bk - 1))
        else:  # element (k, j) of B (i is k here): tile (i // bk, k // 256)
            at = ((i // bk) * nb + (k >> 8)) * bsz + (i & (bk - 1)) * rb + (k & 255)
        dst[at] = src[i * n + k]

    return pack


# long: one kernel, written out (two mads steps a K step, 16 accumulators) as a user would
def gemm_kernel_async(kind: str, stages: int, pa: Any, pb: Any, pc: Any, n: int, la: Any,
                      lb: Any, constant: bool = True) -> Callable:
    """128x256 blocks, 8 sub-groups of 64x64, ``stages`` buffers filled by ``cp.async``
    from the packed operands ``pa``, ``pb`` (the module's text). ``constant``: the stages a
    constant of the kernel (a string capture), else a captured int (a kernel argument):
    on an H100 the constant is 10-20% faster (on Intel's CPU runtime the constant once
    crashed the process: a pysycl SPIR-V bug, fixed -- docs/debugging.md)."""
    T = elem_type(kind)
    depth, count = (str(stages) if constant else "captured"), stages

    @sycl.reqd_work_group_size(1, 256)
    def kernel(it: Any) -> None:
        sg = it.get_sub_group()
        # constants, not captured ints: LLVM then knows every local tile offset is a
        # multiple of 16 bytes, and joint_matrix_load is ldmatrix with no run-time test
        if kind == "tf32":  # mads step tk, A's local row stride sa, tile elements asz, bsz
            tk, sa, asz, bsz = 8, 20, 2560, 4224
        else:
            tk, sa, asz, bsz = 16, 40, 5120, 8448
        stages = count if depth == "captured" else (4 if depth == "4" else 3)
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
        steps = n // bk
        nb = n >> 8
        at = pa + bi * steps * asz  # this block's row of A tiles, its column of B tiles
        bt = pb + bj * bsz
        lap, lbp = la.get_multi_ptr(), lb.get_multi_ptr()
        # the first stages - 1 steps in flight; a step's event is its B copy's (after A's)
        it.async_work_group_copy(lap, at, asz)
        e0 = it.async_work_group_copy(lbp, bt, bsz)
        it.async_work_group_copy(lap + asz, at + asz, asz)
        e1 = it.async_work_group_copy(lbp + bsz, bt + nb * bsz, bsz)
        e2 = e1
        if stages == 4:
            it.async_work_group_copy(lap + 2 * asz, at + 2 * asz, asz)
            e2 = it.async_work_group_copy(lbp + 2 * bsz, bt + 2 * nb * bsz, bsz)
        for t in range(steps):
            it.wait_for(e0)  # step t's copies; the later ones stay in flight
            nxt = t + stages - 1  # into the buffer step t - 1 used (every work-item is past it)
            en = e2 if stages == 4 else e1
            if nxt < steps:
                slot = nxt % stages
                it.async_work_group_copy(lap + slot * asz, at + nxt * asz, asz)
                en = it.async_work_group_copy(lbp + slot * bsz, bt + nxt * nb * bsz, bsz)
            cur = t % stages
            oa = cur * asz + wm * 64 * sa  # this sub-group's rows of A in the buffer
            ob = cur * bsz + wn * 64  # and its columns of B
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
            if stages == 4:
                e0, e1, e2 = e1, e2, en
            else:
                e0, e1 = e1, en
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

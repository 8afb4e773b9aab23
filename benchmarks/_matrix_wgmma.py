"""benchmarks/bench_matrix.py's GEMM with work-group joint_matrix (``wgmma`` on sm_90; issue 28).

A work-group of 256 work-items (two warpgroups) computes a 128 x 256 block of C as one
work-group accumulator, ``joint_matrix(it.get_group(), float32, use.accumulator, 128, 256)``:
each K step multiplies 128 x K of A by K x 256 of B from local memory, the tiles in
``layout.ext_pysycl_swizzle128`` (K-major 128-byte rows, the 128-byte swizzle: what wgmma
reads). The operands are first packed (:func:`packer`) into those tiles, pre-swizzled,
each stage's tile contiguous in global memory: a stage is then one
``async_work_group_copy`` per operand (16-byte ``cp.async`` chunks, no registers), and
``stages`` of them are in flight (the pipeline of ``_matrix_async.py``). With
``in_flight`` a step's products run past the next barrier (``ext_pysycl_mads_in_flight``).

A K step is 128 bytes of K (64 halves or 32 floats): four mads of 32 bytes each
(``m64n256k16`` fp16/bf16, ``m64n256k8`` tf32, one per warpgroup). Local memory:
``stages`` x (16 + 32) KiB (4 stages: 192 KiB of the 227 KiB an H100/H200 work-group may use).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from _matrix_pipelined import elem_type

import pysycl as sycl
from pysycl.ext.oneapi.experimental import matrix as jm

BM, BN = 128, 256  # C block of a work-group
SWZ = jm.layout.ext_pysycl_swizzle128


def row_elems(kind: str) -> int:
    """Elements of a 128-byte row: the K of a stage."""
    return 32 if kind == "tf32" else 64


def packed_sizes(kind: str, n: int) -> tuple[int, int]:
    """Elements of packed A and of packed B for ``n x n`` operands (no padding)."""
    return n * n, n * n


def packer(kind: str, n: int, src: Any, dst: Any, is_a: bool, bn: int = 256) -> Callable:
    """A 2-D range kernel writing ``n x n`` row-major ``src`` into its packed, swizzled tiles
    ``dst``: A as [n/128][n/kt][128 rows][kt], B transposed as [n/bn][n/kt][bn columns][kt]
    (kt elements of K a 128-byte row), each tile's element ``i`` at ``swizzled(i)``."""
    kt = row_elems(kind)
    isz = 4 if kind == "tf32" else 2
    steps = n // kt

    def pack(it: Any) -> None:
        r, c = it[0], it[1]  # element (r, c) of the row-major source
        if is_a:  # row r of A, K index c
            tile = (r // 128) * steps + c // kt
            i = (r % 128) * kt + c % kt
            size = 128 * kt
        else:  # K index r of B, column c
            tile = (c // bn) * steps + r // kt
            i = (c % bn) * kt + r % kt
            size = bn * kt
        x = i * isz
        dst[tile * size + (x ^ (((x >> 7) & 7) << 4)) // isz] = src[r * n + c]

    return pack


def gemm_kernel_wgmma(kind: str, stages: int, pa: Any, pb: Any, pc: Any, n: int, la: Any,
                      lb: Any, bn: int = 256, in_flight: bool = False) -> Callable:
    """128 x ``bn`` blocks (bn 256 or 128), two warpgroups, ``stages`` (3 to 5) local buffers
    filled by ``cp.async`` from the packed operands; the stage count and the block's width
    constants of the kernel (string captures).

    ``in_flight``: the kernel declares ``ext_pysycl_mads_in_flight(4)`` (a step's four mads),
    so the barrier of step ``t`` leaves step ``t - 1``'s products running, and step ``t``
    refills the buffer step ``t - 2`` read: ``stages - 2`` steps of copies ahead instead of
    ``stages - 1``."""
    T = elem_type(kind)
    depth, wide = str(stages), str(bn)
    behind = "2" if in_flight else "1"  # the step whose buffer a step refills: t - behind

    @sycl.reqd_work_group_size(1, 256)
    def kernel(it: Any) -> None:
        g = it.get_group()
        if kind == "tf32":  # K of a mad, K of a stage (one 128-byte row)
            ks, kt = 8, 32
        else:
            ks, kt = 16, 64
        stages = 5 if depth == "5" else (4 if depth == "4" else 3)
        ahead = stages - (2 if behind == "2" else 1)  # steps of copies in flight
        w = 128 if wide == "128" else 256
        asz, bsz = 128 * kt, w * kt  # a stage's tiles (elements)
        bi, bj = it.get_group(0), it.get_group(1)
        if wide == "128":
            acc = jm.joint_matrix(g, np.float32, jm.use.accumulator, 128, 128)
        else:
            acc = jm.joint_matrix(g, np.float32, jm.use.accumulator, 128, 256)
        jm.joint_matrix_fill(g, acc, 0.0)
        steps = n // kt
        at = pa + bi * steps * asz
        bt = pb + bj * steps * bsz
        lap, lbp = la.get_multi_ptr(), lb.get_multi_ptr()
        # ``ahead`` steps in flight; a step's event is its B copy's (committed after A's)
        it.async_work_group_copy(lap, at, asz)
        e0 = it.async_work_group_copy(lbp, bt, bsz)
        e1 = e0
        e2 = e0
        if ahead >= 2:
            it.async_work_group_copy(lap + asz, at + asz, asz)
            e1 = it.async_work_group_copy(lbp + bsz, bt + bsz, bsz)
            e2 = e1
        if ahead >= 3:
            it.async_work_group_copy(lap + 2 * asz, at + 2 * asz, asz)
            e2 = it.async_work_group_copy(lbp + 2 * bsz, bt + 2 * bsz, bsz)
        for t in range(steps):
            it.wait_for(e0)  # step t's copies (and a barrier); later ones stay in flight
            nxt = t + ahead  # into the buffer of step t - behind: its mads completed
            if nxt < steps:
                slot = nxt % stages
                it.async_work_group_copy(lap + slot * asz, at + nxt * asz, asz)
                e3 = it.async_work_group_copy(lbp + slot * bsz, bt + nxt * bsz, bsz)
            else:
                e3 = e2
            cur = t % stages
            for kk in range(0, kt, ks):
                ta = jm.joint_matrix(g, T, jm.use.a, 128, ks, SWZ)
                if wide == "128":
                    tb = jm.joint_matrix(g, T, jm.use.b, ks, 128, SWZ)
                else:
                    tb = jm.joint_matrix(g, T, jm.use.b, ks, 256, SWZ)
                jm.joint_matrix_load(g, ta, (la, cur * asz + kk), kt)
                jm.joint_matrix_load(g, tb, (lb, cur * bsz + kk), kt)
                jm.joint_matrix_mad(g, acc, ta, tb, acc)
            if ahead >= 3:
                e0, e1, e2 = e1, e2, e3
            elif ahead == 2:
                e0, e1, e2 = e1, e3, e3
            else:
                e0, e2 = e3, e3
        jm.joint_matrix_store(g, acc, pc + bi * 128 * n + bj * w, n, jm.layout.row_major)

    if in_flight:  # a step's 4 mads (128 bytes of K, 32 a mad) may run past its barrier
        jm.ext_pysycl_mads_in_flight(4)(kernel)
    return kernel

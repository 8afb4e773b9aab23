"""Issue 28's benchmark: a GEMM written with joint_matrix in Python beside cuBLAS and Triton.

    python benchmarks/bench_matrix.py                 # 4096^2 and 8192^2, fp16, bf16, tf32
    python benchmarks/bench_matrix.py --quick         # 1024^2 (256^2 on a CPU device), 3 rounds
    python benchmarks/bench_matrix.py --write         # also docs/performance.md (bench_matrix)
    python benchmarks/bench_matrix.py --sizes 4096 --kinds tf32 --rounds 9
    python benchmarks/bench_matrix.py --variants 128,128db --kinds fp16
    python benchmarks/bench_matrix.py --kinds fp16,tf32 --variants 128w,256w,256w3 --write

C (n x n, float32) = A * B of n x n matrices in fp16, bf16 (fp32 accumulation) or float32
multiplied in TF32, by three peers in one process, interleaved round by round (each
peer once per round, the median of the rounds reported), every result checked first. A
peer's sample is ``--reps`` GEMMs (10) issued back to back and one wait, as a loop of
GEMMs runs (a single GEMM and its wait would time the host's launch and wait as well):

* **pysycl**, variants of a Python nd_range kernel (``--variants``, all by default) on the
  CUDA backend's GPU (else the first device with PTX images; ``--quick`` falls back to a
  SPIR-V device, a smoke test of the script): ``gemm_kernel_64``, work-groups of 4
  sub-groups (128 work-items) computing a 64x64 block of C, each sub-group 32x32 as 2x2
  joint_matrix accumulators of 16x16; ``gemm_kernel_128``, 8 sub-groups computing
  128x128, each 64x32 as 4x2 accumulators. Each K step of 32 stages the A and B tiles in
  local memory, 16 bytes a work-item at a time (``sycl.uint4.load`` of 16-bit pairs,
  ``.as_(sycl.half8)``, ``.store``; ``sycl.float4`` for TF32), rows padded by 8 elements
  (16-byte aligned, so ``joint_matrix_load`` is ``ldmatrix``), waits at a barrier, then
  the sub-groups multiply from there (``mma.sync`` m16n8k16, m16n8k8 for TF32).
  ``128db`` and ``128w`` (benchmarks/_matrix_pipelined.py) double-buffer the local tiles
  (the next K step's loads in flight during the mads) with 8 sub-groups of 64x32 or 4
  of 64x64. ``256w`` and ``256w3`` (benchmarks/_matrix_wide.py) compute 128x256 blocks
  with 8 sub-groups of 64x64, in two buffers (54 KiB of local memory) or three with the
  loads two K steps ahead (81 KiB): past 48 KiB, so the CUDA backend only. ``256a3``,
  ``256a4`` (benchmarks/_matrix_async.py): the same blocks fed by ``cp.async`` pipelines
  of 3 or 4 stages -- the operands packed first into tiles contiguous in global memory
  (a range kernel each, timed with the GEMM), a K step's tiles one
  ``async_work_group_copy`` each, ``wait_for`` of a step's event leaving the later
  steps' copies in flight; ``256a4k`` is ``256a4`` without the packing in its time
  (operands packed once, as a library that keeps packed weights would).
* **cuBLAS**: ``torch.matmul`` at the same precision (fp16/bf16 tensors; float32 with
  ``torch.backends.cuda.matmul.allow_tf32 = True``); its output is the input type.
* **Triton**: a ``tl.dot`` kernel (128x128x32 blocks, 8 warps, 3 stages, fp32
  accumulator, float32 output; ``input_precision="tf32"`` for float32).

Inputs are random integers in [-2, 2] (exact in every type), so pysycl and Triton are
compared with float64 numpy exactly on 64 sampled rows, cuBLAS to 1e-3 (fp16/bf16
output rounding; its reduced-precision fp16/bf16 reductions are turned off). TFLOP/s
count 2 n^3. A peer that cannot run (no torch, no triton) is "n/a" in the table, with
the reason under it, and the others still run.
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np

import pysycl as sycl
from pysycl._core import bfloat16 as bf16
from pysycl.ext.oneapi import bfloat16
from pysycl.ext.oneapi.experimental import matrix as jm

sys.path.insert(0, __import__("os").path.dirname(__file__))
import _matrix_async as asyn
import _matrix_pipelined as pipelined
import _matrix_wgmma as wgm
import _matrix_wide as wide
from _common import interleaved, write_section

BK = 32  # K step staged in local memory (written as literals in the kernels: constants
PAD = 8  # divide and index without run-time divisions); local rows padded by PAD elements
#: variant -> (C block rows, C block cols of a work-group, work-items = 32 x sub-groups);
#: the pipelined variants (benchmarks/_matrix_pipelined.py, _matrix_wide.py) are the ones
#: in PIPELINED, with their (kernel maker, local elements of A and of B a buffer, buffers)
VARIANTS = {"64": (64, 64, 128), "128": (128, 128, 256), "128db": (128, 128, 256),
            "128w": (128, 128, 128), "256w": (128, 256, 256), "256w3": (128, 256, 256),
            "256a3": (128, 256, 256), "256a4": (128, 256, 256), "256a4k": (128, 256, 256),
            "256g4": (128, 256, 256), "256g4k": (128, 256, 256), "128g3k": (128, 128, 256),
            "256g4f": (128, 256, 256), "128g5f": (128, 128, 256)}
#: the cp.async variants (benchmarks/_matrix_async.py; the work-group matrices of
#: benchmarks/_matrix_wgmma.py: WGMMA): (stages, whether packing is timed)
ASYNC = {"256a3": (3, True), "256a4": (4, True), "256a4k": (4, False),
         "256g4": (4, True), "256g4k": (4, False), "128g3k": (3, False),
         "256g4f": (4, False), "128g5f": (5, False)}
WGMMA = ("256g4", "256g4k", "128g3k", "256g4f", "128g5f")
#: the wgmma variants whose kernels leave a step's products in flight at the barrier
IN_FLIGHT = ("256g4f", "128g5f")
PIPELINED = {
    "128db": (pipelined.gemm_kernel_128db, pipelined.A_STAGE, pipelined.B_STAGE, 2),
    "128w": (pipelined.gemm_kernel_128w, pipelined.A_STAGE, pipelined.B_STAGE, 2),
    "256w": (wide.gemm_kernel_256w, wide.A_STAGE, wide.B_STAGE, 2),
    "256w3": (wide.gemm_kernel_256w3, wide.A_STAGE, wide.B_STAGE, 3)}
#: the table's column of each variant
TITLES = {"64": "64x64", "128": "128x128",
          "128db": "128x128 2 buffers, 8 sub-groups",
          "128w": "128x128 2 buffers, 4 sub-groups of 64x64",
          "256w": "128x256 2 buffers, 8 sub-groups of 64x64",
          "256w3": "128x256 3 buffers, loads 2 steps ahead",
          "256a3": "128x256 cp.async 3 stages, packing included",
          "256a4": "128x256 cp.async 4 stages, packing included",
          "256a4k": "128x256 cp.async 4 stages, kernel only",
          "256g4": "128x256 work-group matrix (wgmma) 4 stages, packing included",
          "256g4k": "128x256 work-group matrix (wgmma) 4 stages, kernel only",
          "128g3k": "128x128 work-group matrix (wgmma) 3 stages, kernel only",
          "256g4f": "128x256 work-group matrix (wgmma) 4 stages, mads in flight, kernel only",
          "128g5f": "128x128 work-group matrix (wgmma) 5 stages, mads in flight, kernel only"}
KINDS = {"fp16": np.float16, "bf16": np.uint16, "tf32": np.float32}  # memory of A and B
#: GEMMs a sample issues back to back before its one wait (``--reps``)
REPS = [10]


# ------------------------------------------------------------------------ pysycl
def _elem_type(kind: str) -> Any:
    return {"fp16": np.float16, "bf16": bfloat16, "tf32": jm.precision.tf32}[kind]


def gemm_kernel_64(kind: str, pa: Any, pb: Any, pc: Any, n: int, la: Any, lb: Any) -> Callable:
    """The joint_matrix GEMM kernel for ``kind`` (a constant string: each kind compiles its
    own kernel, the other kinds' branches dropped): 64x64 blocks of C, 4 sub-groups of
    32x32 (2x2 accumulators)."""
    T = _elem_type(kind)

    def kernel(it: Any) -> None:
        sg = it.get_sub_group()
        if kind == "tf32":
            tk = 8
        else:
            tk = 16
        lid = it.get_local_linear_id()
        w = lid >> 5
        wm, wn = w >> 1, w & 1
        bi, bj = it.get_group(0), it.get_group(1)
        c00 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        c01 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        c10 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        c11 = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        jm.joint_matrix_fill(sg, c00, 0.0)
        jm.joint_matrix_fill(sg, c01, 0.0)
        jm.joint_matrix_fill(sg, c10, 0.0)
        jm.joint_matrix_fill(sg, c11, 0.0)
        a0 = jm.joint_matrix(sg, T, jm.use.a, 16, tk, jm.layout.row_major)
        a1 = jm.joint_matrix(sg, T, jm.use.a, 16, tk, jm.layout.row_major)
        b0 = jm.joint_matrix(sg, T, jm.use.b, tk, 16, jm.layout.row_major)
        b1 = jm.joint_matrix(sg, T, jm.use.b, tk, 16, jm.layout.row_major)
        arow = (bi * 64) * n  # the block's first row of A
        for k0 in range(0, n, 32):
            # A (64 x 32, local stride 32 + 8) and B (32 x 64, local stride 64 + 8) by 128
            # work-items, 16 bytes at a time (sycl.vec load, bitcast, store)
            if kind == "tf32":
                for s in range(4):
                    v = lid + 128 * s
                    r, cv = v >> 3, v & 7
                    sycl.float4.load(((arow + r * n + k0) >> 2) + cv, pa).store(r * 10 + cv, la)
                for s in range(4):
                    v = lid + 128 * s
                    r, cv = v >> 4, v & 15
                    sycl.float4.load((((k0 + r) * n + bj * 64) >> 2) + cv, pb).store(
                        r * 18 + cv, lb)
            else:
                for s in range(2):
                    v = lid + 128 * s
                    r, cv = v >> 2, v & 3
                    wa = sycl.uint4.load(((arow + r * n + k0) >> 3) + cv, pa)
                    if kind == "fp16":
                        wa.as_(sycl.half8).store(r * 5 + cv, la)
                    else:
                        wa.as_(sycl.ushort8).store(r * 5 + cv, la)
                for s in range(2):
                    v = lid + 128 * s
                    r, cv = v >> 3, v & 7
                    wb = sycl.uint4.load((((k0 + r) * n + bj * 64) >> 3) + cv, pb)
                    if kind == "fp16":
                        wb.as_(sycl.half8).store(r * 9 + cv, lb)
                    else:
                        wb.as_(sycl.ushort8).store(r * 9 + cv, lb)
            sycl.group_barrier(it.get_group())
            for kk in range(0, 32, tk):
                jm.joint_matrix_load(sg, a0, (la, (wm * 32) * 40 + kk), 40)
                jm.joint_matrix_load(sg, a1, (la, (wm * 32 + 16) * 40 + kk), 40)
                jm.joint_matrix_load(sg, b0, (lb, kk * 72 + wn * 32), 72)
                jm.joint_matrix_load(sg, b1, (lb, kk * 72 + wn * 32 + 16), 72)
                jm.joint_matrix_mad(sg, c00, a0, b0, c00)
                jm.joint_matrix_mad(sg, c01, a0, b1, c01)
                jm.joint_matrix_mad(sg, c10, a1, b0, c10)
                jm.joint_matrix_mad(sg, c11, a1, b1, c11)
            sycl.group_barrier(it.get_group())
        row, col = bi * 64 + wm * 32, bj * 64 + wn * 32
        jm.joint_matrix_store(sg, c00, pc + (row * n + col), n, jm.layout.row_major)
        jm.joint_matrix_store(sg, c01, pc + (row * n + col + 16), n, jm.layout.row_major)
        jm.joint_matrix_store(sg, c10, pc + ((row + 16) * n + col), n, jm.layout.row_major)
        jm.joint_matrix_store(sg, c11, pc + ((row + 16) * n + col + 16), n, jm.layout.row_major)

    return kernel


def gemm_kernel_128(kind: str, pa: Any, pb: Any, pc: Any, n: int, la: Any, lb: Any) -> Callable:
    """128x128 blocks of C, 8 sub-groups (2 x 4) of 64x32 each (4x2 accumulators): twice
    the mads per staged element of :func:`gemm_kernel_64`, one work-group per SM or so."""
    T = _elem_type(kind)

    def kernel(it: Any) -> None:
        sg = it.get_sub_group()
        if kind == "tf32":
            tk = 8
        else:
            tk = 16
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
        arow = (bi * 128) * n
        for k0 in range(0, n, 32):
            # A (128 x 32, local stride 32 + 8) and B (32 x 128, local stride 128 + 8) by 256
            # work-items, 16 bytes at a time
            if kind == "tf32":
                for s in range(4):
                    v = lid + 256 * s
                    r, cv = v >> 3, v & 7
                    sycl.float4.load(((arow + r * n + k0) >> 2) + cv, pa).store(r * 10 + cv, la)
                for s in range(4):
                    v = lid + 256 * s
                    r, cv = v >> 5, v & 31
                    sycl.float4.load((((k0 + r) * n + bj * 128) >> 2) + cv, pb).store(
                        r * 34 + cv, lb)
            else:
                for s in range(2):
                    v = lid + 256 * s
                    r, cv = v >> 2, v & 3
                    wa = sycl.uint4.load(((arow + r * n + k0) >> 3) + cv, pa)
                    if kind == "fp16":
                        wa.as_(sycl.half8).store(r * 5 + cv, la)
                    else:
                        wa.as_(sycl.ushort8).store(r * 5 + cv, la)
                for s in range(2):
                    v = lid + 256 * s
                    r, cv = v >> 4, v & 15
                    wb = sycl.uint4.load((((k0 + r) * n + bj * 128) >> 3) + cv, pb)
                    if kind == "fp16":
                        wb.as_(sycl.half8).store(r * 17 + cv, lb)
                    else:
                        wb.as_(sycl.ushort8).store(r * 17 + cv, lb)
            sycl.group_barrier(it.get_group())
            for kk in range(0, 32, tk):
                row = wm * 64
                jm.joint_matrix_load(sg, a0, (la, row * 40 + kk), 40)
                jm.joint_matrix_load(sg, a1, (la, (row + 16) * 40 + kk), 40)
                jm.joint_matrix_load(sg, a2, (la, (row + 32) * 40 + kk), 40)
                jm.joint_matrix_load(sg, a3, (la, (row + 48) * 40 + kk), 40)
                jm.joint_matrix_load(sg, b0, (lb, kk * 136 + wn * 32), 136)
                jm.joint_matrix_load(sg, b1, (lb, kk * 136 + wn * 32 + 16), 136)
                jm.joint_matrix_mad(sg, c00, a0, b0, c00)
                jm.joint_matrix_mad(sg, c01, a0, b1, c01)
                jm.joint_matrix_mad(sg, c10, a1, b0, c10)
                jm.joint_matrix_mad(sg, c11, a1, b1, c11)
                jm.joint_matrix_mad(sg, c20, a2, b0, c20)
                jm.joint_matrix_mad(sg, c21, a2, b1, c21)
                jm.joint_matrix_mad(sg, c30, a3, b0, c30)
                jm.joint_matrix_mad(sg, c31, a3, b1, c31)
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


def pysycl_peer(q: sycl.queue, kind: str, a: np.ndarray, b: np.ndarray, variant: str
                ) -> tuple[Callable[[], None], Callable[[], np.ndarray]]:
    """(run once and wait, the result as numpy) of the joint_matrix GEMM ``variant`` on ``q``."""
    if variant in ASYNC:
        return _async_peer(q, kind, a, b, variant)
    bm, bn, wg = VARIANTS[variant]
    n = a.shape[0]
    mt = KINDS[kind]
    # A and B as the kernels read them: 16-bit elements in pairs (uint32), float32 as is
    # (the pipelined kernels: 32-bit words for every kind)
    words = variant in PIPELINED
    gt = np.float32 if kind == "tf32" and not words else np.uint32
    count = n * n * a.itemsize // 4
    pa = sycl.malloc_device(count, q, dtype=gt)
    pb = sycl.malloc_device(count, q, dtype=gt)
    pc = sycl.malloc_device(n * n, q, dtype=np.float32)
    q.memcpy(pa, np.ascontiguousarray(a).ravel(), n * n * a.itemsize).wait()
    q.memcpy(pb, np.ascontiguousarray(b).ravel(), n * n * b.itemsize).wait()
    if words:
        make, a_stage, b_stage, buffers = PIPELINED[variant]
        asize, bsize = buffers * a_stage[kind], buffers * b_stage[kind]
    else:
        make = gemm_kernel_64 if variant == "64" else gemm_kernel_128
        asize, bsize = bm * (BK + PAD), BK * (bm + PAD)

    def cg(h: sycl.handler) -> None:
        la = sycl.local_accessor(mt, sycl.range(asize), h)
        lb = sycl.local_accessor(mt, sycl.range(bsize), h)
        h.parallel_for(sycl.nd_range((n // bm, n // bn * wg), (1, wg)),
                       make(kind, pa, pb, pc, n, la, lb))

    def run() -> None:
        for _ in range(REPS[0]):
            q.submit(cg)
        q.wait()

    def result() -> np.ndarray:
        out = np.empty(n * n, np.float32)
        q.memcpy(out, pc, n * n * 4).wait()
        return out.reshape(n, n)

    return run, result


def _async_peer(q: sycl.queue, kind: str, a: np.ndarray, b: np.ndarray, variant: str
                ) -> tuple[Callable[[], None], Callable[[], np.ndarray]]:
    """A ``cp.async`` variant: pack A and B (timed unless ``256a4k``), then the GEMM."""
    stages, timed_pack = ASYNC[variant]
    n, mt = a.shape[0], KINDS[kind]
    mod: Any = wgm if variant in WGMMA else asyn
    dev = q.get_device()
    if mod is wgm and not (dev.has(sycl.aspect.ext_pysycl_ptx) and dev.get_info(
            sycl.info.device.ext_pysycl_work_group_matrix_combinations)):
        raise sycl.exception(sycl.errc.kernel_not_supported, "work-group matrices of 128x256 "
                             "run on wgmma (compute capability 9.0) only")
    sa, sb = mod.packed_sizes(kind, n)
    ra = sycl.malloc_device(n * n, q, dtype=mt)
    rb = sycl.malloc_device(n * n, q, dtype=mt)
    pa = sycl.malloc_device(sa, q, dtype=mt)
    pb = sycl.malloc_device(sb, q, dtype=mt)
    pc = sycl.malloc_device(n * n, q, dtype=np.float32)
    q.memcpy(ra, np.ascontiguousarray(a).view(mt).ravel(), n * n * a.itemsize).wait()
    q.memcpy(rb, np.ascontiguousarray(b).view(mt).ravel(), n * n * b.itemsize).wait()
    bn = VARIANTS[variant][1]
    pack_a = mod.packer(kind, n, ra, pa, True)
    pack_b = mod.packer(kind, n, rb, pb, False, bn) if mod is wgm else \
        mod.packer(kind, n, rb, pb, False)
    if mod is wgm:  # a stage: 128 rows of A and bn columns of B, 128 bytes of K each
        kernel, a_stage, b_stage = wgm.gemm_kernel_wgmma, 128 * wgm.row_elems(kind), \
            bn * wgm.row_elems(kind)
    else:  # its local accessors are made per command group
        kernel, a_stage, b_stage = asyn.gemm_kernel_async, asyn.A_STAGE[kind], asyn.B_STAGE[kind]
    constant = True  # (a captured int: 10-20% slower on an H100; see _matrix_async)

    def pack() -> None:
        q.parallel_for(sycl.range(n, n), pack_a)
        q.parallel_for(sycl.range(n, n), pack_b)

    def cg(h: sycl.handler) -> None:
        la = sycl.local_accessor(mt, sycl.range(stages * a_stage), h)
        lb = sycl.local_accessor(mt, sycl.range(stages * b_stage), h)
        h.parallel_for(sycl.nd_range((n // 128, n // bn * 256), (1, 256)),
                       kernel(kind, stages, pa, pb, pc, n, la, lb, bn, variant in IN_FLIGHT)
                       if mod is wgm else
                       kernel(kind, stages, pa, pb, pc, n, la, lb, constant))

    def run() -> None:
        for _ in range(REPS[0]):
            if timed_pack:
                pack()
            q.submit(cg)
        q.wait()

    if not timed_pack:
        pack()

    def result() -> np.ndarray:
        out = np.empty(n * n, np.float32)
        q.memcpy(out, pc, n * n * 4).wait()
        return out.reshape(n, n)

    return run, result


# ------------------------------------------------------------------------ peers
def torch_peer(kind: str, a: np.ndarray, b: np.ndarray
               ) -> tuple[Callable[[], None], Callable[[], np.ndarray]]:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = kind == "tf32"
    # float32 accumulation, as joint_matrix and tl.dot do (no fp16/bf16 split-K reductions)
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    dt = {"fp16": torch.float16, "bf16": torch.bfloat16, "tf32": torch.float32}[kind]
    ta, tb = (_torch_tensor(x, kind).to("cuda", dt) for x in (a, b))
    box: list[Any] = [None]

    def run() -> None:
        for _ in range(REPS[0]):
            box[0] = torch.matmul(ta, tb)
        torch.cuda.synchronize()

    return run, lambda: box[0].float().cpu().numpy()


def _torch_tensor(x: np.ndarray, kind: str) -> Any:
    import torch

    return torch.from_numpy(bf16.to_float(x) if kind == "bf16" else x.astype(np.float32))


_TRITON: dict[str, Any] = {}


def _triton_kernel() -> Any:
    if "k" in _TRITON:
        return _TRITON["k"]
    import triton
    import triton.language as tl

    @triton.jit
    def mm(a_ptr, b_ptr, c_ptr, n, TF32: tl.constexpr, BLOCK_M: tl.constexpr,
           BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
        pid_m, pid_n = tl.program_id(0), tl.program_id(1)
        rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        rk = tl.arange(0, BLOCK_K)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, n, BLOCK_K):
            a = tl.load(a_ptr + rm[:, None] * n + (k + rk)[None, :])
            b = tl.load(b_ptr + (k + rk)[:, None] * n + rn[None, :])
            if TF32:
                acc += tl.dot(a, b, input_precision="tf32")
            else:
                acc += tl.dot(a, b)
        tl.store(c_ptr + rm[:, None] * n + rn[None, :], acc)

    _TRITON["k"] = mm
    return mm


def triton_peer(kind: str, a: np.ndarray, b: np.ndarray
                ) -> tuple[Callable[[], None], Callable[[], np.ndarray]]:
    import torch

    mm = _triton_kernel()
    n = a.shape[0]
    dt = {"fp16": torch.float16, "bf16": torch.bfloat16, "tf32": torch.float32}[kind]
    ta, tb = (_torch_tensor(x, kind).to("cuda", dt) for x in (a, b))
    tc = torch.empty((n, n), device="cuda", dtype=torch.float32)

    def run() -> None:
        for _ in range(REPS[0]):
            mm[(n // 128, n // 128)](ta, tb, tc, n, TF32=kind == "tf32", BLOCK_M=128,
                                     BLOCK_N=128, BLOCK_K=32, num_warps=8, num_stages=3)
        torch.cuda.synchronize()

    return run, lambda: tc.cpu().numpy()


# ------------------------------------------------------------------------ driver
def operands(kind: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A, B in ``kind``'s memory type (integers in [-2, 2]) and the float64 values."""
    rng = np.random.default_rng(seed)
    a64, b64 = (rng.integers(-2, 3, (n, n)).astype(np.float64) for _ in range(2))
    if kind == "bf16":
        return bf16.from_float(a64.astype(np.float32)), bf16.from_float(b64.astype(np.float32)), \
            np.stack([a64, b64])
    return a64.astype(KINDS[kind]), b64.astype(KINDS[kind]), np.stack([a64, b64])


def check(name: str, got: np.ndarray, ab: np.ndarray, rows: np.ndarray, rtol: float) -> None:
    """``got``'s sampled rows against float64 numpy."""
    want = ab[0][rows] @ ab[1]
    atol = 0.5 if rtol else 0.0  # integer-valued results; the output type's rounding
    if not np.allclose(got[rows], want, rtol=rtol, atol=atol):
        bad = np.argwhere(~np.isclose(got[rows], want, rtol=rtol, atol=atol))[0]
        raise AssertionError(f"{name}: row {rows[bad[0]]} col {bad[1]}: "
                             f"{got[rows][tuple(bad)]} != {want[tuple(bad)]}")


def pysycl_queue(quick: bool) -> sycl.queue:
    """The CUDA backend's GPU, else a device loading PTX, else (``--quick``) a SPIR-V one."""
    devs = sycl.device.get_devices()
    for pick in (lambda d: d.get_backend() is sycl.backend.ext_oneapi_cuda,
                 lambda d: d.has(sycl.aspect.ext_pysycl_ptx),
                 lambda d: quick and d.has(sycl.aspect.ext_pysycl_spirv)):
        for d in devs:
            if pick(d):
                return sycl.queue(d)
    raise SystemExit("no device runs joint_matrix kernels here (no NVIDIA GPU; --quick "
                     f"also takes a SPIR-V device): {[str(d) for d in devs]}")


def measure(q: sycl.queue, kind: str, n: int, rounds: int, variants: list[str]
            ) -> dict[str, Any]:
    """One row: every peer checked, then timed round by round."""
    a, b, ab = operands(kind, n, seed=n)
    rows = np.random.default_rng(1).choice(n, size=min(64, n), replace=False)
    peers: dict[str, Callable[[], None]] = {}
    notes: dict[str, str] = {}
    mine = [(f"pysycl {v}", (lambda v=v: pysycl_peer(q, kind, a, b, v)), 0.0,
             max(VARIANTS[v][:2])) for v in variants]
    for name, make, rtol, block in (*mine,
                                    # C in the inputs' type: bf16 keeps 8 bits (2^-8 apart)
                                    ("cuBLAS", lambda: torch_peer(kind, a, b),
                                     8e-3 if kind == "bf16" else 1e-3, 1),
                                    ("Triton", lambda: triton_peer(kind, a, b), 0.0, 128)):
        if n % block:
            notes[name] = f"n = {n} is not a multiple of its block"
            continue
        try:
            run, result = make()
            run()  # compile, warm up
            check(name, result(), ab, rows, rtol)
            peers[name] = run
        except Exception as e:  # a peer that cannot run is n/a; the others go on
            if name.startswith("pysycl") and not isinstance(e, AssertionError | sycl.exception):
                raise
            notes[name] = f"{type(e).__name__}: {e}".splitlines()[0][:120]
            print(f"[{kind} {n}] {name} n/a: {notes[name]}", file=sys.stderr)
            traceback.print_exc(limit=1, file=sys.stderr)
    if not any(name.startswith("pysycl") for name in peers):
        raise RuntimeError(f"[{kind} {n}] no pysycl variant ran: {notes}")
    times = interleaved(list(peers.values()), rounds, warmup=1)
    tflops = {k: 2 * n**3 * REPS[0] / t / 1e12 for k, t in zip(peers, times, strict=True)}
    return {"kind": kind, "n": n, "tflops": tflops, "notes": notes}


def table(results: list[dict[str, Any]], dev: str, rounds: int, variants: list[str]) -> str:
    import datetime
    import platform

    def f(r: dict[str, Any], k: str) -> str:
        return f"{r['tflops'][k]:.1f}" if k in r["tflops"] else "n/a"

    def ratio(r: dict[str, Any], k: str) -> str:
        t = r["tflops"]
        best = max((v for name, v in t.items() if name.startswith("pysycl")), default=None)
        return f"**{best / t[k]:.2f}**" if k in t and best else "n/a"

    names = [f"pysycl {v}" for v in variants] + ["cuBLAS", "Triton"]
    heads = [f"pysycl {TITLES[v]}" for v in variants] + ["cuBLAS (torch.matmul)", "Triton tl.dot"]
    lines = [f"Measured {datetime.date.today().isoformat()} on `{platform.node() or '?'}`, "
             f"device **{dev}**: C = A*B (n x n, float32 C), TFLOP/s (2n^3 x {REPS[0]} GEMMs "
             f"issued back to back, then one wait: the median of {rounds} interleaved "
             "rounds), every result checked first "
             "(benchmarks/bench_matrix.py).", "",
             f"| precision | n | {' | '.join(heads)} | best pysycl / cuBLAS | "
             "best pysycl / Triton |",
             "| --- | ---: |" + " ---: |" * (len(heads) + 2)]
    for r in results:
        cells = " | ".join(f(r, k) for k in names)
        lines.append(f"| {r['kind']} | {r['n']} | {cells} | {ratio(r, 'cuBLAS')} | "
                     f"{ratio(r, 'Triton')} |")
    notes = [f"* {r['kind']} {r['n']}, {name}: {text}" for r in results
             for name, text in r["notes"].items()]
    if notes:
        lines += ["", "Not measured:", "", *notes]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1024^2 (256^2 on a CPU), 3 rounds")
    ap.add_argument("--write", action="store_true", help="update docs/performance.md")
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--kinds", default="fp16,bf16,tf32")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--reps", type=int, default=10,
                    help="GEMMs issued back to back per sample, then one wait (every peer)")
    ap.add_argument("--variants", default=",".join(VARIANTS),
                    help=f"pysycl kernels, of {', '.join(VARIANTS)} (TITLES in the source)")
    args = ap.parse_args()
    REPS[0] = max(1, args.reps)
    variants = args.variants.split(",")
    if unknown := [v for v in variants if v not in VARIANTS]:
        raise SystemExit(f"--variants: unknown {unknown}; known: {list(VARIANTS)}")
    q = pysycl_queue(args.quick)
    gpu = q.get_device().has(sycl.aspect.ext_pysycl_ptx)
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.quick:
        sizes, args.rounds = [1024 if gpu else 256], min(args.rounds, 3)
    dev = f"{q.get_device().get_info(sycl.info.device.name)} ({q.get_device().get_backend().name})"
    results = []
    for n in sizes:
        if n % 128:
            raise SystemExit(f"--sizes: {n} is not a multiple of 128")
        for kind in args.kinds.split(","):
            t0 = time.perf_counter()
            results.append(measure(q, kind, n, args.rounds, variants))
            print(f"[{kind} {n}] {results[-1]['tflops']} ({time.perf_counter() - t0:.0f} s)",
                  file=sys.stderr)
    text = table(results, dev, args.rounds, variants)
    print(text)
    if args.write:
        write_section("bench_matrix", text)


if __name__ == "__main__":
    main()

"""Work-group joint_matrix on PTX devices: ``wgmma`` on sm_90 (H100, H200).

``joint_matrix(it.get_group(), T, use, rows, cols, layout)`` (pysycl's: docs/matrix.md
"Work-group matrices") is a tile of the whole work-group, one warpgroup (128 work-items,
4 warps) per 64 rows of A and of the accumulator:

* an **accumulator** (rows x n, n a multiple of 8 up to 256) is the work-item's share of its
  warpgroup's 64 x n slice: n / 2 float registers, element ``e`` at row
  ``64*wg + 16*warp + lane/4 + 8*(e%4 >= 2)`` and column ``8*(e/4) + 2*(lane%4) + e%2``
  (``wgmma``'s fragment layout; ``wg``, ``warp``, ``lane`` from the linear local id);
* an **A** (rows x K) or **B** (K x n) tile (K: 32 bytes of the element type) is a view of
  local memory in :attr:`~pysycl._kernels.matrix.layout.ext_pysycl_swizzle128` -- what
  ``wgmma`` reads through a matrix descriptor. ``joint_matrix_load`` keeps the address of the
  tile's first element; ``joint_matrix_mad`` makes the descriptors (start address >> 4, the
  1024-byte stride between 8-row groups, the 128-byte swizzle, the base offset of the
  address within the swizzle's 1024 bytes) and issues one ``wgmma.mma_async`` per
  warpgroup (:mod:`pysycl_numba.targets.ptx.wgmma`), not waited for: consecutive mads
  overlap; an accumulator's registers are waited for before other instructions touch them,
  and a work-group barrier waits first too (local memory may be overwritten after it).

Fill, copy, apply, load and store of accumulators work element by element on the
fragments. The work-group must be 128 work-items per 64 rows (a failed assert at the mad
otherwise, D unchanged). Combinations: fp16 and bf16 (K 16) and tf32 (K 8) with float32
accumulators, on compute capability 9.0 only; others get ``errc.kernel_not_supported``
listing these.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir as llir

from pysycl._core.exceptions import errc, exception
from pysycl._kernels import matrix as M  # noqa: N812 - as in overloads/matrix.py
from pysycl._kernels import matrix_ptx as P  # noqa: N812
from pysycl_numba._numba_compat import signature, types
from pysycl_numba.asserts import AssertTable, record_failure, table
from pysycl_numba.bounds import site_number
from pysycl_numba.overloads.accessor import element_pointer
from pysycl_numba.overloads.matrix_ptx import (  # the per-element device code, shared
    _apply3,
    _apply3_bf16,
    _load1,
    _store1,
)
from pysycl_numba.overloads.matrix_ptx import alloc as alloc_private
from pysycl_numba.targets.ptx import mma as nv
from pysycl_numba.targets.ptx import wgmma as W  # noqa: N812
from pysycl_numba.targets.spirv import ocl
from pysycl_numba.types import AccessorType, JointMatrixType, index_type

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pysycl_numba._numba_compat import BaseContext, Signature

_I64 = llir.IntType(64)
_VOIDP = llir.IntType(8).as_pointer()
_T = M.matrix_type
_KINDS = {_T.fp16: "f16", _T.bf16: "bf16", _T.tf32: "tf32"}
#: the combinations sm_90 offers work-group matrices (rows: any multiple of 64 up to 256;
#: n: any multiple of 8 up to 256)
COMBINATIONS = P.WG_PTX_COMBINATIONS


def _offered() -> str:
    return (f"{M.offered(COMBINATIONS)}; rows a multiple of 64 (one warpgroup of 128 "
            "work-items each), n a multiple of 8, A and B in local memory in "
            "layout.ext_pysycl_swizzle128")


def _refuse(what: str) -> exception:
    return exception(errc.kernel_not_supported, f"{what} (work-group joint_matrix on "
                     f"NVIDIA GPUs of compute capability 9.0 offer: {_offered()})")


def check(m: JointMatrixType, where: str) -> None:
    """Raise unless the compile's target offers work-group matrix ``m``."""
    cc = P.arch_cc(nv.ptx_arch.get())
    if cc != 90:
        raise _refuse(f"{where}: a work-group joint_matrix needs wgmma (compute capability "
                      f"9.0); this kernel compiles for {cc // 10}.{cc % 10}")
    k = _KINDS.get(m.kind)
    kdim = W.SUFFIX[k][1] if k is not None else 0
    if m.use is M.use.accumulator:
        ok = m.kind is _T.fp32 and m.rows % 64 == 0 and 64 <= m.rows <= 256 \
            and m.cols % 8 == 0 and 8 <= m.cols <= 256
    elif m.use is M.use.a:
        ok = k is not None and m.rows % 64 == 0 and 64 <= m.rows <= 256 and m.cols == kdim \
            and m.layout is M.layout.ext_pysycl_swizzle128
    else:
        ok = k is not None and m.rows == kdim and m.cols % 8 == 0 and 8 <= m.cols <= 256 \
            and m.layout is M.layout.ext_pysycl_swizzle128
    if not ok:
        raise _refuse(f"{where}: {m} is not a work-group matrix this device offers")


def size(m: JointMatrixType) -> int:
    """Elements a work-item holds: an accumulator's fragment; A and B: an address (8 bytes)."""
    if m.use is M.use.accumulator:
        return m.cols // 2
    return max(1, 8 // (m.dtype.bitwidth // 8))


def alloc(context: BaseContext, builder: llir.IRBuilder, m: JointMatrixType) -> llir.Value:
    """The work-item's fragment (or A's/B's address): a zeroed private array."""
    return alloc_private(context, builder, m, size(m))


def _ids(builder: llir.IRBuilder) -> tuple[llir.Value, llir.Value]:
    """(linear local id, work-group size) as i64."""
    lid = builder.call(ocl.declare(builder.module, W.WG_ID, _I64, []), [])
    n = builder.call(ocl.declare(builder.module, W.WG_SIZE, _I64, []), [])
    return lid, n


def _place(builder: llir.IRBuilder, lid: llir.Value, e: int) -> tuple[llir.Value, llir.Value]:
    """(row, col) of accumulator element ``e`` of work-item ``lid`` (i64)."""
    wg = builder.lshr(lid, _I64(7))
    warp = builder.and_(builder.lshr(lid, _I64(5)), _I64(3))
    lane = builder.and_(lid, _I64(31))
    row = builder.add(builder.add(builder.mul(wg, _I64(64)), builder.mul(warp, _I64(16))),
                      builder.add(builder.lshr(lane, _I64(2)), _I64(8 * ((e % 4) // 2))))
    col = builder.add(builder.mul(builder.and_(lane, _I64(3)), _I64(2)),
                      _I64(8 * (e // 4) + e % 2))
    return row, col


def _wait(builder: llir.IRBuilder) -> None:
    """The warpgroup's products done (``wgmma.wait_group 0``): before an accumulator's
    registers are touched by anything but a mad."""
    builder.call(ocl.declare(builder.module, W.WAIT, llir.VoidType(), [], pure=False,
                             convergent=True), [])


def _accumulator_only(m: JointMatrixType, name: str) -> None:
    """Element-wise operations are an accumulator's (A and B are views of local memory)."""
    if m.use is not M.use.accumulator:
        raise _refuse(f"{name} of a work-group use.{m.use.name} matrix (on these GPUs a view "
                      "of local memory read by wgmma): element-wise operations work on "
                      "use.accumulator matrices")


def before_elements(builder: llir.IRBuilder, m: JointMatrixType, name: str) -> None:
    """An element-wise operation on accumulator ``m``, after the products in flight."""
    _accumulator_only(m, name)
    _wait(builder)


def check_copy(builder: llir.IRBuilder, s: JointMatrixType, d: JointMatrixType) -> None:
    """Copies between accumulators only (their fragments agree), after the products."""
    _accumulator_only(s, "joint_matrix_copy")
    _accumulator_only(d, "joint_matrix_copy")
    _wait(builder)


# ================================================================== lowering
def _failure(builder: llir.IRBuilder, text: str) -> None:
    asserts = table.get(None) or AssertTable()
    number = asserts.add(site_number(getattr(builder, "pysycl_loc", None)), (text,))
    record_failure(builder, number, [])


def lower_mem(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
              operands: tuple[types.Type, llir.Value, llir.Value, llir.Value], store: bool,
              args: Sequence[llir.Value], name: str) -> None:
    """An accumulator's elements from (to) memory; an A or B tile: its address in local
    memory, kept for the mad (its stride checked at run time: 128 bytes)."""
    m = sig.args[1]
    memty, mem, off, stride = operands
    if m.use is M.use.accumulator:
        lay = sig.args[4].member
        _wait(builder)
        lid, _ = _ids(builder)
        isig = signature(types.none, m, index_type, memty, index_type)
        for e in range(size(m)):
            r, c = _place(builder, lid, e)
            major, minor = (c, r) if lay is M.layout.col_major else (r, c)
            idx = builder.add(off, builder.add(builder.mul(major, stride), minor))
            # a work-group larger than the matrix's warpgroups (its mads failed an assert):
            # the extra warpgroups' rows lie outside the tile, and touch no memory
            with builder.if_then(builder.icmp_unsigned("<", r, _I64(m.rows))):
                context.compile_internal(builder, _store1 if store else _load1, isig,
                                         [args[1], context.get_constant(index_type, e), mem,
                                          idx])
        return
    if not (isinstance(memty, AccessorType) and memty.space == "local"):
        raise _refuse(f"{name} of a work-group use.{m.use.name} matrix from {memty}: wgmma "
                      "reads A and B from local memory (a sycl.local_accessor, with an "
                      "offset: (acc, offset))")
    isz = m.dtype.bitwidth // 8
    addr = builder.ptrtoint(element_pointer(context, builder, memty, mem, index_type, off), _I64)
    bad = builder.or_(builder.icmp_unsigned("!=", stride, _I64(128 // isz)),
                      builder.icmp_unsigned("!=", builder.and_(addr, _I64(15)), _I64(0)))
    with builder.if_then(bad, likely=False):
        _failure(builder, f"{name}: a layout.ext_pysycl_swizzle128 tile read by wgmma has "
                          f"128-byte rows (stride {128 // isz}) and starts at a multiple of "
                          "16 bytes from the local accessor's start")
    builder.store(addr, builder.bitcast(args[1], _I64.as_pointer()))


def _descriptor(builder: llir.IRBuilder, addr: llir.Value) -> llir.Value:
    """wgmma's matrix descriptor of a 128-byte-swizzled K-major tile at shared ``addr``."""
    start = builder.lshr(builder.and_(addr, _I64(0x3FFFF)), _I64(4))
    base = builder.shl(builder.and_(builder.lshr(addr, _I64(7)), _I64(7)), _I64(49))
    fixed = (1 << 16) | ((1024 >> 4) << 32) | (1 << 62)  # LBO 1 (unused), SBO 1024, 128B
    return builder.or_(builder.or_(start, base), _I64(fixed))


def lower_mad(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
              args: Sequence[llir.Value]) -> None:
    """One ``wgmma.mma_async`` per warpgroup on its 64 rows; a failed assert unless the
    work-group is 128 work-items per 64 rows."""
    d, a, b, c = sig.args[1:]  # (each checked where it was made: lower_joint_matrix)
    if a.kind is not b.kind or (a.rows, b.cols) != (d.rows, d.cols) or a.cols != b.rows:
        raise _refuse(f"joint_matrix_mad of {d} = {a} x {b} + {c}")
    lid, n = _ids(builder)
    whole = builder.icmp_unsigned("==", n, _I64(128 * (a.rows // 64)))
    with builder.if_else(whole) as (ok, part):
        with ok:
            wg = builder.lshr(lid, _I64(7))
            pa = builder.load(builder.bitcast(args[2], _I64.as_pointer()))
            pb = builder.load(builder.bitcast(args[3], _I64.as_pointer()))
            da = _descriptor(builder, builder.add(pa, builder.mul(wg, _I64(64 * 128))))
            db = _descriptor(builder, pb)
            fn = ocl.declare(builder.module, W.WGMMA[(_KINDS[a.kind], b.cols)], llir.VoidType(),
                             [_VOIDP, _I64, _I64, _VOIDP], pure=False, convergent=True)
            builder.call(fn, [builder.bitcast(args[1], _VOIDP), da, db,
                              builder.bitcast(args[4], _VOIDP)])
        with part:
            _failure(builder, f"joint_matrix_mad of a {a.rows}-row work-group matrix needs a "
                              f"work-group of {128 * (a.rows // 64)} work-items (128 per 64 "
                              "rows: one warpgroup each); D was left unchanged")


def lower_apply3(context: BaseContext, builder: llir.IRBuilder, m: JointMatrixType,
                 fnty: types.Type, frag: llir.Value, fn: llir.Value) -> None:
    """``m[e] = fn(m[e], row, col)`` with each accumulator element's row and column."""
    lid, _ = _ids(builder)
    impl = _apply3_bf16 if m.kind is _T.bf16 else _apply3
    isig = signature(types.none, m, index_type, fnty, index_type, index_type)
    for e in range(size(m)):
        r, c = _place(builder, lid, e)
        context.compile_internal(builder, impl, isig,
                                 [frag, context.get_constant(index_type, e), fn, r, c])

"""``sycl_ext_oneapi_matrix`` on PTX devices: joint_matrix as ``mma.sync`` fragments.

A joint_matrix here is the lane's share of the warp's tile (:mod:`pysycl._kernels.matrix_ptx`:
which elements, at which row and column): a private array of 4..16 elements instead of
the whole tile. ``joint_matrix_mad`` is two ``mma.sync`` (:mod:`pysycl_numba.targets.ptx.mma`);
loads and stores move each lane's elements, at the addresses of the fragment map;
a 16-bit A or B tile (or a tf32 A row-major, B column-major) in local memory whose rows
are 16-byte aligned is one ``ldmatrix.x4`` (checked at run time: the rows of any other
offset or stride are read element by element); ``joint_matrix_apply`` passes each
element's row and column from the map; fill and copy work element by element (copy
between tiles of the same use: a use.a and a use.accumulator tile are held in different
layouts).

The warp instructions are ``.aligned``: all 32 lanes must execute them. A
``joint_matrix_mad`` in a sub-group of fewer (the last warp of a work-group whose size
is not a multiple of 32) records a failed assert at its line (the launch's wait raises
it) and leaves D unchanged instead of hanging; ``ldmatrix`` is only used in whole warps.
A branch that only part of a sub-group takes around these calls is undefined, as
``mma.sync`` is in CUDA (docs/matrix.md).

Combinations are checked here, at lowering, against the compute capability the compile
targets (:data:`pysycl_numba.targets.ptx.mma.ptx_arch`): the typing checks
(``overloads/matrix.py``) know no device.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from llvmlite import ir as llir

from pysycl._core import bfloat16 as bf16_api
from pysycl._core.exceptions import errc, exception
from pysycl._kernels import matrix as M  # noqa: N812 - as in overloads/matrix.py
from pysycl._kernels import matrix_ptx as P  # noqa: N812
from pysycl_numba._numba_compat import cgutils, signature, types
from pysycl_numba.asserts import AssertTable, record_failure, table
from pysycl_numba.bounds import site_number
from pysycl_numba.overloads.accessor import element_pointer
from pysycl_numba.targets.ptx import mma as nv
from pysycl_numba.targets.spirv import ocl
from pysycl_numba.types import AccessorType, JointMatrixType, index_type

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pysycl_numba._numba_compat import BaseContext, Signature

_I32, _I64 = llir.IntType(32), llir.IntType(64)
_VOIDP = llir.IntType(8).as_pointer()
_MMA_KIND = {M.matrix_type.fp16: "f16", M.matrix_type.bf16: "bf16", M.matrix_type.tf32: "tf32",
             M.matrix_type.sint8: "s8", M.matrix_type.uint8: "u8"}


def combinations() -> tuple[M.combination, ...]:
    """What the compile's target offers (its compute capability's ``mma.sync`` shapes)."""
    return P.ptx_combinations(P.arch_cc(nv.ptx_arch.get()))


def _fam(m: JointMatrixType) -> str:
    return P.family(m.kind, m.use.name, m.rows, m.cols)


def size(m: JointMatrixType) -> int:
    """Elements of ``m`` one lane holds."""
    return P.fragment_size(_fam(m), m.use.name)


def check(m: JointMatrixType, where: str) -> None:
    """Raise (the typing error at the call) unless the target offers ``m``."""
    if m.layout is M.layout.ext_pysycl_swizzle128:
        raise exception(errc.kernel_not_supported,
                        f"{where}: a sub-group {m} on NVIDIA GPUs: layout.ext_pysycl_swizzle128 "
                        "is the layout of work-group matrices (joint_matrix(it.get_group(), "
                        "...): wgmma); sub-group tiles are row_major or col_major")
    M.check_matrix(m.kind, m.kind, m.use, m.rows, m.cols, m.layout, combinations(), where)


def check_mad(d: JointMatrixType, a: JointMatrixType, b: JointMatrixType,
              c: JointMatrixType) -> None:
    """Raise unless the target multiplies these tiles."""
    M.check_mad((d.kind, a.kind, b.kind, c.kind), tuple((m.rows, m.cols) for m in (d, a, b, c)),
                combinations(), "joint_matrix_mad")


def check_copy(s: JointMatrixType, d: JointMatrixType) -> None:
    """Raise unless ``s`` and ``d`` are held in the same fragment layout."""
    if s.use is d.use and _fam(s) == _fam(d):
        return
    raise exception(errc.kernel_not_supported,
                    f"joint_matrix_copy from a use.{s.use.name} {s.kind.name} tile into a "
                    f"use.{d.use.name} {d.kind.name} one: on NVIDIA GPUs (PTX) the two are held "
                    "in different fragment layouts; copy between tiles of the same use and "
                    "element size")


def alloc(context: BaseContext, builder: llir.IRBuilder, m: JointMatrixType,
          count: int | None = None) -> llir.Value:
    """The lane's fragment (``count`` elements: :func:`size` unless given): a zeroed
    private array."""
    llty = context.get_data_type(m.dtype)
    count = size(m) if count is None else count
    ptr = cgutils.alloca_once(builder, llty, size=count)
    n = count * context.get_abi_sizeof(llty)
    cgutils.memset(builder, ptr, llir.Constant(_I64, n), 0)
    return ptr


def _lane(builder: llir.IRBuilder) -> tuple[llir.Value, llir.Value, llir.Value]:
    """(lane, g = lane / 4, t = lane % 4) as i64."""
    fn = ocl.declare(builder.module, nv.LANE, _I32, [])
    lane = builder.zext(builder.call(fn, []), _I64)
    return lane, builder.lshr(lane, _I64(2)), builder.and_(lane, _I64(3))


def _warp_full(builder: llir.IRBuilder) -> llir.Value:
    """The sub-group is a whole warp: ``get_sub_group_size() == 32`` (only the last warp
    of a work-group whose size is not a multiple of 32 is partial). From the geometry, not
    ``activemask``: threads of a warp need not have reconverged when they read it.
    Constant true in a kernel whose ``reqd_work_group_size`` is a multiple of 32
    (:data:`~pysycl_numba.targets.ptx.mma.ptx_whole_warps`): the branches fold away."""
    if nv.ptx_whole_warps.get():
        return llir.Constant(llir.IntType(1), 1)
    fn = ocl.declare(builder.module, "_Z18get_sub_group_sizev", _I32, [])
    return builder.icmp_unsigned("==", builder.call(fn, []), _I32(P.WARP))


class _IROps:
    """:func:`pysycl._kernels.matrix_ptx.ldmatrix_row`'s arithmetic on i64 IR values."""

    def __init__(self, builder: llir.IRBuilder) -> None:
        self.const = _I64
        self.and_, self.lshr = builder.and_, builder.lshr
        self.mul, self.add = builder.mul, builder.add


def _place(builder: llir.IRBuilder, p: P.Place, g: llir.Value,
           t: llir.Value) -> tuple[llir.Value, llir.Value]:
    """(row, col) of a fragment element as i64 IR (constants folded by LLVM)."""
    def affine(kg: int, kt: int, k0: int) -> llir.Value:
        return builder.add(builder.add(builder.mul(g, _I64(kg)), builder.mul(t, _I64(kt))),
                           _I64(k0))
    return affine(*p[:3]), affine(*p[3:])


# ============================================================ device code (compiled inline)
# One call per fragment element, its index ``e`` a constant: unrolled here, not by LLVM.
def _load1(m: Any, e: Any, src: Any, i: Any) -> None:
    m[e] = src[i]


def _store1(m: Any, e: Any, dst: Any, i: Any) -> None:
    dst[i] = m[e]


def _apply3(m: Any, e: Any, fn: Any, r: Any, c: Any) -> None:
    m[e] = fn(m[e], r, c)


def _apply3_bf16(m: Any, e: Any, fn: Any, r: Any, c: Any) -> None:
    m[e] = bf16_api.from_float(fn(bf16_api.to_float(m[e]), r, c))


# ================================================================== lowering
def _ldmatrix_ok(m: JointMatrixType, memty: types.Type, colmajor: bool) -> bool:
    """A b16 (or untransposed tf32) A/B tile in (unchecked) local memory: ``ldmatrix``
    when aligned."""
    return (P.ldmatrix_family(_fam(m), m.use.name, colmajor) and isinstance(memty, AccessorType)
            and memty.space == "local" and not memty.checked)


def _ldmatrix(context: BaseContext, builder: llir.IRBuilder, m: JointMatrixType,
              memty: AccessorType, mem: llir.Value, frag: llir.Value, off: llir.Value,
              stride: llir.Value, colmajor: bool) -> llir.Value:
    """Emit the ``ldmatrix`` branch's condition and call; returns the condition."""
    width = P.LDMATRIX_WIDTH[_fam(m)]
    r, c = P.ldmatrix_row(colmajor, _lane(builder)[0], _IROps(builder), width)
    idx = builder.add(off, builder.add(builder.mul(c if colmajor else r, stride),
                                       r if colmajor else c))
    base = builder.ptrtoint(element_pointer(context, builder, memty, mem, index_type, off), _I64)
    aligned = builder.and_(
        builder.icmp_unsigned("==", builder.and_(base, _I64(15)), _I64(0)),
        builder.icmp_unsigned("==", builder.and_(stride, _I64(width - 1)), _I64(0)))
    ok = builder.and_(aligned, _warp_full(builder))
    with builder.if_then(ok):
        addr = builder.ptrtoint(element_pointer(context, builder, memty, mem, index_type, idx),
                                _I64)
        trans = P.ldmatrix_trans(m.use.name, colmajor)
        fn = ocl.declare(builder.module, nv.LDSM_TRANS if trans else nv.LDSM, llir.VoidType(),
                         [_VOIDP, _I64], pure=False, convergent=True)
        builder.call(fn, [builder.bitcast(frag, _VOIDP), addr])
    return ok


def _elementwise(context: BaseContext, builder: llir.IRBuilder, m: JointMatrixType,
                 frag: llir.Value, memty: types.Type, mem: llir.Value, off: llir.Value,
                 stride: llir.Value, colmajor: bool, store: bool) -> None:
    """Each element of the lane's fragment from (to) its place in memory."""
    _, g, t = _lane(builder)
    isig = signature(types.none, m, index_type, memty, index_type)
    for e, p in enumerate(P.fragment_map(_fam(m), m.use.name)):
        r, c = _place(builder, p, g, t)
        major, minor = (c, r) if colmajor else (r, c)
        idx = builder.add(off, builder.add(builder.mul(major, stride), minor))
        context.compile_internal(builder, _store1 if store else _load1, isig,
                                 [frag, context.get_constant(index_type, e), mem, idx])


def lower_mem(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
              operands: tuple[types.Type, llir.Value, llir.Value, llir.Value], store: bool,
              args: Sequence[llir.Value]) -> None:
    """A load or store of the lane's elements (``operands``: memory type, memory, offset,
    stride as i64)."""
    m = sig.args[1]
    memty, mem, off, stride = operands
    lay = sig.args[4].member if len(sig.args) == 5 else m.layout
    colmajor = lay is M.layout.col_major
    if store or not _ldmatrix_ok(m, memty, colmajor):
        _elementwise(context, builder, m, args[1], memty, mem, off, stride, colmajor, store)
        return
    ok = _ldmatrix(context, builder, m, memty, mem, args[1], off, stride, colmajor)
    with builder.if_then(builder.not_(ok)):
        _elementwise(context, builder, m, args[1], memty, mem, off, stride, colmajor, False)


def lower_apply3(context: BaseContext, builder: llir.IRBuilder, m: JointMatrixType,
                 fnty: types.Type, frag: llir.Value, fn: llir.Value) -> None:
    """``m[e] = fn(m[e], row, col)`` with each element's row and column."""
    _, g, t = _lane(builder)
    impl = _apply3_bf16 if m.kind is M.matrix_type.bf16 else _apply3
    isig = signature(types.none, m, index_type, fnty, index_type, index_type)
    for e, p in enumerate(P.fragment_map(_fam(m), m.use.name)):
        r, c = _place(builder, p, g, t)
        context.compile_internal(builder, impl, isig,
                                 [frag, context.get_constant(index_type, e), fn, r, c])


_WHOLE_WARP = ("joint_matrix_mad on NVIDIA tensor cores needs all 32 work-items of the "
               "sub-group (a work-group size that is a multiple of 32); this sub-group has "
               "fewer, and D was left unchanged",)


def lower_mad(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
              args: Sequence[llir.Value]) -> None:
    """Two ``mma.sync`` in a whole warp, else a failed assert at the call."""
    a = sig.args[2]
    fn = ocl.declare(builder.module, nv.MMA[_MMA_KIND[a.kind]], llir.VoidType(), [_VOIDP] * 4,
                     pure=False, convergent=True)
    with builder.if_else(_warp_full(builder)) as (whole, part):
        with whole:
            builder.call(fn, [builder.bitcast(v, _VOIDP) for v in args[1:]])
        with part:
            asserts = table.get(None) or AssertTable()
            number = asserts.add(site_number(getattr(builder, "pysycl_loc", None)), _WHOLE_WARP)
            record_failure(builder, number, [])

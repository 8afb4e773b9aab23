"""``sycl_ext_oneapi_matrix`` on PTX devices: joint_matrix as ``mma.sync`` fragments.

A joint_matrix here is the lane's share of the warp's tile (:mod:`pysycl._kernels.matrix_ptx`:
which elements, at which row and column): a private array of 4..16 elements instead of
the whole tile. ``joint_matrix_mad`` is two ``mma.sync`` (:mod:`pysycl_numba.targets.ptx.mma`);
loads and stores move each lane's elements, at the addresses of the fragment map;
a 16-bit A or B tile in local memory whose rows are 16-byte aligned is one
``ldmatrix.x4`` (checked at run time: the rows of any other offset or stride are read
element by element); ``joint_matrix_apply`` passes each element's row and column from
the map; fill and copy work element by element (copy between tiles of the same use: a
use.a and a use.accumulator tile are held in different layouts).

The warp instructions are ``.aligned``: all 32 lanes must execute them. A
``joint_matrix_mad`` reached by fewer (a work-group size that is not a multiple of 32,
or a branch only part of a sub-group takes) records a failed assert at its line (the
launch's wait raises it) and leaves D unchanged instead of hanging; ``ldmatrix`` is
only used when the whole warp is there.

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
    M.check_matrix(m.kind, m.kind, m.use, m.rows, m.cols, m.layout, combinations(), where)


def check_mad(d: JointMatrixType, a: JointMatrixType, b: JointMatrixType,
              c: JointMatrixType) -> None:
    """Raise unless the target multiplies these tiles."""
    M.check_mad((d.kind, a.kind, b.kind, c.kind), tuple((m.rows, m.cols) for m in (d, a, b, c)),
                combinations(), "joint_matrix_mad")


def check_copy(s: JointMatrixType, d: JointMatrixType) -> None:
    """Raise unless ``s`` and ``d`` are held in the same fragment layout."""
    if _fam(s) == "acc" and _fam(d) == "acc" or (s.use is d.use and _fam(s) == _fam(d)):
        return
    raise exception(errc.kernel_not_supported,
                    f"joint_matrix_copy from a use.{s.use.name} {s.kind.name} tile into a "
                    f"use.{d.use.name} {d.kind.name} one: on NVIDIA GPUs (PTX) the two are held "
                    "in different fragment layouts; copy between tiles of the same use and "
                    "element size")


def alloc(context: BaseContext, builder: llir.IRBuilder, m: JointMatrixType) -> llir.Value:
    """The lane's fragment: a zeroed private array."""
    llty = context.get_data_type(m.dtype)
    ptr = cgutils.alloca_once(builder, llty, size=size(m))
    n = size(m) * context.get_abi_sizeof(llty)
    cgutils.memset(builder, ptr, llir.Constant(_I64, n), 0)
    return ptr


def _lane(builder: llir.IRBuilder) -> tuple[llir.Value, llir.Value, llir.Value]:
    """(lane, g = lane / 4, t = lane % 4) as i64."""
    fn = ocl.declare(builder.module, nv.LANE, _I32, [])
    lane = builder.zext(builder.call(fn, []), _I64)
    return lane, builder.lshr(lane, _I64(2)), builder.and_(lane, _I64(3))


def _warp_full(builder: llir.IRBuilder) -> llir.Value:
    fn = ocl.declare(builder.module, nv.WARP_FULL, _I32, [], pure=False, convergent=True)
    return builder.icmp_unsigned("!=", builder.call(fn, []), _I32(0))


def _map(context: BaseContext, builder: llir.IRBuilder,
         m: JointMatrixType) -> tuple[types.Type, llir.Value]:
    flat = [v for p in P.fragment_map(_fam(m), m.use.name) for v in p]
    ty = types.UniTuple(index_type, len(flat))
    return ty, context.make_tuple(builder, ty, [context.get_constant(index_type, v) for v in flat])


# ============================================================ device code (compiled inline)
def _frag_load(m: Any, src: Any, off: Any, stride: Any, colmajor: Any, g: Any, t: Any,
               mp: Any, n: Any) -> None:
    for e in range(n):
        r = mp[6 * e] * g + mp[6 * e + 1] * t + mp[6 * e + 2]
        c = mp[6 * e + 3] * g + mp[6 * e + 4] * t + mp[6 * e + 5]
        if colmajor:
            m[e] = src[off + c * stride + r]
        else:
            m[e] = src[off + r * stride + c]


def _frag_store(m: Any, dst: Any, off: Any, stride: Any, colmajor: Any, g: Any, t: Any,
                mp: Any, n: Any) -> None:
    for e in range(n):
        r = mp[6 * e] * g + mp[6 * e + 1] * t + mp[6 * e + 2]
        c = mp[6 * e + 3] * g + mp[6 * e + 4] * t + mp[6 * e + 5]
        if colmajor:
            dst[off + c * stride + r] = m[e]
        else:
            dst[off + r * stride + c] = m[e]


def _frag_apply3(m: Any, fn: Any, g: Any, t: Any, mp: Any, n: Any) -> None:
    for e in range(n):
        r = mp[6 * e] * g + mp[6 * e + 1] * t + mp[6 * e + 2]
        c = mp[6 * e + 3] * g + mp[6 * e + 4] * t + mp[6 * e + 5]
        m[e] = fn(m[e], r, c)


def _frag_apply3_bf16(m: Any, fn: Any, g: Any, t: Any, mp: Any, n: Any) -> None:
    for e in range(n):
        r = mp[6 * e] * g + mp[6 * e + 1] * t + mp[6 * e + 2]
        c = mp[6 * e + 3] * g + mp[6 * e + 4] * t + mp[6 * e + 5]
        m[e] = bf16_api.from_float(fn(bf16_api.to_float(m[e]), r, c))


# ================================================================== lowering
def _ldmatrix_ok(m: JointMatrixType, memty: types.Type) -> bool:
    """A 16-bit A/B tile in (unchecked) local memory: ``ldmatrix`` when aligned."""
    return (_fam(m) == "b16" and m.use is not M.use.accumulator and isinstance(memty, AccessorType)
            and memty.space == "local" and not memty.checked)


def _ldmatrix(context: BaseContext, builder: llir.IRBuilder, m: JointMatrixType,
              memty: AccessorType, mem: llir.Value, frag: llir.Value, off: llir.Value,
              stride: llir.Value, colmajor: bool) -> llir.Value:
    """Emit the ``ldmatrix`` branch's condition and call; returns the condition."""
    lane = _lane(builder)[0]
    i, j = builder.and_(lane, _I64(7)), builder.lshr(lane, _I64(3))
    r0 = builder.mul(builder.and_(j, _I64(1)), _I64(8))
    c0 = builder.mul(builder.and_(builder.lshr(j, _I64(1)), _I64(1)), _I64(8))
    r, c = (r0, builder.add(c0, i)) if colmajor else (builder.add(r0, i), c0)
    idx = builder.add(off, builder.add(builder.mul(c if colmajor else r, stride),
                                       r if colmajor else c))
    base = builder.ptrtoint(element_pointer(context, builder, memty, mem, index_type, off), _I64)
    aligned = builder.and_(
        builder.icmp_unsigned("==", builder.and_(base, _I64(15)), _I64(0)),
        builder.icmp_unsigned("==", builder.and_(stride, _I64(7)), _I64(0)))
    ok = builder.and_(aligned, _warp_full(builder))
    with builder.if_then(ok):
        addr = builder.ptrtoint(element_pointer(context, builder, memty, mem, index_type, idx),
                                _I64)
        trans = P.ldmatrix_row(m.use.name, colmajor, 0)[1]
        fn = ocl.declare(builder.module, nv.LDSM_TRANS if trans else nv.LDSM, llir.VoidType(),
                         [_VOIDP, _I64], pure=False, convergent=True)
        builder.call(fn, [builder.bitcast(frag, _VOIDP), addr])
    return ok


def lower_mem(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
              operands: tuple[types.Type, llir.Value, llir.Value, llir.Value], store: bool,
              args: Sequence[llir.Value]) -> None:
    """A load or store of the lane's elements (``operands``: memory type, memory, offset,
    stride as i64)."""
    m = sig.args[1]
    memty, mem, off, stride = operands
    lay = sig.args[4].member if len(sig.args) == 5 else m.layout
    colmajor = lay is M.layout.col_major
    _, g, t = _lane(builder)
    mpty, mp = _map(context, builder, m)
    col = context.get_constant(types.boolean, colmajor)
    n = context.get_constant(index_type, size(m))
    isig = signature(types.none, m, memty, index_type, index_type, types.boolean, index_type,
                     index_type, mpty, index_type)
    call_args = [args[1], mem, off, stride, col, g, t, mp, n]
    if store:
        context.compile_internal(builder, _frag_store, isig, call_args)
        return
    if not _ldmatrix_ok(m, memty):
        context.compile_internal(builder, _frag_load, isig, call_args)
        return
    ok = _ldmatrix(context, builder, m, memty, mem, args[1], off, stride, colmajor)
    with builder.if_then(builder.not_(ok)):
        context.compile_internal(builder, _frag_load, isig, call_args)


def lower_apply3(context: BaseContext, builder: llir.IRBuilder, m: JointMatrixType,
                 fnty: types.Type, frag: llir.Value, fn: llir.Value) -> None:
    """``m[e] = fn(m[e], row, col)`` with each element's row and column."""
    _, g, t = _lane(builder)
    mpty, mp = _map(context, builder, m)
    impl = _frag_apply3_bf16 if m.kind is M.matrix_type.bf16 else _frag_apply3
    isig = signature(types.none, m, fnty, index_type, index_type, mpty, index_type)
    context.compile_internal(builder, impl, isig,
                             [frag, fn, g, t, mp, context.get_constant(index_type, size(m))])


_WHOLE_WARP = ("joint_matrix_mad on NVIDIA tensor cores needs all 32 work-items of the "
               "sub-group at the call (a work-group size that is a multiple of 32, no branch "
               "that only part of a sub-group takes); D was left unchanged",)


def lower_mad(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
              args: Sequence[llir.Value]) -> None:
    """Two ``mma.sync`` when the whole warp is there, else a failed assert at the call."""
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

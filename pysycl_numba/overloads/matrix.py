"""``sycl_ext_oneapi_matrix`` in kernels (SPIR-V devices): joint_matrix as private tiles.

A ``joint_matrix(sg, T, use, rows, cols, layout)`` is a :class:`JointMatrixType`: a
private array (an ``alloca`` of ``rows*cols`` elements, row-major whatever the layout)
that every work-item of the sub-group holds whole, with the same values. Loads read the
whole tile in every work-item, ``joint_matrix_mad`` multiplies in every work-item (no
data crosses work-items, so no shuffles or barriers), ``joint_matrix_store`` writes row
``r`` from work-item ``r % sub-group size``. The operations are Python below, compiled
with the kernel (:meth:`BaseContext.compile_internal`), with the semantics of the
host_debuggable reference (:mod:`pysycl._kernels.matrix`). A combination or shape the
loops do not offer (:data:`~pysycl._kernels.matrix.LOOP_COMBINATIONS`) is a compile error
at the call with ``errc.kernel_not_supported`` (see :func:`matrix_error`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from pysycl._core import bfloat16 as bf16_api
from pysycl._core.exceptions import errc, exception
from pysycl._kernels import matrix as M  # noqa: N812 - short, read everywhere below
from pysycl_numba._numba_compat import (
    AbstractTemplate,
    LoweringRegistry,
    TypingRegistry,
    cgutils,
    errors,
    numpy_support,
    signature,
    types,
)
from pysycl_numba.overloads import matrix_ptx as nv
from pysycl_numba.overloads import matrix_wgmma as wg
from pysycl_numba.overloads.multi_ptr import memory_operand, operand_values
from pysycl_numba.types import (
    GroupType,
    JointMatrixType,
    KernelEnumType,
    SubGroupType,
    index_type,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from llvmlite import ir as llir

    from pysycl_numba._numba_compat import BaseContext, Signature

typing_registry = TypingRegistry()
lowering_registry = LoweringRegistry("pysycl.matrix")
lower = lowering_registry.lower

#: opens and closes a matrix error's text inside Numba's message (pysycl_numba.errors)
MARK, END = "[pysycl.matrix:", ":pysycl.matrix]"
_BF16 = M.matrix_type.bf16
_INTS = (M.matrix_type.sint8, M.matrix_type.uint8)


def matrix_error(e: exception) -> errors.TypingError:
    """A sycl exception from the shared checks as the typing error Numba reports at the
    call's line; :func:`pysycl_numba.errors.from_numba_error` restores ``e``'s errc."""
    return errors.TypingError(f"{MARK}{e.code().name}:{e}{END}")


def _member(t: types.Type, cls: type) -> Any:
    t = types.unliteral(t) if not isinstance(t, KernelEnumType) else t
    return t.member if isinstance(t, KernelEnumType) and isinstance(t.member, cls) else None


def _kind_of(t: types.Type) -> M.matrix_type | None:
    if isinstance(t, types.NumberClass):
        return M.element_kind(np.dtype(str(t.instance_type)))
    if isinstance(t, types.Module):
        return M.element_kind(t.pymod)
    if isinstance(t, KernelEnumType):
        return M.element_kind(t.member)
    return None


def _literal(t: types.Type) -> int | None:
    v = getattr(t, "literal_value", None) if isinstance(t, types.Literal) else None
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _need_sg(args: tuple, name: str) -> str:
    """The scope of ``args[0]`` (a sub-group's or a work-group's), which every joint_matrix
    among the arguments must share."""
    if not args or not isinstance(args[0], (SubGroupType, GroupType)):
        raise errors.TypingError(
            f"{MARK}kernel:{name} takes the sub-group of an nd_range kernel "
            "(sg = it.get_sub_group()) or its work-group (it.get_group()); a range kernel has "
            "neither -- launch the kernel with a sycl.nd_range and pass it.get_sub_group()"
            f"{END}")
    scope = M.SUB_GROUP if isinstance(args[0], SubGroupType) else M.WORK_GROUP
    for m in args[1:]:
        if isinstance(m, JointMatrixType) and m.scope != scope:
            raise errors.TypingError(
                f"{MARK}invalid:{name}: {m} belongs to a {m.scope.replace('_', '-')}, not to "
                f"the {scope.replace('_', '-')} passed{END}")
    return scope


def _combos(scope: str) -> tuple[M.combination, ...]:
    return M.WG_LOOP_COMBINATIONS if scope == M.WORK_GROUP else M.LOOP_COMBINATIONS


@typing_registry.register_global(M.joint_matrix)
class JointMatrixCtor(AbstractTemplate):
    """``joint_matrix(sg, T, use, rows, cols[, layout])``, ``rows``/``cols`` literals."""

    prefer_literal = True  # rows and cols are constants

    def generic(self, args: tuple, kws: dict) -> object:
        scope = _need_sg(args, "joint_matrix")
        args = (*args, *kws.values())
        if len(args) not in (5, 6):
            return None
        u = _member(args[2], M.use)
        lay = _member(args[5], M.layout) if len(args) == 6 else M.layout.dynamic
        rows, cols, kind = _literal(args[3]), _literal(args[4]), _kind_of(args[1])
        if u is None or lay is None or rows is None or cols is None:
            raise errors.TypingError(
                f"{MARK}kernel:joint_matrix(sg, T, use, rows, cols[, layout]) takes a "
                "matrix.use member, integer constants for rows and cols and a matrix.layout "
                f"member{END}")
        try:
            M.check_matrix(kind, args[1], u, rows, cols, lay, _combos(scope), "joint_matrix")
        except exception as e:
            raise matrix_error(e) from None
        assert kind is not None
        return signature(JointMatrixType(numpy_support.from_dtype(M.STORAGE[kind]), kind, u,
                                         rows, cols, lay, scope), *args)


@lower(M.joint_matrix, types.VarArg(types.Any))
def lower_joint_matrix(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                       args: Sequence[llir.Value]) -> llir.Value:
    """A zeroed alloca in the entry block (as ``sycl.private_array``); on PTX the lane's
    ``mma.sync`` fragment (:mod:`.matrix_ptx`)."""
    ty = sig.return_type
    if context.image_format == "ptx":
        if ty.scope == M.WORK_GROUP:
            _ptx_check(lambda: wg.check(ty, "joint_matrix"))
            return wg.alloc(context, builder, ty)
        _ptx_check(lambda: nv.check(ty, "joint_matrix"))
        return nv.alloc(context, builder, ty)
    llty = context.get_data_type(ty.dtype)
    ptr = cgutils.alloca_once(builder, llty, size=ty.size)
    nbytes = ty.size * context.get_abi_sizeof(llty)
    from llvmlite import ir as llir_rt
    cgutils.memset(builder, ptr, llir_rt.Constant(llir_rt.IntType(64), nbytes), 0)
    return ptr


# ============================================================ operations (device code)
def _fill(m: Any, v: Any, n: Any) -> None:
    for i in range(n):
        m[i] = v


def _load(m: Any, src: Any, off: Any, stride: Any, rows: Any, cols: Any, colmajor: Any) -> None:
    for r in range(rows):
        for c in range(cols):
            if colmajor:
                m[r * cols + c] = src[off + c * stride + r]
            else:
                m[r * cols + c] = src[off + r * stride + c]


def _load_swizzled(m: Any, src: Any, off: Any, stride: Any, rows: Any, cols: Any,
                   colmajor: Any, isz: Any) -> None:
    for r in range(rows):
        for c in range(cols):
            i = off + (c * stride + r if colmajor else r * stride + c)
            x = i * isz
            m[r * cols + c] = src[(x ^ (((x >> 7) & 7) << 4)) // isz]


def _store(sg: Any, m: Any, dst: Any, off: Any, stride: Any, rows: Any, cols: Any,
           colmajor: Any) -> None:
    r = sg.get_local_linear_id()
    n = sg.get_local_linear_range()
    while r < rows:
        for c in range(cols):
            if colmajor:
                dst[off + c * stride + r] = m[r * cols + c]
            else:
                dst[off + r * stride + c] = m[r * cols + c]
        r += n


def _mad_f(d: Any, a: Any, b: Any, c: Any, m: Any, n: Any, k: Any) -> None:
    for i in range(m):
        for j in range(n):
            s = c[i * n + j]
            for q in range(k):
                s += np.float32(a[i * k + q]) * np.float32(b[q * n + j])
            d[i * n + j] = s


def _mad_bf16(d: Any, a: Any, b: Any, c: Any, m: Any, n: Any, k: Any) -> None:
    for i in range(m):
        for j in range(n):
            s = c[i * n + j]
            for q in range(k):
                s += bf16_api.to_float(a[i * k + q]) * bf16_api.to_float(b[q * n + j])
            d[i * n + j] = s


def _mad_i(d: Any, a: Any, b: Any, c: Any, m: Any, n: Any, k: Any) -> None:
    for i in range(m):
        for j in range(n):
            s = c[i * n + j]
            for q in range(k):
                s += np.int32(a[i * k + q]) * np.int32(b[q * n + j])
            d[i * n + j] = s


def _copy(src: Any, dst: Any, n: Any) -> None:
    for i in range(n):
        dst[i] = src[i]


def _copy_from_bf16(src: Any, dst: Any, n: Any) -> None:
    for i in range(n):
        dst[i] = bf16_api.to_float(src[i])


def _copy_to_bf16(src: Any, dst: Any, n: Any) -> None:
    for i in range(n):
        dst[i] = bf16_api.from_float(src[i])


def _apply1(m: Any, fn: Any, n: Any) -> None:
    for i in range(n):
        m[i] = fn(m[i])


def _apply3(m: Any, fn: Any, rows: Any, cols: Any) -> None:
    for r in range(rows):
        for c in range(cols):
            m[r * cols + c] = fn(m[r * cols + c], r, c)


def _apply1_bf16(m: Any, fn: Any, n: Any) -> None:
    for i in range(n):
        m[i] = bf16_api.from_float(fn(bf16_api.to_float(m[i])))


def _apply3_bf16(m: Any, fn: Any, rows: Any, cols: Any) -> None:
    for r in range(rows):
        for c in range(cols):
            i = r * cols + c
            m[i] = bf16_api.from_float(fn(bf16_api.to_float(m[i]), r, c))


# ==================================================================== typing
def _load_store_sig(args: tuple, name: str, store: bool) -> Signature | None:
    """``(sg, m, memory, stride[, layout])``: checked as the host reference checks."""
    _need_sg(args, name)
    if len(args) not in (4, 5) or not isinstance(args[1], JointMatrixType):
        return None
    m, mem, stride = args[1], memory_operand(args[2]), args[3]
    if mem is None or not isinstance(stride, types.Integer):
        raise errors.TypingError(
            f"{MARK}kernel:{name}(sg, m, memory, stride[, layout]): memory is a 1-D accessor, "
            "a local accessor, a USM pointer (p + offset), acc.get_multi_ptr() + offset or "
            "(accessor, offset); stride an "
            f"integer; got {args[2]} and {args[3]}{END}")
    lay = _member(args[4], M.layout) if len(args) == 5 else None
    try:
        if store and m.use is not M.use.accumulator:
            raise exception(errc.invalid, f"{name} stores a use.accumulator joint_matrix, not "
                            f"use.{m.use.name}")
        if m.use is M.use.accumulator and lay not in (M.layout.row_major, M.layout.col_major):
            raise exception(errc.invalid, f"{name}: a use.accumulator joint_matrix needs the "
                            "layout argument (layout.row_major or layout.col_major)")
        if m.use is not M.use.accumulator and lay not in (None, m.layout):
            raise exception(errc.invalid, f"{name}: {lay} differs from the joint_matrix's "
                            f"layout.{m.layout.name}")
        if mem[0].dtype != m.dtype:
            raise exception(errc.invalid, f"{name}: memory of {mem[0].dtype} for a joint_matrix "
                            f"of {m.kind.name} (its elements are {m.dtype})")
    except exception as e:
        raise matrix_error(e) from None
    # a constant stride keeps its literal type: lowering checks it (_lower_mem)
    return signature(types.none, *args)


@typing_registry.register_global(M.joint_matrix_load)
class JointMatrixLoad(AbstractTemplate):
    """``joint_matrix_load(sg, m, memory, stride[, layout])``."""

    prefer_literal = True  # a constant stride is checked at compile time

    def generic(self, args: tuple, kws: dict) -> object:
        return _load_store_sig((*args, *kws.values()), "joint_matrix_load", False)


@typing_registry.register_global(M.joint_matrix_store)
class JointMatrixStore(AbstractTemplate):
    """``joint_matrix_store(sg, m, memory, stride, layout)``."""

    prefer_literal = True  # a constant stride is checked at compile time

    def generic(self, args: tuple, kws: dict) -> object:
        return _load_store_sig((*args, *kws.values()), "joint_matrix_store", True)


@typing_registry.register_global(M.joint_matrix_fill)
class JointMatrixFill(AbstractTemplate):
    """``joint_matrix_fill(sg, m, v)``."""

    def generic(self, args: tuple, kws: dict) -> object:
        _need_sg(args, "joint_matrix_fill")
        if kws or len(args) != 3 or not isinstance(args[1], JointMatrixType) \
                or not isinstance(args[2], types.Number):
            return None
        return signature(types.none, args[0], args[1], types.unliteral(args[2]))


@typing_registry.register_global(M.joint_matrix_mad)
class JointMatrixMad(AbstractTemplate):
    """``joint_matrix_mad(sg, D, A, B, C)``: ``D = A*B + C``."""

    def generic(self, args: tuple, kws: dict) -> object:
        scope = _need_sg(args, "joint_matrix_mad")
        if kws or len(args) != 5 or not all(isinstance(a, JointMatrixType) for a in args[1:]):
            return None
        d, a, b, c = args[1:]
        try:
            for m, u in ((d, M.use.accumulator), (a, M.use.a), (b, M.use.b),
                         (c, M.use.accumulator)):
                if m.use is not u:
                    raise exception(errc.invalid, "joint_matrix_mad(sg, D, A, B, C) takes "
                                    f"use.{u.name} where {m} was passed")
            M.check_mad((d.kind, a.kind, b.kind, c.kind),
                        tuple((m.rows, m.cols) for m in (d, a, b, c)), _combos(scope),
                        "joint_matrix_mad")
        except exception as e:
            raise matrix_error(e) from None
        return signature(types.none, *args)


@typing_registry.register_global(M.joint_matrix_copy)
class JointMatrixCopy(AbstractTemplate):
    """``joint_matrix_copy(sg, src, dest)``."""

    def generic(self, args: tuple, kws: dict) -> object:
        _need_sg(args, "joint_matrix_copy")
        if kws or len(args) != 3 or not all(isinstance(a, JointMatrixType) for a in args[1:]):
            return None
        if (args[1].rows, args[1].cols) != (args[2].rows, args[2].cols):
            raise matrix_error(exception(errc.invalid, "joint_matrix_copy of a "
                                         f"{args[1].rows}x{args[1].cols} tile into a "
                                         f"{args[2].rows}x{args[2].cols} one"))
        return signature(types.none, *args)


def _apply_arity(context: Any, m: JointMatrixType, fn: types.Type) -> int | None:
    """3 when ``fn(x, row, col)`` types, 1 when ``fn(x)`` does, else None."""
    elem = types.float32 if m.kind is _BF16 else m.dtype
    for arity, fargs in ((3, (elem, index_type, index_type)), (1, (elem,))):
        try:
            if context.resolve_function_type(fn, fargs, {}) is not None:
                return arity
        except errors.TypingError:
            continue
    return None


@typing_registry.register_global(M.joint_matrix_apply)
class JointMatrixApply(AbstractTemplate):
    """``joint_matrix_apply(sg, m, fn)``: ``fn(x)`` or ``fn(x, row, col)`` returns the new x."""

    def generic(self, args: tuple, kws: dict) -> object:
        _need_sg(args, "joint_matrix_apply")
        if kws or len(args) != 3 or not isinstance(args[1], JointMatrixType):
            return None
        if _apply_arity(self.context, args[1], args[2]) is None:
            raise errors.TypingError(
                f"{MARK}kernel:joint_matrix_apply(sg, m, fn): fn takes an element (or an "
                f"element, its row and its column) and returns the new element{END}")
        return signature(types.none, *args)


@typing_registry.register_global(M.round_to_tf32)
class RoundToTf32(AbstractTemplate):
    """``round_to_tf32(x)``: float32 rounded to 10 mantissa bits."""

    def generic(self, args: tuple, kws: dict) -> object:
        if kws or len(args) != 1 or not isinstance(args[0], types.Number):
            return None
        return signature(types.float32, types.unliteral(args[0]))


# ================================================================== lowering
def _ptx_check(check: Any) -> None:
    """Run a PTX combination check: its exception as the typing error at the call."""
    try:
        check()
    except exception as e:
        raise matrix_error(e) from None


def _n(context: BaseContext, m: JointMatrixType) -> int:
    """Elements of ``m`` a work-item holds: the tile, or its PTX fragment."""
    if context.image_format != "ptx":
        return m.size
    return wg.size(m) if m.scope == M.WORK_GROUP else nv.size(m)


def _const(context: BaseContext, v: int) -> llir.Value:
    return context.get_constant(index_type, v)


def _lower_mem(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
               args: Sequence[llir.Value], store: bool) -> llir.Value:
    m = sig.args[1]
    lay0 = sig.args[4].member if len(sig.args) == 5 else m.layout
    name = "joint_matrix_store" if store else "joint_matrix_load"
    if _literal(sig.args[3]) is not None:  # a LoweringError at the call's line
        try:
            M.check_stride(_literal(sig.args[3]), m.rows, m.cols, lay0, name,
                           m.dtype.bitwidth // 8)
        except exception as e:
            raise matrix_error(e) from None
    mem, val, off = operand_values(context, builder, sig.args[2], args[2])
    stride = context.cast(builder, args[3], sig.args[3], index_type)
    if context.image_format == "ptx":
        if m.scope == M.WORK_GROUP:
            _ptx_check(lambda: wg.lower_mem(context, builder, sig, (mem, val, off, stride),
                                            store, args, name))
        else:
            nv.lower_mem(context, builder, sig, (mem, val, off, stride), store, args)
        return context.get_dummy_value()
    lay = sig.args[4].member if len(sig.args) == 5 else m.layout
    if lay is M.layout.ext_pysycl_swizzle128:  # K-major rows, then swizzled
        col = context.get_constant(types.boolean, m.use is M.use.b)
        isig = signature(types.none, m, mem, *([index_type] * 4), types.boolean, index_type)
        context.compile_internal(builder, _load_swizzled, isig, [
            args[1], val, off, stride, _const(context, m.rows), _const(context, m.cols), col,
            _const(context, m.dtype.bitwidth // 8)])
        return context.get_dummy_value()
    col = context.get_constant(types.boolean, lay is M.layout.col_major)
    rest = [off, stride, _const(context, m.rows), _const(context, m.cols), col]
    rtys = [index_type] * 4 + [types.boolean]
    if store:
        isig = signature(types.none, sig.args[0], m, mem, *rtys)
        context.compile_internal(builder, _store, isig, [args[0], args[1], val, *rest])
    else:
        isig = signature(types.none, m, mem, *rtys)
        context.compile_internal(builder, _load, isig, [args[1], val, *rest])
    return context.get_dummy_value()


@lower(M.joint_matrix_load, types.VarArg(types.Any))
def lower_load(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
               args: Sequence[llir.Value]) -> llir.Value:
    """The tile, element by element, in every work-item."""
    return _lower_mem(context, builder, sig, args, False)


@lower(M.joint_matrix_store, types.VarArg(types.Any))
def lower_store(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                args: Sequence[llir.Value]) -> llir.Value:
    """Row ``r`` from work-item ``r % sub-group size``."""
    return _lower_mem(context, builder, sig, args, True)


@lower(M.joint_matrix_fill, types.Any, JointMatrixType, types.Number)
def lower_fill(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
               args: Sequence[llir.Value]) -> llir.Value:
    """Every element := v (bfloat16: rounded from float32)."""
    m, vt = sig.args[1], sig.args[2]
    if context.image_format == "ptx" and m.scope == M.WORK_GROUP:
        _ptx_check(lambda: wg.before_elements(builder, m, "joint_matrix_fill"))
    v = args[2]
    if m.kind is _BF16:
        v32 = context.cast(builder, v, vt, types.float32)
        v = context.compile_internal(builder, lambda x: bf16_api.from_float(x),
                                     signature(types.uint16, types.float32), [v32])
    else:
        v = context.cast(builder, v, vt, m.dtype)
    isig = signature(types.none, m, m.dtype, index_type)
    context.compile_internal(builder, _fill, isig, [args[1], v, _const(context, _n(context, m))])
    return context.get_dummy_value()


@lower(M.joint_matrix_mad, types.Any, JointMatrixType, JointMatrixType, JointMatrixType,
       JointMatrixType)
def lower_mad(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
              args: Sequence[llir.Value]) -> llir.Value:
    """``D = A*B + C`` in float32 (int32 for integer kinds), in every work-item."""
    d, a, b, c = sig.args[1:]
    if context.image_format == "ptx" and a.scope == M.WORK_GROUP:
        _ptx_check(lambda: wg.lower_mad(context, builder, sig, args))
        return context.get_dummy_value()
    if context.image_format == "ptx":
        _ptx_check(lambda: nv.check_mad(d, a, b, c))
        nv.lower_mad(context, builder, sig, args)
        return context.get_dummy_value()
    impl = _mad_bf16 if a.kind is _BF16 else _mad_i if a.kind in _INTS else _mad_f
    dims = [_const(context, v) for v in (a.rows, b.cols, a.cols)]
    isig = signature(types.none, d, a, b, c, index_type, index_type, index_type)
    context.compile_internal(builder, impl, isig, [*args[1:], *dims])
    return context.get_dummy_value()


@lower(M.joint_matrix_copy, types.Any, JointMatrixType, JointMatrixType)
def lower_copy(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
               args: Sequence[llir.Value]) -> llir.Value:
    """``dest`` := ``src`` converted element by element."""
    s, d = sig.args[1:]
    if context.image_format == "ptx" and s.scope == M.WORK_GROUP:
        _ptx_check(lambda: wg.check_copy(builder, s, d))
    elif context.image_format == "ptx":
        _ptx_check(lambda: nv.check_copy(s, d))
    impl = (_copy if (s.kind is _BF16) == (d.kind is _BF16) else
            _copy_from_bf16 if s.kind is _BF16 else _copy_to_bf16)
    isig = signature(types.none, s, d, index_type)
    context.compile_internal(builder, impl, isig, [args[1], args[2], _const(context, _n(context, s))])
    return context.get_dummy_value()


@lower(M.joint_matrix_apply, types.Any, JointMatrixType, types.Any)
def lower_apply(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                args: Sequence[llir.Value]) -> llir.Value:
    """``m[i] = fn(m[i])`` or ``fn(m[i], row, col)``."""
    m, fn = sig.args[1], sig.args[2]
    three = _apply_arity(context.typing_context, m, fn) == 3
    bf = m.kind is _BF16
    if context.image_format == "ptx" and m.scope == M.WORK_GROUP:
        _ptx_check(lambda: wg.before_elements(builder, m, "joint_matrix_apply"))
        if three:
            wg.lower_apply3(context, builder, m, fn, args[1], args[2])
            return context.get_dummy_value()
    elif context.image_format == "ptx" and three:
        nv.lower_apply3(context, builder, m, fn, args[1], args[2])
        return context.get_dummy_value()
    impl = ((_apply3_bf16 if bf else _apply3) if three else (_apply1_bf16 if bf else _apply1))
    dims = [_const(context, m.rows), _const(context, m.cols)] if three else \
        [_const(context, _n(context, m))]
    isig = signature(types.none, m, fn, *([index_type] * len(dims)))
    context.compile_internal(builder, impl, isig, [args[1], args[2], *dims])
    return context.get_dummy_value()


@lower(M.round_to_tf32, types.Number)
def lower_round_tf32(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                     args: Sequence[llir.Value]) -> llir.Value:
    """Round to nearest even at bit 13 of the float32's bits, then clear bits 0..12."""
    from llvmlite import ir as llir_rt
    i32 = llir_rt.IntType(32)
    x = context.cast(builder, args[0], sig.args[0], types.float32)
    u = builder.bitcast(x, i32)
    odd = builder.and_(builder.lshr(u, i32(13)), i32(1))
    r = builder.and_(builder.add(builder.add(u, i32(0xFFF)), odd), i32(0xFFFFE000))
    return builder.bitcast(r, llir_rt.FloatType())

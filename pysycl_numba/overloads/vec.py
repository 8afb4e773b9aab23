"""``sycl.vec`` / ``sycl.marray`` in kernels: construction, elements, swizzles, conversions, load/store.

A vector is an LLVM vector ``<n x T>`` (:class:`~pysycl_numba.types.VecType`): SPIR-V
``OpTypeVector``, NVPTX vector registers. The host semantics (and the oracle) are
:mod:`pysycl._objects.vec`; operators and the geometric functions are in
:mod:`pysycl_numba.overloads.vec_ops`.

* ``sycl.float4(x, y, z, w)``, ``sycl.float4(s)`` (broadcast), elements may be vectors
  (concatenated): the alias types as values are :class:`~pysycl_numba.types.VecClassType`.
* ``v[k]`` (``k`` may be a runtime value), ``len(v)``, ``v.size()``, swizzles ``v.x()``,
  ``v.xy()``, ``v.s0()``, ``v.s10()`` (:class:`~pysycl_numba.types.SwizzleType`).
* ``v.convert(np.int32)`` (LLVM vector casts), ``v.as_(sycl.int4)`` (a bitcast).
* ``sycl.float4.load(offset, src)``, ``v.store(offset, dst)`` on 1-D accessors and USM
  pointers: ``n`` element accesses ``src[offset * n + k]`` (the accessor's own, so
  bounds-checked mode checks each), the vector built with ``insertelement``. Measured on
  Intel's CPU runtime (``benchmarks/bench_vec.py``): one ``load <4 x float>, align 4``
  made the streaming kernel 8.7x slower than OpenCL C's ``vload4`` (the driver's
  work-item vectorizer does not take it well), element accesses 1.1-1.3x; and LLVM's
  VectorCombine shrank 8-element loads to ``<6 x double>``, a width SPIR-V for OpenCL lacks.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING

from llvmlite import ir as llir

from pysycl._kernels.kernel_api import vec_api
from pysycl_numba._numba_compat import (
    AbstractTemplate,
    AttributeTemplate,
    LoweringRegistry,
    TypingRegistry,
    bound_function,
    signature,
    types,
)
from pysycl_numba.overloads.accessor import element_pointer
from pysycl_numba.types import (
    AccessorType,
    IdType,
    ItemType,
    USMPointerType,
    index_type,
    numba_type_of_dtype,
    tag,
)
from pysycl_numba.vec_types import SwizzleType, VecClassType, VecType

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pysycl_numba._numba_compat import BaseContext, Signature

typing_registry = TypingRegistry()
lowering_registry = LoweringRegistry("pysycl.vec")
lower = lowering_registry.lower

INT = (types.Integer, types.IntegerLiteral)
I32 = llir.IntType(32)


def resolve_vec_value(val: object) -> types.Type | None:
    """The Numba type of a vector type used in a kernel (``sycl.float4``), else None."""
    if isinstance(val, vec_api.vec_type):
        return VecClassType(VecType(numba_type_of_dtype(val.dtype), val.num_elements,
                                    val.is_marray))
    return None


def is_scalar(t: types.Type) -> bool:
    """Whether ``t`` is a number or a bool (what combines with a vector elementwise)."""
    return isinstance(t, (types.Number, types.Boolean))


# ==================================================================== typing
@typing_registry.register_global(operator.getitem)
class GetItem(AbstractTemplate):
    """``v[k]``."""

    def generic(self, args: tuple, kws: dict) -> object:
        if len(args) == 2 and isinstance(args[0], VecType) and isinstance(args[1], INT):
            return signature(args[0].dtype, args[0], types.unliteral(args[1]))
        if (len(args) == 2 and isinstance(args[0], VecType)
                and isinstance(args[1], (ItemType, IdType)) and args[1].ndim == 1):
            return signature(args[0].dtype, args[0], index_type)  # v[it]: item<1> is a size_t
        return None


@typing_registry.register_global(len)
class Len(AbstractTemplate):
    """``len(v)``."""

    def generic(self, args: tuple, kws: dict) -> object:
        if len(args) == 1 and isinstance(args[0], VecType):
            return signature(index_type, args[0])
        return None


def _offset(t: types.Type) -> types.Type | None:
    """The type an offset argument is taken as: an integer, or a 1-D item as ``int64``."""
    if isinstance(t, INT):
        return types.unliteral(t)
    return index_type if isinstance(t, ItemType) and t.ndim == 1 else None


def _load_target(t: types.Type) -> bool:
    return (isinstance(t, AccessorType) and t.ndim == 1) or isinstance(t, USMPointerType)


@typing_registry.register_attr
class VecAttributes(AttributeTemplate):
    """Methods of a vector; swizzles through :meth:`generic_resolve`."""

    key = VecType

    @bound_function("vec.size")
    def resolve_size(self, v: VecType, args: tuple, kws: dict) -> object:
        return signature(index_type) if not args and not kws else None

    @bound_function("vec.convert")
    def resolve_convert(self, v: VecType, args: tuple, kws: dict) -> object:
        if len(args) != 1 or kws or not isinstance(args[0], types.NumberClass):
            return None
        return signature(VecType(args[0].instance_type, v.n, v.marray), args[0])

    @bound_function("vec.as_")
    def resolve_as_(self, v: VecType, args: tuple, kws: dict) -> object:
        if len(args) != 1 or kws or not isinstance(args[0], VecClassType):
            return None
        to = args[0].instance
        if to.n * to.dtype.bitwidth != v.n * v.dtype.bitwidth or isinstance(v.dtype, types.Boolean):
            return None
        return signature(to, args[0])

    @bound_function("vec.store")
    def resolve_store(self, v: VecType, args: tuple, kws: dict) -> object:
        if len(args) != 2 or kws or _offset(args[0]) is None or not _load_target(args[1]):
            return None
        if args[1].dtype != v.dtype or (isinstance(args[1], AccessorType) and not args[1].writable):
            return None
        return signature(types.none, _offset(args[0]), args[1])

    def generic_resolve(self, v: VecType, attr: str) -> types.Type | None:
        idx = None if v.marray else vec_api.swizzle_indices(attr, v.n)
        if idx is None:
            return None
        return types.BoundFunction(_SwizzleCall, SwizzleType(v, idx))


class _SwizzleCall(AbstractTemplate):
    key = "vec.swizzle"

    def generic(self, args: tuple, kws: dict) -> object:
        if args or kws:
            return None
        this = self.this  # type: ignore[attr-defined]
        n = len(this.indices)
        ret = this.vec.dtype if n == 1 else VecType(this.vec.dtype, n)
        return signature(ret, recvr=this)


@typing_registry.register_attr
class VecClassAttributes(AttributeTemplate):
    """``sycl.float4.load(offset, src)``."""

    key = VecClassType

    @bound_function("vecclass.load")
    def resolve_load(self, cls: VecClassType, args: tuple, kws: dict) -> object:
        if len(args) != 2 or kws or _offset(args[0]) is None or not _load_target(args[1]):
            return None
        if args[1].dtype != cls.instance.dtype:
            return None
        return signature(cls.instance, _offset(args[0]), args[1])


# ================================================================== lowering
def elem_value(context: BaseContext, builder: llir.IRBuilder, vecty: VecType, v: llir.Value,
               k: llir.Value | int) -> llir.Value:
    """Element ``k`` of vector ``v`` as a Numba value of ``vecty.dtype``."""
    e = builder.extract_element(v, I32(k) if isinstance(k, int) else k)
    if isinstance(vecty.dtype, types.Boolean):
        return builder.icmp_unsigned("!=", e, e.type(0))
    return e


def build(context: BaseContext, builder: llir.IRBuilder, vecty: VecType,
          elems: Sequence[llir.Value]) -> llir.Value:
    """A vector from ``n`` element values (of ``vecty.dtype``)."""
    llty = context.get_value_type(vecty)
    v = llir.Constant(llty, llir.Undefined)
    for k, e in enumerate(elems):
        if isinstance(vecty.dtype, types.Boolean):
            e = builder.zext(e, llty.element)
        v = builder.insert_element(v, e, I32(k))
    return v


def splat(context: BaseContext, builder: llir.IRBuilder, vecty: VecType, value: llir.Value,
          valty: types.Type) -> llir.Value:
    """``value`` (of ``valty``) converted to the element type, in every element."""
    e = context.cast(builder, value, valty, vecty.dtype)
    return build(context, builder, vecty, [e] * vecty.n)


@lowering_registry.lower_constant(VecClassType)
def vec_class_constant(context: BaseContext, builder: llir.IRBuilder, ty: VecClassType,
                       pyval: object) -> llir.Value:
    """A vector type as a value carries no data."""
    return tag()


@lower("pysycl.vec.make", types.VarArg(types.Any))
def vec_make(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
             args: Sequence[llir.Value]) -> llir.Value:
    """``sycl.float4(x, y, z, w)`` / ``sycl.float4(s)``: elements converted to the dtype."""
    vecty = sig.return_type
    if len(args) == 1 and is_scalar(sig.args[0]):
        return splat(context, builder, vecty, args[0], sig.args[0])
    elems = []
    for a, t in zip(args, sig.args, strict=True):
        if isinstance(t, VecType):
            elems += [context.cast(builder, elem_value(context, builder, t, a, k), t.dtype,
                                   vecty.dtype) for k in range(t.n)]
        else:
            elems.append(context.cast(builder, a, t, vecty.dtype))
    return build(context, builder, vecty, elems)


@lower(operator.getitem, VecType, types.Integer)
def vec_getitem(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                args: Sequence[llir.Value]) -> llir.Value:
    """``v[k]``: ``extractelement`` (a runtime ``k`` too; a constant one is checked by
    ``passes.ValidateTypedKernel``)."""
    k = builder.trunc(args[1], I32) if args[1].type.width > 32 else args[1]
    return elem_value(context, builder, sig.args[0], args[0], k)


@lower(len, VecType)
@lower("vec.size", VecType)
def vec_len(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
            args: Sequence[llir.Value]) -> llir.Value:
    """``len(v)`` / ``v.size()``."""
    return context.get_constant(index_type, sig.args[0].n)


@lowering_registry.lower_cast(VecType, SwizzleType)
def vec_to_swizzle(context: BaseContext, builder: llir.IRBuilder, fromty: VecType,
                   toty: SwizzleType, val: llir.Value) -> llir.Value:
    """Looking up ``v.xy`` keeps the vector (the indices are in the type)."""
    return val


@lower("vec.swizzle", SwizzleType)
def vec_swizzle(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                args: Sequence[llir.Value]) -> llir.Value:
    """``v.x()`` (an element), ``v.zyx()`` (a ``shufflevector``)."""
    sw = sig.args[0]
    if len(sw.indices) == 1:
        return elem_value(context, builder, sw.vec, args[0], sw.indices[0])
    mask = llir.Constant(llir.VectorType(I32, len(sw.indices)), list(sw.indices))
    return builder.shuffle_vector(args[0], llir.Constant(args[0].type, llir.Undefined), mask)


def vector_cast(builder: llir.IRBuilder, v: llir.Value, fromdt: types.Type, todt: types.Type,
                to_llty: llir.VectorType) -> llir.Value:
    """Elementwise conversion as LLVM vector casts (float → int truncates, as C++ and Numba)."""
    fk, tk = _kind(fromdt), _kind(todt)
    fw, tw = v.type.element.width if fk != "f" else 0, to_llty.element
    if isinstance(todt, types.Boolean):
        zero = llir.Constant(v.type, None)
        ne = builder.fcmp_unordered("!=", v, zero) if fk == "f" else builder.icmp_unsigned(
            "!=", v, zero)
        return builder.zext(ne, to_llty)
    if fk == "f" and tk == "f":
        fbits, tbits = _fbits(v.type.element), _fbits(tw)
        if fbits == tbits:
            return v
        return builder.fpext(v, to_llty) if tbits > fbits else builder.fptrunc(v, to_llty)
    if fk == "f":
        return builder.fptosi(v, to_llty) if tk == "i" else builder.fptoui(v, to_llty)
    if tk == "f":
        return builder.sitofp(v, to_llty) if fk == "i" else builder.uitofp(v, to_llty)
    tww = tw.width
    if tww == fw:
        return v
    if tww < fw:
        return builder.trunc(v, to_llty)
    return builder.sext(v, to_llty) if fk == "i" else builder.zext(v, to_llty)


def _kind(t: types.Type) -> str:
    if isinstance(t, types.Float):
        return "f"
    if isinstance(t, types.Integer) and t.signed:
        return "i"
    return "u"  # unsigned integers and bool (0/1 in an i8)


def _fbits(t: llir.Type) -> int:
    return {llir.HalfType: 16, llir.FloatType: 32, llir.DoubleType: 64}[type(t)]


@lower("vec.convert", VecType, types.NumberClass)
def vec_convert(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                args: Sequence[llir.Value]) -> llir.Value:
    """``v.convert(np.int32)``."""
    fromty, toty = sig.args[0], sig.return_type
    return vector_cast(builder, args[0], fromty.dtype, toty.dtype, context.get_value_type(toty))


@lower("vec.as_", VecType, VecClassType)
def vec_as(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
           args: Sequence[llir.Value]) -> llir.Value:
    """``v.as_(sycl.int4)``: the same bits, another vector type."""
    return builder.bitcast(args[0], context.get_value_type(sig.return_type))


def _element_sig(srcty: types.Type, dtype: types.Type, store: bool) -> Signature:
    if store:
        return signature(types.none, srcty, index_type, dtype)
    return signature(dtype, srcty, index_type)


#: Bytes of a vector the PTX target moves in one access where aligned (``ld.global.v2``/``.v4``).
_WIDE = (8, 16)


def _wide_address(context: BaseContext, builder: llir.IRBuilder, vecty: VecType,
                  memty: types.Type, mem: llir.Value, first: llir.Value
                  ) -> tuple[llir.Value, int] | None:
    """PTX: (``&mem[first]``, the vector's bytes) where ``vec.load``/``store`` of ``vecty``
    on ``mem`` can be one 8- or 16-byte access of global memory (a USM pointer, an
    unchecked 1-D global accessor); else None.

    LLVM knows a local accessor's alignment (its parameter's ``align 16``) and joins the
    element accesses itself; a global pointer's is a run-time value, so the caller tests
    the address: one wide access where it is aligned, the element accesses elsewhere."""
    if context.image_format != "ptx" or isinstance(vecty.dtype, types.Boolean):
        return None
    nbytes = vecty.n * context.get_abi_sizeof(context.get_data_type(vecty.dtype))
    if nbytes not in _WIDE:
        return None
    if isinstance(memty, USMPointerType):
        return builder.gep(mem, [first], inbounds=True), nbytes
    if isinstance(memty, AccessorType) and memty.space == "global" and memty.ndim == 1 \
            and not memty.checked:
        return element_pointer(context, builder, memty, mem, index_type, first), nbytes
    return None


def _aligned(builder: llir.IRBuilder, addr: llir.Value, nbytes: int) -> llir.Value:
    bits = builder.ptrtoint(addr, llir.IntType(64))
    return builder.icmp_unsigned("==", builder.and_(bits, bits.type(nbytes - 1)), bits.type(0))


def _vector_pointer(context: BaseContext, builder: llir.IRBuilder, vecty: VecType,
                    addr: llir.Value) -> llir.Value:
    return builder.bitcast(addr, context.get_value_type(vecty).as_pointer(addr.type.addrspace))


@lower("vecclass.load", VecClassType, types.Integer, types.Any)
def vec_load(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
             args: Sequence[llir.Value]) -> llir.Value:
    """``sycl.float4.load(offset, src)``: elements ``src[offset * 4 + k]`` (on PTX one
    wide access where the address allows: :func:`_wide_address`)."""
    vecty, (_, offty, srcty) = sig.return_type, sig.args
    n = vecty.n
    first = builder.mul(context.cast(builder, args[1], offty, index_type),
                        context.get_constant(index_type, n))
    get = context.get_function(operator.getitem, _element_sig(srcty, vecty.dtype, False))

    def elements() -> llir.Value:
        return build(context, builder, vecty, [
            get(builder, (args[2], builder.add(first, context.get_constant(index_type, k))))
            for k in range(n)])

    wide = _wide_address(context, builder, vecty, srcty, args[2], first)
    if wide is None:
        return elements()
    addr, nbytes = wide
    with builder.if_else(_aligned(builder, addr, nbytes), likely=True) as (whole, parts):
        with whole:
            v_whole = builder.load(_vector_pointer(context, builder, vecty, addr), align=nbytes)
            b_whole = builder.block
        with parts:
            v_parts = elements()
            b_parts = builder.block
    phi = builder.phi(v_whole.type)
    phi.add_incoming(v_whole, b_whole)
    phi.add_incoming(v_parts, b_parts)
    return phi


@lower("vec.store", VecType, types.Integer, types.Any)
def vec_store(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
              args: Sequence[llir.Value]) -> llir.Value:
    """``v.store(offset, dst)``: elements to ``dst[offset * n + k]`` (on PTX one wide
    access where the address allows)."""
    vecty, offty, dstty = sig.args
    n = vecty.n
    first = builder.mul(context.cast(builder, args[1], offty, index_type),
                        context.get_constant(index_type, n))
    put = context.get_function(operator.setitem, _element_sig(dstty, vecty.dtype, True))

    def elements() -> None:
        for k in range(n):
            put(builder, (args[2], builder.add(first, context.get_constant(index_type, k)),
                          elem_value(context, builder, vecty, args[0], k)))

    wide = _wide_address(context, builder, vecty, dstty, args[2], first)
    if wide is None:
        elements()
        return context.get_dummy_value()
    addr, nbytes = wide
    with builder.if_else(_aligned(builder, addr, nbytes), likely=True) as (whole, parts):
        with whole:
            builder.store(args[0], _vector_pointer(context, builder, vecty, addr), align=nbytes)
        with parts:
            elements()
    return context.get_dummy_value()

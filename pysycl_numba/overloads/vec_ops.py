"""Vector operators and the geometric functions (SYCL 2020 §4.14.2, §4.17.8) in kernels.

* Arithmetic ``+ - * /`` elementwise on vectors of one type, or a vector and a number
  (converted to the element type first, as C++ does); integer vectors also
  ``// % & | ^ << >> ~`` (``/`` and ``//`` truncate toward zero, ``%`` has the sign
  of the dividend, shift counts are taken modulo the element width, as OpenCL C).
* Comparisons ``== != < <= > >=``: a ``vec`` gives the spec's signed integer vector
  of the element size (-1 true, 0 false); an ``marray`` gives an ``marray`` of bool.
* ``sycl.dot`` (``a0*b0 + a1*b1 + ...`` in order), ``sycl.cross`` (3 and 4 elements),
  ``sycl.length``, ``sycl.distance``, ``sycl.normalize`` on float vectors of 1-4
  elements (``dot``, ``length``, ``distance`` and ``normalize`` on numbers too); the
  square root is the OpenCL ``sqrt`` built-in.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING

from llvmlite import ir as llir

from pysycl._kernels.kernel_api import vec_api
from pysycl_numba._numba_compat import (
    AbstractTemplate,
    LoweringRegistry,
    TypingRegistry,
    signature,
    types,
)
from pysycl_numba.overloads.vec import build, elem_value, is_scalar, splat
from pysycl_numba.targets.spirv import ocl
from pysycl_numba.vec_types import VecType

cross, distance, dot, length, normalize = (vec_api.cross, vec_api.distance, vec_api.dot,
                                           vec_api.length, vec_api.normalize)

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from pysycl_numba._numba_compat import BaseContext, Signature

typing_registry = TypingRegistry()
lowering_registry = LoweringRegistry("pysycl.vec_ops")
lower = lowering_registry.lower

ARITH = (operator.add, operator.sub, operator.mul, operator.truediv)
INT_ONLY = (operator.floordiv, operator.mod, operator.and_, operator.or_, operator.xor,
            operator.lshift, operator.rshift)
INPLACE = {operator.iadd: operator.add, operator.isub: operator.sub, operator.imul: operator.mul,
           operator.itruediv: operator.truediv, operator.ifloordiv: operator.floordiv,
           operator.imod: operator.mod, operator.iand: operator.and_, operator.ior: operator.or_,
           operator.ixor: operator.xor, operator.ilshift: operator.lshift,
           operator.irshift: operator.rshift}
COMPARE = {operator.eq: "==", operator.ne: "!=", operator.lt: "<", operator.le: "<=",
           operator.gt: ">", operator.ge: ">="}


def compare_type(v: VecType) -> VecType:
    """The result type of comparing two ``v`` vectors."""
    if v.marray:
        return VecType(types.boolean, v.n, marray=True)
    return VecType(types.Integer(f"int{v.dtype.bitwidth}"), v.n)


def _vector_operand(args: tuple) -> VecType | None:
    """The vector type of a binary operation's operands, or None if they do not combine."""
    if len(args) != 2:
        return None
    a, b = args
    if isinstance(a, VecType) and isinstance(b, VecType):
        return a if a == b else None
    if isinstance(a, VecType) and is_scalar(b):
        return a
    if isinstance(b, VecType) and is_scalar(a):
        return b
    return None


def _is_int(v: VecType) -> bool:
    return isinstance(v.dtype, (types.Integer, types.Boolean))


def _binop_template(op: Callable) -> type:
    base = INPLACE.get(op, op)

    class VecBinop(AbstractTemplate):
        key = op

        def generic(self, args: tuple, kws: dict) -> object:
            v = _vector_operand(args)
            if v is None or kws or (base in INT_ONLY and not _is_int(v)):
                return None
            if isinstance(v.dtype, types.Boolean) and base not in COMPARE:
                return None
            ret = compare_type(v) if base in COMPARE else v
            return signature(ret, *(types.unliteral(a) for a in args))

    return VecBinop


def _unary_template(op: Callable) -> type:
    class VecUnary(AbstractTemplate):
        key = op

        def generic(self, args: tuple, kws: dict) -> object:
            if len(args) != 1 or kws or not isinstance(args[0], VecType):
                return None
            v = args[0]
            if isinstance(v.dtype, types.Boolean) or (op is operator.invert and not _is_int(v)):
                return None
            return signature(v, v)

    return VecUnary


for _op in (*ARITH, *INT_ONLY, *INPLACE, *COMPARE):
    typing_registry.register_global(_op)(_binop_template(_op))
for _op in (operator.neg, operator.pos, operator.invert):
    typing_registry.register_global(_op)(_unary_template(_op))


# ================================================================== lowering
def _operands(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
              args: Sequence[llir.Value]) -> tuple[VecType, llir.Value, llir.Value]:
    a, b = sig.args
    v = a if isinstance(a, VecType) else b
    x = args[0] if isinstance(a, VecType) else splat(context, builder, v, args[0], a)
    y = args[1] if isinstance(b, VecType) else splat(context, builder, v, args[1], b)
    return v, x, y


def _int_op(builder: llir.IRBuilder, op: Callable, signed: bool, x: llir.Value,
            y: llir.Value) -> llir.Value:
    if op in (operator.lshift, operator.rshift):
        width = x.type.element.width
        y = builder.and_(y, llir.Constant(y.type, [width - 1] * y.type.count))
        if op is operator.lshift:
            return builder.shl(x, y)
        return builder.ashr(x, y) if signed else builder.lshr(x, y)
    if op in (operator.truediv, operator.floordiv):
        return builder.sdiv(x, y) if signed else builder.udiv(x, y)
    if op is operator.mod:
        return builder.srem(x, y) if signed else builder.urem(x, y)
    simple = {operator.add: builder.add, operator.sub: builder.sub, operator.mul: builder.mul,
              operator.and_: builder.and_, operator.or_: builder.or_, operator.xor: builder.xor}
    return simple[op](x, y)


def _float_op(builder: llir.IRBuilder, op: Callable, x: llir.Value, y: llir.Value) -> llir.Value:
    fns = {operator.add: builder.fadd, operator.sub: builder.fsub, operator.mul: builder.fmul,
           operator.truediv: builder.fdiv}
    return fns[op](x, y)


def _make_binop(op: Callable) -> Callable:
    base = INPLACE.get(op, op)

    def impl(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
             args: Sequence[llir.Value]) -> llir.Value:
        v, x, y = _operands(context, builder, sig, args)
        if base in COMPARE:
            return _compare(context, builder, v, COMPARE[base], x, y, sig.return_type)
        if isinstance(v.dtype, types.Float):
            return _float_op(builder, base, x, y)
        return _int_op(builder, base, v.dtype.signed, x, y)

    return impl


def _compare(context: BaseContext, builder: llir.IRBuilder, v: VecType, cmp: str, x: llir.Value,
             y: llir.Value, retty: VecType) -> llir.Value:
    if isinstance(v.dtype, types.Float):
        # != is unordered (NaN != NaN is true), the others ordered: as C++ and numpy.
        bits = (builder.fcmp_unordered(cmp, x, y) if cmp == "!=" else
                builder.fcmp_ordered(cmp, x, y))
    elif isinstance(v.dtype, types.Integer) and v.dtype.signed:
        bits = builder.icmp_signed(cmp, x, y)
    else:
        bits = builder.icmp_unsigned(cmp, x, y)
    llty = context.get_value_type(retty)
    return builder.zext(bits, llty) if retty.marray else builder.sext(bits, llty)


for _op in (*ARITH, *INT_ONLY, *INPLACE, *COMPARE):
    lower(_op, VecType, VecType)(_make_binop(_op))
    lower(_op, VecType, types.Number)(_make_binop(_op))
    lower(_op, types.Number, VecType)(_make_binop(_op))
    lower(_op, VecType, types.Boolean)(_make_binop(_op))
    lower(_op, types.Boolean, VecType)(_make_binop(_op))


@lower(operator.neg, VecType)
def vec_neg(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
            args: Sequence[llir.Value]) -> llir.Value:
    """``-v``."""
    if isinstance(sig.args[0].dtype, types.Float):
        return builder.fneg(args[0])
    return builder.sub(llir.Constant(args[0].type, None), args[0])


@lower(operator.pos, VecType)
def vec_pos(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
            args: Sequence[llir.Value]) -> llir.Value:
    """``+v``."""
    return args[0]


@lower(operator.invert, VecType)
def vec_invert(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
               args: Sequence[llir.Value]) -> llir.Value:
    """``~v``."""
    return builder.not_(args[0])


# ======================================================== geometric functions
def _geo_operand(t: types.Type, sizes: tuple[int, ...]) -> bool:
    if isinstance(t, VecType):
        return isinstance(t.dtype, types.Float) and t.dtype.bitwidth >= 32 and t.n in sizes
    return isinstance(t, types.Float) and t.bitwidth >= 32 and 1 in sizes


def _geometric_template(fn: Callable, nargs: int, sizes: tuple[int, ...], vector_result: bool,
                        ) -> type:
    class Geometric(AbstractTemplate):
        key = fn

        def generic(self, args: tuple, kws: dict) -> object:
            if kws or len(args) != nargs or not all(_geo_operand(a, sizes) for a in args):
                return None
            if len(set(args)) != 1:
                return None
            t = args[0]
            ret = t if vector_result or not isinstance(t, VecType) else t.dtype
            return signature(ret, *args)

    return Geometric


typing_registry.register_global(dot)(_geometric_template(dot, 2, (1, 2, 3, 4), False))
typing_registry.register_global(cross)(_geometric_template(cross, 2, (3, 4), True))
typing_registry.register_global(length)(_geometric_template(length, 1, (1, 2, 3, 4), False))
typing_registry.register_global(distance)(_geometric_template(distance, 2, (1, 2, 3, 4), False))
typing_registry.register_global(normalize)(_geometric_template(normalize, 1, (1, 2, 3, 4), True))


def _elements(context: BaseContext, builder: llir.IRBuilder, t: types.Type,
              v: llir.Value) -> list[llir.Value]:
    if isinstance(t, VecType):
        return [elem_value(context, builder, t, v, k) for k in range(t.n)]
    return [v]


def _dot(context: BaseContext, builder: llir.IRBuilder, t: types.Type, a: llir.Value,
         b: llir.Value) -> llir.Value:
    xs, ys = _elements(context, builder, t, a), _elements(context, builder, t, b)
    acc = builder.fmul(xs[0], ys[0])
    for x, y in zip(xs[1:], ys[1:], strict=True):
        acc = builder.fadd(acc, builder.fmul(x, y))
    return acc


@lower(dot, types.Any, types.Any)
def lower_dot(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
              args: Sequence[llir.Value]) -> llir.Value:
    """``sycl.dot(a, b)``."""
    return _dot(context, builder, sig.args[0], args[0], args[1])


@lower(length, types.Any)
def lower_length(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                 args: Sequence[llir.Value]) -> llir.Value:
    """``sycl.length(a)`` = ``sqrt(dot(a, a))``."""
    return ocl.call_math(builder, "sqrt", [_dot(context, builder, sig.args[0], args[0], args[0])])


@lower(distance, types.Any, types.Any)
def lower_distance(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                   args: Sequence[llir.Value]) -> llir.Value:
    """``sycl.distance(a, b)`` = ``length(a - b)``."""
    d = builder.fsub(args[0], args[1])
    return ocl.call_math(builder, "sqrt", [_dot(context, builder, sig.args[0], d, d)])


@lower(normalize, types.Any)
def lower_normalize(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                    args: Sequence[llir.Value]) -> llir.Value:
    """``sycl.normalize(a)`` = ``a / length(a)``; a zero vector stays zero."""
    t, a = sig.args[0], args[0]
    n = ocl.call_math(builder, "sqrt", [_dot(context, builder, t, a, a)])
    den = splat(context, builder, t, n, t.dtype) if isinstance(t, VecType) else n
    scaled = builder.fdiv(a, den)
    is_zero = builder.fcmp_ordered("==", n, llir.Constant(n.type, 0.0))
    return builder.select(is_zero, a, scaled)


@lower(cross, types.Any, types.Any)
def lower_cross(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                args: Sequence[llir.Value]) -> llir.Value:
    """``sycl.cross(a, b)``; the ``w`` of 4-vectors is 0."""
    t = sig.args[0]
    x, y = _elements(context, builder, t, args[0]), _elements(context, builder, t, args[1])

    def term(i: int, j: int) -> llir.Value:
        return builder.fsub(builder.fmul(x[i], y[j]), builder.fmul(x[j], y[i]))

    elems = [term(1, 2), term(2, 0), term(0, 1)]
    if t.n == 4:
        elems.append(llir.Constant(x[0].type, 0.0))
    return build(context, builder, t, elems)

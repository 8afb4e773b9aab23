"""The rest of SYCL 2020's ``id``/``range`` operators in kernels, and ``sycl.nd_range(...)``.

* Unary ``+x`` and ``-x`` of an id or range (elementwise; ``int64`` components, so
  ``-x`` is negative where C++'s ``size_t`` wraps around; as on the host classes).
* The spec's elementwise comparisons and ``&&``/``||``, which return an id or range of
  0/1: ``x.elementwise_lt(y)``, ``_le``, ``_gt``, ``_ge``, ``x.elementwise_logical_and(y)``,
  ``_or`` (``y`` an id or range of the same dimensions, or an integer; a number on the
  left is the mirrored method: ``n < x`` is ``x.elementwise_gt(n)``). Python's ``<`` must
  give a truth value and ``and``/``or`` cannot be overloaded (docs/mapping.md); ``<`` of
  ids or ranges other than a 1-D id (an integer, as C++'s ``operator size_t()``) is a
  compile error naming the method (:mod:`pysycl_numba.explain_calls`).
* ``sycl.nd_range(global, local)`` built in a kernel: two ranges of one dimension, or two
  integers (1-D); ``nd.get_offset()`` is an id of zeros (pysycl has no launch offsets).

Arithmetic, ``==``/``!=`` and the constructors of ids and ranges are in
:mod:`pysycl_numba.overloads.index_types`.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING

from llvmlite import ir as llir

from pysycl._kernels.kernel_api import nd_range_class
from pysycl_numba._numba_compat import (
    AbstractTemplate,
    AttributeTemplate,
    LoweringRegistry,
    TypingRegistry,
    bound_function,
    cgutils,
    signature,
    types,
)
from pysycl_numba.overloads.index_types import INT, VECS, components, make
from pysycl_numba.types import IdType, ItemType, NdRangeType, RangeType, index_type

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from pysycl_numba._numba_compat import BaseContext, Signature

typing_registry = TypingRegistry()
lowering_registry = LoweringRegistry("pysycl.index_ops")
lower = lowering_registry.lower

#: The elementwise methods: name -> (the spec's operator, how two i64 components combine)
ELEMENTWISE: dict[str, tuple[str, Callable[[llir.IRBuilder, llir.Value, llir.Value], llir.Value]]] = {
    "elementwise_lt": ("<", lambda b, x, y: b.icmp_signed("<", x, y)),
    "elementwise_le": ("<=", lambda b, x, y: b.icmp_signed("<=", x, y)),
    "elementwise_gt": (">", lambda b, x, y: b.icmp_signed(">", x, y)),
    "elementwise_ge": (">=", lambda b, x, y: b.icmp_signed(">=", x, y)),
    "elementwise_logical_and": ("&&", lambda b, x, y: b.and_(b.icmp_signed("!=", x, x.type(0)),
                                                             b.icmp_signed("!=", y, y.type(0)))),
    "elementwise_logical_or": ("||", lambda b, x, y: b.or_(b.icmp_signed("!=", x, x.type(0)),
                                                           b.icmp_signed("!=", y, y.type(0)))),
}


# ==================================================================== typing
def _unary_template(op: Callable) -> type:
    class Unary(AbstractTemplate):
        key = op

        def generic(self, args: tuple, kws: dict) -> object:
            if len(args) == 1 and not kws and isinstance(args[0], VECS):
                return signature(args[0], args[0])
            return None

    return Unary


for _op in (operator.neg, operator.pos):
    typing_registry.register_global(_op)(_unary_template(_op))


def _elementwise_method(prefix: str, name: str) -> Callable:
    @bound_function(f"{prefix}.{name}")
    def method(self: AttributeTemplate, x: types.Type, args: tuple, kws: dict) -> object:
        if len(args) != 1 or kws:
            return None
        if args[0] == x:
            return signature(x, x)
        if isinstance(args[0], INT):
            return signature(x, index_type)
        return None

    return method


def _elementwise_template(cls: type, prefix: str) -> type:
    attrs: dict[str, object] = {"key": cls}
    attrs.update({f"resolve_{name}": _elementwise_method(prefix, name) for name in ELEMENTWISE})
    return type(f"{cls.__name__}Elementwise", (AttributeTemplate,), attrs)


typing_registry.register_attr(_elementwise_template(IdType, "id"))
typing_registry.register_attr(_elementwise_template(RangeType, "range"))


@typing_registry.register_global(nd_range_class)
class NdRangeCtor(AbstractTemplate):
    """``sycl.nd_range(global, local)``: two ranges of one dimension, or two integers."""

    def generic(self, args: tuple, kws: dict) -> object:
        if kws or len(args) != 2:
            return None
        g, loc = args
        if isinstance(g, RangeType) and g == loc:
            return signature(NdRangeType(g.ndim), g, loc)
        if all(isinstance(t, INT) for t in args):
            return signature(NdRangeType(1), index_type, index_type)
        return None


@typing_registry.register_attr
class NdRangeOffset(AttributeTemplate):
    """``nd.get_offset()``: zeros (the deprecated offset; pysycl launches have none)."""

    key = NdRangeType

    @bound_function("nd_range.get_offset")
    def resolve_get_offset(self, nd: NdRangeType, args: tuple, kws: dict) -> object:
        return signature(IdType(nd.ndim)) if not args and not kws else None


# ================================================================== lowering
def _neg(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
         args: Sequence[llir.Value]) -> llir.Value:
    ty = sig.args[0]
    return make(context, builder, ty, [builder.neg(v) for v in components(context, builder, ty, args[0])])


def _pos(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
         args: Sequence[llir.Value]) -> llir.Value:
    return args[0]


for _cls in VECS:
    lower(operator.neg, _cls)(_neg)
    lower(operator.pos, _cls)(_pos)


def _make_elementwise(combine: Callable[[llir.IRBuilder, llir.Value, llir.Value], llir.Value]
                      ) -> Callable:
    def impl(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
             args: Sequence[llir.Value]) -> llir.Value:
        ty = sig.return_type
        xs = components(context, builder, ty, args[0])
        other = sig.args[1]
        ys = (components(context, builder, other, args[1]) if isinstance(other, VECS)
              else [context.cast(builder, args[1], other, index_type)] * ty.ndim)
        return make(context, builder, ty, [builder.zext(combine(builder, x, y), x.type)
                                           for x, y in zip(xs, ys, strict=True)])

    return impl


for _name, (_, _combine) in ELEMENTWISE.items():
    for _cls, _prefix in ((IdType, "id"), (RangeType, "range")):
        lower(f"{_prefix}.{_name}", _cls, _cls)(_make_elementwise(_combine))
        lower(f"{_prefix}.{_name}", _cls, types.Integer)(_make_elementwise(_combine))


@lower(nd_range_class, RangeType, RangeType)
@lower(nd_range_class, types.Integer, types.Integer)
def nd_range_ctor(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                  args: Sequence[llir.Value]) -> llir.Value:
    """``sycl.nd_range(global, local)``: the global and local extents."""
    ty = sig.return_type
    r = cgutils.create_struct_proxy(ty)(context, builder)
    for prefix, t, v in zip("gl", sig.args, args, strict=True):
        vals = components(context, builder, t, v) if isinstance(t, (*VECS, ItemType)) else [v]
        for d, x in enumerate(vals):
            setattr(r, f"{prefix}{d}", x)
    return r._getvalue()


@lower("nd_range.get_offset", NdRangeType)
def nd_range_get_offset(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                        args: Sequence[llir.Value]) -> llir.Value:
    """``nd.get_offset()``: an id of zeros."""
    return make(context, builder, sig.return_type,
                [context.get_constant(index_type, 0)] * sig.return_type.ndim)

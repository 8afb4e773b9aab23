"""``sycl.reducer`` in kernels: ``r.combine(x)`` and ``r op= x``.

A reducer parameter is a :class:`~pysycl_numba.types.ReducerType`: a pointer
to the work-item's private accumulator. A span reduction's parameter is a
:class:`~pysycl_numba.types.SpanReducerType` (the work-group's row of partials
and its length): ``r[i]`` is an :class:`~pysycl_numba.types.ElementReducerType`,
whose combines are a compare-exchange loop on the row's element ``i`` (nothing
for ``i`` outside ``[0, n)``), and ``r[i] += x`` stores ``r[i]`` back (no code).
``r.combine(x)`` and ``r += x`` (``*=``, ``&=``, ``|=``, ``^=`` for the matching
function object) load, call the combiner, cast to the element type and store; SROA turns the accumulator
into a register after inlining. The combiner is always a Python function
compiled as a device function (the runtime gives the known SYCL function
objects as small Python functions). The work-group combine and the entry
point are :mod:`pysycl_numba.epilogue` and :mod:`pysycl_numba.reduction_entry`.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING

from pysycl_numba._numba_compat import (
    AbstractTemplate,
    AttributeTemplate,
    LoweringRegistry,
    TypingRegistry,
    bound_function,
    cgutils,
    errors,
    signature,
    types,
)
from pysycl_numba.overloads.accessor import index_values
from pysycl_numba.overloads.atomics import atomic_rmw_global, atomic_update
from pysycl_numba.overloads.pointer import pointer_index
from pysycl_numba.types import ElementReducerType, ReducerType, SpanReducerType

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from llvmlite import ir as llir

    from pysycl_numba._numba_compat import BaseContext, Signature, TypingContext

typing_registry = TypingRegistry()
lowering_registry = LoweringRegistry("pysycl.reduction")
lower = lowering_registry.lower

#: SYCL's reducer operators (§4.10.2.3): ``r op= x`` exists for exactly one function object.
_INPLACE = {
    operator.iadd: "plus",
    operator.imul: "multiplies",
    operator.iand: "bit_and",
    operator.ior: "bit_or",
    operator.ixor: "bit_xor",
}


def _combiner_signature(typingctx: TypingContext, r: ReducerType) -> tuple[types.Type, Signature]:
    fnty = typingctx.resolve_value_type(r.combiner)
    sig = typingctx.resolve_function_type(fnty, (r.dtype, r.dtype), {})
    if sig is None:
        name = getattr(r.combiner, "__qualname__", repr(r.combiner))
        raise errors.TypingError(
            f"the reduction's combiner {name} cannot be called with two {r.dtype} values "
            "on the device")
    return fnty, sig


#: The known function objects a span reducer's element combines with one ``atomicrmw``
#: on integers (the others, and floats, with a compare-exchange loop).
_RMW = {"plus": "add", "bit_and": "and", "bit_or": "or", "bit_xor": "xor", "minimum": "min",
        "maximum": "max"}


# ==================================================================== typing
@typing_registry.register_attr
class ReducerAttributes(AttributeTemplate):
    """Methods of ``sycl.reducer``."""

    key = ReducerType

    @bound_function("reducer.combine")
    def resolve_combine(self, r: ReducerType, args: tuple, kws: dict) -> object:
        if kws or len(args) != 1 or self.context.can_convert(args[0], r.dtype) is None:
            return None
        _combiner_signature(self.context, r)
        return signature(types.none, r.dtype)


def _inplace_template(fn: Callable[..., object], op: str) -> type[AbstractTemplate]:
    class InplaceReducer(AbstractTemplate):
        def generic(self, args: tuple, kws: dict) -> object:
            if len(args) != 2 or kws or not isinstance(args[0], ReducerType):
                return None
            r = args[0]
            # Only the matching function object has the operator (errors.py hints).
            if r.op != op or self.context.can_convert(args[1], r.dtype) is None:
                return None
            _combiner_signature(self.context, r)
            return signature(r, r, r.dtype)

    return InplaceReducer


for _fn, _op in _INPLACE.items():
    typing_registry.register_global(_fn)(_inplace_template(_fn, _op))


# ================================================================== lowering
def _combine(context: BaseContext, builder: llir.IRBuilder, r: ReducerType, ptr: llir.Value,
             x: llir.Value) -> None:
    fnty, sig = _combiner_signature(context.typing_context, r)

    def update(old: llir.Value) -> llir.Value:
        res = context.get_function(fnty, sig)(builder, (old, x))
        return context.cast(builder, res, sig.return_type, r.dtype)

    if isinstance(r, ElementReducerType):  # a span reducer's element: the group's row
        rmw = _RMW.get(r.op) if isinstance(r.dtype, types.Integer) else None
        with builder.if_then(cgutils.is_not_null(builder, ptr)):
            if rmw is not None:  # one atomicrmw: the same as the combiner's (x is a dtype)
                atomic_rmw_global(builder, r.dtype, rmw, ptr, x)
            else:
                atomic_update(context, builder, r.dtype, ptr, update)
        return
    builder.store(update(builder.load(ptr)), ptr)


@lower("reducer.combine", ReducerType, types.Any)
def lower_combine(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                  args: Sequence[llir.Value]) -> llir.Value:
    """``r.combine(x)``: ``acc = combiner(acc, x)`` in private memory."""
    _combine(context, builder, sig.args[0], args[0], args[1])
    return context.get_dummy_value()


def _lower_inplace(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                   args: Sequence[llir.Value]) -> llir.Value:
    _combine(context, builder, sig.args[0], args[0], args[1])
    return args[0]


for _fn in _INPLACE:
    lower(_fn, ReducerType, types.Any)(_lower_inplace)


# ============================================================== span reducers
@typing_registry.register_global(operator.getitem)
class SpanReducerGetitem(AbstractTemplate):
    """``r[i]`` of a span reducer: the reducer of element ``i``."""

    def generic(self, args: tuple, kws: dict) -> object:
        if len(args) == 2 and not kws and isinstance(args[0], SpanReducerType):
            idx = pointer_index(args[1])  # an integer, a 1-D item or id (C++: size_t)
            return None if idx is None else signature(args[0].element, args[0], idx)
        return None


@typing_registry.register_global(operator.setitem)
class SpanReducerSetitem(AbstractTemplate):
    """``r[i] = r[i]``, which ``r[i] += x`` ends with: the element reducer stored back."""

    def generic(self, args: tuple, kws: dict) -> object:
        if len(args) == 3 and not kws and isinstance(args[0], SpanReducerType) \
                and args[2] == args[0].element:
            idx = pointer_index(args[1])
            return None if idx is None else signature(types.none, args[0], idx, args[2])
        return None


@lower(operator.getitem, SpanReducerType, types.Any)
def span_reducer_getitem(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                         args: Sequence[llir.Value]) -> llir.Value:
    """A pointer to the row's element ``i``; null outside ``[0, n)`` (its combines do nothing:
    C++ leaves an index outside the span undefined, the device memory must stay intact)."""
    span = cgutils.create_struct_proxy(sig.args[0])(context, builder, value=args[0])
    (i,) = index_values(context, builder, sig.args[1], args[1])
    inside = builder.icmp_unsigned("<", i, span.n)
    elem = builder.gep(span.row, [i])
    return builder.select(inside, elem, elem.type(None))


@lower(operator.setitem, SpanReducerType, types.Any, ElementReducerType)
def span_reducer_setitem(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                         args: Sequence[llir.Value]) -> llir.Value:
    """Nothing: the element reducer combined in place."""
    return context.get_dummy_value()

"""``sycl.id`` and ``sycl.range`` built in kernels, ``dimensions``, ``group[d]``, ``acc[i][j]``.

* ``sycl.id(i, j)``, ``sycl.range(n, m)`` (1-3 integers or 1-D items, one tuple of
  them, or one id/range/item): :class:`~pysycl_numba.types.IdType` /
  :class:`~pysycl_numba.types.RangeType`, ``int64`` components.
* Arithmetic elementwise, as the host classes (:mod:`pysycl._objects.range`):
  ``+ - * // / % << >> & | ^`` of two ids (two ranges) of one dimension, or with an
  integer on either side; ``/`` and ``//`` truncate toward zero, ``%`` has the sign of
  the dividend (C++); ``==``/``!=`` compare whole values. ``x[d]``, ``x.get(d)``,
  ``r.size()``; accessors take ids as indices.
* ``it.get_id()``, ``it.get_global_id()``, ``g.get_group_id()``, ... are ids too: their
  arithmetic is elementwise (never a tuple's concatenation), as on the host.
* Ids and ranges are iterable: ``i, j = it.get_id()``, ``for n in r`` (the unpacking
  count is checked at compile time by ``passes.ValidateTypedKernel``).
* A 1-D id converts to an integer, as C++'s ``operator size_t()``: ``int(d)``,
  ``d == 3``, ``d < n``, ``acc[k] = d`` work on ``d[0]``.
* ``.dimensions`` of ids, ranges, items, nd_items and groups (a constant).
* ``g[d]`` of a group: ``g.get_group_id(d)``.
* ``acc[i][j]`` on an ``n``-D accessor: ``acc[i]`` is an
  :class:`~pysycl_numba.types.AccessorRowType`; the last subscript is ``acc[i, j]``.
* ``sycl.id()``, ``sycl.range()``: one dimension of 0 (SYCL 2020's default constructors).

Unary ``+``/``-``, the elementwise comparisons and ``sycl.nd_range(...)`` are in
:mod:`pysycl_numba.overloads.index_ops`.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING

from pysycl._kernels.kernel_api import id_class, range_class
from pysycl_numba._numba_compat import (
    AbstractTemplate,
    AttributeTemplate,
    LoweringRegistry,
    RefType,
    TypingRegistry,
    bound_function,
    cgutils,
    iternext_impl,
    signature,
    types,
)
from pysycl_numba.overloads.accessor import accessor_getitem
from pysycl_numba.overloads.index import NSW, item_ids, select_dim, struct
from pysycl_numba.types import (
    AccessorRowType,
    AccessorType,
    GroupType,
    IdType,
    IndexIterType,
    ItemType,
    NdItemType,
    RangeType,
    index_type,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from llvmlite import ir as llir

    from pysycl_numba._numba_compat import BaseContext, Signature

typing_registry = TypingRegistry()
lowering_registry = LoweringRegistry("pysycl.index_types")
lower = lowering_registry.lower

INT = (types.Integer, types.IntegerLiteral)
VECS = (IdType, RangeType)
OPS = (operator.add, operator.sub, operator.mul, operator.floordiv, operator.truediv, operator.mod,
       operator.lshift, operator.rshift, operator.and_, operator.or_, operator.xor)
INPLACE = {operator.iadd: operator.add, operator.isub: operator.sub, operator.imul: operator.mul,
           operator.ifloordiv: operator.floordiv, operator.itruediv: operator.truediv,
           operator.imod: operator.mod, operator.ilshift: operator.lshift,
           operator.irshift: operator.rshift, operator.iand: operator.and_,
           operator.ior: operator.or_, operator.ixor: operator.xor}


def _is_int(t: types.Type) -> bool:
    return isinstance(t, INT) or (isinstance(t, ItemType) and t.ndim == 1)


# ==================================================================== typing
def _ctor_template(make: Callable[[int], types.Type]) -> type:
    class Ctor(AbstractTemplate):
        def generic(self, args: tuple, kws: dict) -> object:
            if kws:
                return None
            if not args:  # id(), range(): SYCL 2020's default constructors, one 0
                return signature(make(1))
            if len(args) == 1 and isinstance(args[0], (*VECS, ItemType)):
                return signature(make(args[0].ndim), args[0])
            if len(args) == 1 and isinstance(args[0], types.BaseTuple):
                elems = args[0].types
                if 1 <= len(elems) <= 3 and all(_is_int(t) for t in elems):
                    return signature(make(len(elems)), args[0])
                return None
            if len(args) <= 3 and all(_is_int(t) for t in args):
                return signature(make(len(args)), *(index_type for _ in args))
            return None

    return Ctor


typing_registry.register_global(id_class)(_ctor_template(IdType))
typing_registry.register_global(range_class)(_ctor_template(RangeType))


@typing_registry.register_global(operator.getitem)
class GetItem(AbstractTemplate):
    """``i[d]`` of an id, ``g[d]`` of a group, ``acc[i]`` of an ``n``-D accessor (``n > 1``)."""

    def generic(self, args: tuple, kws: dict) -> object:
        if len(args) != 2 or not isinstance(args[1], INT):
            return None
        x, d = args[0], types.unliteral(args[1])
        if isinstance(x, (IdType, GroupType)):
            return signature(index_type, x, d)
        if isinstance(x, AccessorType) and x.ndim > 1:
            return signature(AccessorRowType(x, 1), x, d)
        if isinstance(x, AccessorRowType):
            if x.nfixed + 1 < x.accessor.ndim:
                return signature(AccessorRowType(x.accessor, x.nfixed + 1), x, d)
            return signature(x.accessor.dtype, x, d)
        return None


@typing_registry.register_global(operator.setitem)
class SetItem(AbstractTemplate):
    """``acc[i][j] = v``."""

    def generic(self, args: tuple, kws: dict) -> object:
        if len(args) != 3 or not isinstance(args[0], AccessorRowType) or not isinstance(args[1], INT):
            return None
        row, d, v = args
        if row.nfixed + 1 != row.accessor.ndim or not row.accessor.writable:
            return None
        if self.context.can_convert(v, row.accessor.dtype) is None:
            return None
        return signature(types.none, row, types.unliteral(d), row.accessor.dtype)


def _binop_template(op: Callable) -> type:
    class Binop(AbstractTemplate):
        key = op

        def generic(self, args: tuple, kws: dict) -> object:
            if len(args) != 2 or kws:
                return None
            a, b = args
            if isinstance(a, VECS) and isinstance(b, VECS):
                return signature(a, a, b) if a == b else None
            if isinstance(a, VECS) and _is_int(b):
                return signature(a, a, index_type)
            if isinstance(b, VECS) and _is_int(a):
                return signature(b, index_type, b)
            return None

    return Binop


def _compare_template(op: Callable) -> type:
    class Compare(AbstractTemplate):
        key = op

        def generic(self, args: tuple, kws: dict) -> object:
            if len(args) == 2 and not kws and isinstance(args[0], VECS) and args[0] == args[1]:
                return signature(types.boolean, *args)
            return None

    return Compare


for _op in (*OPS, *INPLACE):
    typing_registry.register_global(_op)(_binop_template(_op))
for _op in (operator.eq, operator.ne):
    typing_registry.register_global(_op)(_compare_template(_op))


def _dimensions_template(cls: type) -> type:
    class Dimensions(AttributeTemplate):
        key = cls

        def resolve_dimensions(self, t: types.Type) -> types.Type:
            return index_type

    return Dimensions


for _cls in (IdType, RangeType, ItemType, NdItemType, GroupType):
    typing_registry.register_attr(_dimensions_template(_cls))


@typing_registry.register_attr
class IdAttributes(AttributeTemplate):
    """``i.get(d)`` of an id built in the kernel."""

    key = IdType

    @bound_function("id.get")
    def resolve_get(self, i: IdType, args: tuple, kws: dict) -> object:
        if len(args) == 1 and not kws and isinstance(args[0], INT):
            return signature(index_type, types.unliteral(args[0]))
        return None


# ================================================================== lowering
def components(context: BaseContext, builder: llir.IRBuilder, ty: types.Type,
               value: llir.Value) -> list[llir.Value]:
    """The ``i64`` components of an id, range or item."""
    if isinstance(ty, ItemType):
        return item_ids(context, builder, ty, value)
    s = struct(context, builder, ty, value)
    return [getattr(s, f"r{d}") for d in range(ty.ndim)]


def make(context: BaseContext, builder: llir.IRBuilder, ty: types.Type,
         values: Sequence[llir.Value]) -> llir.Value:
    """An id or range value from ``i64`` components."""
    s = cgutils.create_struct_proxy(ty)(context, builder)
    for d, v in enumerate(values):
        setattr(s, f"r{d}", v)
    return s._getvalue()


def _ctor(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
          args: Sequence[llir.Value]) -> llir.Value:
    if len(sig.args) == 1 and isinstance(sig.args[0], (*VECS, ItemType)):
        values = components(context, builder, sig.args[0], args[0])
    elif len(sig.args) == 1 and isinstance(sig.args[0], types.BaseTuple):
        values = [context.cast(builder, builder.extract_value(args[0], k), t, index_type)
                  for k, t in enumerate(sig.args[0].types)]
    else:
        values = list(args) or [context.get_constant(index_type, 0)]
    return make(context, builder, sig.return_type, values)


for _cls in (id_class, range_class):
    lower(_cls, types.VarArg(types.Any))(_ctor)


@lower(operator.getitem, IdType, types.Integer)
@lower("id.get", IdType, types.Integer)
def id_getitem(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
               args: Sequence[llir.Value]) -> llir.Value:
    """``i[d]`` / ``i.get(d)``."""
    values = components(context, builder, sig.args[0], args[0])
    return select_dim(builder, values, context.cast(builder, args[1], sig.args[1], index_type))


@lower(operator.getitem, GroupType, types.Integer)
def group_getitem(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                  args: Sequence[llir.Value]) -> llir.Value:
    """``g[d]``: ``g.get_group_id(d)``."""
    impl = context.get_function("group.get_group_id", sig)
    return impl(builder, args)


def _int_op(builder: llir.IRBuilder, op: Callable, x: llir.Value, y: llir.Value) -> llir.Value:
    fns = {operator.add: lambda: builder.add(x, y, flags=NSW),
           operator.sub: lambda: builder.sub(x, y, flags=NSW),
           operator.mul: lambda: builder.mul(x, y, flags=NSW),
           operator.floordiv: lambda: builder.sdiv(x, y), operator.truediv: lambda: builder.sdiv(x, y),
           operator.mod: lambda: builder.srem(x, y), operator.lshift: lambda: builder.shl(x, y),
           operator.rshift: lambda: builder.ashr(x, y), operator.and_: lambda: builder.and_(x, y),
           operator.or_: lambda: builder.or_(x, y), operator.xor: lambda: builder.xor(x, y)}
    return fns[op]()


def _make_binop(op: Callable) -> Callable:
    base = INPLACE.get(op, op)

    def impl(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
             args: Sequence[llir.Value]) -> llir.Value:
        ty = sig.return_type
        xs = [components(context, builder, t, a) if isinstance(t, VECS) else [a] * ty.ndim
              for t, a in zip(sig.args, args, strict=True)]
        return make(context, builder, ty, [_int_op(builder, base, x, y) for x, y in zip(*xs,
                                                                                        strict=True)])

    return impl


for _op in (*OPS, *INPLACE):
    for _sig in ((IdType, IdType), (RangeType, RangeType), (IdType, types.Integer),
                 (types.Integer, IdType), (RangeType, types.Integer), (types.Integer, RangeType)):
        lower(_op, *_sig)(_make_binop(_op))


def _make_compare(equal: bool) -> Callable:
    def impl(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
             args: Sequence[llir.Value]) -> llir.Value:
        xs = components(context, builder, sig.args[0], args[0])
        ys = components(context, builder, sig.args[1], args[1])
        same = builder.icmp_signed("==", xs[0], ys[0])
        for x, y in zip(xs[1:], ys[1:], strict=True):
            same = builder.and_(same, builder.icmp_signed("==", x, y))
        return same if equal else builder.not_(same)

    return impl


for _cls in VECS:
    lower(operator.eq, _cls, _cls)(_make_compare(True))
    lower(operator.ne, _cls, _cls)(_make_compare(False))


@lower("getiter", IdType)
@lower("getiter", RangeType)
def index_getiter(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                  args: Sequence[llir.Value]) -> llir.Value:
    """``iter(i)``: the value and a private counter."""
    it = cgutils.create_struct_proxy(sig.return_type)(context, builder)
    it.index = cgutils.alloca_once_value(builder, context.get_constant(index_type, 0))
    it.value = args[0]
    return it._getvalue()


@lower("iternext", IndexIterType)
@iternext_impl(RefType.BORROWED)
def index_iternext(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                   args: Sequence[llir.Value], result: object) -> None:
    """The next component (folded to constants once the counter is promoted)."""
    ty = sig.args[0]
    it = cgutils.create_struct_proxy(ty)(context, builder, value=args[0])
    k = builder.load(it.index)
    valid = builder.icmp_signed("<", k, context.get_constant(index_type, ty.of.ndim))
    result.set_valid(valid)  # type: ignore[attr-defined]
    with builder.if_then(valid):
        values = components(context, builder, ty.of, it.value)
        result.yield_(select_dim(builder, values, k))  # type: ignore[attr-defined]
        builder.store(builder.add(k, context.get_constant(index_type, 1)), it.index)


def _dimensions(context: BaseContext, builder: llir.IRBuilder, ty: types.Type,
                value: llir.Value) -> llir.Value:
    return context.get_constant(index_type, ty.ndim)


for _cls in (IdType, RangeType, ItemType, NdItemType, GroupType):
    lowering_registry.lower_getattr(_cls, "dimensions")(_dimensions)


@lower(operator.getitem, AccessorType, types.Integer)
@lower(operator.getitem, AccessorRowType, types.Integer)
def row_getitem(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                args: Sequence[llir.Value]) -> llir.Value:
    """``acc[i]`` (a row), ``row[j]`` (a row, or the element ``acc[i, j]``)."""
    ty, dty = sig.args
    if isinstance(ty, AccessorType) and ty.ndim == 1:  # this registration shadows the element access
        return accessor_getitem(context, builder, sig, args)
    d = context.cast(builder, args[1], dty, index_type)
    if isinstance(ty, AccessorType):
        return make_row(context, builder, sig.return_type, args[0], [d])
    row = struct(context, builder, ty, args[0])
    ids = [getattr(row, f"i{k}") for k in range(ty.nfixed)] + [d]
    if isinstance(sig.return_type, AccessorRowType):
        return make_row(context, builder, sig.return_type, row.acc, ids)
    return _element(context, builder, ty.accessor, row.acc, ids, None)


@lower(operator.setitem, AccessorRowType, types.Integer, types.Any)
def row_setitem(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                args: Sequence[llir.Value]) -> llir.Value:
    """``acc[i][j] = v``: the store ``acc[i, j] = v``."""
    ty, dty, valty = sig.args
    row = struct(context, builder, ty, args[0])
    ids = [getattr(row, f"i{k}") for k in range(ty.nfixed)]
    ids.append(context.cast(builder, args[1], dty, index_type))
    _element(context, builder, ty.accessor, row.acc, ids, (valty, args[2]))
    return context.get_dummy_value()


def make_row(context: BaseContext, builder: llir.IRBuilder, ty: AccessorRowType, acc: llir.Value,
             ids: Sequence[llir.Value]) -> llir.Value:
    """An :class:`AccessorRowType` value."""
    s = cgutils.create_struct_proxy(ty)(context, builder)
    s.acc = acc
    for k, v in enumerate(ids):
        setattr(s, f"i{k}", v)
    return s._getvalue()


def _element(context: BaseContext, builder: llir.IRBuilder, accty: AccessorType, acc: llir.Value,
             ids: list[llir.Value], store: tuple[types.Type, llir.Value] | None) -> llir.Value:
    # The accessor's own element access with a tuple index (bounds checks included).
    tup = types.UniTuple(index_type, accty.ndim)
    idx = context.make_tuple(builder, tup, ids)
    if store is None:
        return context.get_function(operator.getitem, signature(accty.dtype, accty, tup))(
            builder, (acc, idx))
    value = context.cast(builder, store[1], store[0], accty.dtype)
    fn = context.get_function(operator.setitem, signature(types.none, accty, tup, accty.dtype))
    return fn(builder, (acc, idx, value))


@lowering_registry.lower_cast(IdType, types.Integer)
@lowering_registry.lower_cast(IdType, types.Float)
def id_to_number(context: BaseContext, builder: llir.IRBuilder, fromty: IdType, toty: types.Type,
                 val: llir.Value) -> llir.Value:
    """Implicit conversion of a 1-D id to its component (SYCL ``id<1>`` -> ``size_t``)."""
    return context.cast(builder, components(context, builder, fromty, val)[0], index_type, toty)


def _to_number_template(fn: type, ret: types.Type) -> type:
    class IdToNumber(AbstractTemplate):
        key = fn

        def generic(self, args: tuple, kws: dict) -> object:
            if len(args) == 1 and not kws and isinstance(args[0], IdType) and args[0].ndim == 1:
                return signature(ret, args[0])
            return None

    return IdToNumber


typing_registry.register_global(int)(_to_number_template(int, index_type))
typing_registry.register_global(float)(_to_number_template(float, types.float64))


@lower(int, IdType)
@lower(float, IdType)
def id_to_int_or_float(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                       args: Sequence[llir.Value]) -> llir.Value:
    """``int(d)``, ``float(d)`` of a 1-D id."""
    return id_to_number(context, builder, sig.args[0], sig.return_type, args[0])

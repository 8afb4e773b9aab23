"""``joint_reduce``, ``joint_inclusive/exclusive_scan``, ``joint_any/all/none_of`` (§4.17.4).

C++ passes a pointer pair; pysycl passes the memory and an index range:
``joint_reduce(g, data, first, last, op[, init])`` over ``data[first:last]``
(``data`` a 1-D accessor, local accessor or USM pointer) and
``joint_inclusive_scan(g, data, first, last, out, out_first, op[, init])`` into
``out[out_first:]``. The algorithms are Python below, compiled with the kernel
(:meth:`BaseContext.compile_internal`): the work-items of ``g`` stride over the
range and meet in one group reduction or vote, or, for scans, in one group scan
per chunk of the group's size, carrying the chunk totals. ``pred`` is a plain
Python function, compiled as a device function for the element type.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pysycl._kernels.group_algorithms import (
    exclusive_scan_over_group,
    inclusive_scan_over_group,
    joint_all_of,
    joint_any_of,
    joint_exclusive_scan,
    joint_inclusive_scan,
    joint_none_of,
    joint_reduce,
)
from pysycl._kernels.kernel_api import (
    all_of_group,
    any_of_group,
    group_barrier,
    group_broadcast,
    none_of_group,
    reduce_over_group,
)
from pysycl_numba._numba_compat import (
    AbstractTemplate,
    LoweringRegistry,
    TypingRegistry,
    signature,
    types,
)
from pysycl_numba.overloads.collectives import _collective_type
from pysycl_numba.overloads.group_algorithms import (
    _combine,
    _identity,
    identity_constant,
    op_accepts,
    split_op_init,
)
from pysycl_numba.overloads.index import INT
from pysycl_numba.overloads.ndrange import GROUPS
from pysycl_numba.types import AccessorType, USMPointerType, tag

if TYPE_CHECKING:
    from collections.abc import Sequence

    from llvmlite import ir as llir

    from pysycl_numba._numba_compat import BaseContext, Signature

typing_registry = TypingRegistry()
lowering_registry = LoweringRegistry("pysycl.joint_algorithms")
lower = lowering_registry.lower

_CONTAINERS = (AccessorType, USMPointerType)


# ================================================================ algorithms
def _reduce(g: Any, data: Any, first: Any, last: Any, op: Any, init: Any) -> Any:
    i = first + g.get_local_linear_id()
    n = g.get_local_linear_range()
    acc = _identity(op, init)
    while i < last:
        acc = _combine(op, acc, data[i])
        i += n
    return _combine(op, init, reduce_over_group(g, acc, op))


def _inclusive(g: Any, data: Any, first: Any, last: Any, out: Any, out_first: Any, op: Any,
               init: Any) -> None:
    lid = g.get_local_linear_id()
    n = g.get_local_linear_range()
    carry = init
    base = first
    while base < last:  # the same chunks in every work-item
        i = base + lid
        v = _combine(op, _identity(op, init), data[i]) if i < last else _identity(op, init)
        incl = inclusive_scan_over_group(g, v, op)
        if i < last:
            out[out_first + (i - first)] = _combine(op, carry, incl)
        carry = _combine(op, carry, group_broadcast(g, incl, n - 1))
        base += n
    group_barrier(g)


def _exclusive(g: Any, data: Any, first: Any, last: Any, out: Any, out_first: Any, op: Any,
               init: Any) -> None:
    lid = g.get_local_linear_id()
    n = g.get_local_linear_range()
    carry = init
    base = first
    while base < last:
        i = base + lid
        v = _combine(op, _identity(op, init), data[i]) if i < last else _identity(op, init)
        excl = exclusive_scan_over_group(g, v, op)
        if i < last:
            out[out_first + (i - first)] = _combine(op, carry, excl)
        carry = _combine(op, carry, group_broadcast(g, _combine(op, excl, v), n - 1))
        base += n
    group_barrier(g)


def _vote_of(g: Any, x: Any, pred: Any) -> bool:
    return any_of_group(g, bool(pred(x)))


def _all_of(g: Any, x: Any, pred: Any) -> bool:
    return all_of_group(g, bool(pred(x)))


def _any(g: Any, data: Any, first: Any, last: Any, pred: Any, want: Any) -> bool:
    i = first + g.get_local_linear_id()
    n = g.get_local_linear_range()
    hit = False
    while i < last:
        if bool(pred(data[i])) == want:
            hit = True
        i += n
    return any_of_group(g, hit)


# ==================================================================== typing
def _element(t: types.Type) -> types.Type | None:
    if not isinstance(t, _CONTAINERS) or (isinstance(t, AccessorType) and t.ndim != 1):
        return None
    if isinstance(t.dtype, types.Boolean):
        return types.boolean
    return _collective_type(t.dtype)


def _bounds_ok(args: tuple) -> bool:
    return all(isinstance(a, INT) for a in args)


@typing_registry.register_global(joint_reduce)
class JointReduce(AbstractTemplate):
    """``sycl.joint_reduce(g, data, first, last, op[, init])``."""

    def generic(self, args: tuple, kws: dict) -> object:
        if kws or len(args) < 5 or not isinstance(args[0], GROUPS) or not _bounds_ok(args[2:4]):
            return None
        t, parts = _element(args[1]), split_op_init(args[4:])
        if t is None or parts is None or not op_accepts(parts[0], t):
            return None
        return signature(t, *args[:4], *(t if a is not parts[0] else a for a in args[4:]))


class _JointScan(AbstractTemplate):
    def generic(self, args: tuple, kws: dict) -> object:
        if kws or len(args) < 7 or not isinstance(args[0], GROUPS) \
                or not _bounds_ok((*args[2:4], args[5])):
            return None
        t, parts = _element(args[1]), split_op_init(args[6:])
        if t is None or parts is None or not op_accepts(parts[0], t) \
                or _element(args[4]) is None:
            return None
        return signature(types.none, *args[:6], *(t if a is not parts[0] else a
                                                  for a in args[6:]))


typing_registry.register_global(joint_inclusive_scan)(type("JointIncl", (_JointScan,), {}))
typing_registry.register_global(joint_exclusive_scan)(type("JointExcl", (_JointScan,), {}))


class _JointVote(AbstractTemplate):
    def generic(self, args: tuple, kws: dict) -> object:
        if kws or len(args) != 5 or not isinstance(args[0], GROUPS) \
                or not _bounds_ok(args[2:4]) or _element(args[1]) is None:
            return None
        return signature(types.boolean, *args)


for _fn in (joint_any_of, joint_all_of, joint_none_of):
    typing_registry.register_global(_fn)(type(f"Joint_{_fn.__name__}", (_JointVote,), {}))


class _VoteOf(AbstractTemplate):
    """``any_of_group(g, x, pred)`` and its siblings: the vote of ``pred(x)`` (C++'s
    ``T x, Predicate pred`` overloads)."""

    def generic(self, args: tuple, kws: dict) -> object:
        if kws or len(args) != 3 or not isinstance(args[0], GROUPS):
            return None
        return signature(types.boolean, args[0], types.unliteral(args[1]), args[2])


for _fn in (any_of_group, all_of_group, none_of_group):
    typing_registry.register_global(_fn)(type(f"VoteOf_{_fn.__name__}", (_VoteOf,), {}))


# ================================================================== lowering
def _op_and_init(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                 args: Sequence[llir.Value], start: int) -> tuple[types.Type, llir.Value]:
    """The function object's type and the init value (the identity when absent)."""
    rest = list(zip(sig.args[start:], args[start:], strict=True))
    opt = next(t for t, _ in rest if isinstance(t, types.Type) and hasattr(t, "op"))
    inits = [v for t, v in rest if t is not opt]
    elem = _element(sig.args[1])
    assert elem is not None
    return opt, (inits[0] if inits else identity_constant(opt.op, elem))


def _compile(context: BaseContext, builder: llir.IRBuilder, impl: Any, ret: types.Type,
             sig: Signature, args: Sequence[llir.Value], start: int) -> llir.Value:
    opt, init = _op_and_init(context, builder, sig, args, start)
    elem = _element(sig.args[1])
    isig = signature(ret, *sig.args[:start], opt, elem)
    return context.compile_internal(builder, impl, isig, [*args[:start], tag(), init])


for _g in GROUPS:
    for _n in (5, 6):
        @lower(joint_reduce, _g, *([types.Any] * (_n - 1)))
        def _lower_reduce(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                          args: Sequence[llir.Value]) -> llir.Value:
            return _compile(context, builder, _reduce, sig.return_type, sig, args, 4)
    for _n in (7, 8):
        for _fn, _impl in ((joint_inclusive_scan, _inclusive), (joint_exclusive_scan, _exclusive)):
            def _lower_scan(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                            args: Sequence[llir.Value], impl: Any = _impl) -> llir.Value:
                _compile(context, builder, impl, types.none, sig, args, 6)
                return context.get_dummy_value()

            lower(_fn, _g, *([types.Any] * (_n - 1)))(_lower_scan)


def _lower_vote(want: bool, negate: bool) -> Any:
    def impl(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
             args: Sequence[llir.Value]) -> llir.Value:
        isig = signature(types.boolean, *sig.args, types.boolean)
        r = context.compile_internal(builder, _any, isig,
                                     [*args, context.get_constant(types.boolean, want)])
        return builder.not_(r) if negate else r

    return impl


for _g in GROUPS:
    sig5 = (_g, types.Any, types.Any, types.Any, types.Any)
    lower(joint_any_of, *sig5)(_lower_vote(True, False))
    lower(joint_all_of, *sig5)(_lower_vote(False, True))  # all: none fails
    lower(joint_none_of, *sig5)(_lower_vote(True, True))


def _lower_vote_of(impl: Any, negate: bool) -> Any:
    def lower_it(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                 args: Sequence[llir.Value]) -> llir.Value:
        r = context.compile_internal(builder, impl, sig, args)
        return builder.not_(r) if negate else r

    return lower_it


for _g in GROUPS:
    lower(any_of_group, _g, types.Any, types.Any)(_lower_vote_of(_vote_of, False))
    lower(all_of_group, _g, types.Any, types.Any)(_lower_vote_of(_all_of, False))
    lower(none_of_group, _g, types.Any, types.Any)(_lower_vote_of(_vote_of, True))

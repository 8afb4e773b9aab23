"""``sycl.reduction``: reducers inside kernels, the per-work-group combine, the entry point.

A kernel with reductions is compiled as follows (docs/design/compiler.md, "Reductions"):

* each reducer parameter is a :class:`ReducerType`: a pointer to a private
  accumulator that the entry point initialises with the identity (a kernel
  argument); ``r.combine(x)`` and ``r += x`` (``*=``, ``&=``, ``|=``, ``^=``
  for the matching operator) fold ``x`` into it with the combiner, which is
  always a Python function compiled as a device function (the runtime gives
  the known SYCL function objects as small Python functions);
* after the user's function returns, every work-item hands its accumulator to
  an *epilogue* device function, written in Python here, that combines the
  work-group's values (``reduce_over_group`` for ``plus``/``minimum``/
  ``maximum`` on the types OpenCL's work-group collectives take, else a tree
  in local memory with barriers that handles any work-group size) and lets
  work-item 0 write the group's partial result to ``partials[group_linear_id]``;
* a ``range`` kernel runs as a padded 1-D ``nd_range``: the entry point
  recomputes the user's n-D id from the linear global id and the user's range
  (kernel arguments) and calls the user's function only for ids inside the
  range; the others contribute the identity.

The runtime (``pysycl/_reduction.py``) folds the partials, and the old value of
the reduction variable unless ``initialize_to_identity``, in a second kernel.
"""

from __future__ import annotations

import operator
import weakref
from collections.abc import Callable
from typing import Any

from llvmlite import ir as llir

from pysycl._core.abi import AccessorType as AbiAccessor
from pysycl._core.abi import IndexSpace, ReductionType
from pysycl._kernels.kernel_api import access, maximum, minimum, plus, reduce_over_group
from pysycl_numba import bounds
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
from pysycl_numba.targets.spirv import ocl
from pysycl_numba.types import (
    AccessorType,
    ItemType,
    NdItemType,
    ReducerType,
    numba_type_of_dtype,
)
from pysycl_numba.wrapper import ERR_PARAM, _build_capture, _flat_params

typing_registry = TypingRegistry()
registry = LoweringRegistry("pysycl.reduction")
lower = registry.lower

_I64 = llir.IntType(64)

#: SYCL's reducer operators (§4.10.2.3): ``r op= x`` exists for exactly one function object.
_INPLACE = {
    operator.iadd: "plus",
    operator.imul: "multiplies",
    operator.iand: "bit_and",
    operator.ior: "bit_or",
    operator.ixor: "bit_xor",
}


def reducer_type(rt: ReductionType, combiner: Callable[..., Any]) -> ReducerType:
    """The Numba type of the kernel parameter of reduction ``rt``."""
    return ReducerType(numba_type_of_dtype(rt.dtype), rt.op, combiner)


def _combiner_signature(typingctx: Any, r: ReducerType) -> Any:
    fnty = typingctx.resolve_value_type(r.combiner)
    sig = typingctx.resolve_function_type(fnty, (r.dtype, r.dtype), {})
    if sig is None:
        name = getattr(r.combiner, "__qualname__", repr(r.combiner))
        raise errors.TypingError(
            f"the reduction's combiner {name} cannot be called with two {r.dtype} values "
            "on the device")
    return fnty, sig


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


def _inplace_template(fn: Any, op: str) -> type:
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
def _combine(context: Any, builder: Any, r: ReducerType, ptr: Any, x: Any) -> None:
    fnty, sig = _combiner_signature(context.typing_context, r)
    old = builder.load(ptr)
    res = context.get_function(fnty, sig)(builder, (old, x))
    builder.store(context.cast(builder, res, sig.return_type, r.dtype), ptr)


@lower("reducer.combine", ReducerType, types.Any)
def lower_combine(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """``r.combine(x)``: ``acc = combiner(acc, x)`` in private memory."""
    _combine(context, builder, sig.args[0], args[0], args[1])
    return context.get_dummy_value()


def _lower_inplace(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    _combine(context, builder, sig.args[0], args[0], args[1])
    return args[0]


for _fn in _INPLACE:
    lower(_fn, ReducerType, types.Any)(_lower_inplace)


# ================================================================= epilogues
# The work-group combine, written in Python and compiled as a device function.
# Every work-item runs the loop the same number of times (n is uniform), so
# the barriers are never divergent; readers read [half, n), writers write
# [0, n - half): a step never reads what it writes.
_TREE = '''
def _pysycl_reduction_epilogue(it, v, tmp, part):
    lid = it.get_local_linear_id()
    n = it.get_local_range().size()
    tmp[lid] = v
    it.barrier(access.fence_space.local_space)
    while n > 1:
        half = (n + 1) >> 1
        if lid + half < n:
            tmp[lid] = combiner(tmp[lid], tmp[lid + half])
        it.barrier(access.fence_space.local_space)
        n = half
    if lid == 0:
        part[it.get_group_linear_id()] = tmp[0]
'''

_COLLECTIVE = '''
def _pysycl_reduction_epilogue(it, v, tmp, part):
    r = reduce_over_group(it.get_group(), v, functor)
    if it.get_local_linear_id() == 0:
        part[it.get_group_linear_id()] = r
'''

_FUNCTORS = {"plus": plus(), "minimum": minimum(), "maximum": maximum()}
_COLLECTIVE_TYPES = (types.int32, types.uint32, types.int64, types.uint64, types.float32,
                     types.float64)
_epilogues: weakref.WeakKeyDictionary[Any, dict[bool, Callable[..., Any]]] = (
    weakref.WeakKeyDictionary())


def epilogue_function(r: ReducerType) -> Callable[..., Any]:
    """The Python epilogue of reducer type ``r`` (cached per combiner)."""
    collective = r.op in _FUNCTORS and r.dtype in _COLLECTIVE_TYPES
    per = _epilogues.setdefault(r.combiner, {})
    fn = per.get(collective)
    if fn is None:
        ns: dict[str, Any] = {
            "access": access, "reduce_over_group": reduce_over_group,
            "combiner": r.combiner, "functor": _FUNCTORS.get(r.op),
        }
        exec(compile(_COLLECTIVE if collective else _TREE,  # our own template
                     f"<pysycl reduction epilogue {r.op}>", "exec"), ns)
        fn = per[collective] = ns["_pysycl_reduction_epilogue"]
    return fn


def compile_epilogue(r: ReducerType, group_ndim: int) -> Any:
    """Compile the epilogue of ``r`` for an ``nd_item`` of ``group_ndim`` dimensions."""
    from pysycl_numba.dispatcher import device_dispatcher_for

    args = (NdItemType(group_ndim), r.dtype, _scratch_type(r), _partials_type(r))
    disp = device_dispatcher_for(epilogue_function(r))
    disp.compile(args)
    return disp.overloads[args]


def _scratch_type(r: ReducerType) -> AccessorType:
    return AccessorType(r.dtype, 1, "read_write", "local")


def _partials_type(r: ReducerType) -> AccessorType:
    return AccessorType(r.dtype, 1, "write", "global")


# =============================================================== entry point
def build_reduction_wrapper(
    context: Any,
    fndesc: Any,
    index: IndexSpace,
    capture_types: list[types.Type],
    abi_types: list[Any],
    reducers: list[ReducerType],
    epilogues: list[Any],
    entry_name: str,
    bounds_checked: bool = False,
) -> llir.Module:
    """The ``spir_kernel`` entry point of a kernel with reductions (ABI: ``_kernel_abi``).

    ``bounds_checked`` adds the error buffer as the last parameter (bounds-checked mode).
    """
    module = context.create_module(f"pysycl.wrapper.{entry_name}")
    per_capture = [_flat_params(context, t, a) for t, a in zip(capture_types, abi_types,
                                                                strict=True)]
    for params, abity in zip(per_capture, abi_types, strict=True):
        if isinstance(abity, AbiAccessor) and len(params) != abity.flat_arg_count():
            raise AssertionError(f"accessor ABI mismatch: {abity} vs {len(params)} params")
    flat = [p for params in per_capture for p in params]
    n_range = index.ndim if index.kind == "range" else 0
    flat += [_I64] * n_range
    for r in reducers:
        elem = context.get_data_type(r.dtype)
        flat += [context.get_value_type(r.dtype), elem.as_pointer(addrspace=1),
                 elem.as_pointer(addrspace=3)]
    if bounds_checked:
        flat.append(ERR_PARAM)
    fn = llir.Function(module, llir.FunctionType(llir.VoidType(), flat), name=entry_name)
    err = fn.args[-1] if bounds_checked else None
    fn.calling_convention = "spir_kernel"
    builder = llir.IRBuilder(fn.append_basic_block("entry"))
    rec = bounds.new_record(builder) if bounds_checked else None

    values: list[Any] = []
    pos = 0
    for slot, (capty, params) in enumerate(zip(capture_types, per_capture, strict=True)):
        values.append(_build_capture(context, builder, capty, list(fn.args[pos:pos + len(params)]),
                                     err, slot, rec))
        pos += len(params)
    user_range = list(fn.args[pos:pos + n_range])
    pos += n_range
    accs: list[Any] = []
    red_args: list[tuple[Any, Any, Any]] = []
    for r in reducers:
        ident, part, tmp = fn.args[pos:pos + 3]
        pos += 3
        acc = cgutils.alloca_once(builder, context.get_data_type(r.dtype))
        context.pack_value(builder, r.dtype, ident, acc)
        accs.append(acc)
        red_args.append((ident, part, tmp))

    callee_args = [ItemType(index.ndim) if index.kind == "range" else NdItemType(index.ndim),
                   *reducers, *capture_types]
    callee = llir.Function(module, context.call_conv.get_function_type(fndesc.restype,
                                                                       callee_args),
                           name=fndesc.mangled_name)
    tag = llir.Constant(llir.IntType(8), 0)
    if index.kind == "range":
        lin = ocl.work_item_query(builder, "get_global_id", 0)
        total = user_range[0]
        for e in user_range[1:]:
            total = builder.mul(total, e)
        inside = builder.icmp_unsigned("<", lin, total)
        with builder.if_then(inside, likely=True):
            item = _item_from_linear(context, builder, lin, user_range)
            context.call_conv.call_function(builder, callee, fndesc.restype, callee_args,
                                            [item, *accs, *values])
    else:
        context.call_conv.call_function(builder, callee, fndesc.restype, callee_args,
                                        [tag, *accs, *values])

    group_ndim = 1 if index.kind == "range" else index.ndim
    for r, acc, (_ident, part, tmp), epi in zip(reducers, accs, red_args, epilogues,
                                                strict=True):
        v = context.unpack_value(builder, r.dtype, acc)
        scratch = cgutils.create_struct_proxy(_scratch_type(r))(context, builder)
        scratch.base = tmp
        scratch.range0 = _I64(0)
        partials = cgutils.create_struct_proxy(_partials_type(r))(context, builder)
        partials.base = part
        partials.offset = _I64(0)
        partials.range0 = _I64(0)
        epi_args = [NdItemType(group_ndim), r.dtype, _scratch_type(r), _partials_type(r)]
        epi_fn = llir.Function(module, context.call_conv.get_function_type(
            epi.fndesc.restype, epi_args), name=epi.fndesc.mangled_name)
        context.call_conv.call_function(builder, epi_fn, epi.fndesc.restype, epi_args,
                                        [tag, v, scratch._getvalue(), partials._getvalue()])
    if bounds_checked:
        bounds.publish(builder, rec, err)
    builder.ret_void()
    return module


def _item_from_linear(context: Any, builder: Any, lin: Any, rng: list[Any]) -> Any:
    """The ``sycl.item`` of linear id ``lin`` in range ``rng`` (row-major, dimension 0 slowest)."""
    n = len(rng)
    item = cgutils.create_struct_proxy(ItemType(n))(context, builder)
    rest = lin
    for d in range(n - 1, 0, -1):
        setattr(item, f"id{d}", builder.urem(rest, rng[d]))
        rest = builder.udiv(rest, rng[d])
    item.id0 = rest
    for d in range(n):
        setattr(item, f"range{d}", rng[d])
    return item._getvalue()

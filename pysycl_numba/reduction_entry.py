"""The ``spir_kernel`` entry point of a kernel with reductions (ABI: ``pysycl._core.abi``).

After the captures' parameters it takes the user's range (``range`` kernels), then per
reduction its identity, its partials (global) and a last argument (a local scratch
pointer; a span reduction's length), and runs as follows:

* each reducer parameter is a pointer to a private accumulator that the entry
  point initialises with the identity (a kernel argument, so one module
  serves every identity value);
* after the user's function returns, every work-item hands its accumulator to
  the reduction's epilogue (:mod:`pysycl_numba.epilogue`);
* a span reducer (:class:`~pysycl_numba.types.SpanReducerType`) is the work-group's
  row of ``n`` partials in global memory, which the reduction's prologue sets to
  the identity before the user's function runs (a barrier follows); the
  work-items combine into it atomically and the kernel's end publishes it (no
  epilogue);
* a ``range`` kernel runs as a 1-D ``nd_range`` whose work-items loop over the
  user's range as a plain ``range`` kernel's do (:func:`pysycl_numba.range_items.grid_stride`);
  a work-item with no item contributes the identity (a 1-D launch of exactly the range, the
  runtime's on CPU devices, runs an item a work-item: :func:`~pysycl_numba.range_items.
  exact_or_grid_stride`). On PTX a 1-D range runs
  :func:`strided_blocks` instead: many items in flight per work-item, 128-bit loads
  where the pointers allow, an accumulator per item slot (the four items of a vector
  are four slots), folded at the end;
* a looped ``nd_range`` kernel (``pysycl._core.abi.IndexSpace.looped``) runs as a
  ``range`` one over the nd_range's global range, each item with its own ``sycl.nd_item``
  (:func:`looped_item`: the ids and ranges the kernel sees are the nd_range's); its
  arguments are the global range, then the local range.

The pieces (the entry point's parameters, captures, item loops, alias scopes) are
:mod:`pysycl_numba.wrapper`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from llvmlite import ir as llir

from pysycl_numba._numba_compat import cgutils, types
from pysycl_numba.epilogue import (
    epilogue_arg_types,
    last_arg_types,
    partials_type,
    scratch_type,
)
from pysycl_numba.range_items import (
    COARSEN,
    Entry,
    ItemScopes,
    MakeItem,
    aligned_captures,
    exact_or_grid_stride,
    run_item,
)
from pysycl_numba.targets.spirv import ocl
from pysycl_numba.types import (
    AccessorType,
    ItemType,
    NdItemType,
    ReducerType,
    SpanReducerType,
    USMPointerType,
    tag,
)
from pysycl_numba.wrapper import EntryPoint

if TYPE_CHECKING:
    from pysycl._core.abi import CaptureType, IndexSpace
    from pysycl_numba._numba_compat import BaseContext, CompileResult, FunctionDescriptor

_I64 = llir.IntType(64)

#: Bytes of its widest captured array a work-item of a 1-D range reduction on PTX loads per
#: step where its pointers are 16-byte aligned: four 128-bit loads in flight per work-item
#: and array (float32: 16 items a step; CUB's reduction tunes 16-20 items a thread, loaded
#: 4 to a vector).
STEP_BYTES = 64
#: The most vectors of :data:`~pysycl_numba.range_items.COARSEN` consecutive items a step.
UNROLL = 4
#: Items a work-item runs per step where a pointer is not aligned (scalar loads, each
#: coalesced across the work-items: items ``i, i + G, i + 2G, ...``), one per slot.
SCALAR_UNROLL = COARSEN


# long: one entry point, its parameters, the loop over items and the epilogues, in order.
def build_reduction_wrapper(
    context: BaseContext,
    fndesc: FunctionDescriptor,
    index: IndexSpace,
    capture_types: list[types.Type],
    abi_types: list[CaptureType],
    reducers: list[ReducerType | SpanReducerType],
    epilogues: list[CompileResult],
    entry_name: str,
    bounds_checked: bool = False,
    has_asserts: bool = False,
    folds: list[CompileResult | None] | None = None,
    lasts: list[CompileResult] | None = None,
) -> llir.Module:
    """The entry point of a kernel with reductions.

    Args:
        epilogues: the reductions' compiled epilogues (a span reduction's prologue),
            :func:`pysycl_numba.epilogue.compile_epilogue`.
        folds: for a 1-D ``range`` kernel on PTX, each reduction's compiled combiner of two
            values (:func:`pysycl_numba.epilogue.compile_fold`; None for a span
            reduction): the kernel runs :func:`strided_blocks` and folds its slots'
            accumulators with it. None: the plain loop over the items.
        lasts: in a single-pass kernel (:func:`pysycl._core.abi.single_pass_reduction`),
            each reduction's compiled end (:func:`pysycl_numba.epilogue.compile_last`),
            which the entry point calls after its epilogue.
    """
    # a range, or a looped nd_range: the work-items loop over the items, as a range's do
    as_range = index.kind == "range" or index.looped
    n_range = index.ndim if index.kind == "range" else 2 * index.ndim if index.looped else 0
    extra = [_I64] * n_range
    per = 3 if lasts is None else 8
    for r in reducers:
        elem = context.get_data_type(r.dtype)
        extra += [context.get_value_type(r.dtype), elem.as_pointer(addrspace=1),
                  _I64 if isinstance(r, SpanReducerType) else elem.as_pointer(addrspace=3)]
        if lasts is not None:  # out, its offset, keep, ticket, its offset
            extra += [elem.as_pointer(addrspace=1), _I64, llir.IntType(8),
                      llir.IntType(32).as_pointer(addrspace=1), _I64]
    entry = EntryPoint(context, entry_name, capture_types, abi_types, extra, bounds_checked,
                  has_asserts)
    builder = entry.builder
    user_range = entry.extra[:index.ndim] if as_range else []
    group_ndim = 1 if as_range else index.ndim
    params = [entry.extra[n_range + per * k:][:per] for k in range(len(reducers))]
    accs = [_reducer_value(entry, r, epi, group_ndim, p)
            for r, epi, p in zip(reducers, epilogues, params, strict=True)]

    if as_range:
        make = None if index.kind == "range" else looped_item(context, entry, index.ndim)
        item_type = ItemType(index.ndim) if make is None else NdItemType(index.ndim, True)
        callee_args: list[types.Type] = [item_type, *reducers, *capture_types]
        if folds is not None and index.ndim == 1:
            unroll = step_vectors(context, capture_types)
            slots = [accs] + [[a if isinstance(r, SpanReducerType) else _accumulator(entry, r, p[0])
                               for r, a, p in zip(reducers, accs, params, strict=True)]
                              for _ in range(COARSEN - 1)]

            def emit(item: llir.Value, caps: list[llir.Value], slot: int) -> object:
                return entry.call(fndesc, callee_args, [item, *slots[slot], *caps])

            strided_blocks(context, entry, emit, unroll, make)
            values = [None if fold is None else _fold(entry, r, fold, [s[k] for s in slots])
                      for k, (r, fold) in enumerate(zip(reducers, folds, strict=True))]
        else:
            # A grid-stride loop: the runtime launches as many work-items as keep the device
            # busy (not one per item), so few partial results are left for the final step;
            # a 1-D launch of exactly the range (CPU devices) runs an item a work-item.
            captured = entry.capture_values()
            exact_or_grid_stride(context, entry, user_range,
                                 lambda item: entry.call(fndesc, callee_args,
                                                         [item, *accs, *captured]), make)
            values = [None] * len(reducers)
    else:
        callee_args = [NdItemType(index.ndim), *reducers, *capture_types]
        entry.call(fndesc, callee_args, [tag(), *accs, *entry.capture_values()])
        values = [None] * len(reducers)

    for r, acc, epi, v, p in zip(reducers, accs, epilogues, values, params, strict=True):
        if isinstance(r, SpanReducerType):
            continue  # the row is complete: the kernel's end publishes it
        if v is None:
            v = context.unpack_value(builder, r.dtype, acc)
        _call_epilogue(entry, r, epi, group_ndim, v, part=p[1], tmp=p[2])
    for r, last, p in zip(reducers, lasts or (), params, strict=False):
        _call_last(entry, r, last, group_ndim, p)
    return entry.finish()


def looped_item(context: BaseContext, entry: Entry, ndim: int) -> MakeItem:
    """The ``sycl.nd_item`` of a looped nd_range's item (a
    :data:`~pysycl_numba.range_items.MakeItem`): its ids, the global range, the local range
    (the entry point's arguments after the global range's)."""
    local = entry.extra[ndim:2 * ndim]

    def make(ids: list[llir.Value], rng: list[llir.Value]) -> llir.Value:
        it = cgutils.create_struct_proxy(NdItemType(ndim, True))(context, entry.builder)
        for d in range(ndim):
            setattr(it, f"id{d}", ids[d])
            setattr(it, f"global{d}", rng[d])
            setattr(it, f"local{d}", local[d])
        return it._getvalue()

    return make


def _accumulator(entry: Entry, r: ReducerType, ident: llir.Value) -> llir.Value:
    """A private accumulator of ``r`` set to the identity ``ident``."""
    acc = cgutils.alloca_once(entry.builder, entry.context.get_data_type(r.dtype))
    entry.context.pack_value(entry.builder, r.dtype, ident, acc)
    return acc


def _reducer_value(entry: Entry, r: ReducerType | SpanReducerType, epi: CompileResult,
                   group_ndim: int, params: list[llir.Value]) -> llir.Value:
    """The value of reducer parameter ``r`` (``params``: its identity, partials and last
    argument): a private accumulator set to the identity, or a span reducer's row."""
    ident, part, last = params[:3]
    if isinstance(r, SpanReducerType):
        return _span_row(entry, r, epi, group_ndim, ident, part, last)
    return _accumulator(entry, r, ident)


def _span_row(entry: Entry, r: SpanReducerType, prologue: CompileResult, group_ndim: int,
              ident: llir.Value, part: llir.Value, n: llir.Value) -> llir.Value:
    """The span reducer's value: its prologue sets the group's row to the identity and
    gives the row's offset in ``part``; the reducer is ``{part + offset, n}``."""
    context, builder = entry.context, entry.builder
    partials = cgutils.create_struct_proxy(partials_type(r))(context, builder)
    partials.base = part
    partials.offset = _I64(0)
    partials.range0 = _I64(0)
    base = entry.call(prologue.fndesc, epilogue_arg_types(r, group_ndim),
                      [tag(), ident, n, partials._getvalue()])
    span = cgutils.create_struct_proxy(r)(context, builder)
    base = context.cast(builder, base, prologue.fndesc.restype, types.int64)
    span.row = builder.gep(part, [base])
    span.n = n
    return span._getvalue()


def _call_epilogue(entry: Entry, r: ReducerType, epi: CompileResult, group_ndim: int,
                   v: llir.Value, part: llir.Value, tmp: llir.Value) -> None:
    """Hand the work-item's accumulated value ``v`` to the reduction's epilogue."""
    context, builder = entry.context, entry.builder
    scratch = cgutils.create_struct_proxy(scratch_type(r))(context, builder)
    scratch.base = tmp
    scratch.range0 = _I64(0)
    partials = cgutils.create_struct_proxy(partials_type(r))(context, builder)
    partials.base = part
    partials.offset = _I64(0)
    partials.range0 = _I64(0)
    entry.call(epi.fndesc, epilogue_arg_types(r, group_ndim),
               [tag(), v, scratch._getvalue(), partials._getvalue()])


def _one_element(entry: Entry, ty: AccessorType, base: llir.Value, offset: llir.Value
                 ) -> llir.Value:
    """An accessor of type ``ty`` (1-D) to element ``offset`` of ``base`` (range 1)."""
    acc = cgutils.create_struct_proxy(ty)(entry.context, entry.builder)
    acc.base = base
    acc.offset = offset
    acc.range0 = _I64(1)
    return acc._getvalue()


def _call_last(entry: Entry, r: ReducerType, last: CompileResult, group_ndim: int,
               params: list[llir.Value]) -> None:
    """A single-pass reduction's end (after its epilogue): ``params`` are the reduction's
    identity, partials, scratch, variable, its offset, keep, ticket and its offset."""
    context, builder = entry.context, entry.builder
    ident, part, tmp, out, out_off, keep, ticket, ticket_off = params
    argtys = last_arg_types(r, group_ndim)
    scratch = cgutils.create_struct_proxy(argtys[1])(context, builder)
    scratch.base = tmp
    scratch.range0 = _I64(0)
    partials = cgutils.create_struct_proxy(argtys[2])(context, builder)
    partials.base = part
    partials.offset = _I64(0)
    partials.range0 = _I64(0)
    entry.call(last.fndesc, argtys,
               [tag(), scratch._getvalue(), partials._getvalue(),
                _one_element(entry, argtys[3], out, out_off), keep,
                _one_element(entry, argtys[5], ticket, ticket_off), ident])


def _fold(entry: Entry, r: ReducerType, fold: CompileResult, accs: list[llir.Value]
          ) -> llir.Value:
    """The slots' accumulators ``accs`` combined pairwise with ``fold`` (the combiner),
    each result cast to the element type as ``r.combine`` casts it."""
    context, builder = entry.context, entry.builder
    values = [context.unpack_value(builder, r.dtype, a) for a in accs]
    while len(values) > 1:
        pairs = [context.cast(builder, entry.call(fold.fndesc, [r.dtype, r.dtype], [a, b]),
                              fold.fndesc.restype, r.dtype)
                 for a, b in zip(values[::2], values[1::2], strict=False)]
        values = pairs + values[len(pairs) * 2:]
    return values[0]


def step_vectors(context: BaseContext, capture_types: list[types.Type]) -> int:
    """Vectors of ``COARSEN`` items a step of :func:`strided_blocks` for a kernel capturing
    ``capture_types``: :data:`STEP_BYTES` of its widest captured array's elements (4 for
    float32, 2 for float64; at most :data:`UNROLL`, at least 1). Registers stay few enough
    for 4 work-groups of 256 per SM (ptxas, sm_90: a float32 sum 40, a float32 dot
    product 62, a float64 sum 48 at 2 vectors a step -- 64 at 4); through CUDA the launch
    takes as many as the SM holds, up to 6 (``pysycl._kernels.reduction_plan``)."""
    widest = max((context.get_abi_sizeof(context.get_data_type(t.dtype))
                  for t in capture_types
                  if isinstance(t, USMPointerType) or (isinstance(t, AccessorType)
                                                       and t.space == "global")), default=4)
    return max(1, min(UNROLL, STEP_BYTES // (COARSEN * widest)))


_Emit = Callable[[llir.Value, list[llir.Value], int], object]


def strided_blocks(context: BaseContext, entry: Entry, emit: _Emit, unroll: int,
                   make: MakeItem | None = None) -> None:
    """A 1-D range reduction's items (PTX), ``emit(item, captures, slot)`` each.

    Work-item ``g`` of ``G`` runs the items ``i`` with ``i // 4 = g (mod G)`` where every
    captured pointer is 16-byte aligned (:func:`~pysycl_numba.range_items.aligned_captures`),
    else those with ``i = g (mod G)`` -- all items once, each with its own ``sycl.item``:
    ``unroll`` vectors of :data:`~pysycl_numba.range_items.COARSEN` consecutive items a step
    (:func:`step_vectors`), else :data:`SCALAR_UNROLL` items a step. Item ``k`` of a vector
    (of a scalar step) is in slot ``k``: the slot's accumulator and alias scope
    (:class:`~pysycl_numba.range_items.ItemScopes`). A vector's items being in distinct scopes,
    its four loads join into one 128-bit load even where the kernel stores between them;
    a slot's items keep their order, so one accumulator per slot is right. Nothing a step
    loads waits for an earlier combine (an accumulator is a register), so the step's loads
    are all in flight at once (a float32 sum: four ``ld.global.v4`` a step), where the
    plain loop had one 4-byte load in flight per work-item -- which bounded it at about
    half of the device's bandwidth. Consecutive work-items read consecutive vectors: a
    warp's load instruction reads 512 contiguous bytes.

    ``make``: each item's value (a ``sycl.item`` by default; a looped nd_range's
    ``sycl.nd_item``)."""
    builder = entry.builder
    n = entry.extra[0]
    gid = ocl.work_item_query(builder, "get_global_id", 0)
    stride = ocl.work_item_query(builder, "get_global_size", 0)
    scopes = ItemScopes(builder.module, COARSEN)
    fast, every = aligned_captures(context, entry)
    plain = entry.capture_values()
    with builder.if_else(every, likely=True) as (vector, scalar):
        with vector:
            _vector_steps(context, entry, n, gid, stride, scopes, unroll,
                          lambda item, slot: emit(item, fast, slot), make)
        with scalar:
            _scalar_steps(context, entry, n, gid, stride, scopes,
                          lambda item, slot: emit(item, plain, slot), make)


def _vector_steps(context: BaseContext, entry: Entry, n: llir.Value, gid: llir.Value,
                  stride: llir.Value, scopes: ItemScopes, unroll: int,
                  emit: Callable[[llir.Value, int], object], make: MakeItem | None) -> None:
    """Vectors (``COARSEN`` consecutive items) ``gid, gid + G, ...`` below ``n // COARSEN``:
    ``unroll`` a step while all are in the range, then the fewer than ``unroll`` left
    (each guarded), then the last ``n % COARSEN`` items one per work-item."""
    builder = entry.builder
    whole = builder.udiv(n, _I64(COARSEN))
    var = cgutils.alloca_once_value(builder, gid)
    limit = builder.sub(whole, builder.mul(stride, _I64(unroll - 1)))  # may be negative

    def vector(v: llir.Value, j: int) -> None:
        first = builder.mul(v, _I64(COARSEN))
        for k in range(COARSEN):
            i = builder.add(first, _I64(k)) if k else first
            scopes.tag(k, run_item(context, entry, i, n,
                                    lambda item, k=k: emit(item, k), make))  # type: ignore[misc]

    with _while_below(builder, var, limit, builder.mul(stride, _I64(unroll))) as v:
        for j in range(unroll):
            vector(builder.add(v, builder.mul(stride, _I64(j))) if j else v, j)
    v = builder.load(var)
    for j in range(unroll - 1):  # v + (unroll - 1) G >= whole: at most unroll - 1 left
        vj = builder.add(v, builder.mul(stride, _I64(j))) if j else v
        with builder.if_then(builder.icmp_signed("<", vj, whole)):
            vector(vj, j)
    rest = builder.add(builder.mul(whole, _I64(COARSEN)), gid)
    with cgutils.for_range_slice(builder, rest, n, stride) as (i, _count):  # < COARSEN items
        run_item(context, entry, i, n, lambda item: emit(item, 0), make)


def _scalar_steps(context: BaseContext, entry: Entry, n: llir.Value, gid: llir.Value,
                  stride: llir.Value, scopes: ItemScopes,
                  emit: Callable[[llir.Value, int], object], make: MakeItem | None) -> None:
    """Items ``gid, gid + G, ...`` below ``n``: :data:`SCALAR_UNROLL` a step while all are
    in the range, then the fewer than ``SCALAR_UNROLL`` left, each guarded."""
    builder = entry.builder
    var = cgutils.alloca_once_value(builder, gid)
    limit = builder.sub(n, builder.mul(stride, _I64(SCALAR_UNROLL - 1)))  # may be negative

    def item_at(i: llir.Value, j: int) -> None:
        scopes.tag(j, run_item(context, entry, i, n, lambda item: emit(item, j), make))

    with _while_below(builder, var, limit, builder.mul(stride, _I64(SCALAR_UNROLL))) as i:
        for j in range(SCALAR_UNROLL):
            item_at(builder.add(i, builder.mul(stride, _I64(j))) if j else i, j)
    i = builder.load(var)
    for j in range(SCALAR_UNROLL - 1):
        ij = builder.add(i, builder.mul(stride, _I64(j))) if j else i
        with builder.if_then(builder.icmp_signed("<", ij, n)):
            item_at(ij, j)


@contextmanager
def _while_below(builder: llir.IRBuilder, var: llir.Value, stop: llir.Value, step: llir.Value
                 ) -> Iterator[llir.Value]:
    """``while *var < stop: body(*var); *var += step`` (signed compare); yields ``*var``."""
    fn = builder.function
    cond = fn.append_basic_block("items.cond")
    body = fn.append_basic_block("items.body")
    done = fn.append_basic_block("items.done")
    builder.branch(cond)
    builder.position_at_end(cond)
    cur = builder.load(var)
    builder.cbranch(builder.icmp_signed("<", cur, stop), body, done)
    builder.position_at_end(body)
    yield cur
    builder.store(builder.add(cur, step), var)
    builder.branch(cond)
    builder.position_at_end(done)

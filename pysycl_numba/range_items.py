"""How a ``range`` kernel's entry point runs the user's items: one a work-item, or loops.

The launch is the runtime's (:mod:`pysycl._kernels.rangesize`), the entry point around
the items :mod:`pysycl_numba.wrapper`'s.

* SPIR-V: the launch is the n-D range itself, a work-item per item (:func:`native_items`);
* PTX, a kernel that prints (a work-item's output is one item's) or has reductions: a 1-D
  launch whose work-items loop over the items in linear order (:func:`grid_stride`);
* PTX, a 1-D range: blocks of :data:`COARSEN` consecutive items with 128-bit accesses
  where the pointers allow them (:func:`coarsened`);
* PTX, a 2-D or 3-D range: a 2-D/3-D launch in work-groups of (say) 32 x 8 that covers
  the range, a work-item per item (or per block of
  ``pysycl._core.abi.RANGE_COLUMNS`` consecutive items of a row; or, where the runtime
  launched tiles, ``abi.RANGE_BLOCK`` rows x columns: :func:`_tiles`), guarded at the
  edges -- a loop only where CUDA's grid cannot cover the range (:func:`nd_items`): no
  division, and a warp's items are consecutive along the fastest dimension (coalesced).

Whatever the loop, every item runs exactly once with its own ``sycl.item`` (the user's
ids and range), and a failed assert or bounds violation notes the item's linear id.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Protocol

from llvmlite import ir as llir

from pysycl._core import abi
from pysycl_numba import asserts, bounds
from pysycl_numba._numba_compat import cgutils, types
from pysycl_numba.targets.spirv import ocl
from pysycl_numba.types import AccessorType, ItemType, USMPointerType

if TYPE_CHECKING:
    from pysycl_numba._numba_compat import BaseContext

_I64 = llir.IntType(64)


class Entry(Protocol):
    """What the loops need of an entry point being built (``wrapper.EntryPoint``)."""

    builder: llir.IRBuilder
    extra: list[llir.Value]  # a range kernel's: the user's range first (SYCL order)
    has_asserts: bool
    asserts: llir.Value
    rec: llir.Value | None

    def capture_values(self, transform: Callable[[types.Type, list[llir.Value]],
                                                 list[llir.Value]] | None = None,
                       ) -> list[llir.Value]: ...


def run_items(context: BaseContext, entry: Entry, emit: Callable[..., object],
              linear: bool, coarsen: bool) -> None:
    """A ``range`` kernel's items, each through ``emit(item)``: :func:`native_items` (not
    ``linear``), else :func:`coarsened` (1-D) or :func:`nd_items` (2-D, 3-D) where
    ``coarsen``, else :func:`grid_stride`."""
    rng = entry.extra
    if not linear:
        native_items(context, entry.builder, rng, entry, emit)
    elif coarsen and len(rng) == 1:
        coarsened(context, entry, emit)
    elif coarsen:
        nd_items(context, entry, emit)
    else:
        with grid_stride(context, entry.builder, rng, entry) as item:
            emit(item)


def native_items(context: BaseContext, builder: llir.IRBuilder, rng: list[llir.Value],
                 entry: Entry, emit: Callable[[llir.Value], object]) -> None:
    """A ``range`` kernel's item on an n-D launch of exactly the user's range ``rng``
    (kernel arguments, SYCL order; OpenCL dimension ``n - 1 - d`` is SYCL's ``d``):
    ``emit(item)`` runs the body for the work-item's own id (SPIR-V: the launch is the
    range, in work-groups the runtime chose, :mod:`pysycl._kernels.rangesize`)."""
    n = len(rng)
    ids = [ocl.work_item_query(builder, "get_global_id", n - 1 - d) for d in range(n)]
    _run_item(context, entry, emit, ids, rng)


def _note_item(entry: Entry, builder: llir.IRBuilder, lin: llir.Value) -> None:
    """After the user's function ran item ``lin`` (linear, row-major): a failed assert or
    bounds violation it had reports that item (the host unravels it in the user's range)."""
    if entry.has_asserts:
        asserts.note_linear_id(builder, entry.asserts, lin)
    if entry.rec is not None:
        bounds.note_linear_id(builder, entry.rec, lin)


#: ``make(ids, range)``: the value a kernel function takes for the item of ids ``ids`` (SYCL
#: order) in range ``range`` -- a ``sycl.item`` (:func:`item_value`), or a looped nd_range's
#: ``sycl.nd_item`` (``pysycl_numba.reduction_entry``).
MakeItem = Callable[[list[llir.Value], list[llir.Value]], llir.Value]


def item_value(context: BaseContext, builder: llir.IRBuilder, ids: list[llir.Value],
               rng: list[llir.Value]) -> llir.Value:
    """The ``sycl.item`` of ids ``ids`` in range ``rng``."""
    item = cgutils.create_struct_proxy(ItemType(len(ids)))(context, builder)
    for d, (i, r) in enumerate(zip(ids, rng, strict=True)):
        setattr(item, f"id{d}", i)
        setattr(item, f"range{d}", r)
    return item._getvalue()


@contextmanager
def grid_stride(context: BaseContext, builder: llir.IRBuilder, rng: list[llir.Value],
                entry: Entry, make: MakeItem | None = None) -> Iterator[llir.Value]:
    """A ``range`` kernel's loop over the user's range ``rng`` (kernel arguments, SYCL
    order): the launch is 1-D with as many work-items as the runtime chose (G), and
    work-item ``g`` runs items ``g, g + G, g + 2G, ...`` in linear (row-major) order. The
    body runs with the ``sycl.item`` of each (its ids and range the user's); after it, a
    failed assert or bounds violation notes the item's linear id, not the work-item's.

    An n-D id is unravelled once per work-item; each step adds G's own unravelled digits
    with a carry (compares and selects, no division per item). ``make``: the item's value
    (:data:`MakeItem`; a ``sycl.item`` by default).
    """
    n = len(rng)
    lin = ocl.work_item_query(builder, "get_global_id", 0)
    stride = ocl.work_item_query(builder, "get_global_size", 0)
    total = rng[0]
    for e in rng[1:]:
        total = builder.mul(total, e)
    with builder.if_then(builder.icmp_signed("<", lin, total), likely=True):
        ids = [cgutils.alloca_once_value(builder, v) for v in _unravel(builder, lin, rng)]
        steps = _unravel(builder, stride, rng)  # dimension 0: may exceed its range
        with cgutils.for_range_slice(builder, lin, total, stride) as (i, _count):
            cur = [builder.load(p) for p in ids]
            yield (make(cur, rng) if make is not None
                   else item_value(context, builder, cur, rng))
            _note_item(entry, builder, i)
            carry = _I64(0)
            for d in range(n - 1, 0, -1):
                t = builder.add(builder.add(cur[d], steps[d]), carry)
                wrap = builder.icmp_unsigned(">=", t, rng[d])
                builder.store(builder.select(wrap, builder.sub(t, rng[d]), t), ids[d])
                carry = builder.zext(wrap, _I64)
            builder.store(builder.add(builder.add(cur[0], steps[0]), carry), ids[0])


def exact_or_grid_stride(context: BaseContext, entry: Entry, rng: list[llir.Value],
                         emit: Callable[[llir.Value], object], make: MakeItem | None = None,
                         ) -> None:
    """A range reduction's items, ``emit(item)`` each: where a 1-D launch has exactly as
    many work-items as the range has items (the runtime's launch on CPU devices where a
    work-group size divides the range: ``pysycl._kernels.reduction_plan.launch_sizes``),
    work-item ``g`` runs item ``g`` -- no loop and no guard, which Intel's CPU compiler
    vectorises across work-items (a sum of 2^24 float32 at 3.5x the guarded item's rate,
    1.3x the grid-stride loop's); else, and for n-D ranges, :func:`grid_stride`. The test
    is the same for every work-item (a uniform branch)."""
    builder = entry.builder
    if len(rng) != 1:
        with grid_stride(context, builder, rng, entry, make) as item:
            emit(item)
        return
    gid = ocl.work_item_query(builder, "get_global_id", 0)
    size = ocl.work_item_query(builder, "get_global_size", 0)
    with builder.if_else(builder.icmp_signed("==", size, rng[0]), likely=True) as (exact, loop):
        with exact:
            _run_item(context, entry, emit, [gid], rng, make)
        with loop, grid_stride(context, builder, rng, entry, make) as item:
            emit(item)


def _unravel(builder: llir.IRBuilder, lin: llir.Value, rng: list[llir.Value]) -> list[llir.Value]:
    """The row-major digits of ``lin`` in range ``rng`` (dimension 0: the rest, unbounded)."""
    out: list[llir.Value] = [lin] * len(rng)
    rest = lin
    for d in range(len(rng) - 1, 0, -1):
        out[d] = builder.urem(rest, rng[d])
        rest = builder.udiv(rest, rng[d])
    out[0] = rest
    return out


#: Consecutive items a work-item of a coarsened 1-D ``range`` kernel runs in a row (the
#: runtime sizes its launch for it: ``pysycl._kernels.rangesize.COARSEN``).
COARSEN = 4
_VECTOR_BYTES = 16  # a 128-bit load or store


def coarsened(context: BaseContext, entry: Entry, emit: Callable[..., object]) -> None:
    """A 1-D ``range`` kernel's items in blocks of :data:`COARSEN` consecutive ones (PTX).

    Where every captured global pointer (a USM pointer, an accessor's data at its offset) is
    16-byte aligned -- checked at run time, the same for all work-items -- work-item ``g``
    of ``G`` runs the blocks ``g, g + G, ...`` (:func:`_blocks`), with the captures rebuilt
    from pointers whose low bits are masked off (no change to their values there): LLVM
    then knows their alignment, and the block's accesses of consecutive elements become
    128-bit ones (a triad: ``ld.global.v4``/``st.global.v4``). Elsewhere (a pointer that
    is not aligned, or a bounds-checked accessor's, which is not masked): the plain
    :func:`grid_stride` loop, or blocks of scalar accesses. Either way every item runs
    once with its own ``sycl.item``; work-items are never ordered, so running consecutive
    items in one is always allowed."""
    builder = entry.builder
    rng = entry.extra
    fast, every = aligned_captures(context, entry)
    with builder.if_else(every, likely=True) as (vector, plain):
        with vector:
            _blocks(context, entry, rng[0], lambda item: emit(item, fast))
        with plain, grid_stride(context, builder, rng, entry) as item:
            emit(item)


def aligned_captures(context: BaseContext, entry: Entry, ints: int = 1,
                     ) -> tuple[list[llir.Value], llir.Value]:
    """(the captures rebuilt from pointers whose low 4 bits are masked off, whether every
    captured global pointer -- a USM pointer, an accessor's data at its offset -- is 16-byte
    aligned: then the masked values are the captures' own, and LLVM knows their alignment).
    A bounds-checked accessor is not masked (its accesses stay scalar). ``ints`` (a power
    of two) > 1: integer captures and accessors' memory ranges (the strides of their rows)
    are masked to multiples of ``ints`` too, and must be such multiples: then an index
    ``i * n + j`` of a block of ``ints`` consecutive ``j`` starts aligned where ``j``'s
    first does."""
    builder = entry.builder
    ok: list[llir.Value] = []

    def multiple(v: llir.Value) -> llir.Value:
        if ints == 1:
            return v
        low = llir.Constant(v.type, ints - 1)
        ok.append(builder.icmp_unsigned("==", builder.and_(v, low), llir.Constant(v.type, 0)))
        return builder.and_(v, llir.Constant(v.type, ~(ints - 1)))

    def aligned(capty: types.Type, args: list[llir.Value]) -> list[llir.Value]:
        if isinstance(capty, AccessorType) and capty.space == "global" and not capty.checked:
            # rebased at its offset (a kernel reads the offset only to index), then masked:
            # the loop steps one pointer an array, as for a USM pointer (with base and
            # offset masked apart, LLVM kept an address register a vector and added the
            # offset to each: a float32 sum over an accessor ran 23% more instructions and
            # 7% slower than over a USM pointer -- ncu, H100)
            start = _masked(builder, builder.gep(args[0], [args[1]]), ok)
            strides = [multiple(m) for m in args[2 + capty.ndim:]]  # mem_range[1..n-1]
            return [start, _I64(0), *args[2:2 + capty.ndim], *strides]
        if isinstance(capty, USMPointerType):
            return [_masked(builder, args[0], ok)]
        if isinstance(capty, types.Integer):
            return [multiple(args[0])]
        return args

    fast = entry.capture_values(aligned)
    every = ok[0] if ok else llir.Constant(llir.IntType(1), 1)
    for c in ok[1:]:
        every = builder.and_(every, c)
    return fast, every


def _masked(builder: llir.IRBuilder, p: llir.Value, ok: list[llir.Value]) -> llir.Value:
    """``p`` with its low 4 bits cleared (the same pointer where ``ok`` holds, to which its
    alignment test is appended)."""
    bits = builder.ptrtoint(p, _I64)
    ok.append(builder.icmp_unsigned("==", builder.and_(bits, _I64(_VECTOR_BYTES - 1)), _I64(0)))
    return builder.inttoptr(builder.and_(bits, _I64(-_VECTOR_BYTES)), p.type)


def _blocks(context: BaseContext, entry: Entry, n: llir.Value,
            emit: Callable[[llir.Value], object]) -> None:
    """Items ``0 .. n`` of a 1-D range: whole blocks of :data:`COARSEN` consecutive items
    grid-strided over the work-items, then the rest (fewer than :data:`COARSEN`) one per
    work-item, grid-strided too (a launch may have fewer work-items than that).

    A block calls the user's function for each of its items in alias scopes of their own
    (:class:`ItemScopes`); LLVM's load/store vectoriser then joins the items' consecutive
    accesses into vector ones."""
    builder = entry.builder
    gid = ocl.work_item_query(builder, "get_global_id", 0)
    stride = ocl.work_item_query(builder, "get_global_size", 0)
    whole = builder.udiv(n, _I64(COARSEN))
    scopes = ItemScopes(builder.module, COARSEN)
    with cgutils.for_range_slice(builder, gid, whole, stride) as (b, _count):
        first = builder.mul(b, _I64(COARSEN))
        for k in range(COARSEN):
            i = builder.add(first, _I64(k)) if k else first
            scopes.tag(k, _run_item(context, entry, emit, [i], [n]))
    rest = builder.add(builder.mul(whole, _I64(COARSEN)), gid)
    with cgutils.for_range_slice(builder, rest, n, stride) as (i, _count):  # < COARSEN items
        _run_item(context, entry, emit, [i], [n])


def nd_items(context: BaseContext, entry: Entry, emit: Callable[..., object]) -> None:
    """A 2-D or 3-D ``range`` kernel's items on a launch of as many dimensions (PTX).

    OpenCL dimension 0 of the launch walks the fastest dimension of the range (its
    columns) in blocks of ``C`` (:data:`pysycl._core.abi.RANGE_COLUMNS`) consecutive
    items, dimension 1 the rows (SYCL dimension ``n - 2``), dimension 2 the slowest
    dimension of a 3-D range. Where the launch covers the range (its global size -- times
    ``C`` along x -- at least the range in every dimension; the same for all work-items),
    work-item ``(x, y[, z])`` runs the items ``(z, y, Cx .. Cx + C - 1)`` inside the range:
    no loop. Elsewhere (a range beyond CUDA's grid) it runs the blocks ``(x + aX, y + bY,
    z + cZ)`` of a launch of ``(X, Y, Z)`` in one carried loop (:func:`_nd_loop`). No
    division either way.

    ``C > 1``: where every captured pointer is 16-byte aligned and every integer capture a
    multiple of ``C`` (:func:`aligned_captures`; the same for all work-items), a block
    inside the range runs its items with captures LLVM knows to be aligned, in alias scopes
    of their own (:class:`ItemScopes`): their consecutive accesses become vector ones, and a
    load two items share (a stencil's neighbours) runs once. Elsewhere a block's items inside
    the range run one by one (a short loop: had the block's items been copies of the vector
    path's, LLVM would have sunk the last of them into one block with phis of the captures,
    and the vector path's accesses would no longer have been one block's)."""
    builder = entry.builder
    rng = entry.extra
    n = len(rng)
    width = abi.RANGE_COLUMNS
    gid = [ocl.work_item_query(builder, "get_global_id", d) for d in range(n)]
    size = [ocl.work_item_query(builder, "get_global_size", d) for d in range(n)]
    cols = rng[n - 1]
    blocks = cols if width == 1 else builder.udiv(builder.add(cols, _I64(width - 1)),
                                                  _I64(width))
    stops = [blocks, rng[n - 2], *rng[:n - 2]]  # native order
    covers = _all(builder, [builder.icmp_unsigned(">=", z, e) for z, e in zip(size, stops,
                                                                                strict=True)])
    vector = None
    if width > 1:
        fast, every = aligned_captures(context, entry, width)
        vector = (fast, every, ItemScopes(builder.module, width))
    rows_per, slots = abi.RANGE_BLOCK if width == 1 else (1, 1)
    with builder.if_else(covers, likely=True) as (one, many):
        with one:
            inside = _all(builder, [builder.icmp_unsigned("<", g, e)
                                    for g, e in zip(gid, stops, strict=True)])
            with builder.if_then(inside, likely=True):
                _block(context, entry, emit, gid, vector)
        with many:
            if rows_per * slots == 1:
                with _nd_loop(builder, gid, size, stops) as ids:
                    _block(context, entry, emit, ids, None)
            else:
                _tiles(context, entry, emit, gid, size, stops, rows_per, slots)


def _tiles(context: BaseContext, entry: Entry, emit: Callable[..., object],
           gid: list[llir.Value], size: list[llir.Value], stops: list[llir.Value],
           rows_per: int, slots: int) -> None:
    """A 2-D/3-D ``range`` kernel's items on a launch that covers the range in tiles
    (:data:`pysycl._core.abi.RANGE_BLOCK`: ``R`` rows x ``S`` columns a work-item; the
    runtime's choice for large ranges, ``pysycl._kernels.rangesize.gpu_sizes``), else
    (a range beyond CUDA's grid) the loop of :func:`nd_items`.

    Work-item ``(x, y[, z])`` of a work-group ``W`` work-items wide runs the rows ``Ry ..
    Ry + R - 1`` and the columns ``c, c + W, .., c + (S - 1)W`` with ``c = SW * (x // W)
    + x % W`` (its group's columns, strided by the group's width: a warp's accesses stay
    consecutive in memory). A whole tile inside the range runs its ``R x S`` items in alias
    scopes of their own (:class:`ItemScopes`): every item's loads can issue before the
    first store, and a load two items share (a stencil's row above or below) runs once.
    A tile at the range's edge runs its items inside the range one by one."""
    builder = entry.builder
    rng = entry.extra
    lx = ocl.work_item_query(builder, "get_local_id", 0)
    wide = ocl.work_item_query(builder, "get_local_size", 0)
    grp = ocl.work_item_query(builder, "get_group_id", 0)
    col = builder.add(builder.mul(grp, builder.mul(wide, _I64(slots))), lx)
    row = builder.mul(gid[1], _I64(rows_per))
    cols, rows = stops[0], stops[1]
    tiled = _all(builder, [builder.icmp_unsigned(">=", builder.mul(size[0], _I64(slots)), cols),
                           builder.icmp_unsigned(">=", builder.mul(size[1], _I64(rows_per)),
                                                 rows),
                           *[builder.icmp_unsigned(">=", z, e)
                             for z, e in zip(size[2:], stops[2:], strict=True)]])
    with builder.if_else(tiled, likely=True) as (tile, loop):
        with tile:
            inside = _all(builder, [builder.icmp_unsigned("<", col, cols),
                                    builder.icmp_unsigned("<", row, rows),
                                    *[builder.icmp_unsigned("<", g, e)
                                      for g, e in zip(gid[2:], stops[2:], strict=True)]])
            with builder.if_then(inside, likely=True):
                z = gid[2:]
                last_col = builder.add(col, builder.mul(wide, _I64(slots - 1)))
                whole = builder.and_(builder.icmp_unsigned("<", last_col, cols),
                                     builder.icmp_unsigned("<", builder.add(row, _I64(rows_per - 1)),
                                                           rows))
                with builder.if_else(whole, likely=True) as (full, edge):
                    with full:
                        scopes = ItemScopes(builder.module, rows_per * slots)
                        for r in range(rows_per):
                            i = builder.add(row, _I64(r)) if r else row
                            for s in range(slots):
                                j = builder.add(col, builder.mul(wide, _I64(s))) if s else col
                                scopes.tag(r * slots + s,
                                           _run_item(context, entry, emit, [*z, i, j], rng))
                    with edge:
                        top = builder.add(row, _I64(rows_per))
                        top = builder.select(builder.icmp_unsigned("<", top, rows), top, rows)
                        with _rolled_loop(builder, row, top) as i, \
                                _rolled_loop(builder, _I64(0), _I64(slots)) as s:
                            j = builder.add(col, builder.mul(wide, s))
                            with builder.if_then(builder.icmp_unsigned("<", j, cols)):
                                _run_item(context, entry, emit, [*z, i, j], rng)
        with loop, _nd_loop(builder, gid, size, stops) as ids:
            _block(context, entry, emit, ids, None)


def _block(context: BaseContext, entry: Entry, emit: Callable[..., object],
           ids: list[llir.Value],
           vector: tuple[list[llir.Value], llir.Value, ItemScopes] | None) -> None:
    """The items ``(z, y, Cx .. Cx + C - 1)`` inside the range of block ``ids`` = ``(x, y[,
    z])`` (native order; ``C``: ``abi.RANGE_COLUMNS``): with ``vector`` = (the aligned
    captures, whether they are the captures, the items' scopes) a whole block where they
    are runs its ``C`` items in their scopes with those captures; else the items run one by
    one (a loop: one copy of the body, whose end matches no other block's)."""
    builder = entry.builder
    rng = entry.extra
    width = abi.RANGE_COLUMNS
    cols = rng[-1]
    x, i, *z = ids
    if width == 1:
        _run_item(context, entry, emit, [*z, i, x], rng)
        return
    first = builder.mul(x, _I64(width))
    end = builder.add(first, _I64(width))

    def one_by_one() -> None:
        last = builder.select(builder.icmp_unsigned("<", end, cols), end, cols)
        with _rolled_loop(builder, first, last) as j:
            _run_item(context, entry, emit, [*z, i, j], rng)
    if vector is None:
        one_by_one()
        return
    fast, every, scopes = vector
    whole = builder.icmp_unsigned("<=", end, cols)
    with builder.if_else(builder.and_(every, whole), likely=True) as (vec, rest):
        with vec:
            for k in range(width):
                j = builder.add(first, _I64(k)) if k else first
                scopes.tag(k, _run_item(context, entry, lambda item: emit(item, fast),
                                        [*z, i, j], rng))
        with rest:
            one_by_one()


@contextmanager
def _rolled_loop(builder: llir.IRBuilder, start: llir.Value, stop: llir.Value,
                 ) -> Iterator[llir.Value]:
    """``for j in range(start, stop)`` (a few iterations at most), which LLVM is told not to
    unroll (``llvm.loop.unroll.disable``: it would copy the body for a trip count it does
    not know to be small)."""
    head = builder.block
    body = builder.append_basic_block("few.body")
    end = builder.append_basic_block("few.end")
    builder.cbranch(builder.icmp_unsigned("<", start, stop), body, end)
    builder.position_at_end(body)
    j = builder.phi(_I64, name="few.j")
    j.add_incoming(start, head)
    yield j
    nxt = builder.add(j, _I64(1))
    j.add_incoming(nxt, builder.block)
    latch = builder.cbranch(builder.icmp_unsigned("<", nxt, stop), body, end)
    module = builder.module
    off = module.add_metadata([llir.MetaDataString(module, "llvm.loop.unroll.disable")])
    latch.set_metadata("llvm.loop", _Distinct(module, off))
    builder.position_at_end(end)


def _all(builder: llir.IRBuilder, conds: list[llir.Value]) -> llir.Value:
    out = conds[0]
    for c in conds[1:]:
        out = builder.and_(out, c)
    return out


@contextmanager
def _nd_loop(builder: llir.IRBuilder, starts: list[llir.Value], steps: list[llir.Value],
             stops: list[llir.Value]) -> Iterator[list[llir.Value]]:
    """One loop over the ids ``starts[d], starts[d] + steps[d], ... < stops[d]`` of every
    dimension ``d`` (fastest first, each nested in the next): the body runs with the
    current ids, and a step adds ``steps[0]`` to the fastest id with a carry into the next
    (an id that passes its stop restarts at its start). One loop, not a nest: a work-item
    whose fastest id takes one value (the launch covers that dimension, the common case)
    steps the next one at each turn, and LLVM keeps no pointer per access and loop."""
    first = builder.icmp_signed("<", starts[0], stops[0])
    for s, e in zip(starts[1:], stops[1:], strict=True):
        first = builder.and_(first, builder.icmp_signed("<", s, e))
    with builder.if_then(first, likely=True):
        ids = [cgutils.alloca_once_value(builder, s) for s in starts]
        body = builder.append_basic_block("items.body")
        end = builder.append_basic_block("items.end")
        builder.branch(body)
        builder.position_at_end(body)
        cur = [builder.load(p) for p in ids]
        yield cur
        carry: llir.Value = llir.Constant(llir.IntType(1), 1)
        for d, (s, step, e) in enumerate(zip(starts, steps, stops, strict=True)):
            nxt = builder.add(cur[d], step)
            over = builder.icmp_signed(">=", nxt, e)
            if d == len(starts) - 1:
                builder.store(builder.select(carry, nxt, cur[d]), ids[d])
                carry = builder.and_(carry, over)
            else:
                builder.store(builder.select(carry, builder.select(over, s, nxt), cur[d]), ids[d])
                carry = builder.and_(carry, over)
        builder.cbranch(carry, end, body)
        builder.position_at_end(end)


def run_item(context: BaseContext, entry: Entry, i: llir.Value, n: llir.Value,
             emit: Callable[[llir.Value], object], make: MakeItem | None = None,
             ) -> list[llir.Instruction]:
    """Item ``i`` of a 1-D range of ``n`` through ``emit(item)``, its linear id noted; the
    instructions this added to the builder's block (:func:`_run_item`; ``make``: the item's
    value, :data:`MakeItem`)."""
    return _run_item(context, entry, emit, [i], [n], make)


def _run_item(context: BaseContext, entry: Entry, emit: Callable[[llir.Value], object],
              ids: list[llir.Value], rng: list[llir.Value], make: MakeItem | None = None,
              ) -> list[llir.Instruction]:
    """Run the item ``ids`` (SYCL order) of range ``rng`` through ``emit`` and note its
    linear id (:func:`_note_item`); the instructions that added to the current block."""
    builder = entry.builder
    block = builder.block
    before = len(block.instructions)
    emit(make(ids, rng) if make is not None else item_value(context, builder, ids, rng))
    if entry.has_asserts or entry.rec is not None:
        lin = ids[0]
        for d in range(1, len(ids)):
            lin = builder.add(builder.mul(lin, rng[d]), ids[d])
        _note_item(entry, builder, lin)
    return block.instructions[before:]


class ItemScopes:
    """``count`` alias scopes of one domain, for the items a work-item runs in a row.

    Each item's call is in a scope of its own and declared not to alias the others'
    (``!alias.scope``/``!noalias``, which inlining hands on to every access of the body):
    the items are distinct work-items, which SYCL never orders, so any interleaving of
    their accesses is one the device could have run. LLVM may then move an item's loads
    ahead of another's stores (fences and atomics keep their order: a fence is no access
    of a scope). The notes of a failed assert or bounds violation between the calls are
    in no scope, so they keep their place."""

    def __init__(self, module: llir.Module, count: int) -> None:
        domain = _Distinct(module, "pysycl.items")
        scopes = [_Distinct(module, domain, f"pysycl.item{k}") for k in range(count)]
        self.mine = [module.add_metadata([s]) for s in scopes]
        self.others = [module.add_metadata([s for s in scopes if s is not mine])
                       for mine in scopes]

    def tag(self, k: int, instructions: list[llir.Instruction]) -> None:
        """Put the calls among ``instructions`` in scope ``k``."""
        for ins in instructions:
            if isinstance(ins, llir.CallInstr):
                ins.set_metadata("alias.scope", self.mine[k])
                ins.set_metadata("noalias", self.others[k])


class _Distinct(llir.values.MDValue):
    """A ``distinct`` metadata node that refers to itself first, then to ``rest`` (strings
    as metadata strings): an alias scope domain (its name), a scope (its domain and name),
    a loop's id (its properties)."""

    def __init__(self, module: llir.Module, *rest: llir.values.MDValue | str) -> None:
        super().__init__(module, [], name=str(len(module.metadata)))
        self.operands = (self, *(llir.MetaDataString(module, r) if isinstance(r, str) else r
                                 for r in rest))

    def descr(self, buf: list[str]) -> None:
        buf.append("distinct ")
        super().descr(buf)

    def __eq__(self, other: object) -> bool:  # distinct: itself only (and no recursion)
        return self is other

    def __hash__(self) -> int:
        return id(self)

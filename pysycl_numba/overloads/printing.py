"""``print_record(buffer, layout, values)``: one kernel ``print`` call's record, typed and lowered.

:mod:`pysycl_numba.printing` rewrites ``print(...)`` into this call. The record's
size is a compile-time constant (strings are literals, numbers take three words),
so a call is one ``atomicrmw add`` on the buffer's counter reserving the words,
then plain stores -- or, when the buffer is full, one ``atomicrmw add`` on its
dropped-records counter. Layout: ``pysycl._core.abi.PrintType``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir as llir

from pysycl._core.abi import PRINT_DTYPES, PRINT_FORMAT, PRINT_HEADER_WORDS, PRINT_NUMBER, PRINT_STR
from pysycl._core.streamfmt import composite_texts
from pysycl_numba._numba_compat import (
    AbstractTemplate,
    LoweringRegistry,
    TypingRegistry,
    cgutils,
    errors,
    signature,
    types,
)
from pysycl_numba.overloads.index import item_ids, item_ranges
from pysycl_numba.overloads.ndrange import item_queries, work_item_queries
from pysycl_numba.printing import print_record
from pysycl_numba.targets.ptx.private import LOW_WORD
from pysycl_numba.targets.spirv import ocl
from pysycl_numba.types import (
    GroupType,
    IdType,
    ItemType,
    NdItemType,
    NdRangeType,
    PrintBufferType,
    PrintLayoutType,
    RangeType,
    index_type,
    tag,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pysycl_numba._numba_compat import BaseContext, Signature

typing_registry = TypingRegistry()
lowering_registry = LoweringRegistry("pysycl.printing")
lower = lowering_registry.lower

_I32 = llir.IntType(32)
_I64 = llir.IntType(64)
#: The SYCL objects print and sycl.stream write as DPC++'s stream does (pysycl._core.streamfmt)
COMPOSITES = {ItemType: "item", NdItemType: "nd_item", GroupType: "group", NdRangeType: "nd_range"}
INDEX_OBJECTS = (IdType, RangeType, *COMPOSITES)


def number_code(ty: types.Type) -> int | None:
    """The record tag of a printable number type (None for anything else)."""
    name = "bool" if isinstance(ty, types.Boolean) else str(ty)
    if not isinstance(ty, (types.Boolean, types.Integer, types.Float)) or name not in PRINT_DTYPES:
        return None
    return PRINT_NUMBER + PRINT_DTYPES.index(name)


@typing_registry.register_global(print_record)
class PrintRecord(AbstractTemplate):
    """``print_record(buffer, layout, (numbers...))`` returns None."""

    def generic(self, args: tuple[types.Type, ...], kws: dict[str, types.Type]) -> Signature | None:
        """Numbers (bool, int8..uint64, float16/32/64) print; anything else is an error."""
        if len(args) != 3 or not isinstance(args[0], PrintBufferType) \
                or not isinstance(args[1], PrintLayoutType) or not isinstance(args[2], types.BaseTuple):
            return None
        for t in args[2].types:
            if number_code(t) is None and not isinstance(t, INDEX_OBJECTS):
                raise errors.TypingError(
                    f"print() in a kernel prints numbers (bool, integers, floats), string "
                    f"literals and ids, ranges, items, nd_items, groups and nd_ranges, not a "
                    f"{t}: print its parts (z.real and z.imag of a complex number; a value "
                    "read from an accessor)")
        return signature(types.none, *args)


lowering_registry.lower_constant(PrintLayoutType)(lambda context, builder, ty, pyval: tag())


def text_words(text: str) -> list[int]:
    """A string piece: its tag word, then its UTF-8 bytes in little-endian words."""
    data = text.encode("utf-8")
    padded = data + b"\0" * (-len(data) % 4)
    return [PRINT_STR | (len(data) << 8)] + [int.from_bytes(padded[k:k + 4], "little")
                                             for k in range(0, len(padded), 4)]


def _bits64(builder: llir.IRBuilder, ty: types.Type, v: llir.Value) -> llir.Value:
    """A number's bits as ``i64`` (integers extended by their signedness)."""
    if isinstance(ty, types.Float):
        width = ty.bitwidth
        as_int = builder.bitcast(v, llir.IntType(width))
        return as_int if width == 64 else builder.zext(as_int, _I64)
    if isinstance(ty, types.Boolean):
        return builder.zext(v, _I64)
    if v.type.width == 64:
        return v
    return builder.sext(v, _I64) if ty.signed else builder.zext(v, _I64)


def halves(context: BaseContext, builder: llir.IRBuilder, bits: llir.Value) -> list[llir.Value]:
    """The low and high 32-bit words of an ``i64``.

    For PTX the low word is the built-in ``LOW_WORD`` (an explicit ``cvt.u32.u64``):
    LLVM folds ``trunc`` into a narrowing store (``st.global.b32 [a], %rd``), valid
    PTX that NVIDIA's JIT (H100, 2026-11) miscompiled for an f64 product, storing
    another register's value as the low word (``tests/kernels/test_print.py``).
    """
    high = builder.trunc(builder.lshr(bits, llir.Constant(_I64, 32)), _I32)
    if context.image_format == "ptx":
        fn = ocl.declare(builder.module, LOW_WORD, _I32, [_I64])
        return [builder.call(fn, [bits]), high]
    return [builder.trunc(bits, _I32), high]


def number_words(context: BaseContext, builder: llir.IRBuilder, ty: types.Type,
                 v: llir.Value) -> list[int | llir.Value]:
    """A number piece: its tag word, then its bits as two words (low first)."""
    return [number_code(ty), *halves(context, builder, _bits64(builder, ty, v))]  # type: ignore[list-item]


@lower(print_record, PrintBufferType, PrintLayoutType, types.BaseTuple)
def lower_print_record(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                       args: Sequence[llir.Value]) -> llir.Value:
    """Reserve the record's words atomically, then store them (or count a dropped record)."""
    buf, _, values = args
    vtypes = sig.args[2].types
    words: list[int | llir.Value] = []
    for p in sig.args[1].pieces:
        if isinstance(p, str):
            words.extend(text_words(p))
        else:  # ("f", k): an f-string's field, tagged PRINT_FORMAT (formatted as f"{x}")
            k = p[1] if isinstance(p, tuple) else p
            if isinstance(vtypes[k], INDEX_OBJECTS):  # its text, as str() of the host object
                words.extend(object_words(context, builder, vtypes[k],
                                          builder.extract_value(values, k)))
                continue
            num = number_words(context, builder, vtypes[k], builder.extract_value(values, k))
            if isinstance(p, tuple):
                num[0] = int(num[0]) | PRINT_FORMAT  # type: ignore[arg-type]
            words.extend(num)
    append_record(builder, buf, [1 + len(words), *words])
    return context.get_dummy_value()


def composite_parts(context: BaseContext, builder: llir.IRBuilder, t: types.Type,
                    v: llir.Value) -> list[list[llir.Value]]:
    """The ``i64`` components of the ids and ranges an item, nd_item, group or nd_range
    prints (``pysycl._core.streamfmt.COMPOSITES``; an id or range: its own)."""
    n = t.ndim
    zeros = [_I64(0)] * n
    if isinstance(t, (IdType, RangeType)):
        s = cgutils.create_struct_proxy(t)(context, builder, value=v)
        return [[getattr(s, f"r{d}") for d in range(n)]]
    if isinstance(t, ItemType):
        return [item_ranges(context, builder, t, v), item_ids(context, builder, t, v), zeros]
    if isinstance(t, NdItemType):
        return [item_queries(context, builder, t, v, "get_global_id"),
                item_queries(context, builder, t, v, "get_local_id")]
    if isinstance(t, GroupType):
        return [work_item_queries(builder, q, n)
                for q in ("get_group_id", "get_global_size", "get_local_size", "get_num_groups")]
    r = cgutils.create_struct_proxy(t)(context, builder, value=v)
    return [[getattr(r, f"g{d}") for d in range(n)], [getattr(r, f"l{d}") for d in range(n)],
            zeros]


def object_words(context: BaseContext, builder: llir.IRBuilder, t: types.Type,
                 v: llir.Value) -> list[int | llir.Value]:
    """An id, range, item, nd_item, group or nd_range as print record pieces: its text
    (``{1, 2}``, ``item(range: {..}, id: {..}, offset: {..})``) with ``int64`` numbers."""
    parts = composite_parts(context, builder, t, v)
    texts = ["", ""] if isinstance(t, (IdType, RangeType)) else composite_texts(COMPOSITES[type(t)])
    pieces: list[str | llir.Value] = []
    for text, comps in zip(texts, parts, strict=False):
        pieces.append(text + "{")
        for d, c in enumerate(comps):
            pieces += [c, ", " if d + 1 < len(comps) else "}"]
    pieces.append(texts[-1])
    words: list[int | llir.Value] = []
    text = ""
    for p in pieces:  # adjacent text is one piece
        if isinstance(p, str):
            text += p
            continue
        if text:
            words.extend(text_words(text))
        text = ""
        words.extend(number_words(context, builder, index_type, p))
    return words + (text_words(text) if text else [])


def append_record(builder: llir.IRBuilder, buf: llir.Value, words: list[int | llir.Value]) -> None:
    """Reserve ``len(words)`` words of ``buf`` with one atomic add and store them there,
    or count a dropped record when they do not fit (layout: ``abi.PrintType``)."""
    total = len(words)
    old = builder.atomic_rmw("add", buf, llir.Constant(_I32, total), "monotonic")
    cap = builder.load(builder.gep(buf, [llir.Constant(_I32, 1)], inbounds=True), align=4)
    end = builder.add(old, llir.Constant(_I32, total))
    fits = builder.and_(builder.icmp_unsigned("<=", end, cap),
                        builder.icmp_unsigned(">=", end, old))  # no wrap-around
    with builder.if_else(fits) as (then, otherwise):
        with then:
            base = builder.add(old, llir.Constant(_I32, PRINT_HEADER_WORDS))
            for k, w in enumerate(words):
                at = builder.gep(buf, [builder.add(base, llir.Constant(_I32, k))], inbounds=True)
                if not isinstance(w, llir.Value):  # a word with bit 31 set, as a signed i32
                    w = llir.Constant(_I32, w - (1 << 32) if w >= 1 << 31 else w)
                builder.store(w, at, align=4)
        with otherwise:
            builder.atomic_rmw("add", builder.gep(buf, [llir.Constant(_I32, 2)], inbounds=True),
                               llir.Constant(_I32, 1), "monotonic")


# ``breakpoint()`` stops the host_debuggable device's interpreter; a compiled kernel has no
# debugger to stop in, so there it does nothing (docs/debugging.md) and the runtime warns
# once, naming its line (pysycl._kernels.debugging): the kernel debugged on the host device
# runs unchanged on the others.
@typing_registry.register_global(breakpoint)
class Breakpoint(AbstractTemplate):
    """``breakpoint()`` (no arguments): nothing."""

    def generic(self, args: tuple[types.Type, ...], kws: dict[str, types.Type]) -> Signature | None:
        return signature(types.none) if not args and not kws else None


@lower(breakpoint)
def _breakpoint(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                args: Sequence[llir.Value]) -> llir.Value:
    return context.get_dummy_value()

"""``stream_record(stream, layout, values)``: one ``sycl.stream`` statement's record, typed and lowered.

:mod:`pysycl_numba.streaming` rewrites each ``out << ...`` statement into this
call. The record's size is a compile-time constant, so a statement is one
``atomicrmw add`` reserving its words, then plain stores (the record writer of
kernel ``print``, ``overloads/printing.py``). The record starts with the
work-item's global linear id, by which the runtime collects each work-item's
text until its flush. Ids, ranges, items and vectors are written as their
components; the runtime formats everything (``pysycl._core.streamfmt``).
Layout: ``pysycl._core.abi.StreamType``.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING

from llvmlite import ir as llir

from pysycl._core.abi import (
    PRINT_FORMAT,
    STREAM_ARRAY,
    STREAM_CONTINUES,
    STREAM_MANIP,
    STREAM_SETPRECISION,
    STREAM_SETW,
)
from pysycl._core.streamfmt import composite_texts, stream_manipulator, unsupported
from pysycl_numba._numba_compat import (
    AbstractTemplate,
    LoweringRegistry,
    TypingRegistry,
    cgutils,
    errors,
    signature,
    types,
)
from pysycl_numba.overloads.printing import (
    COMPOSITES,
    append_record,
    composite_parts,
    halves,
    number_code,
    number_words,
    text_words,
)
from pysycl_numba.stream_types import StreamBufferType, StreamLayoutType
from pysycl_numba.streaming import stream_record
from pysycl_numba.targets.spirv import ocl
from pysycl_numba.types import (
    IdType,
    KernelEnumType,
    RangeType,
    index_type,
    tag,
)
from pysycl_numba.vec_types import VecType

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pysycl_numba._numba_compat import BaseContext, Signature

typing_registry = TypingRegistry()
lowering_registry = LoweringRegistry("pysycl.stream")
lower = lowering_registry.lower

_I32 = llir.IntType(32)
_I64 = llir.IntType(64)
Words = list[int | llir.Value]


def _problem(ty: types.Type) -> str | None:
    """Why a stream cannot write a value of type ``ty`` (None if it can)."""
    t = types.unliteral(ty)
    if number_code(t) is not None or isinstance(t, (IdType, RangeType, *COMPOSITES)):
        return None
    if isinstance(t, types.UniTuple) and isinstance(t.dtype, types.Integer) and t.count <= 3:
        return None  # it.get_id()
    if isinstance(t, VecType) and number_code(t.dtype) is not None:
        return None
    if isinstance(t, types.UnicodeType):
        return ("sycl.stream writes string literals, not a str computed in the kernel: "
                "write the literal in each branch (if c: out << \"a\" ... else: out << \"b\")")
    if isinstance(t, KernelEnumType) and isinstance(t.member, stream_manipulator):
        return ("a kernel cannot choose a stream manipulator at run time: write the "
                "manipulator in the << statement itself (out << sycl.hex << x)")
    return unsupported(str(t))


@typing_registry.register_global(stream_record)
class StreamRecord(AbstractTemplate):
    """``stream_record(stream, layout, (values...))`` returns the stream."""

    def generic(self, args: tuple[types.Type, ...], kws: dict[str, types.Type]) -> Signature | None:
        """Values a stream writes, and integer setprecision/setw arguments; else an error."""
        if len(args) != 3 or not isinstance(args[0], StreamBufferType) \
                or not isinstance(args[1], StreamLayoutType) or not isinstance(args[2], types.BaseTuple):
            return None
        vtypes = args[2].types
        for p in args[1].pieces:
            if isinstance(p, tuple) and p[0] == "f":
                if number_code(types.unliteral(vtypes[p[1]])) is None:
                    raise errors.TypingError(
                        "the fields of an f-string written to a sycl.stream must be numbers, "
                        f"not a {vtypes[p[1]]}; write other values with their own <<")
            elif isinstance(p, tuple) and p[0] in "pw":
                if not isinstance(types.unliteral(vtypes[p[1]]), types.Integer):
                    what = "setprecision" if p[0] == "p" else "setw"
                    raise errors.TypingError(f"sycl.{what}(n) takes an integer, not a "
                                             f"{vtypes[p[1]]}")
            elif isinstance(p, int):
                problem = _problem(vtypes[p])
                if problem is not None:
                    raise errors.TypingError(problem)
        return signature(args[0], *args)


@typing_registry.register_global(operator.lshift)
class StreamShift(AbstractTemplate):
    """``s << x`` on a stream the rewrite did not see (taken out of a tuple ...): an error."""

    def generic(self, args: tuple[types.Type, ...], kws: dict[str, types.Type]) -> Signature | None:
        """Raise a clear error for a stream operand; leave everything else to Numba."""
        if args and isinstance(args[0], StreamBufferType):
            raise errors.TypingError("write to a sycl.stream directly, `out << x`, where out is "
                                     "the stream the kernel captures or a helper receives as a "
                                     "parameter (not one taken out of a tuple or container)")
        return None


lowering_registry.lower_constant(StreamLayoutType)(lambda context, builder, ty, pyval: tag())


@lower(stream_record, StreamBufferType, StreamLayoutType, types.BaseTuple)
def lower_stream_record(context: BaseContext, builder: llir.IRBuilder, sig: Signature,
                        args: Sequence[llir.Value]) -> llir.Value:
    """The record ``[n | flags, wid_lo, wid_hi, pieces...]``, written with one reservation."""
    buf, _, values = args
    layout: StreamLayoutType = sig.args[1]
    vtypes = sig.args[2].types
    words: Words = []
    for p in layout.pieces:
        if isinstance(p, str):
            words.extend(text_words(p))
        elif isinstance(p, int):
            words.extend(_value_words(context, builder, vtypes[p], builder.extract_value(values, p)))
        elif p[0] == "m":
            words.append(STREAM_MANIP | (p[1] << 8))
        elif p[0] == "f":  # the number tag's PRINT_FORMAT flag
            number = _value_words(context, builder, vtypes[p[1]], builder.extract_value(values, p[1]))
            words.extend([number[0] | PRINT_FORMAT, *number[1:]])  # type: ignore[operator]
        else:
            v = context.cast(builder, builder.extract_value(values, p[1]), vtypes[p[1]], types.int32)
            words.extend((STREAM_SETPRECISION if p[0] == "p" else STREAM_SETW, v))
    head = (3 + len(words)) | (STREAM_CONTINUES if layout.continues else 0)
    wid = _global_linear_id(builder)
    append_record(builder, buf, [head, *halves(context, builder, wid), *words])
    return buf


def _global_linear_id(builder: llir.IRBuilder) -> llir.Value:
    """The work-item's linear id over the three OpenCL dimensions (any kernel or helper)."""
    ids = [ocl.work_item_query(builder, "get_global_id", d) for d in range(3)]
    sizes = [ocl.work_item_query(builder, "get_global_size", d) for d in range(3)]
    return builder.add(ids[0], builder.mul(sizes[0], builder.add(ids[1],
                                                                 builder.mul(sizes[1], ids[2]))))


def _array(context: BaseContext, builder: llir.IRBuilder, comps: Sequence[llir.Value]) -> Words:
    """An id's or range's ``i64`` components: ``STREAM_ARRAY | (n << 8)``, two words each."""
    words: Words = [STREAM_ARRAY | (len(comps) << 8)]
    for c in comps:
        words.extend(halves(context, builder, c))
    return words


def _value_words(context: BaseContext, builder: llir.IRBuilder, ty: types.Type,
                 v: llir.Value) -> Words:
    """The pieces of one value (the types :func:`_problem` accepts)."""
    t = types.unliteral(ty)
    if t != ty:
        v = context.cast(builder, v, ty, t)
    if number_code(t) is not None:
        return number_words(context, builder, t, v)
    if isinstance(t, (IdType, RangeType)):
        s = cgutils.create_struct_proxy(t)(context, builder, value=v)
        return _array(context, builder, [getattr(s, f"r{d}") for d in range(t.ndim)])
    if isinstance(t, types.UniTuple):
        return _array(context, builder, [context.cast(builder, builder.extract_value(v, d), t.dtype,
                                             index_type) for d in range(t.count)])
    if isinstance(t, VecType):
        words: Words = []
        for k in range(t.n):
            e = builder.extract_element(v, _I32(k))
            if isinstance(t.dtype, types.Boolean):
                e = builder.icmp_unsigned("!=", e, e.type(0))  # bool elements are i8
            words.extend((text_words(", ") if k else []) + number_words(context, builder, t.dtype, e))
        return words
    kind = COMPOSITES[type(t)]
    words = []
    for text, comps in zip(composite_texts(kind), composite_parts(context, builder, t, v), strict=False):
        words.extend(text_words(text) + _array(context, builder, comps))
    return words + text_words(composite_texts(kind)[-1])

"""The contract between the runtime (``pysycl``) and the compiler (``pysycl_numba``).

The runtime finds what a kernel captures (closure cells and referenced
globals), turns each captured *value* into a :class:`Capture` with a hashable
*type* (``AccessorType``/``ScalarType``), and asks the compiler for a
:class:`CompiledKernel`. Captured values are kernel arguments, never
compile-time constants: the compiled SPIR-V entry point takes, in capture
order, the flat OpenCL arguments that :func:`flat_arg_count` describes, and the
runtime sets them from the values on every launch.

Flat OpenCL arguments of one capture, in order:

* ``AccessorType`` with ``space == "global"`` and ``ndim == n``:
  ``T __global *base`` (the buffer), ``long offset`` (linear element offset of
  the accessor's access offset inside the buffer), ``long range[0..n-1]`` (the
  access range, what ``acc.get_range()`` returns), ``long mem_range[1..n-1]``
  (the buffer's range in dimensions 1.., for row-major strides). Element
  ``acc[i0, ..., i{n-1}]`` lives at ``base[offset + linear(i, mem_range)]``.
* ``AccessorType`` with ``space == "local"``: ``T __local *base`` (size set by
  the runtime with ``clSetKernelArg(NULL)``), ``long range[0..n-1]``.
* ``TupleType``: its elements' arguments, in order (a tuple of numbers).
* ``ScalarType``: one argument of the scalar's dtype; ``bool`` travels as
  ``uchar`` (OpenCL forbids ``bool`` kernel arguments); a complex scalar travels
  as two arguments of its component type, real then imaginary part (a by-value
  struct argument crashes Intel's OpenCL CPU compiler, and OpenCL C has no
  complex type), and the entry point reassembles it.
* ``PointerType`` (a captured USM pointer, ``sycl.malloc_*``'s result, or an
  array whose memory the device can use): one ``T __global *`` argument, the
  element the pointer points at (set with ``clSetKernelArgSVMPointer``). Inside
  the kernel ``p[i]`` loads/stores element ``i`` from there (no bounds: C++'s
  ``p[i]``); a ``readonly`` pointer accepts no stores or atomics.
* ``SameAsType(j)`` (a later capture of the local accessor capture ``j`` passes, read by
  a helper too): no argument; it is capture ``j``'s value (the same local memory).
* ``SpecConstantType`` (a captured ``sycl.specialization_id``): no argument; the kernel's
  ``k``-th such capture is the module's ``OpSpecConstant`` with ``SpecId k``. A kernel
  reading spec constants takes a trailing ``kernel_handler`` parameter (no data).

Reductions (``sycl.reduction``, see :class:`ReductionType` and docs/design/compiler.md):
after the captures' arguments, a ``range`` kernel with reductions takes
``long range[0..n-1]`` (the user's range; it is launched as a 1-D ``nd_range`` whose
work-items loop over the items, and work-items with none only contribute identities), a
looped nd_range (``IndexSpace.looped``) ``long global[0..n-1], long local[0..n-1]``, then
every reduction takes ``T identity``, ``T __global *partials`` (one element
per work-group, in group linear order) and ``T __local *scratch`` (one element
per work-item of a work-group). A span reduction (``ReductionType.span``: ``n``
independent reductions, ``sycl.reduction(sycl.span(p, n), op)``) takes ``T identity``,
``T __global *partials`` (``n`` elements per work-group: the group's row, which the
group sets to the identity and its work-items combine into atomically) and ``long n``.
A :func:`single_pass_reduction` kernel adds ``T __global *out, long out_offset, uchar keep,
uint __global *ticket, long ticket_offset`` to each (docs/design/compiler.md).

Index space: a ``range`` kernel (with or without reductions) takes, after the captures'
arguments, ``long range[0..n-1]``: the user's range, which its ``sycl.item`` reports; the
launch is the runtime's (``pysycl._kernels.rangesize``): SPIR-V entry points read ids from
an n-D launch of the range itself, PTX ones loop over the items of a launch the runtime
sized (1-D, or n-D for a 2-D/3-D range: ``pysycl_numba.range_items``). Other
kernels take no index arguments; their ids and ranges come from OpenCL work-item built-ins
with SYCL dimension ``d`` of an ``n``-D range read from OpenCL dimension ``n - 1 - d``
(OpenCL backend appendix, "syclOpenCL.mapping").

Bounds-checked kernels (``CompiledKernel.bounds_checked``, ``PYSYCL_BOUNDS_CHECK=1``)
take one more, last argument: ``int __global *err``, :data:`BOUNDS_ERR_BYTES` bytes, zero
before the launch. Every accessor and local-accessor element access
compares its index with the access range; an access outside it is skipped (a
load gives 0, an atomic works on a scratch word). The first violating work-item
(``atomic_cmpxchg(&err[0], 0, 1)``) writes, as ``long`` words ``((long *) err)[k]``:
``[1]`` the access's site -- bits 0-1: 1 + index into :data:`BOUNDS_ACCESS_KINDS`,
bits 2-9: the capture's position, bits 10-31: the index of its source location in
``CompiledKernel.sites`` (resolved against the submitting program's code,
``pysycl._core.sites``) --; ``[4 + d]`` the index components (as many as
the accessor has dimensions); ``[8 + d]`` its ``get_global_id(d)`` (OpenCL order; a
``range`` kernel: the failing item's linear id in ``d == 0``).
``[7]`` is the scratch word.

Kernels with ``assert`` statements (``CompiledKernel.asserts`` not empty) take the same last
argument (one buffer serves both when a kernel is bounds-checked too). A failing assert's
work-item ends (or, in a kernel that synchronizes its work-group, goes on: docs/debugging.md)
and the entry point publishes it at its end: ``atomic_add(&err[ASSERT_COUNT_INT], failures)``
counts the failing work-items; the first one (``atomic_cmpxchg(&err[ASSERT_FLAG_INT], 0, 1)``) writes,
as ``long`` words, ``[ASSERT_NUMBER_WORD]`` 1 + the assert's index in
``CompiledKernel.asserts``, ``[ASSERT_GID_WORD + d]`` its ``get_global_id(d)``
(OpenCL order; a ``range`` kernel: the failing item's linear id in ``d == 0``),
``[ASSERT_VALUE_WORD + k]`` the bits of the message's ``k``-th number,
zero-extended to 64 (integers sign- or zero-extended by their signedness), at most
:data:`ASSERT_MAX_VALUES` of them.
"""

from __future__ import annotations

import enum
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from pysycl._core.where import location

IndexKind = Literal["range", "nd_range", "single_task", "hierarchical"]

#: Size of a bounds-checked kernel's error buffer (layout in the module docstring).
BOUNDS_ERR_BYTES = 256
#: The assert part of the error buffer (module docstring): ``int`` indices of the
#: first-failure flag and the failure counter, ``long`` indices of the rest.
ASSERT_FLAG_INT, ASSERT_COUNT_INT = 24, 26
ASSERT_NUMBER_WORD, ASSERT_GID_WORD, ASSERT_VALUE_WORD = 14, 15, 18
#: Numbers an assert's message may show (f-string fields).
ASSERT_MAX_VALUES = 14
#: ``err[4]`` of a bounds violation: what the access was.
BOUNDS_ACCESS_KINDS = ("read", "write", "atomic_ref")
#: The attribute that marks a function object's kernel body (``pysycl._kernels.functor``):
#: a copy of its class's ``__call__`` (or of a bound method's function) whose first
#: parameter is the object. The compiler drops that parameter; each ``self.name`` it
#: reads is the capture ``Capture(name="self.name", source="attr")``.
FUNCTOR_ATTR = "__pysycl_functor__"
#: The attribute holding a kernel function's properties (``pysycl._kernels.kprops``:
#: required work-group size, its hint, required sub-group size), set by the decorators.
PROPS_ATTR = "__pysycl_kernel_properties__"
#: Consecutive items along the fastest dimension a work-item of a 2-D or 3-D ``range``
#: kernel's PTX entry point runs (``pysycl_numba.range_items.nd_items``; its launch sized
#: for it, ``pysycl._kernels.rangesize.gpu_sizes``): 1, an item; 4, blocks of 4 with 128-bit
#: accesses where the captures allow them. A variant for benchmarks: the compile caches do
#: not key on it (set it before the first compile, with a fresh ``PYSYCL_CACHE_DIR``); an
#: entry point built for another value still runs every item once.
RANGE_COLUMNS = 1
#: The tile (rows, columns) a work-item of a large 2-D or 3-D ``range`` kernel runs on
#: PTX where ``RANGE_COLUMNS`` is 1 (``pysycl_numba.range_items._tiles``: consecutive
#: rows, columns strided by the work-group's width); the runtime launches tiles where the
#: range is large enough to fill the device with them (``rangesize.gpu_sizes``), an item a
#: work-item elsewhere -- the entry point runs either. A variant for benchmarks like
#: ``RANGE_COLUMNS`` (the compile caches do not key on it).
RANGE_BLOCK = (2, 1)
#: ``DirectIndex.source``: the index is the work-item's global id / its local id.
ID_GLOBAL, ID_LOCAL = 0, 1
AccessMode = Literal["read", "write", "read_write"]


class ArgKind(enum.IntEnum):
    """How one capture becomes OpenCL arguments (the list above), as the launcher sets them.

    An ``IntEnum``: the launcher compares a kernel's kinds on every submit, and
    identity tests of the members cost what integer tests did."""

    #: One scalar argument (``ScalarType`` of a real or bool dtype).
    SCALAR = 0
    #: A global accessor: its ``cl_mem``, then offset and ranges.
    ACCESSOR = 1
    #: A local accessor: ``clSetKernelArg(NULL)`` of its size, then its range.
    LOCAL_ACCESSOR = 2
    #: A ``specialization_id``: no argument (the value lives in the module).
    SPEC_CONSTANT = 3
    #: Several scalars: a complex number's two parts, a tuple's elements.
    SCALARS = 4
    #: A USM pointer: ``clSetKernelArgSVMPointer`` of its address.
    POINTER = 5
    #: No argument: the object an earlier capture passes (:class:`SameAsType`).
    SAME = 6


class ReductionOp(enum.IntEnum):
    """The SYCL function objects a ``sycl.reduction`` combines with (``ReductionType.op``).

    The value is the operator's code in the runtime's final combine kernel
    (one kernel per dtype serves every known operator: the code is its argument)."""

    plus = 0
    multiplies = 1
    minimum = 2
    maximum = 3
    bit_and = 4
    bit_or = 5
    bit_xor = 6
    logical_and = 7
    logical_or = 8


@dataclass(frozen=True)
class IndexSpace:
    """A launch's kind and dimensions (``single_task``: 0); ``looped``: ``pysycl_numba.looped``."""

    kind: IndexKind
    ndim: int
    looped: bool = False


@dataclass(frozen=True)
class AccessorType:
    """Type of a captured accessor: element dtype, dimensions, access mode, memory."""

    dtype: np.dtype
    ndim: int
    mode: AccessMode
    space: Literal["global", "local"] = "global"
    #: A local accessor's per-work-group range, when the kernel is specialised on it
    #: (constant strides in the code, as C++'s fixed-size local tiles); its range
    #: arguments are still passed, and ignored. None for global accessors.
    shape: tuple[int, ...] | None = None

    # Hashed on every submit (it is part of the in-memory cache key): cache the
    # hash, and keep it out of pickles (str hashes differ between processes).
    def __post_init__(self) -> None:
        object.__setattr__(self, "_h", hash((self.dtype, self.ndim, self.mode, self.space,
                                             self.shape)))

    def __hash__(self) -> int:
        return self._h  # type: ignore[attr-defined,no-any-return]

    def __reduce__(self) -> tuple[Any, ...]:
        return (AccessorType, (self.dtype, self.ndim, self.mode, self.space, self.shape))

    def flat_arg_count(self) -> int:
        """Number of OpenCL kernel arguments this capture occupies."""
        if self.space == "local":
            return 1 + self.ndim
        return 2 + self.ndim + (self.ndim - 1)


@dataclass(frozen=True)
class ScalarType:
    """Type of a captured scalar (Python or numpy number, or bool)."""

    dtype: np.dtype

    def __post_init__(self) -> None:
        object.__setattr__(self, "_h", hash(("scalar", self.dtype)))

    def __hash__(self) -> int:
        return self._h  # type: ignore[attr-defined,no-any-return]

    def __reduce__(self) -> tuple[Any, ...]:
        return (ScalarType, (self.dtype,))

    def flat_arg_count(self) -> int:
        """Number of OpenCL kernel arguments this capture occupies (2 for complex)."""
        return 2 if self.dtype.kind == "c" else 1

    def flat_dtypes(self) -> tuple[np.dtype, ...]:
        """The dtypes of its OpenCL arguments (``bool`` as ``uint8``, complex split)."""
        if self.dtype.kind == "c":
            part = np.dtype(np.float32 if self.dtype.itemsize == 8 else np.float64)
            return (part, part)
        return (np.dtype(np.uint8) if self.dtype == np.bool_ else self.dtype,)


@dataclass(frozen=True)
class TupleType:
    """Type of a captured tuple of numbers (tuples of them nest): its elements' types.

    Its OpenCL arguments are its elements' arguments, in order (flattened
    depth-first); the entry point rebuilds the tuple."""

    elements: tuple[ScalarType | TupleType, ...]

    def flat_arg_count(self) -> int:
        """Number of OpenCL kernel arguments this capture occupies."""
        return sum(e.flat_arg_count() for e in self.elements)

    def flat_dtypes(self) -> tuple[np.dtype, ...]:
        """The dtypes of its OpenCL arguments, in order."""
        return tuple(d for e in self.elements for d in e.flat_dtypes())


@dataclass(frozen=True)
class PointerType:
    """Type of a captured USM pointer: its element dtype, and whether it is read-only.

    One OpenCL argument, ``T __global *`` (address space 1), pointing at the
    pointer's first element; kernels index it ``p[i]`` (loads, stores,
    ``sycl.atomic_ref(p, i, ...)``). ``readonly`` pointers (a read-only numpy
    array's memory) accept loads only."""

    dtype: np.dtype
    readonly: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "_h", hash(("pointer", self.dtype, self.readonly)))

    def __hash__(self) -> int:
        return self._h  # type: ignore[attr-defined,no-any-return]

    def __reduce__(self) -> tuple[Any, ...]:
        return (PointerType, (self.dtype, self.readonly))

    def flat_arg_count(self) -> int:
        """Number of OpenCL kernel arguments this capture occupies."""
        return 1


@dataclass(frozen=True)
class SpecConstantType:
    """Type of a captured ``sycl.specialization_id``: no OpenCL argument.

    The compiler numbers a kernel's ``SpecConstantType`` captures ``0, 1, ...``
    in capture order: that number is the ``SpecId`` of the ``OpSpecConstant``
    that ``kh.get_specialization_constant(spec_id)`` reads, and ``default``
    (a Python ``bool``/``int``/``float`` of ``dtype``) its default literal.
    The runtime applies values with ``clSetProgramSpecializationConstant`` or
    by rewriting those literals (``pysycl._kernels.specconst``).
    """

    dtype: np.dtype
    default: bool | int | float

    def flat_arg_count(self) -> int:
        """Number of OpenCL kernel arguments (none: the value lives in the module)."""
        return 0


@dataclass(frozen=True)
class PrintType:
    """Type of the builtin ``print`` a kernel (or helper) calls: its output buffer.

    One OpenCL argument, ``uint __global *out``, a fresh buffer of
    :data:`PRINT_BUFFER_WORDS` 32-bit words per launch: ``out[0]`` the words used
    (an atomic counter; it may pass the capacity), ``out[1]`` the capacity in words
    after the header, ``out[2]`` the number of records dropped for lack of space,
    ``out[3]`` zero. From ``out[PRINT_HEADER_WORDS]`` on, records: each ``print``
    call appends one, atomically reserved, ``[n, piece...]`` with ``n`` the record's
    words (``n`` itself included). A piece is a tag word then its payload: tag
    ``PRINT_STR | (nbytes << 8)`` then the UTF-8 bytes in ``ceil(nbytes / 4)``
    words (a string literal, a ``sep`` or an ``end``); tag ``PRINT_NUMBER + k``
    (``k`` the index of the value's dtype in :data:`PRINT_DTYPES`) then two words,
    the value's bits zero-extended to 64 (integers sign- or zero-extended by
    their signedness). The host formats each number with ``str(dtype.type(v))``,
    as Python's ``print`` of the same numpy scalar, or, where the tag has
    :data:`PRINT_FORMAT` (an f-string field), ``format(dtype.type(v), "")`` as
    ``f"{v}"`` does (numpy's float32 ``0.1`` is ``0.10000000149011612`` there).
    """

    def flat_arg_count(self) -> int:
        """Number of OpenCL kernel arguments this capture occupies."""
        return 1


#: The print buffer's size in 32-bit words (1 MiB), header included.
PRINT_BUFFER_WORDS = 1 << 18
PRINT_HEADER_WORDS = 4
PRINT_STR = 1
PRINT_NUMBER = 2
#: Flag of a number piece's tag, in print and stream records: an f-string's field,
#: formatted as Python's ``f"{x}"`` (``format(v, "")``).
PRINT_FORMAT = 1 << 8
#: The dtypes ``print`` takes in kernels, in tag order (bool, ints, floats).
PRINT_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                "float16", "float32", "float64")



@dataclass(frozen=True)
class StreamType:
    """Type of a captured ``sycl.stream``: its launch's output buffer.

    One OpenCL argument, ``uint __global *out``, a fresh buffer per launch whose
    capacity follows the stream's ``total_buffer_size``
    (``pysycl._kernels.kstream``). Header as :class:`PrintType`'s. Each
    ``out << a << b ...`` statement appends one record, atomically reserved:
    ``[n | flags, wid_lo, wid_hi, piece...]`` -- ``n`` the record's words,
    ``flags`` :data:`STREAM_CONTINUES` when the record continues the work-item's
    previous statement (a chain split by a conditional expression), ``wid`` the
    work-item's global linear id over the three OpenCL dimensions. Pieces are
    :class:`PrintType`'s text and number pieces, and: tag ``STREAM_MANIP |
    (code << 8)`` (``code`` a ``stream_manipulator`` value); tag
    ``STREAM_SETPRECISION`` / ``STREAM_SETW`` then the ``int32`` argument; tag
    ``STREAM_ARRAY | (count << 8)`` then ``count`` 64-bit components of an id or
    range (two words each, low word first). A number piece whose tag has
    :data:`PRINT_FORMAT` set is an f-string's field, formatted as Python's ``f"{x}"``.
    """

    def flat_arg_count(self) -> int:
        """Number of OpenCL kernel arguments this capture occupies."""
        return 1


STREAM_MANIP = 16
STREAM_SETPRECISION = 17
STREAM_SETW = 18
STREAM_ARRAY = 19
#: Flag of a stream record's first word: it continues the work-item's previous statement.
STREAM_CONTINUES = 1 << 31

@dataclass(frozen=True)
class SameAsType:
    """Type of a capture of the object that the earlier capture ``index`` passes: no argument.

    Local memory belongs to a kernel argument: a ``local_accessor`` the kernel reads and a
    helper reads too (its closure cell, a global) would be two arguments with two
    allocations, and the helper would see other memory. The runtime types every later
    capture of one local accessor object this way; the compiler gives it the value of
    capture ``index`` (same pointer, ranges and bounds-checked slot).
    """

    index: int

    def flat_arg_count(self) -> int:
        """Number of OpenCL kernel arguments (none: capture ``index`` has them)."""
        return 0

    def flat_dtypes(self) -> tuple[np.dtype, ...]:
        """The dtypes of its OpenCL arguments (none)."""
        return ()


CaptureType = (AccessorType | ScalarType | TupleType | PointerType | SpecConstantType | PrintType
               | StreamType | SameAsType)


@dataclass(frozen=True)
class ReductionType:
    """Type of one ``sycl.reduction`` of a kernel: element dtype and operator.

    ``op`` is a known SYCL function object's name (a :class:`ReductionOp` name:
    ``"plus"``, ``"multiplies"``, ``"minimum"``, ``"maximum"``, ``"bit_and"``,
    ``"bit_or"``, ``"bit_xor"``, ``"logical_and"``, ``"logical_or"``) or
    ``"custom"`` (a Python function; the runtime hands the function itself to
    the compiler beside this type).
    """

    dtype: np.dtype
    op: str
    #: a span reduction (``sycl.reduction(sycl.span(p, n), op)``): the kernel's reducer is
    #: indexed, ``r[i].combine(x)``; its arguments end with ``long n``, not local scratch
    span: bool = False

    def flat_arg_count(self) -> int:
        """Arguments of one reduction: identity, partials, local scratch (or n); 5 more in a
        :func:`single_pass_reduction` kernel."""
        return 3


def single_pass_reduction(ptx: bool, spans: bool) -> bool:
    """Whether reductions finish in their kernel (``ptx``: a PTX image; ``spans``: a span
    reduction): the last work-group folds the partials (docs/design/compiler.md)."""
    return ptx and not spans


@dataclass(frozen=True)
class Capture:
    """One captured variable that becomes a kernel argument.

    Attributes:
        name: the variable's name in the code that reads it.
        source: ``"freevar"`` for a closure cell, ``"global"`` for a module global,
            ``"attr"`` for an attribute of a function object (``name`` is ``"self.x"``),
            ``"default"`` for the default value of a helper's parameter ``name``
            (read where a call leaves the parameter out).
        type: the capture's type; the compiler types the variable with it.
        owner: which function reads it: 0 is the kernel itself, ``k > 0`` the
            ``k``-th function of the kernel's call graph (the helper functions
            it calls, directly or not, numbered in the order the runtime's
            capture walk meets them; see ``compile_kernel(helpers=...)``).
            A helper's captures are hidden parameters of that helper, passed
            down from the kernel's arguments by every call.
    """

    name: str
    source: Literal["freevar", "global", "attr", "default"]
    type: CaptureType
    owner: int = 0


@dataclass(frozen=True)
class CompiledKernel:
    """A kernel compiled to one device image format.

    Attributes:
        binary: the module: SPIR-V words as bytes for ``format == "spirv"``,
            PTX text (ASCII) for ``format == "ptx"``.
        format: the device image format, ``"spirv"`` or ``"ptx"``.
        entry: the kernel entry point's name inside ``binary``.
        captures: the captures, in kernel-argument order.
        index: the index space it was compiled for.
        required_aspects: names of ``pysycl.aspect`` members the code needs
            (``"fp16"`` if it uses float16, ``"fp64"`` if float64, ...).
        source_location: ``"file:line"`` of the kernel's definition.
        reductions: the kernel's reductions, in parameter order (empty for
            kernels without ``sycl.reduction``).
        direct_index: accessor dimensions every work-item indexes with its own
            id, unmodified (``acc[i]``, ``acc[it]``, ``acc[it.get_global_id(0)]``)
            in code that every work-item runs: ``(capture position, accessor
            dimension, ID_GLOBAL or ID_LOCAL, launch dimension, index into ``sites``)``.
            The launcher rejects a launch whose range exceeds such an
            accessor's range before anything is enqueued.
        bounds_checked: compiled in bounds-checked mode (the entry point takes
            the error buffer as its last argument).
        arch: the image's architecture within its format: ``"sm_90"`` for PTX
            (the device's compute capability), ``""`` for SPIR-V.
        asserts: the kernel's ``assert`` statements (its helpers' too), as
            ``(index into sites, pieces)``: ``pieces`` is None for an assert without
            a message (the runtime shows its source line), else its message: ``str``
            pieces and, for each number, its tag ``PRINT_NUMBER + k`` (``k`` the
            index of its dtype in :data:`PRINT_DTYPES`), in value order.
        sites: the source locations ``direct_index``, the bounds-checked accesses
            and the asserts refer to, as ``pysycl._core.sites.Site``s: instructions of the kernel's code
            objects, resolved to ``file:line`` with the code of the program that submits
            it (the same compiled kernel serves programs in other files or at other lines).
    """

    binary: bytes
    format: str
    entry: str
    captures: tuple[Capture, ...]
    index: IndexSpace
    required_aspects: frozenset[str] = field(default_factory=frozenset)
    source_location: str = ""
    reductions: tuple[ReductionType, ...] = ()
    direct_index: tuple[tuple[int, int, int, int, int], ...] = ()
    bounds_checked: bool = False
    arch: str = ""
    sites: tuple[tuple[int, int, str], ...] = ()
    asserts: tuple[tuple[int, tuple[str | int, ...] | None], ...] = ()
    #: ``(reqd_work_group_size, work_group_size_hint, reqd_sub_group_size, mads_in_flight)``
    #: in SYCL's order (``()`` / 0 where not given); see ``pysycl._kernels.kprops``.
    properties: tuple[tuple[int, ...], tuple[int, ...], int, int] = ((), (), 0, 0)


def flat_arg_count(captures: tuple[Capture, ...]) -> int:
    """Total number of OpenCL kernel arguments of ``captures``."""
    return sum(c.type.flat_arg_count() for c in captures)


def arg_kind(t: CaptureType) -> ArgKind:
    """How a capture of type ``t`` is passed (see :class:`ArgKind`)."""
    if isinstance(t, SpecConstantType):
        return ArgKind.SPEC_CONSTANT
    if isinstance(t, SameAsType):
        return ArgKind.SAME
    if isinstance(t, AccessorType):
        return ArgKind.LOCAL_ACCESSOR if t.space == "local" else ArgKind.ACCESSOR
    if isinstance(t, PointerType):
        return ArgKind.POINTER
    if isinstance(t, (PrintType, StreamType)):  # one argument, set as is: the launch's buffer
        return ArgKind.SCALAR
    if isinstance(t, ScalarType) and t.flat_arg_count() == 1:
        return ArgKind.SCALAR
    return ArgKind.SCALARS


class _Lifted:
    """Stands in a compiled copy's closure for a capture that becomes a kernel argument."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<kernel argument {self.name}>"


def detached(fn: types.FunctionType, captures: tuple[Capture, ...]) -> types.FunctionType:

    """A copy of ``fn`` for the compiler, whose closure holds no captured value.

    Numba keeps the function it compiles in objects that form reference cycles;
    compiling the user's function itself would tie its closure — accessors,
    buffers, host arrays — to garbage only the cyclic collector frees, and delay
    the buffers' write-back. Captures that become kernel arguments are never read
    by the compiler, so the copy's cells hold placeholders; compile-time
    constants (helper functions, modules) stay.
    """
    closure = fn.__closure__
    if not closure:
        return fn
    lifted = {c.name for c in captures if c.source == "freevar" and c.owner == 0}
    cells = tuple(types.CellType(_Lifted(n)) if n in lifted else c
                  for n, c in zip(fn.__code__.co_freevars, closure, strict=True))
    copy = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, cells)
    copy.__qualname__ = fn.__qualname__
    copy.__kwdefaults__ = fn.__kwdefaults__
    if getattr(fn, FUNCTOR_ATTR, False):
        setattr(copy, FUNCTOR_ATTR, True)
    props = getattr(fn, PROPS_ATTR, None)
    if props is not None:
        setattr(copy, PROPS_ATTR, props)
    return copy


def source_location(fn: Callable[..., object]) -> str:
    """``file:line`` of a Python function's definition."""
    code = fn.__code__
    return location(code.co_filename, code.co_firstlineno)


def nested_codes(code: types.CodeType) -> Iterator[types.CodeType]:
    """``code``, then the code of every function defined in it, however deep.

    Nested ``def``s and lambdas are compiled with the function that defines them, so
    what they read counts as that function's (captures, ``self.x`` of a function object).
    """
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from nested_codes(c)


#: Why a kernel may not return a value (the compiler's and the host device's message).
KERNEL_RESULT_HINT = ("a kernel returns nothing: it writes its results through an accessor "
                      "or a USM pointer (o[i] = value, or in a lambda o.__setitem__(i, value)); "
                      "the value a kernel returns would be lost")

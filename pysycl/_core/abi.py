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
* ``SpecConstantType`` (a captured ``sycl.specialization_id``): no argument;
  the kernel's ``k``-th such capture is the module's ``OpSpecConstant`` with
  ``SpecId k``. A kernel reading spec constants takes a trailing
  ``kernel_handler`` parameter, which carries no data.

Reductions (``sycl.reduction``, see :class:`ReductionType` and docs/design/compiler.md):
after the captures' arguments, a ``range`` kernel with reductions takes
``long range[0..n-1]`` (the user's range; it is launched as a padded 1-D
``nd_range`` and work-items past the range only contribute identities), then
every reduction takes ``T identity``, ``T __global *partials`` (one element
per work-group, in group linear order) and ``T __local *scratch`` (one element
per work-item of a work-group).

Index space: the entry point takes no index arguments; ids and ranges come from
OpenCL work-item built-ins with SYCL dimension ``d`` of an ``n``-D range read
from OpenCL dimension ``n - 1 - d`` (OpenCL backend appendix, "syclOpenCL.mapping").

Bounds-checked kernels (``CompiledKernel.bounds_checked``, ``PYSYCL_BOUNDS_CHECK=1``)
take one more, last argument: ``int __global *err``, :data:`BOUNDS_ERR_BYTES`
bytes, zero before the launch. Every accessor and local-accessor element access
compares its index with the access range; an access outside it is skipped (a
load gives 0, an atomic works on a scratch word). The first violating work-item
(``atomic_cmpxchg(&err[0], 0, 1)``) writes, as ``long`` words ``((long *) err)[k]``:
``[1]`` the access's site -- bits 0-1: 1 + index into :data:`BOUNDS_ACCESS_KINDS`,
bits 2-9: the capture's position, bits 10-31: the source line, bits 32-63: the
CRC-32 of the source file's name --; ``[4 + d]`` the index components (as many as
the accessor has dimensions); ``[8 + d]`` its ``get_global_id(d)`` (OpenCL order).
``[7]`` is the scratch word.
"""

from __future__ import annotations

import enum
import re
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

IndexKind = Literal["range", "nd_range", "single_task"]

#: Size of a bounds-checked kernel's error buffer (layout in the module docstring).
BOUNDS_ERR_BYTES = 96
#: ``err[4]`` of a bounds violation: what the access was.
BOUNDS_ACCESS_KINDS = ("read", "write", "atomic_ref")
#: ``DirectIndex.source``: the index is the work-item's global id / its local id.
ID_GLOBAL, ID_LOCAL = 0, 1
AccessMode = Literal["read", "write", "read_write"]


class ArgKind(enum.IntEnum):
    """How one capture becomes OpenCL arguments (the list above), as the launcher sets them.

    An ``IntEnum``: the launcher compares a kernel's kinds on every submit, and
    identity tests of the members cost what integer tests did.
    """

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


class ReductionOp(enum.IntEnum):
    """The SYCL function objects a ``sycl.reduction`` combines with (``ReductionType.op``).

    The value is the operator's code in the runtime's final combine kernel
    (one kernel per dtype serves every known operator: the code is its argument).
    """

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
    """The kind and dimensionality of a launch (``single_task`` has ``ndim == 0``)."""

    kind: IndexKind
    ndim: int


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
    depth-first); the entry point rebuilds the tuple.
    """

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
    array's memory) accept loads only.
    """

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


CaptureType = AccessorType | ScalarType | TupleType | PointerType | SpecConstantType


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

    def flat_arg_count(self) -> int:
        """OpenCL arguments of one reduction: identity, partials, local scratch."""
        return 3


@dataclass(frozen=True)
class Capture:
    """One captured variable that becomes a kernel argument.

    Attributes:
        name: the variable's name in the code that reads it.
        source: ``"freevar"`` for a closure cell, ``"global"`` for a module global.
        type: the capture's type; the compiler types the variable with it.
        owner: which function reads it: 0 is the kernel itself, ``k > 0`` the
            ``k``-th function of the kernel's call graph (the helper functions
            it calls, directly or not, numbered in the order the runtime's
            capture walk meets them; see ``compile_kernel(helpers=...)``).
            A helper's captures are hidden parameters of that helper, passed
            down from the kernel's arguments by every call.
    """

    name: str
    source: Literal["freevar", "global"]
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
            dimension, ID_GLOBAL or ID_LOCAL, launch dimension, source line)``.
            The launcher rejects a launch whose range exceeds such an
            accessor's range before anything is enqueued.
        bounds_checked: compiled in bounds-checked mode (the entry point takes
            the error buffer as its last argument).
        arch: the image's architecture within its format: ``"sm_90"`` for PTX
            (the device's compute capability), ``""`` for SPIR-V.
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


def flat_arg_count(captures: tuple[Capture, ...]) -> int:
    """Total number of OpenCL kernel arguments of ``captures``."""
    return sum(c.type.flat_arg_count() for c in captures)


def arg_kind(t: CaptureType) -> ArgKind:
    """How a capture of type ``t`` is passed (see :class:`ArgKind`)."""
    if isinstance(t, SpecConstantType):
        return ArgKind.SPEC_CONSTANT
    if isinstance(t, AccessorType):
        return ArgKind.LOCAL_ACCESSOR if t.space == "local" else ArgKind.ACCESSOR
    if isinstance(t, PointerType):
        return ArgKind.POINTER
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
    return copy


def source_location(fn: Callable[..., object]) -> str:
    """``file:line`` of a Python function's definition."""
    code = fn.__code__
    return f"{code.co_filename}:{code.co_firstlineno}"


# ------------------------------------------------------- plain-data form (disk cache)
#: Version of the plain form below; an entry of another version is rebuilt, never read.
PLAIN_SCHEMA = 2

_DTYPE_RE = re.compile(r"[<>|=]?[biufc][0-9]{1,2}")
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.$]{0,200}")
_REDUCTION_OPS = frozenset([*(op.name for op in ReductionOp), "custom"])


def _dtype_to_plain(dt: np.dtype) -> str:
    return np.dtype(dt).str


def _dtype_from_plain(v: object) -> np.dtype:
    # Only plain numeric dtype strings: never a structured, object or void dtype.
    if not isinstance(v, str) or not _DTYPE_RE.fullmatch(v):
        raise ValueError(f"not a numeric dtype: {v!r}")
    return np.dtype(v)


def _default_to_plain(v: bool | int | float) -> dict[str, object]:
    if isinstance(v, (bool, np.bool_)):
        return {"bool": bool(v)}
    if isinstance(v, (int, np.integer)):
        return {"int": int(v)}
    return {"float": float(v).hex()}  # exact, NaN and infinities included


def _default_from_plain(d: object) -> bool | int | float:
    if isinstance(d, dict) and len(d) == 1:
        ((k, v),) = d.items()
        if k == "bool" and isinstance(v, bool):
            return v
        if k == "int" and isinstance(v, int) and not isinstance(v, bool):
            return v
        if k == "float" and isinstance(v, str):
            return float.fromhex(v)
    raise ValueError(f"not a spec constant default: {d!r}")


def _type_to_plain(t: CaptureType) -> dict[str, object]:
    if isinstance(t, AccessorType):
        plain: dict[str, object] = {"kind": "accessor", "dtype": _dtype_to_plain(t.dtype),
                                    "ndim": t.ndim, "mode": t.mode, "space": t.space}
        if t.shape is not None:
            plain["shape"] = list(t.shape)
        return plain
    if isinstance(t, ScalarType):
        return {"kind": "scalar", "dtype": _dtype_to_plain(t.dtype)}
    if isinstance(t, SpecConstantType):
        return {"kind": "spec_constant", "dtype": _dtype_to_plain(t.dtype),
                "default": _default_to_plain(t.default)}
    if isinstance(t, TupleType):
        return {"kind": "tuple", "elements": [_type_to_plain(e) for e in t.elements]}
    if isinstance(t, PointerType):
        return {"kind": "pointer", "dtype": _dtype_to_plain(t.dtype), "readonly": t.readonly}
    raise TypeError(f"no plain form for capture type {type(t).__name__}")


def _fields(d: object, keys: set[str], what: str) -> dict[str, Any]:
    if not isinstance(d, dict) or set(d) != keys:
        raise ValueError(f"{what}: expected the fields {sorted(keys)}, got {d!r:.200}")
    return d


def _int(v: object, lo: int, hi: int, what: str) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
        raise ValueError(f"{what}: {v!r} is not an integer in {lo}..{hi}")
    return v


def _choice(v: object, allowed: frozenset[str] | tuple[str, ...], what: str) -> Any:
    if not isinstance(v, str) or v not in allowed:
        raise ValueError(f"{what}: {v!r} is not one of {sorted(allowed)}")
    return v


def _type_from_plain(d: object, depth: int = 0) -> CaptureType:
    # A closed set of type names, checked one by one: nothing is looked up by name.
    kind = d.get("kind") if isinstance(d, dict) else None
    if kind == "accessor":
        keys = {"kind", "dtype", "ndim", "mode", "space"}
        f = _fields(d, keys | {"shape"} if isinstance(d, dict) and "shape" in d else keys,
                    "accessor type")
        ndim = _int(f["ndim"], 1, 3, "ndim")
        shape = None
        if "shape" in f:
            if not isinstance(f["shape"], list) or len(f["shape"]) != ndim:
                raise ValueError(f"accessor type: shape {f['shape']!r:.50} is not {ndim} sizes")
            shape = tuple(_int(n, 0, 1 << 31, "shape") for n in f["shape"])
        return AccessorType(_dtype_from_plain(f["dtype"]), ndim,
                            _choice(f["mode"], ("read", "write", "read_write"), "mode"),
                            _choice(f["space"], ("global", "local"), "space"), shape)
    if kind == "scalar":
        f = _fields(d, {"kind", "dtype"}, "scalar type")
        return ScalarType(_dtype_from_plain(f["dtype"]))
    if kind == "pointer":
        f = _fields(d, {"kind", "dtype", "readonly"}, "pointer type")
        if not isinstance(f["readonly"], bool):
            raise ValueError(f"pointer type: readonly must be a bool, got {f['readonly']!r:.50}")
        return PointerType(_dtype_from_plain(f["dtype"]), f["readonly"])
    if kind == "spec_constant":
        f = _fields(d, {"kind", "dtype", "default"}, "spec constant type")
        return SpecConstantType(_dtype_from_plain(f["dtype"]), _default_from_plain(f["default"]))
    if kind == "tuple" and depth < 8:
        f = _fields(d, {"kind", "elements"}, "tuple type")
        if not isinstance(f["elements"], list) or len(f["elements"]) > 256:
            raise ValueError("tuple type: elements must be a list of at most 256 types")
        elements = tuple(_type_from_plain(e, depth + 1) for e in f["elements"])
        if not all(isinstance(e, (ScalarType, TupleType)) for e in elements):
            raise ValueError("tuple type: elements must be numbers or tuples")
        return TupleType(elements)  # type: ignore[arg-type]
    raise ValueError(f"unknown capture type {kind!r:.100}")


def _str(v: object, what: str, pattern: re.Pattern[str] | None = None) -> str:
    if not isinstance(v, str) or (pattern is not None and not pattern.fullmatch(v)):
        raise ValueError(f"{what}: {v!r:.100} is not a valid string")
    return v


def kernel_to_plain(k: CompiledKernel) -> dict[str, object]:
    """``k`` without its binary as JSON-ready plain data (see :func:`kernel_from_plain`)."""
    return {
        "schema": PLAIN_SCHEMA,
        "format": k.format,
        "entry": k.entry,
        "captures": [{"name": c.name, "source": c.source, "owner": c.owner,
                      "type": _type_to_plain(c.type)} for c in k.captures],
        "index": {"kind": k.index.kind, "ndim": k.index.ndim},
        "required_aspects": sorted(k.required_aspects),
        "source_location": k.source_location,
        "reductions": [{"dtype": _dtype_to_plain(r.dtype), "op": r.op} for r in k.reductions],
        "direct_index": [list(t) for t in k.direct_index],
        "bounds_checked": k.bounds_checked,
        "arch": k.arch,
    }


def kernel_from_plain(d: object, binary: bytes) -> CompiledKernel:
    """The :class:`CompiledKernel` that :func:`kernel_to_plain` gave ``d`` for, with ``binary``.

    Every field is checked against the schema: an unknown schema version, an
    unknown capture type or a value out of range raises ``ValueError``. Nothing
    is imported or looked up by a name read from ``d``.
    """
    f = _fields(d, {"schema", "format", "entry", "captures", "index", "required_aspects",
                    "source_location", "reductions", "direct_index", "bounds_checked", "arch"},
                "compiled kernel")
    if f["schema"] != PLAIN_SCHEMA:
        raise ValueError(f"schema {f['schema']!r:.20}, not {PLAIN_SCHEMA}")
    if not isinstance(f["captures"], list) or not isinstance(f["reductions"], list) or \
            not isinstance(f["required_aspects"], list):
        raise ValueError("captures, reductions and required_aspects must be lists")
    captures = []
    for c in f["captures"]:
        cf = _fields(c, {"name", "source", "owner", "type"}, "capture")
        captures.append(Capture(_str(cf["name"], "capture name", _NAME_RE),
                                _choice(cf["source"], ("freevar", "global"), "capture source"),
                                _type_from_plain(cf["type"]),
                                _int(cf["owner"], 0, 1 << 16, "capture owner")))
    idx = _fields(f["index"], {"kind", "ndim"}, "index space")
    reductions = []
    for r in f["reductions"]:
        rf = _fields(r, {"dtype", "op"}, "reduction")
        reductions.append(ReductionType(_dtype_from_plain(rf["dtype"]),
                                        _choice(rf["op"], _REDUCTION_OPS, "reduction op")))
    fmt = _choice(f["format"], ("spirv", "ptx"), "format")
    if (fmt == "ptx") != bool(f["arch"]):
        raise ValueError(f"format {fmt} with architecture {f['arch']!r:.20}")
    return CompiledKernel(
        binary=bytes(binary),
        format=fmt,
        entry=_str(f["entry"], "entry point", _NAME_RE),
        captures=tuple(captures),
        index=IndexSpace(_choice(idx["kind"], ("range", "nd_range", "single_task"), "index"),
                         _int(idx["ndim"], 0, 3, "index ndim")),
        required_aspects=frozenset(_str(a, "aspect", _NAME_RE) for a in f["required_aspects"]),
        source_location=_str(f["source_location"], "source location"),
        reductions=tuple(reductions),
        direct_index=tuple(_direct_index_from_plain(t) for t in _list(f["direct_index"])),
        bounds_checked=_bool(f["bounds_checked"], "bounds_checked"),
        arch=_str(f["arch"], "architecture", _ARCH_RE),
    )


_ARCH_RE = re.compile(r"(sm_[0-9]{2,3}[a-z]?)?")


def _list(v: object) -> list[Any]:
    if not isinstance(v, list):
        raise ValueError(f"expected a list, not {type(v).__name__}")
    return v


def _bool(v: object, what: str) -> bool:
    if type(v) is not bool:
        raise ValueError(f"{what} must be true or false")
    return v


def _direct_index_from_plain(v: object) -> tuple[int, int, int, int, int]:
    t = _list(v)
    if len(t) != 5:
        raise ValueError("a direct_index entry has five numbers")
    return (_int(t[0], 0, 1 << 16, "capture position"), _int(t[1], 0, 2, "accessor dimension"),
            _int(t[2], 0, 1, "id kind"), _int(t[3], 0, 2, "launch dimension"),
            _int(t[4], 0, 1 << 31, "source line"))

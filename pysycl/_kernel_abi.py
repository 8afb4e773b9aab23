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
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

IndexKind = Literal["range", "nd_range", "single_task"]
AccessMode = Literal["read", "write", "read_write"]


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

    # Hashed on every submit (it is part of the in-memory cache key): cache the
    # hash, and keep it out of pickles (str hashes differ between processes).
    def __post_init__(self) -> None:
        object.__setattr__(self, "_h", hash((self.dtype, self.ndim, self.mode, self.space)))

    def __hash__(self) -> int:
        return self._h  # type: ignore[attr-defined,no-any-return]

    def __reduce__(self) -> tuple[Any, ...]:
        return (AccessorType, (self.dtype, self.ndim, self.mode, self.space))

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
class SpecConstantType:
    """Type of a captured ``sycl.specialization_id``: no OpenCL argument.

    The compiler numbers a kernel's ``SpecConstantType`` captures ``0, 1, ...``
    in capture order: that number is the ``SpecId`` of the ``OpSpecConstant``
    that ``kh.get_specialization_constant(spec_id)`` reads, and ``default``
    (a Python ``bool``/``int``/``float`` of ``dtype``) its default literal.
    The runtime applies values with ``clSetProgramSpecializationConstant`` or
    by rewriting those literals (``pysycl._specconst``).
    """

    dtype: np.dtype
    default: bool | int | float

    def flat_arg_count(self) -> int:
        """Number of OpenCL kernel arguments (none: the value lives in the module)."""
        return 0


CaptureType = AccessorType | ScalarType | TupleType | SpecConstantType


@dataclass(frozen=True)
class ReductionType:
    """Type of one ``sycl.reduction`` of a kernel: element dtype and operator.

    ``op`` is a known SYCL function object's name (``"plus"``, ``"multiplies"``,
    ``"minimum"``, ``"maximum"``, ``"bit_and"``, ``"bit_or"``, ``"bit_xor"``,
    ``"logical_and"``, ``"logical_or"``) or ``"custom"`` (a Python function;
    the runtime hands the function itself to the compiler beside this type).
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
        binary: the module (SPIR-V words as bytes for ``format == "spirv"``).
        format: ``"spirv"`` (room for ``"ptx"``).
        entry: the kernel entry point's name inside ``binary``.
        captures: the captures, in kernel-argument order.
        index: the index space it was compiled for.
        required_aspects: names of ``pysycl.aspect`` members the code needs
            (``"fp16"`` if it uses float16, ``"fp64"`` if float64, ...).
        source_location: ``"file:line"`` of the kernel's definition.
        reductions: the kernel's reductions, in parameter order (empty for
            kernels without ``sycl.reduction``).
    """

    binary: bytes
    format: str
    entry: str
    captures: tuple[Capture, ...]
    index: IndexSpace
    required_aspects: frozenset[str] = field(default_factory=frozenset)
    source_location: str = ""
    reductions: tuple[ReductionType, ...] = ()


def flat_arg_count(captures: tuple[Capture, ...]) -> int:
    """Total number of OpenCL kernel arguments of ``captures``."""
    return sum(c.type.flat_arg_count() for c in captures)


def source_location(fn: Callable[..., object]) -> str:
    """``file:line`` of a Python function's definition."""
    code = fn.__code__
    return f"{code.co_filename}:{code.co_firstlineno}"

"""Numba types of ``sycl.stream`` in kernels: the stream (its launch's buffer) and a statement's layout.

* :class:`StreamBufferType` -- a captured ``sycl.stream``: one ``uint addrspace(1)*``,
  the flat kernel argument of ``pysycl._core.abi.StreamType``. It may be passed to
  helper functions like any value.
* :class:`StreamLayoutType` -- the compile-time layout of one ``out << a << b ...``
  statement (:class:`pysycl_numba.streaming.StreamLayout`).

Kept apart from :mod:`pysycl_numba.types`; :func:`register_models` adds their data
models to the target's manager.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir as llir

from pysycl_numba._numba_compat import models, types
from pysycl_numba.types import ADDRSPACE_GLOBAL, USMPointerType

if TYPE_CHECKING:
    from pysycl_numba._numba_compat import DataModelManager

#: A piece of a statement's layout: literal text, the position of a value in the
#: statement's value tuple, or ``(kind, x)``: ``("m", code)`` a manipulator,
#: ``("p", position)`` / ``("w", position)`` the value of ``setprecision`` / ``setw``,
#: ``("f", position)`` a number in an f-string (formatted as Python's ``f"{x}"``).
Piece = str | int | tuple[str, int]


class StreamBufferType(USMPointerType):
    """A ``sycl.stream`` in a kernel: its launch's output buffer (``uint __global *``).

    The layout is ``pysycl._core.abi.StreamType``'s; ``pysycl_numba.streaming``
    rewrites each ``<<`` statement into one record write.
    """

    def __init__(self) -> None:
        super().__init__(types.uint32)
        self.name = "sycl.stream"

    @property
    def key(self) -> tuple[types.Type, bool, str]:
        return types.uint32, False, "stream"


class StreamLayoutType(types.Type):
    """The layout of one ``<<`` statement: its pieces, and whether it continues the previous one."""

    def __init__(self, pieces: tuple[Piece, ...], continues: bool) -> None:
        self.pieces = pieces
        self.continues = continues
        super().__init__(name=f"sycl.stream_layout{pieces!r}{'+' if continues else ''}")

    @property
    def key(self) -> tuple[tuple[Piece, ...], bool]:
        return self.pieces, self.continues


class _BufferModel(models.PrimitiveModel):
    def __init__(self, dmm: DataModelManager, fe_type: StreamBufferType) -> None:
        super().__init__(dmm, fe_type, llir.IntType(32).as_pointer(addrspace=ADDRSPACE_GLOBAL))


class _LayoutModel(models.PrimitiveModel):  # a compile-time constant: an unused i8
    def __init__(self, dmm: DataModelManager, fe_type: StreamLayoutType) -> None:
        super().__init__(dmm, fe_type, llir.IntType(8))


def register_models(dmm: DataModelManager) -> None:
    """Add the stream types' data models to the target's manager."""
    dmm.register(StreamBufferType, _BufferModel)
    dmm.register(StreamLayoutType, _LayoutModel)

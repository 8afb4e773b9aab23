"""``sycl::multi_ptr`` on the host device: what ``acc.get_multi_ptr()`` returns in a kernel.

Compiled kernels have their own (``pysycl_numba.overloads.multi_ptr``); this is the
host_debuggable device's, with the same operations: ``p + k``, ``k + p``, ``p - k``,
``p[i]``, ``p[i] = v``, and a memory operand of ``joint_matrix_load``/``store`` and
``async_work_group_copy``.
"""

from __future__ import annotations

import operator
from typing import Any

from pysycl._core.exceptions import errc, exception


class multi_ptr:  # noqa: N801 - the spec's spelling
    """A 1-D accessor's (or local accessor's) memory from element ``offset``."""

    __slots__ = ("_mem", "_off")

    def __init__(self, mem: Any, offset: int = 0) -> None:
        self._mem = mem
        self._off = operator.index(offset)

    @staticmethod
    def of(acc: Any) -> multi_ptr:
        """``acc.get_multi_ptr()``: 1-D accessors only, as in compiled kernels."""
        ndim = len(acc.get_range())
        if ndim != 1:
            raise TypeError(f"get_multi_ptr() of a {ndim}-D accessor: pysycl's multi_ptr is "
                            "of 1-D accessors and local accessors (index an n-D one with "
                            "acc[i, j])")
        return multi_ptr(acc)

    @property
    def dtype(self) -> Any:
        """The element type."""
        return self._mem.dtype

    def parts(self) -> tuple[Any, int]:
        """(the accessor, the element offset)."""
        return self._mem, self._off

    def __add__(self, k: int) -> multi_ptr:
        return multi_ptr(self._mem, self._off + operator.index(k))

    __radd__ = __add__

    def __sub__(self, k: int) -> multi_ptr:
        return multi_ptr(self._mem, self._off - operator.index(k))

    def __getitem__(self, i: int) -> Any:
        return self._mem[self._off + operator.index(i)]

    def __setitem__(self, i: int, value: Any) -> None:
        self._mem[self._off + operator.index(i)] = value

    def __repr__(self) -> str:
        return f"sycl.multi_ptr(offset={self._off})"


def memory_operand(src: Any, name: str) -> tuple[Any, int]:
    """(memory, element offset) of a memory operand of ``joint_matrix_load``/``store`` or
    ``async_work_group_copy`` on the host device: a multi_ptr, ``(memory, offset)``, or
    the memory itself (an accessor, a local accessor, a USM pointer, maybe ``p + k``)."""
    if isinstance(src, multi_ptr):
        return src.parts()
    if isinstance(src, tuple):
        if len(src) != 2:
            raise exception(errc.invalid, f"{name}: a memory operand is an accessor, a USM "
                            f"pointer or (accessor, offset), not a tuple of {len(src)}")
        return src[0], operator.index(src[1])
    return src, 0

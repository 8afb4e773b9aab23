"""``sycl::span<T>`` (SYCL 2020 §4.9.2, C++20's ``std::span``): ``count`` elements at a USM pointer.

pysycl's span is a (pointer, count) view: ``sycl.span(ptr, n)`` names the ``n``
elements starting at the USM pointer ``ptr`` (``sycl.span(ptr)``: all elements
to the end of its allocation). Its use is the spec's span reduction,
``sycl.reduction(sycl.span(ptr, n), sycl.plus())``: ``n`` independent
reductions whose kernel parameter is indexed (``sum[i] += x``). On the host,
``s[i]`` reads and writes host-accessible memory as ``ptr[i]`` does, and
``np.asarray(s)`` views the ``n`` elements (docs/mapping.md, "USM").
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from pysycl._memory.usm import usm_pointer


class span:  # noqa: N801 - the spec's spelling
    """``count`` elements of ``ptr``'s type at USM pointer ``ptr`` (``sycl::span<T>``).

    Args:
        ptr: a USM pointer (``sycl.malloc_*``'s result, or ``p + k``).
        count: the number of elements; the default is every element from ``ptr`` to
            the end of its allocation.

    Raises:
        TypeError: ``ptr`` is not a USM pointer, or ``count`` not an integer.
        ValueError: ``count`` is negative or runs past the end of the allocation.
    """

    __slots__ = ("_n", "_ptr")

    def __init__(self, ptr: usm_pointer, count: int | None = None) -> None:
        if not isinstance(ptr, usm_pointer):
            raise TypeError(f"sycl.span(ptr, count): ptr must be a USM pointer "
                            f"(sycl.malloc_*'s result), not {type(ptr).__name__}")
        try:
            n = ptr.count if count is None else operator.index(count)
        except TypeError:
            raise TypeError(f"sycl.span(ptr, count): count must be an integer, not "
                            f"{type(count).__name__}") from None
        if not 0 <= n <= ptr.count:
            raise ValueError(f"sycl.span(ptr, {n}): {ptr!r} has {ptr.count} element(s) from "
                             "it to the end of its allocation")
        self._ptr = ptr
        self._n = n

    def data(self) -> usm_pointer:
        """The pointer to the first element (``std::span::data``)."""
        return self._ptr

    def size(self) -> int:
        """The number of elements."""
        return self._n

    def size_bytes(self) -> int:
        """The number of bytes the elements occupy."""
        return self._n * self._ptr.dtype.itemsize

    def empty(self) -> bool:
        """Whether the span has no elements."""
        return self._n == 0

    @property
    def dtype(self) -> np.dtype:
        """The element type (the pointer's)."""
        return self._ptr.dtype

    def __len__(self) -> int:
        return self._n

    def _index(self, i: Any) -> int:
        j = operator.index(i)
        if not 0 <= j < self._n:
            raise IndexError(f"span[{i}] is outside the span's {self._n} element(s)")
        return j

    def __getitem__(self, i: Any) -> Any:
        return self._ptr[self._index(i)]

    def __setitem__(self, i: Any, value: Any) -> None:
        self._ptr[self._index(i)] = value

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        arr = self._ptr.host_array("np.asarray(span)")[:self._n]
        if dtype is not None and np.dtype(dtype) != arr.dtype:
            if copy is False:
                raise ValueError("np.asarray(span, dtype): a conversion needs a copy")
            return arr.astype(dtype)
        return arr.copy() if copy else arr

    def __repr__(self) -> str:
        return f"sycl.span({self._ptr!r}, {self._n})"

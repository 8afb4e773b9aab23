"""``sycl::vec<T, N>`` elements in memory: the numpy dtype of a buffer of vectors.

SYCL 2020 §4.14.2: a ``vec<T, N>`` is ``N * sizeof(T)`` bytes, except ``vec<T, 3>``,
which is as large as ``vec<T, 4>`` (its fourth element is padding). A buffer of vectors
(``buf.reinterpret(sycl.float4, r)``, ``sycl.buffer(r, dtype=sycl.float4)``) has the
element dtype :func:`vec_dtype` makes: a numpy record of one field, :data:`FIELD`, of
``N`` elements of ``T``, ``itemsize`` the vector's size. Kernels load and store whole
vectors through an accessor of it (an LLVM ``<N x T>``, whose size is the same);
the host sees the ``(..., N)`` array of ``T`` (:func:`lanes_view`).
"""

from __future__ import annotations

import numpy as np

#: The one field of a vector element's record dtype.
FIELD = "sycl_vec"

_SIZES = (2, 3, 4, 8, 16)


def vec_dtype(base: np.dtype | type, n: int) -> np.dtype:
    """The element dtype of a buffer of ``vec<base, n>``."""
    dt = np.dtype(base)
    if n not in _SIZES:
        raise ValueError(f"a sycl vector has 2, 3, 4, 8 or 16 elements, not {n}")
    lanes = 4 if n == 3 else n
    return np.dtype({"names": [FIELD], "formats": [(dt, (n,))], "offsets": [0],
                     "itemsize": dt.itemsize * lanes})


def vec_parts(dt: np.dtype) -> tuple[np.dtype, int] | None:
    """``(T, N)`` of a vector element dtype; None for any other dtype."""
    if dt.names is None or dt.names != (FIELD,):
        return None
    sub = dt.fields[FIELD][0]  # type: ignore[index]
    return sub.base, sub.shape[0]


def dtype_text(dt: np.dtype) -> str:
    """A stable text of an element dtype (``<f4``; ``<f4x4`` for ``vec<float, 4>``)."""
    parts = vec_parts(dt)
    return dt.str if parts is None else f"{parts[0].str}x{parts[1]}"


def dtype_from_text(text: str) -> np.dtype:
    """The inverse of :func:`dtype_text`."""
    base, sep, n = text.rpartition("x")
    if sep and n.isdigit() and base:
        return vec_dtype(np.dtype(base), int(n))
    return np.dtype(text)


def describe(dt: np.dtype) -> str:
    """``float32`` or ``vec<float32, 4>``, for messages."""
    parts = vec_parts(dt)
    return str(dt) if parts is None else f"vec<{parts[0]}, {parts[1]}>"


def lanes_view(flat: np.ndarray, dt: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    """The ``shape + (N,)`` view of ``T`` of a contiguous 1-D array of ``dt`` vector records
    (writes go through; a 3-element vector's padding is left out)."""
    base, n = vec_parts(dt)  # type: ignore[misc]
    lanes = dt.itemsize // base.itemsize
    return flat.view(base).reshape((*shape, lanes))[..., :n]

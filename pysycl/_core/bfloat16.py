"""``sycl::ext::oneapi::bfloat16`` conversions, on the host and in kernels.

numpy has no bfloat16, so a bfloat16 is stored as its 16 bits in a ``np.uint16``
(buffers and USM of ``np.uint16``); :func:`from_float` rounds a float32 to the
nearest bfloat16, ties to even (NaN stays NaN: its sign and high payload, quiet), and
:func:`to_float` widens it back exactly. Arithmetic on bfloat16 computes in float32,
as the extension specifies: ``from_float(to_float(a) * to_float(b))``. In kernels both
are typed and lowered by ``pysycl_numba/overloads/bfloat16.py`` (integer instructions
on the float's bits); the host_debuggable device runs these functions.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: The storage type of a bfloat16.
dtype = np.dtype(np.uint16)


def from_float(x: Any) -> Any:
    """The bfloat16 nearest to ``x`` (as float32), ties to even, as ``np.uint16`` bits.

    Args:
        x: a number or an array of numbers (converted to float32 first).

    Returns:
        ``np.uint16`` bits (an array of them for an array).
    """
    f = np.atleast_1d(np.asarray(x, dtype=np.float32))
    u = f.view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    quiet_nan = (u >> 16) | 0x40
    out = np.where(np.isnan(f), quiet_nan, rounded).astype(np.uint16)
    return out if np.ndim(x) else out[0]


def to_float(bits: Any) -> Any:
    """The float32 value of bfloat16 ``bits`` (exact).

    Args:
        bits: ``np.uint16`` bits (or an integer, or an array of them).

    Returns:
        ``np.float32`` (an array of them for an array).
    """
    b = np.atleast_1d(np.asarray(bits)).astype(np.uint32)
    out = (b << 16).view(np.float32)
    return out if np.ndim(bits) else out[0]

"""``sycl::ext::oneapi::bfloat16``: bfloat16 values stored as ``np.uint16`` bits.

``bfloat16.from_float(x)`` rounds to the nearest bfloat16 (ties to even, NaN kept) and
``bfloat16.to_float(bits)`` widens to float32, on the host (numbers or arrays) and in
kernels; arithmetic computes in float32 (``docs/kernels.md``, bfloat16)::

    from pysycl.ext.oneapi import bfloat16
    b = bfloat16.from_float(np.float32(1.5))      # np.uint16(0x3FC0)
    bfloat16.to_float(b)                          # np.float32(1.5)
"""

from __future__ import annotations

from pysycl._core.bfloat16 import dtype, from_float, to_float

__all__ = ["dtype", "from_float", "to_float"]

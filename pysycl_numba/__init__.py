"""pysycl_numba: compiles Python kernels to SPIR-V with Numba and llvmlite.

The runtime (``pysycl``) imports this package lazily, the first time a Python
kernel must be compiled, and calls :func:`compile_kernel`; the contract
between the two is ``pysycl._kernel_abi``.
"""

from __future__ import annotations

from pysycl_numba.compiler import compile_kernel

__all__ = ["compile_kernel"]

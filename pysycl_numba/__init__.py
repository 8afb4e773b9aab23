"""pysycl_numba: compiles Python kernels to SPIR-V with Numba and llvmlite.

The runtime (``pysycl``) imports this package lazily, the first time a Python
kernel must be compiled, and calls :func:`compile_kernel`; the contract
between the two is ``pysycl._core.abi``.
"""

from __future__ import annotations

from pysycl_numba.targets.spirv import emit_worker as _emit_worker

# Start the SPIR-V emission worker now: its start-up overlaps Numba's import
# and the typing/lowering of the first kernel.
_emit_worker.client.start()

from pysycl_numba.compiler import compile_kernel  # noqa: E402

__all__ = ["compile_kernel"]

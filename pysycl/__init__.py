"""pysycl: SYCL 2020 for Python.

Kernels are Python lambdas or nested functions handed to
``handler.parallel_for``; ``pysycl_numba`` compiles them to SPIR-V and the
OpenCL backend runs them. ``import pysycl`` neither imports Numba nor touches
an OpenCL device: the compiler loads the first time a kernel must be compiled.
"""

from __future__ import annotations

from pysycl._icd import setup_icd_loader as _setup_icd_loader

_setup_icd_loader()

from pysycl._exceptions import (  # noqa: E402
    errc,
    exception,
    exception_list,
    kernel_compile_error,
)

__version__ = "0.1.0"

__all__ = [
    "errc",
    "exception",
    "exception_list",
    "kernel_compile_error",
]

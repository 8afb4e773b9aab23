"""pysycl_numba: compiles Python kernels to SPIR-V with Numba and llvmlite."""

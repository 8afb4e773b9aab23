"""Compiler tests: Numba -> SPIR-V, validated and run on the OpenCL device."""

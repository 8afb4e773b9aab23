"""Code generation targets of the compiler: one subpackage per device-image format.

``spirv/`` emits SPIR-V for OpenCL with llvmlite's SPIR-V backend; a ``ptx/``
target would sit beside it. A target package holds its code generator (code
libraries, linking, optimisation, emission), its IR guard and its built-in
declarations; the Numba target (:mod:`pysycl_numba.target`) picks the code
generator.
"""

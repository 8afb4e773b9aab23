"""Code generation targets of the compiler: one subpackage per device-image format.

``spirv/`` emits SPIR-V for OpenCL with llvmlite's SPIR-V backend; ``ptx/`` (in
progress, issue #11) retargets the same optimised IR to NVPTX and emits PTX. A
target package holds its code generator (code libraries, linking, optimisation,
emission), its IR guard and its built-in declarations; the Numba target
(:mod:`pysycl_numba.target`) picks the code generator.
"""

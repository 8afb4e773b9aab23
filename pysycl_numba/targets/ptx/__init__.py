"""The PTX target (issue #11, in progress): kernels as PTX for NVIDIA's OpenCL.

* :mod:`.retarget` -- the SPIR-flavoured optimised IR of a kernel, rewritten for
  ``nvptx64-nvidia-cuda``, and PTX emission.

Not used by the runtime yet (docs/design/gpu.md). Importing this package imports
none of its modules.
"""

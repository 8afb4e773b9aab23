"""The PTX target: Python kernels as PTX for NVIDIA GPUs through NVIDIA's OpenCL.

* :mod:`.retarget` -- the SPIR-flavoured optimised IR of a kernel, rewritten for
  ``nvptx64-nvidia-cuda``; :mod:`.builtins` the registry of OpenCL built-in
  definitions (:mod:`.workitem`, :mod:`.groups`, :mod:`.math_builtins`,
  :mod:`.math_formulas`, :mod:`.int_builtins`, :mod:`.specconst`, :mod:`.private`);
  :mod:`.emit` PTX emission in the emit worker.

docs/design/gpu.md. Importing this package imports none of its modules.
"""

"""The CUDA backend (``backend.ext_oneapi_cuda``): NVIDIA GPUs through NVIDIA's driver API,
over the ``cuda-bindings`` package (the extra ``pysycl[cuda]``). Design: docs/design/cuda.md."""

"""``sycl::aspect`` (SYCL 2020 §4.6.4.3).

Which aspects a device has is its backend's answer (the OpenCL backend derives
them from what the device reports, ``pysycl._backends.opencl.device_info``); the
device caches the set, since SYCL devices do not change while a program runs (§4.6.4).
"""

from __future__ import annotations

import enum


class aspect(enum.Enum):  # noqa: N801 - the spec's spelling
    """The SYCL 2020 device aspects, plus pysycl's ``ext_pysycl_spirv`` and ``ext_pysycl_ptx``.

    ``ext_pysycl_spirv``: the device ingests SPIR-V (``CL_DEVICE_IL_VERSION``
    names a SPIR-V version), so device images compiled from Python kernels to
    SPIR-V load on it.

    ``ext_pysycl_ptx``: an NVIDIA GPU (compute capability 6.0 or later) whose
    OpenCL builds PTX, or its CUDA view (``backend.ext_oneapi_cuda``): Python kernels
    compile to PTX for its compute capability.

    A device with either runs Python kernels (its ``image_targets`` are not empty).
    """

    cpu = "cpu"
    gpu = "gpu"
    accelerator = "accelerator"
    custom = "custom"
    emulated = "emulated"
    host_debuggable = "host_debuggable"
    fp16 = "fp16"
    fp64 = "fp64"
    atomic64 = "atomic64"
    image = "image"
    online_compiler = "online_compiler"
    online_linker = "online_linker"
    queue_profiling = "queue_profiling"
    usm_device_allocations = "usm_device_allocations"
    usm_host_allocations = "usm_host_allocations"
    usm_atomic_host_allocations = "usm_atomic_host_allocations"
    usm_shared_allocations = "usm_shared_allocations"
    usm_atomic_shared_allocations = "usm_atomic_shared_allocations"
    usm_system_allocations = "usm_system_allocations"
    ext_pysycl_spirv = "ext_pysycl_spirv"
    ext_pysycl_ptx = "ext_pysycl_ptx"

    # Members are singletons compared by identity: hash them so too (``device.has``
    # is a set lookup on hot paths; Enum's hash is Python code).
    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"sycl.aspect.{self.name}"

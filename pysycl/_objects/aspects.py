"""``sycl::aspect`` (SYCL 2020 §4.6.4.3) and its derivation from an OpenCL device.

Each aspect is derived from what the OpenCL device reports, following Table 26
and the OpenCL backend's aspect/extension table (``sycl2020-opencl-backend.adoc``,
"SYCL support of non-core OpenCL features"). A device's aspect set is computed
once and cached: SYCL devices do not change while a program runs (§4.6.4).
"""

from __future__ import annotations

import enum
import re
from typing import Any

from pysycl._backends.opencl import discovery as _d


class aspect(enum.Enum):  # noqa: N801 - the spec's spelling
    """The SYCL 2020 device aspects, plus pysycl's ``ext_pysycl_spirv``.

    ``ext_pysycl_spirv``: the device ingests SPIR-V (``CL_DEVICE_IL_VERSION``
    names a SPIR-V version), so device images compiled from Python kernels to
    SPIR-V load on it.
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

    def __repr__(self) -> str:
        return f"sycl.aspect.{self.name}"


_SPIRV_RE = re.compile(r"SPIR-V_(\d+)\.(\d+)")


def spirv_versions(il_version: str) -> list[tuple[int, int]]:
    """The SPIR-V versions named in a ``CL_DEVICE_IL_VERSION`` string, in order."""
    return [(int(a), int(b)) for a, b in _SPIRV_RE.findall(il_version)]


def derive_aspects(cl_device: Any) -> frozenset[aspect]:
    """Compute the aspect set of an OpenCL device from its reported properties.

    Args:
        cl_device: the pyopencl device.

    Returns:
        Every aspect the device has.
    """
    has: set[aspect] = set()
    cl_type = int(_d.device_info(cl_device, "TYPE"))
    # Device-type aspects (Table 26): exactly one, as info::device::device_type.
    if cl_type & _d.DEVICE_TYPE_GPU:
        has.add(aspect.gpu)
    elif cl_type & _d.DEVICE_TYPE_CPU:
        has.add(aspect.cpu)
    elif cl_type & _d.DEVICE_TYPE_ACCELERATOR:
        has.add(aspect.accelerator)
    else:
        has.add(aspect.custom)

    ext = _d.extensions(cl_device)
    # OpenCL backend table: fp16 <-> cl_khr_fp16; atomic64 <-> both int64 atomics.
    if "cl_khr_fp16" in ext:
        has.add(aspect.fp16)
    if "cl_khr_fp64" in ext or int(_d.device_info(cl_device, "DOUBLE_FP_CONFIG", 0) or 0):
        has.add(aspect.fp64)
    if {"cl_khr_int64_base_atomics", "cl_khr_int64_extended_atomics"} <= ext:
        has.add(aspect.atomic64)
    if _d.device_info(cl_device, "IMAGE_SUPPORT", False):
        has.add(aspect.image)
    if _d.device_info(cl_device, "COMPILER_AVAILABLE", False):
        has.add(aspect.online_compiler)
        # Table 26: every device with online_linker also has online_compiler.
        if _d.device_info(cl_device, "LINKER_AVAILABLE", False):
            has.add(aspect.online_linker)
    if int(_d.device_info(cl_device, "QUEUE_PROPERTIES", 0) or 0) & _d.QUEUE_PROFILING_ENABLE:
        has.add(aspect.queue_profiling)

    # USM through cl_intel_unified_shared_memory capability queries (as DPC++ does).
    usm = _d.usm_capabilities(cl_device)
    access = _d.UNIFIED_SHARED_MEMORY_ACCESS_INTEL
    concurrent_atomic = _d.UNIFIED_SHARED_MEMORY_CONCURRENT_ATOMIC_ACCESS_INTEL
    if usm[_d.DEVICE_DEVICE_MEM_CAPABILITIES_INTEL] & access:
        has.add(aspect.usm_device_allocations)
    host = usm[_d.DEVICE_HOST_MEM_CAPABILITIES_INTEL]
    if host & access:
        has.add(aspect.usm_host_allocations)
    # Table 26: host and device may *concurrently* access and modify atomically.
    if host & concurrent_atomic:
        has.add(aspect.usm_atomic_host_allocations)
    shared = usm[_d.DEVICE_SINGLE_DEVICE_SHARED_MEM_CAPABILITIES_INTEL]
    if shared & access:
        has.add(aspect.usm_shared_allocations)
    if shared & concurrent_atomic:
        has.add(aspect.usm_atomic_shared_allocations)
    if usm[_d.DEVICE_SHARED_SYSTEM_MEM_CAPABILITIES_INTEL] & access:
        has.add(aspect.usm_system_allocations)

    if spirv_versions(_d.il_version(cl_device)):
        has.add(aspect.ext_pysycl_spirv)
    return frozenset(has)

"""The OpenCL backend's device facts: ``info.device`` answers and the aspect set.

Each ``info.device`` descriptor is answered from the OpenCL query that
``pysycl._backends.opencl.discovery`` makes (:data:`DEVICE_QUERIES`), converted
to the spec's type; ``platform``, ``aspects`` and ``parent_device`` are answered
by ``sycl.device`` itself. Each aspect is derived from what the OpenCL device
reports (:func:`derive_aspects`), following Table 26 and the OpenCL backend's
aspect/extension table (``sycl2020-opencl-backend.adoc``, "SYCL support of
non-core OpenCL features"). Both are cached by the device.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from pysycl._backends.opencl import discovery as _d
from pysycl._core.memory_model import memory_order, memory_scope
from pysycl._kernels.matrix import LOOP_COMBINATIONS, WG_LOOP_COMBINATIONS, combination
from pysycl._kernels.matrix_ptx import arch_cc, ptx_combinations, wg_ptx_combinations
from pysycl._objects.aspects import aspect
from pysycl._objects.info import (
    _device_info,
    device_type,
    execution_capability,
    fp_config,
    global_mem_cache_type,
    local_mem_type,
    partition_affinity_domain,
    partition_property,
)
from pysycl._objects.range import id as sycl_id

if TYPE_CHECKING:
    import pyopencl

    # the queries read a device's ``native`` pyopencl device, ``has`` and ``parent``:
    # an ``objects.opencl_device``, named by its protocol (``objects`` imports this module)
    from pysycl._core.launch_types import DeviceRef

_E = TypeVar("_E", bound=enum.Enum)
_M = TypeVar("_M")


# --- OpenCL value -> SYCL value conversions ---------------------------------------


def bits_to_members(bits: int, enum_cls: type[_E]) -> list[_E]:
    """The members of a bit-valued enum whose (non-zero) bit is set in ``bits``."""
    return [m for m in enum_cls if m.value and (bits & m.value) == m.value]


def device_type_of(cl_type: int) -> device_type:
    """The SYCL device type of an OpenCL ``cl_device_type`` (DEFAULT bit ignored)."""
    for t in (device_type.gpu, device_type.cpu, device_type.accelerator, device_type.custom):
        if cl_type & t.value:
            return t
    return device_type.custom


def memory_orders(bits: int) -> list[memory_order]:
    """``cl_device_atomic_capabilities`` order bits -> ``memory_order`` list.

    OpenCL's ACQ_REL capability covers acquire, release and acq_rel (OpenCL 3.0
    §4.2, CL_DEVICE_ATOMIC_MEMORY_CAPABILITIES).
    """
    out = [memory_order.relaxed]  # SYCL guarantees relaxed (Table 25)
    if bits & _d.ATOMIC_ORDER_ACQ_REL:
        out += [memory_order.acquire, memory_order.release, memory_order.acq_rel]
    if bits & _d.ATOMIC_ORDER_SEQ_CST:
        out.append(memory_order.seq_cst)
    return out


def memory_scopes(bits: int) -> list[memory_scope]:
    """``cl_device_atomic_capabilities`` scope bits -> ``memory_scope`` list.

    OpenCL has no sub-group capability bit; a sub-group lies within its work-group,
    so work-group scope support implies sub-group scope (as in DPC++'s OpenCL
    adapter). SYCL guarantees ``work_group`` (Table 25).
    """
    out = []
    if bits & _d.ATOMIC_SCOPE_WORK_ITEM:
        out.append(memory_scope.work_item)
    out += [memory_scope.sub_group, memory_scope.work_group]
    if bits & _d.ATOMIC_SCOPE_DEVICE:
        out.append(memory_scope.device)
    if bits & _d.ATOMIC_SCOPE_ALL_DEVICES:
        out.append(memory_scope.system)
    return out


# --- device queries ---------------------------------------------------------------

# OpenCL < 3.0 devices have no atomic capability queries; OpenCL 3.0 §4.2 gives
# their implied value: relaxed order, work-group and device scopes.
_LEGACY_ATOMIC_CAPS = _d.ATOMIC_ORDER_RELAXED | _d.ATOMIC_SCOPE_WORK_GROUP | _d.ATOMIC_SCOPE_DEVICE
_LEGACY_FENCE_CAPS = (_d.ATOMIC_ORDER_RELAXED | _d.ATOMIC_ORDER_ACQ_REL
                      | _d.ATOMIC_SCOPE_WORK_GROUP | _d.ATOMIC_SCOPE_DEVICE)


def _q(key: str, default: Any = _d.REQUIRED, conv: Callable[[Any], Any] = lambda v: v
       ) -> Callable[[DeviceRef], Any]:
    def get(dev: DeviceRef) -> Any:
        return conv(_d.device_info(dev.native, key, default))
    return get


def _work_item_sizes(n: int) -> Callable[[DeviceRef], sycl_id | tuple[int, ...]]:
    # SYCL dimension 0 is the slowest-varying; OpenCL's dimension 0 the fastest
    # (OpenCL backend appendix, "syclOpenCL.mapping"): reverse the first n sizes.
    def get(dev: DeviceRef) -> sycl_id | tuple[int, ...]:
        sizes = list(_d.device_info(dev.native, "MAX_WORK_ITEM_SIZES"))[:n]
        values = tuple(int(s) for s in reversed(sizes))
        try:
            return sycl_id(*values)
        except TypeError:  # a device reporting no sizes: the tuple, same length
            return values
    return get


def _fp(key: str) -> Callable[[DeviceRef], list[fp_config]]:
    def get(dev: DeviceRef) -> list[fp_config]:
        return bits_to_members(int(_d.device_info(dev.native, key, 0) or 0), fp_config)
    return get


def _half_fp(dev: DeviceRef) -> list[fp_config]:
    # Table 25: empty unless the device has aspect::fp16.
    if not dev.has(aspect.fp16):
        return []
    bits = _d.device_info(dev.native, "HALF_FP_CONFIG", 0) or 0
    if not bits and dev.has(aspect.ext_pysycl_ptx):
        # fp16 of pysycl's PTX kernels (NVIDIA's OpenCL reports none): PTX's f16
        # instructions round to nearest, keep subnormals, inf and NaN, and fuse (fma.rn.f16).
        return [fp_config.denorm, fp_config.inf_nan, fp_config.round_to_nearest, fp_config.fma]
    return bits_to_members(int(bits), fp_config)


def _atomic(key: str, legacy: int, conv: Callable[[int], list[_M]]
            ) -> Callable[[DeviceRef], list[_M]]:
    def get(dev: DeviceRef) -> list[_M]:
        bits = _d.device_info(dev.native, key, None)
        return conv(legacy if bits is None else int(bits))
    return get


def _can_split(dev: DeviceRef) -> bool:
    # Table 25: a partition property (or affinity domain) is listed "only if the
    # device can be partitioned into at least two sub devices along" it.
    return (int(_d.device_info(dev.native, "MAX_COMPUTE_UNITS")) >= 2
            and int(_d.device_info(dev.native, "PARTITION_MAX_SUB_DEVICES", 0) or 0) >= 2)


def _partition_properties(dev: DeviceRef) -> list[partition_property]:
    if not _can_split(dev):
        return []
    props = _d.device_info(dev.native, "PARTITION_PROPERTIES", []) or []
    known = {p.value: p for p in partition_property if p.value}
    return [known[p] for p in props if p in known]


def _affinity_domains(dev: DeviceRef) -> list[partition_affinity_domain]:
    if not _can_split(dev):
        return []
    bits = _d.device_info(dev.native, "PARTITION_AFFINITY_DOMAIN", 0) or 0
    if isinstance(bits, (list, tuple)):  # some pyopencl versions answer a list
        bits = bits[0] if bits else 0
    return bits_to_members(int(bits), partition_affinity_domain)


def _partition_type(dev: DeviceRef) -> tuple[partition_property, partition_affinity_domain]:
    if dev.parent is None:
        return partition_property.no_partition, partition_affinity_domain.not_applicable
    props = list(_d.device_info(dev.native, "PARTITION_TYPE", []) or [])
    prop = partition_property.no_partition
    domain = partition_affinity_domain.not_applicable
    if props:
        try:
            prop = partition_property(props[0])
        except ValueError:
            prop = partition_property.no_partition
        if prop is partition_property.partition_by_affinity_domain and len(props) > 1:
            try:
                domain = partition_affinity_domain(props[1])
            except ValueError:
                domain = partition_affinity_domain.not_applicable
    return prop, domain


def _backend_version(dev: DeviceRef) -> str:
    # The OpenCL version the device supports, e.g. "3.0" from "OpenCL 3.0 (Build 0)".
    parts = str(_d.device_info(dev.native, "VERSION")).split()
    return parts[1] if len(parts) > 1 else "".join(parts)


def _exec_caps(dev: DeviceRef) -> list[execution_capability]:
    return bits_to_members(int(_d.device_info(dev.native, "EXECUTION_CAPABILITIES", 1)),
                           execution_capability)


def _built_in_kernels(dev: DeviceRef) -> list[str]:
    return [k for k in str(_d.device_info(dev.native, "BUILT_IN_KERNELS", "") or "").split(";") if k]


def _queue_profiling(dev: DeviceRef) -> bool:
    return bool(int(_d.device_info(dev.native, "QUEUE_PROPERTIES", 0)) & _d.QUEUE_PROFILING_ENABLE)


def _u(key: str, default: Any = _d.REQUIRED) -> Callable[[DeviceRef], int]:
    return _q(key, default, int)


def _b(key: str, default: Any = _d.REQUIRED) -> Callable[[DeviceRef], bool]:
    return _q(key, default, bool)


def _s(key: str, default: Any = _d.REQUIRED) -> Callable[[DeviceRef], str]:
    return _q(key, default, lambda v: str(v).strip())


D = _device_info

def _matrix_combinations(targets: tuple[tuple[str, str], ...],
                         work_group: bool = False) -> list[combination]:
    """joint_matrix: the loops of pysycl_numba/overloads/matrix.py on SPIR-V devices, the
    ``mma.sync`` tiles of the GPU's compute capability on PTX ones (overloads/matrix_ptx.py);
    ``work_group``: the work-group matrices (loops; ``wgmma`` on sm_90)."""
    for fmt, arch in targets:
        if fmt == "spirv":
            return list(WG_LOOP_COMBINATIONS if work_group else LOOP_COMBINATIONS)
        if fmt == "ptx":
            cc = arch_cc(arch)
            return list(wg_ptx_combinations(cc) if work_group else ptx_combinations(cc))
    return []


#: How each device descriptor is answered (but those ``sycl.device`` answers
#: itself); devices do not change, so the device caches the results.
DEVICE_QUERIES: dict[_device_info, Callable[[DeviceRef], Any]] = {
    D.device_type: lambda dev: device_type_of(int(_d.device_info(dev.native, "TYPE"))),
    D.vendor_id: _u("VENDOR_ID"),
    D.max_compute_units: _u("MAX_COMPUTE_UNITS"),
    D.max_work_item_dimensions: _u("MAX_WORK_ITEM_DIMENSIONS"),
    D.max_work_item_sizes_1d: _work_item_sizes(1),
    D.max_work_item_sizes_2d: _work_item_sizes(2),
    D.max_work_item_sizes_3d: _work_item_sizes(3),
    D.max_work_group_size: _u("MAX_WORK_GROUP_SIZE"),
    D.max_num_sub_groups: _u("MAX_NUM_SUB_GROUPS", 0),
    D.sub_group_independent_forward_progress: _b("SUB_GROUP_INDEPENDENT_FORWARD_PROGRESS", False),
    D.sub_group_sizes: lambda dev: _d.sub_group_sizes(dev.native),
    D.ext_oneapi_matrix_combinations: lambda dev: _matrix_combinations(image_targets(dev.native)),
    D.ext_pysycl_work_group_matrix_combinations:
        lambda dev: _matrix_combinations(image_targets(dev.native), True),
    D.preferred_vector_width_char: _u("PREFERRED_VECTOR_WIDTH_CHAR"),
    D.preferred_vector_width_short: _u("PREFERRED_VECTOR_WIDTH_SHORT"),
    D.preferred_vector_width_int: _u("PREFERRED_VECTOR_WIDTH_INT"),
    D.preferred_vector_width_long: _u("PREFERRED_VECTOR_WIDTH_LONG"),
    D.preferred_vector_width_float: _u("PREFERRED_VECTOR_WIDTH_FLOAT"),
    D.preferred_vector_width_double: _u("PREFERRED_VECTOR_WIDTH_DOUBLE"),
    D.preferred_vector_width_half: _u("PREFERRED_VECTOR_WIDTH_HALF", 0),
    D.native_vector_width_char: _u("NATIVE_VECTOR_WIDTH_CHAR"),
    D.native_vector_width_short: _u("NATIVE_VECTOR_WIDTH_SHORT"),
    D.native_vector_width_int: _u("NATIVE_VECTOR_WIDTH_INT"),
    D.native_vector_width_long: _u("NATIVE_VECTOR_WIDTH_LONG"),
    D.native_vector_width_float: _u("NATIVE_VECTOR_WIDTH_FLOAT"),
    D.native_vector_width_double: _u("NATIVE_VECTOR_WIDTH_DOUBLE"),
    D.native_vector_width_half: _u("NATIVE_VECTOR_WIDTH_HALF", 0),
    D.max_clock_frequency: _u("MAX_CLOCK_FREQUENCY"),
    D.address_bits: _u("ADDRESS_BITS"),
    D.max_mem_alloc_size: _u("MAX_MEM_ALLOC_SIZE"),
    D.image_support: _b("IMAGE_SUPPORT", False),
    D.max_read_image_args: _u("MAX_READ_IMAGE_ARGS", 0),
    D.max_write_image_args: _u("MAX_WRITE_IMAGE_ARGS", 0),
    D.image2d_max_width: _u("IMAGE2D_MAX_WIDTH", 0),
    D.image2d_max_height: _u("IMAGE2D_MAX_HEIGHT", 0),
    D.image3d_max_width: _u("IMAGE3D_MAX_WIDTH", 0),
    D.image3d_max_height: _u("IMAGE3D_MAX_HEIGHT", 0),
    D.image3d_max_depth: _u("IMAGE3D_MAX_DEPTH", 0),
    D.image_max_buffer_size: _u("IMAGE_MAX_BUFFER_SIZE", 0),
    D.max_samplers: _u("MAX_SAMPLERS", 0),
    D.max_parameter_size: _u("MAX_PARAMETER_SIZE"),
    D.mem_base_addr_align: _u("MEM_BASE_ADDR_ALIGN"),
    D.half_fp_config: _half_fp,
    D.single_fp_config: _fp("SINGLE_FP_CONFIG"),
    D.double_fp_config: _fp("DOUBLE_FP_CONFIG"),
    D.global_mem_cache_type: _q("GLOBAL_MEM_CACHE_TYPE", 0, global_mem_cache_type),
    D.global_mem_cache_line_size: _u("GLOBAL_MEM_CACHELINE_SIZE", 0),
    D.global_mem_cache_size: _u("GLOBAL_MEM_CACHE_SIZE", 0),
    D.global_mem_size: _u("GLOBAL_MEM_SIZE"),
    D.max_constant_buffer_size: _u("MAX_CONSTANT_BUFFER_SIZE"),
    D.max_constant_args: _u("MAX_CONSTANT_ARGS"),
    D.local_mem_type: _q("LOCAL_MEM_TYPE", 0, local_mem_type),
    D.local_mem_size: _u("LOCAL_MEM_SIZE"),
    D.error_correction_support: _b("ERROR_CORRECTION_SUPPORT", False),
    D.host_unified_memory: _b("HOST_UNIFIED_MEMORY", False),
    D.atomic_memory_order_capabilities:
        _atomic("ATOMIC_MEMORY_CAPABILITIES", _LEGACY_ATOMIC_CAPS, memory_orders),
    D.atomic_fence_order_capabilities:
        _atomic("ATOMIC_FENCE_CAPABILITIES", _LEGACY_FENCE_CAPS, memory_orders),
    D.atomic_memory_scope_capabilities:
        _atomic("ATOMIC_MEMORY_CAPABILITIES", _LEGACY_ATOMIC_CAPS, memory_scopes),
    D.atomic_fence_scope_capabilities:
        _atomic("ATOMIC_FENCE_CAPABILITIES", _LEGACY_FENCE_CAPS, memory_scopes),
    D.profiling_timer_resolution: _u("PROFILING_TIMER_RESOLUTION"),
    D.is_endian_little: _b("ENDIAN_LITTLE", True),
    D.is_available: _b("AVAILABLE"),
    D.is_compiler_available: _b("COMPILER_AVAILABLE", False),
    D.is_linker_available: _b("LINKER_AVAILABLE", False),
    D.execution_capabilities: _exec_caps,
    D.queue_profiling: _queue_profiling,
    # kernel_id objects of built-in kernels: pysycl exposes no OpenCL built-in
    # kernels as kernel_ids, so the list is empty (allowed by Table 25).
    D.built_in_kernel_ids: lambda dev: [],
    D.built_in_kernels: _built_in_kernels,
    D.name: _s("NAME"),
    D.vendor: _s("VENDOR"),
    D.driver_version: _s("DRIVER_VERSION"),
    D.profile: _s("PROFILE"),
    D.version: _s("VERSION"),
    D.backend_version: _backend_version,
    D.extensions: lambda dev: sorted(_d.extensions(dev.native)),
    D.printf_buffer_size: _u("PRINTF_BUFFER_SIZE", 0),
    D.preferred_interop_user_sync: _b("PREFERRED_INTEROP_USER_SYNC", True),
    D.partition_max_sub_devices: _u("PARTITION_MAX_SUB_DEVICES", 0),
    D.partition_properties: _partition_properties,
    D.partition_affinity_domains: _affinity_domains,
    D.partition_type_property: lambda dev: _partition_type(dev)[0],
    D.partition_type_affinity_domain: lambda dev: _partition_type(dev)[1],
}

_ANSWERED_BY_DEVICE = {D.platform, D.aspects, D.parent_device}
assert set(DEVICE_QUERIES) | _ANSWERED_BY_DEVICE == set(_device_info), \
    "every info.device descriptor has a query"


# --- aspects ----------------------------------------------------------------------

_SPIRV_RE = re.compile(r"SPIR-V_(\d+)\.(\d+)")


def spirv_versions(il_version: str) -> list[tuple[int, int]]:
    """The SPIR-V versions named in a ``CL_DEVICE_IL_VERSION`` string, in order."""
    return [(int(a), int(b)) for a, b in _SPIRV_RE.findall(il_version)]


def derive_aspects(cl_device: pyopencl.Device) -> frozenset[aspect]:
    """Compute the aspect set of an OpenCL device from its reported properties.

    Args:
        cl_device: the pyopencl device.

    Returns:
        Every aspect the device has.
    """
    has: set[aspect] = set()
    # Device-type aspects (Table 26): exactly one, as info::device::device_type.
    has.add(_TYPE_ASPECT[device_type_of(int(_d.device_info(cl_device, "TYPE")))])
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
    has |= _usm_aspects(cl_device)
    for fmt, _arch in image_targets(cl_device):
        has.add(aspect.ext_pysycl_spirv if fmt == "spirv" else aspect.ext_pysycl_ptx)
        if fmt == "ptx":
            # Deviation (docs/gpu.md): NVIDIA's OpenCL reports no cl_khr_fp16, but pysycl's
            # PTX kernels use the GPU's native half instructions (sm_53 and later).
            has.add(aspect.fp16)
    return frozenset(has)


#: Oldest compute capability the PTX target supports (LLVM's NVPTX backend, the
#: PTX ISA the drivers of such GPUs take, native float atomics: sm_60 and later).
MIN_COMPUTE_CAPABILITY = (6, 0)


def image_targets(cl_device: pyopencl.Device) -> tuple[tuple[str, str], ...]:
    """The Python-kernel image targets a device loads, ``(format, arch)``, preferred first.

    ``("spirv", "")`` where the device ingests SPIR-V (``CL_DEVICE_IL_VERSION``);
    ``("ptx", "sm_XY")`` for an NVIDIA GPU of compute capability X.Y ≥ 6.0, whose
    OpenCL builds PTX handed to ``clCreateProgramWithBinary``.
    """
    out = []
    if spirv_versions(_d.il_version(cl_device)):
        out.append(("spirv", ""))
    cc = _d.compute_capability(cl_device)
    if cc is not None and cc >= MIN_COMPUTE_CAPABILITY:
        out.append(("ptx", f"sm_{cc[0]}{cc[1]}"))
    return tuple(out)


_TYPE_ASPECT = {device_type.gpu: aspect.gpu, device_type.cpu: aspect.cpu,
                device_type.accelerator: aspect.accelerator, device_type.custom: aspect.custom}


def _usm_aspects(cl_device: pyopencl.Device) -> set[aspect]:
    """USM aspects from ``CL_DEVICE_SVM_CAPABILITIES``: pysycl's USM is OpenCL SVM
    (:mod:`pysycl._backends.opencl.usm` says how each kind maps)."""
    from pysycl._backends.opencl.usm import ATOMICS, COARSE, FINE, SYSTEM, svm_caps

    caps = svm_caps(cl_device)
    has = set()
    if caps & COARSE:
        has.add(aspect.usm_device_allocations)
    if caps & FINE:
        has |= {aspect.usm_host_allocations, aspect.usm_shared_allocations}
        if caps & ATOMICS:
            # Table 26: host and device may concurrently access and modify atomically.
            has |= {aspect.usm_atomic_host_allocations, aspect.usm_atomic_shared_allocations}
    if caps & SYSTEM:
        has.add(aspect.usm_system_allocations)
    return has

"""The ``info`` namespace (SYCL 2020 §4.6.2.2, §4.6.3.2, §4.6.4.2, Appendix A).

Descriptors are enum members, spelled as in the spec: ``info.device.name``,
``info.platform.vendor``, ``info.context.devices``. They are hashable singletons,
passed to ``get_info`` in place of the C++ template parameter::

    dev.get_info(sycl.info.device.max_compute_units)   # -> int

The templated ``info::device::max_work_item_sizes<N>`` is spelled
``info.device.max_work_item_sizes_1d`` / ``_2d`` / ``_3d``.

This module also holds the enums the descriptors return (``info.device_type``,
``info.fp_config``, ...) and ``memory_order`` / ``memory_scope`` (§3.8.3.1-2),
and the conversions from the OpenCL values that ``pysycl._backends.opencl.discovery`` answers.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pysycl._backends.opencl import discovery as _d
from pysycl._core.memory_model import memory_order, memory_scope

if TYPE_CHECKING:
    from pysycl._objects.device import device as _device_t


class _SpecEnum(enum.Enum):
    """An enum whose repr is its spec spelling: ``sycl.info.device.name``."""

    def __repr__(self) -> str:
        return f"{_PREFIX.get(type(self).__name__, 'sycl.info.')}{_public_name(self)}.{self.name}"


def _public_name(member: enum.Enum) -> str:
    return type(member).__name__.strip("_").removesuffix("_info")


_PREFIX: dict[str, str] = {}


# --- enums returned by descriptors -----------------------------------------------


class device_type(_SpecEnum):  # noqa: N801
    """``info::device_type``; the value is the OpenCL ``cl_device_type`` bitfield.

    ``automatic`` is OpenCL's ``CL_DEVICE_TYPE_DEFAULT``. ``host`` matches no
    device: SYCL 2020 has no host device, the enumerator is kept for porting.
    """

    cpu = _d.DEVICE_TYPE_CPU
    gpu = _d.DEVICE_TYPE_GPU
    accelerator = _d.DEVICE_TYPE_ACCELERATOR
    custom = _d.DEVICE_TYPE_CUSTOM
    automatic = _d.DEVICE_TYPE_DEFAULT
    host = 0
    all = _d.DEVICE_TYPE_ALL


class partition_property(_SpecEnum):  # noqa: N801
    """``info::partition_property``; values are the OpenCL partition properties."""

    no_partition = 0
    partition_equally = _d.PARTITION_EQUALLY
    partition_by_counts = _d.PARTITION_BY_COUNTS
    partition_by_affinity_domain = _d.PARTITION_BY_AFFINITY_DOMAIN


class partition_affinity_domain(_SpecEnum):  # noqa: N801
    """``info::partition_affinity_domain``; values are ``cl_device_affinity_domain`` bits."""

    not_applicable = 0
    numa = 1 << 0
    L4_cache = 1 << 1
    L3_cache = 1 << 2
    L2_cache = 1 << 3
    L1_cache = 1 << 4
    next_partitionable = 1 << 5


# ``global`` is a Python keyword, so the enum is built with the functional API:
# ``info.local_mem_type["global"]`` is the spec's member, ``global_`` an alias to
# it for attribute access (mapping rules: documented exception to spec spelling).
local_mem_type = _SpecEnum(
    "local_mem_type",
    [("none", 0), ("local", 1), ("global", 2), ("global_", 2)],
    module=__name__,
    qualname="local_mem_type",
)
local_mem_type.__doc__ = (
    "``info::local_mem_type``; values are ``cl_device_local_mem_type`` (none = 0).")


class fp_config(_SpecEnum):  # noqa: N801
    """``info::fp_config``; values are ``cl_device_fp_config`` bits."""

    denorm = 1 << 0
    inf_nan = 1 << 1
    round_to_nearest = 1 << 2
    round_to_zero = 1 << 3
    round_to_inf = 1 << 4
    fma = 1 << 5
    soft_float = 1 << 6
    correctly_rounded_divide_sqrt = 1 << 7


class global_mem_cache_type(_SpecEnum):  # noqa: N801
    """``info::global_mem_cache_type``; values are ``cl_device_mem_cache_type``."""

    none = 0
    read_only = 1
    read_write = 2


class execution_capability(_SpecEnum):  # noqa: N801
    """``info::execution_capability``; values are ``cl_device_exec_capabilities`` bits."""

    exec_kernel = 1 << 0
    exec_native_kernel = 1 << 1


class event_command_status(_SpecEnum):  # noqa: N801
    """``info::event_command_status`` (§4.6.6.2)."""

    submitted = "submitted"
    running = "running"
    complete = "complete"


# --- descriptors -----------------------------------------------------------------


class _platform_info(_SpecEnum):  # noqa: N801
    """``info::platform`` descriptors (Table 18)."""

    version = "version"
    name = "name"
    vendor = "vendor"
    extensions = "extensions"  # deprecated in SYCL 2020


class _context_info(_SpecEnum):  # noqa: N801
    """``info::context`` descriptors (Table 21)."""

    platform = "platform"
    devices = "devices"
    atomic_memory_order_capabilities = "atomic_memory_order_capabilities"
    atomic_fence_order_capabilities = "atomic_fence_order_capabilities"
    atomic_memory_scope_capabilities = "atomic_memory_scope_capabilities"
    atomic_fence_scope_capabilities = "atomic_fence_scope_capabilities"


class _queue_info(_SpecEnum):  # noqa: N801
    """``info::queue`` descriptors (Table 29)."""

    context = "context"
    device = "device"


class _event_info(_SpecEnum):  # noqa: N801
    """``info::event`` descriptors (Table 32)."""

    command_execution_status = "command_execution_status"
    reference_count = "reference_count"  # deprecated in SYCL 2020


class _event_profiling(_SpecEnum):  # noqa: N801
    """``info::event_profiling`` descriptors (Table 33)."""

    command_submit = "command_submit"
    command_start = "command_start"
    command_end = "command_end"


class _device_info(_SpecEnum):  # noqa: N801
    """``info::device`` descriptors (Table 25)."""

    device_type = "device_type"
    vendor_id = "vendor_id"
    max_compute_units = "max_compute_units"
    max_work_item_dimensions = "max_work_item_dimensions"
    max_work_item_sizes_1d = "max_work_item_sizes_1d"
    max_work_item_sizes_2d = "max_work_item_sizes_2d"
    max_work_item_sizes_3d = "max_work_item_sizes_3d"
    max_work_group_size = "max_work_group_size"
    max_num_sub_groups = "max_num_sub_groups"
    sub_group_independent_forward_progress = "sub_group_independent_forward_progress"
    sub_group_sizes = "sub_group_sizes"
    preferred_vector_width_char = "preferred_vector_width_char"
    preferred_vector_width_short = "preferred_vector_width_short"
    preferred_vector_width_int = "preferred_vector_width_int"
    preferred_vector_width_long = "preferred_vector_width_long"
    preferred_vector_width_float = "preferred_vector_width_float"
    preferred_vector_width_double = "preferred_vector_width_double"
    preferred_vector_width_half = "preferred_vector_width_half"
    native_vector_width_char = "native_vector_width_char"
    native_vector_width_short = "native_vector_width_short"
    native_vector_width_int = "native_vector_width_int"
    native_vector_width_long = "native_vector_width_long"
    native_vector_width_float = "native_vector_width_float"
    native_vector_width_double = "native_vector_width_double"
    native_vector_width_half = "native_vector_width_half"
    max_clock_frequency = "max_clock_frequency"
    address_bits = "address_bits"
    max_mem_alloc_size = "max_mem_alloc_size"
    image_support = "image_support"  # deprecated in SYCL 2020
    max_read_image_args = "max_read_image_args"
    max_write_image_args = "max_write_image_args"
    image2d_max_width = "image2d_max_width"
    image2d_max_height = "image2d_max_height"
    image3d_max_width = "image3d_max_width"
    image3d_max_height = "image3d_max_height"
    image3d_max_depth = "image3d_max_depth"
    image_max_buffer_size = "image_max_buffer_size"
    max_samplers = "max_samplers"
    max_parameter_size = "max_parameter_size"
    mem_base_addr_align = "mem_base_addr_align"
    half_fp_config = "half_fp_config"
    single_fp_config = "single_fp_config"
    double_fp_config = "double_fp_config"
    global_mem_cache_type = "global_mem_cache_type"
    global_mem_cache_line_size = "global_mem_cache_line_size"
    global_mem_cache_size = "global_mem_cache_size"
    global_mem_size = "global_mem_size"
    max_constant_buffer_size = "max_constant_buffer_size"  # deprecated
    max_constant_args = "max_constant_args"  # deprecated
    local_mem_type = "local_mem_type"
    local_mem_size = "local_mem_size"
    error_correction_support = "error_correction_support"
    host_unified_memory = "host_unified_memory"  # deprecated
    atomic_memory_order_capabilities = "atomic_memory_order_capabilities"
    atomic_fence_order_capabilities = "atomic_fence_order_capabilities"
    atomic_memory_scope_capabilities = "atomic_memory_scope_capabilities"
    atomic_fence_scope_capabilities = "atomic_fence_scope_capabilities"
    profiling_timer_resolution = "profiling_timer_resolution"
    is_endian_little = "is_endian_little"  # deprecated
    is_available = "is_available"
    is_compiler_available = "is_compiler_available"  # deprecated
    is_linker_available = "is_linker_available"  # deprecated
    execution_capabilities = "execution_capabilities"
    queue_profiling = "queue_profiling"  # deprecated
    built_in_kernel_ids = "built_in_kernel_ids"
    built_in_kernels = "built_in_kernels"  # deprecated
    platform = "platform"
    name = "name"
    vendor = "vendor"
    driver_version = "driver_version"
    profile = "profile"
    version = "version"
    backend_version = "backend_version"
    aspects = "aspects"
    extensions = "extensions"  # deprecated
    printf_buffer_size = "printf_buffer_size"
    preferred_interop_user_sync = "preferred_interop_user_sync"
    parent_device = "parent_device"
    partition_max_sub_devices = "partition_max_sub_devices"
    partition_properties = "partition_properties"
    partition_affinity_domains = "partition_affinity_domains"
    partition_type_property = "partition_type_property"
    partition_type_affinity_domain = "partition_type_affinity_domain"


class _kernel_info(_SpecEnum):  # noqa: N801
    """``info::kernel`` descriptors (§4.11.13.1)."""

    num_args = "num_args"
    attributes = "attributes"


class _kernel_device_specific(_SpecEnum):  # noqa: N801
    """``info::kernel_device_specific`` descriptors (§4.11.13.2)."""

    global_work_size = "global_work_size"
    work_group_size = "work_group_size"
    compile_work_group_size = "compile_work_group_size"
    preferred_work_group_size_multiple = "preferred_work_group_size_multiple"
    private_mem_size = "private_mem_size"
    max_num_sub_groups = "max_num_sub_groups"
    compile_num_sub_groups = "compile_num_sub_groups"
    max_sub_group_size = "max_sub_group_size"
    compile_sub_group_size = "compile_sub_group_size"


class info:  # noqa: N801 - the spec's namespace ``sycl::info``
    """The ``sycl::info`` namespace: descriptor groups and info enums."""

    device = _device_info
    platform = _platform_info
    context = _context_info
    queue = _queue_info
    event = _event_info
    event_profiling = _event_profiling
    kernel = _kernel_info
    kernel_device_specific = _kernel_device_specific
    event_command_status = event_command_status
    device_type = device_type
    partition_property = partition_property
    partition_affinity_domain = partition_affinity_domain
    local_mem_type = local_mem_type
    fp_config = fp_config
    global_mem_cache_type = global_mem_cache_type
    execution_capability = execution_capability

    def __init__(self) -> None:
        raise TypeError("sycl.info is a namespace, not a class to instantiate")


# --- OpenCL value -> SYCL value conversions ---------------------------------------


def bits_to_members(bits: int, enum_cls: type[enum.Enum]) -> list[Any]:
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
       ) -> Callable[[_device_t], Any]:
    def get(dev: _device_t) -> Any:
        return conv(_d.device_info(dev._cl, key, default))
    return get


def _work_item_sizes(n: int) -> Callable[[_device_t], Any]:
    # SYCL dimension 0 is the slowest-varying; OpenCL's dimension 0 the fastest
    # (OpenCL backend appendix, "syclOpenCL.mapping"): reverse the first n sizes.
    def get(dev: _device_t) -> Any:
        sizes = list(_d.device_info(dev._cl, "MAX_WORK_ITEM_SIZES"))[:n]
        return _make_id(tuple(int(s) for s in reversed(sizes)))
    return get


def _make_id(values: tuple[int, ...]) -> Any:
    """``id<N>`` when ``pysycl.id`` exists, else a tuple (same indexing, same length)."""
    try:
        from pysycl._objects.range import id as sycl_id
    except ImportError:
        return values
    try:
        return sycl_id(*values)
    except TypeError:
        return values


def _fp(key: str) -> Callable[[_device_t], list[fp_config]]:
    def get(dev: _device_t) -> list[fp_config]:
        return bits_to_members(int(_d.device_info(dev._cl, key, 0) or 0), fp_config)
    return get


def _half_fp(dev: _device_t) -> list[fp_config]:
    from pysycl._objects.aspects import aspect

    # Table 25: empty unless the device has aspect::fp16.
    if not dev.has(aspect.fp16):
        return []
    bits = _d.device_info(dev._cl, "HALF_FP_CONFIG", 0) or 0
    return bits_to_members(int(bits), fp_config)


def _atomic(key: str, legacy: int, conv: Callable[[int], list[Any]]) -> Callable[[_device_t], Any]:
    def get(dev: _device_t) -> Any:
        bits = _d.device_info(dev._cl, key, None)
        return conv(legacy if bits is None else int(bits))
    return get


def _aspects(dev: _device_t) -> list[Any]:
    from pysycl._objects.aspects import aspect

    return [a for a in aspect if dev.has(a)]


def _parent(dev: _device_t) -> Any:
    from pysycl._core.exceptions import errc, exception

    parent = dev._parent
    if parent is None:
        # Table 25: errc::invalid when this is not a sub-device.
        raise exception(errc.invalid, f"info.device.parent_device: {dev!r} is not a sub-device")
    return parent


def _can_split(dev: _device_t) -> bool:
    # Table 25: a partition property (or affinity domain) is listed "only if the
    # device can be partitioned into at least two sub devices along" it.
    return (int(_d.device_info(dev._cl, "MAX_COMPUTE_UNITS")) >= 2
            and int(_d.device_info(dev._cl, "PARTITION_MAX_SUB_DEVICES", 0) or 0) >= 2)


def _partition_properties(dev: _device_t) -> list[partition_property]:
    if not _can_split(dev):
        return []
    props = _d.device_info(dev._cl, "PARTITION_PROPERTIES", []) or []
    known = {p.value: p for p in partition_property if p.value}
    return [known[p] for p in props if p in known]


def _affinity_domains(dev: _device_t) -> list[partition_affinity_domain]:
    if not _can_split(dev):
        return []
    bits = _d.device_info(dev._cl, "PARTITION_AFFINITY_DOMAIN", 0) or 0
    if isinstance(bits, (list, tuple)):  # some pyopencl versions answer a list
        bits = bits[0] if bits else 0
    return bits_to_members(int(bits), partition_affinity_domain)


def _partition_type(dev: _device_t) -> tuple[partition_property, partition_affinity_domain]:
    if dev._parent is None:
        return partition_property.no_partition, partition_affinity_domain.not_applicable
    props = list(_d.device_info(dev._cl, "PARTITION_TYPE", []) or [])
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


def _backend_version(dev: _device_t) -> str:
    # The OpenCL version the device supports, e.g. "3.0" from "OpenCL 3.0 (Build 0)".
    parts = str(_d.device_info(dev._cl, "VERSION")).split()
    return parts[1] if len(parts) > 1 else "".join(parts)


def _exec_caps(dev: _device_t) -> list[execution_capability]:
    return bits_to_members(int(_d.device_info(dev._cl, "EXECUTION_CAPABILITIES", 1)),
                           execution_capability)


def _built_in_kernels(dev: _device_t) -> list[str]:
    return [k for k in str(_d.device_info(dev._cl, "BUILT_IN_KERNELS", "") or "").split(";") if k]


def _queue_profiling(dev: _device_t) -> bool:
    return bool(int(_d.device_info(dev._cl, "QUEUE_PROPERTIES", 0)) & _d.QUEUE_PROFILING_ENABLE)


def _u(key: str, default: Any = _d.REQUIRED) -> Callable[[_device_t], int]:
    return _q(key, default, int)


def _b(key: str, default: Any = _d.REQUIRED) -> Callable[[_device_t], bool]:
    return _q(key, default, bool)


def _s(key: str, default: Any = _d.REQUIRED) -> Callable[[_device_t], str]:
    return _q(key, default, lambda v: str(v).strip())


D = _device_info

#: How each device descriptor is answered; devices do not change, so results
#: are cached per device (except ``is_available``).
DEVICE_QUERIES: dict[_device_info, Callable[[_device_t], Any]] = {
    D.device_type: lambda dev: device_type_of(int(_d.device_info(dev._cl, "TYPE"))),
    D.vendor_id: _u("VENDOR_ID"),
    D.max_compute_units: _u("MAX_COMPUTE_UNITS"),
    D.max_work_item_dimensions: _u("MAX_WORK_ITEM_DIMENSIONS"),
    D.max_work_item_sizes_1d: _work_item_sizes(1),
    D.max_work_item_sizes_2d: _work_item_sizes(2),
    D.max_work_item_sizes_3d: _work_item_sizes(3),
    D.max_work_group_size: _u("MAX_WORK_GROUP_SIZE"),
    D.max_num_sub_groups: _u("MAX_NUM_SUB_GROUPS", 0),
    D.sub_group_independent_forward_progress: _b("SUB_GROUP_INDEPENDENT_FORWARD_PROGRESS", False),
    D.sub_group_sizes: lambda dev: _d.sub_group_sizes(dev._cl),
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
    D.platform: lambda dev: dev.get_platform(),
    D.name: _s("NAME"),
    D.vendor: _s("VENDOR"),
    D.driver_version: _s("DRIVER_VERSION"),
    D.profile: _s("PROFILE"),
    D.version: _s("VERSION"),
    D.backend_version: _backend_version,
    D.aspects: _aspects,
    D.extensions: lambda dev: sorted(_d.extensions(dev._cl)),
    D.printf_buffer_size: _u("PRINTF_BUFFER_SIZE", 0),
    D.preferred_interop_user_sync: _b("PREFERRED_INTEROP_USER_SYNC", True),
    D.parent_device: _parent,
    D.partition_max_sub_devices: _u("PARTITION_MAX_SUB_DEVICES", 0),
    D.partition_properties: _partition_properties,
    D.partition_affinity_domains: _affinity_domains,
    D.partition_type_property: lambda dev: _partition_type(dev)[0],
    D.partition_type_affinity_domain: lambda dev: _partition_type(dev)[1],
}

#: Descriptors whose answer may change while the program runs: never cached.
UNCACHED_DEVICE_INFO = frozenset({D.is_available})

assert set(DEVICE_QUERIES) == set(_device_info), "every info.device descriptor has a query"

"""The ``info`` namespace (SYCL 2020 §4.6.2.2, §4.6.3.2, §4.6.4.2, Appendix A).

Descriptors are enum members, spelled as in the spec: ``info.device.name``,
``info.platform.vendor``, ``info.context.devices``. They are hashable singletons,
passed to ``get_info`` in place of the C++ template parameter::

    dev.get_info(sycl.info.device.max_compute_units)   # -> int

The templated ``info::device::max_work_item_sizes<N>`` is spelled
``info.device.max_work_item_sizes_1d`` / ``_2d`` / ``_3d``; plain
``info.device.max_work_item_sizes`` is another name of ``max_work_item_sizes_3d``
(what SYCL 1.2.1 and DPC++'s untemplated descriptor answer).

This module also holds the enums the descriptors return (``info.device_type``,
``info.fp_config``, ...) and the kernel_compiler extension's ``source_language``
(what ``device.ext_oneapi_can_compile`` takes). How a backend answers a
descriptor is the backend's business (``pysycl._backends.opencl.device_info``,
``pysycl._backends.host.device``); this module knows no backend.
"""

from __future__ import annotations

import enum


class _SpecEnum(enum.Enum):
    """An enum whose repr is its spec spelling: ``sycl.info.device.name``."""

    # Members are singletons compared by identity: hash them so too (``get_info``
    # looks descriptors up in a cache on every call; Enum's hash is Python code).
    __hash__ = object.__hash__

    def __repr__(self) -> str:
        name = type(self).__name__.strip("_").removesuffix("_info")
        return f"sycl.info.{name}.{self.name}"


# --- enums returned by descriptors -----------------------------------------------
# Bit-valued enums take the OpenCL values (cl.h), which the OpenCL backend
# converts from; the spec leaves the values open.


class device_type(_SpecEnum):  # noqa: N801
    """``info::device_type``; the value is the OpenCL ``cl_device_type`` bitfield.

    ``automatic`` is OpenCL's ``CL_DEVICE_TYPE_DEFAULT``. ``host`` matches no
    device: SYCL 2020 has no host device, the enumerator is kept for porting.
    """

    cpu = 1 << 1
    gpu = 1 << 2
    accelerator = 1 << 3
    custom = 1 << 4
    automatic = 1 << 0
    host = 0
    all = 0xFFFFFFFF


class partition_property(_SpecEnum):  # noqa: N801
    """``info::partition_property``; values are the OpenCL partition properties."""

    no_partition = 0
    partition_equally = 0x1086
    partition_by_counts = 0x1087
    partition_by_affinity_domain = 0x1088


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


class source_language(enum.Enum):  # noqa: N801 - the spec's spelling
    """Languages of ``create_kernel_bundle_from_source`` (kernel_compiler extension)."""

    opencl = "opencl"   # text
    spirv = "spirv"     # bytes
    ext_pysycl_ptx = "ext_pysycl_ptx"   # text: NVIDIA's PTX assembly (devices with PTX images)

    def __repr__(self) -> str:
        return f"sycl.ext.oneapi.experimental.source_language.{self.name}"


# Public where the extension namespace re-exports it (and pickles by that name).
source_language.__module__ = "pysycl.ext.oneapi.experimental"


# --- descriptors -----------------------------------------------------------------
# One table: each group's name, its docstring and its members (the value of a
# member is its name). "(deprecated)" marks descriptors SYCL 2020 deprecates;
# "alias=name" makes ``alias`` another name of the member ``name`` (one enum member).


def _descriptors(name: str, doc: str, members: str) -> type[_SpecEnum]:
    pairs = [tuple(m.split("=")) if "=" in m else (m, m)
             for m in members.split() if m != "(deprecated)"]
    cls = _SpecEnum(name, pairs, module=__name__, qualname=name)
    cls.__doc__ = doc
    return cls


_platform_info = _descriptors("_platform_info", "``info::platform`` descriptors (Table 18).", """
    version name vendor extensions (deprecated)
""")

_context_info = _descriptors("_context_info", "``info::context`` descriptors (Table 21).", """
    platform devices
    atomic_memory_order_capabilities atomic_fence_order_capabilities
    atomic_memory_scope_capabilities atomic_fence_scope_capabilities
""")

_queue_info = _descriptors("_queue_info", "``info::queue`` descriptors (Table 29).", """
    context device
""")

_event_info = _descriptors("_event_info", "``info::event`` descriptors (Table 32).", """
    command_execution_status reference_count (deprecated)
""")

_event_profiling = _descriptors("_event_profiling",
                                "``info::event_profiling`` descriptors (Table 33).", """
    command_submit command_start command_end
""")

_device_info = _descriptors("_device_info", "``info::device`` descriptors (Table 25).", """
    device_type vendor_id max_compute_units max_work_item_dimensions
    max_work_item_sizes_1d max_work_item_sizes_2d max_work_item_sizes_3d
    max_work_item_sizes=max_work_item_sizes_3d
    max_work_group_size max_num_sub_groups sub_group_independent_forward_progress
    sub_group_sizes ext_oneapi_matrix_combinations ext_pysycl_work_group_matrix_combinations
    preferred_vector_width_char preferred_vector_width_short preferred_vector_width_int
    preferred_vector_width_long preferred_vector_width_float preferred_vector_width_double
    preferred_vector_width_half
    native_vector_width_char native_vector_width_short native_vector_width_int
    native_vector_width_long native_vector_width_float native_vector_width_double
    native_vector_width_half
    max_clock_frequency address_bits max_mem_alloc_size image_support (deprecated)
    max_read_image_args max_write_image_args image2d_max_width image2d_max_height
    image3d_max_width image3d_max_height image3d_max_depth image_max_buffer_size
    max_samplers max_parameter_size mem_base_addr_align
    half_fp_config single_fp_config double_fp_config
    global_mem_cache_type global_mem_cache_line_size global_mem_cache_size global_mem_size
    max_constant_buffer_size (deprecated) max_constant_args (deprecated)
    local_mem_type local_mem_size error_correction_support
    host_unified_memory (deprecated)
    atomic_memory_order_capabilities atomic_fence_order_capabilities
    atomic_memory_scope_capabilities atomic_fence_scope_capabilities
    profiling_timer_resolution is_endian_little (deprecated) is_available
    is_compiler_available (deprecated) is_linker_available (deprecated)
    execution_capabilities queue_profiling (deprecated)
    built_in_kernel_ids built_in_kernels (deprecated)
    platform name vendor driver_version profile version backend_version aspects
    extensions (deprecated) printf_buffer_size preferred_interop_user_sync
    parent_device partition_max_sub_devices partition_properties
    partition_affinity_domains partition_type_property partition_type_affinity_domain
""")

_kernel_info = _descriptors("_kernel_info", "``info::kernel`` descriptors (§4.11.13.1).", """
    num_args attributes
""")

_kernel_device_specific = _descriptors(
    "_kernel_device_specific", "``info::kernel_device_specific`` descriptors (§4.11.13.2).", """
    global_work_size work_group_size compile_work_group_size
    preferred_work_group_size_multiple private_mem_size max_num_sub_groups
    compile_num_sub_groups max_sub_group_size compile_sub_group_size
""")


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

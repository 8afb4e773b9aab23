"""The host_debuggable device: a platform and device of pysycl's own, without OpenCL.

``sycl.queue(sycl.aspect_selector(sycl.aspect.host_debuggable))`` gives a queue on
the device whose kernels run in the Python interpreter, work-item by work-item
(:mod:`pysycl._backends.host.executor`), so ``breakpoint()``, pdb and ``print`` work inside
them (docs/debugging.md, docs/design/host-device.md).

* Its platform is "pysycl host interpreter", backend ``backend.ext_pysycl_host``.
* Its device type is ``info.device_type.custom`` and its aspects are
  ``custom``, ``emulated``, ``host_debuggable``, ``fp16``, ``fp64`` and
  ``atomic64``: ``cpu/gpu/accelerator_selector_v`` never pick it, and
  ``default_selector_v`` scores it negative, so it is only ever chosen on request.
* No OpenCL object exists for it: ``native`` is ``None`` on the device, its
  platform, contexts and queues, and nothing here imports pyopencl.

Both classes are subclasses of the backend-neutral ``platform``/``device`` (as
the OpenCL backend's are), answering what a backend answers: info descriptors,
aspects, contexts.
"""

from __future__ import annotations

import functools
import itertools
import os
import platform as _pyplatform
import sys
import threading
from collections.abc import Sequence
from typing import Any

from pysycl._backends.host.ndrange import SUB_GROUP_SIZE
from pysycl._core.backend import backend
from pysycl._core.memory_model import memory_order, memory_scope
from pysycl._core.version import __version__
from pysycl._kernels.matrix import LOOP_COMBINATIONS, WG_LOOP_COMBINATIONS
from pysycl._objects.aspects import aspect
from pysycl._objects.device import device
from pysycl._objects.info import (
    _device_info,
    _platform_info,
    device_type,
    execution_capability,
    fp_config,
    global_mem_cache_type,
    local_mem_type,
    partition_affinity_domain,
    partition_property,
)
from pysycl._objects.platform import platform
from pysycl._objects.range import id as _id

PLATFORM_NAME = "pysycl host interpreter"
VENDOR = "pysycl"

#: Handles that never collide with an OpenCL handle (a pointer, > 0).
HOST_HANDLE = -1

#: The largest work-group: one Python thread per work-item of a group.
MAX_WORK_GROUP_SIZE = 256
#: Local memory per work-group (host memory; a limit keeps launches portable).
LOCAL_MEM_SIZE = 1 << 20

ASPECTS = frozenset({aspect.custom, aspect.emulated, aspect.host_debuggable,
                     aspect.fp16, aspect.fp64, aspect.atomic64,
                     # USM: every kind is plain host memory; kernels run one work-item
                     # at a time, so host and kernel atomics never race
                     aspect.usm_device_allocations, aspect.usm_host_allocations,
                     aspect.usm_shared_allocations, aspect.usm_atomic_host_allocations,
                     aspect.usm_atomic_shared_allocations, aspect.usm_system_allocations})

_lock = threading.Lock()
_singleton: list[host_platform] = []
_context_keys = itertools.count(2)  # contexts: -2, -3, ... (HOST_HANDLE is -1)


def _memory_bytes() -> int:
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # not POSIX
        return 1 << 34


def get_host_platform() -> host_platform:
    """The one host platform (created on first use)."""
    if not _singleton:
        with _lock:
            if not _singleton:
                _singleton.append(host_platform._make())
    return _singleton[0]


class host_platform(platform):  # noqa: N801 - spelled like the class it specializes
    """The "pysycl host interpreter" platform: one device, ``host_device``."""

    __slots__ = ()

    _backend = backend.ext_pysycl_host

    @classmethod
    def _make(cls) -> host_platform:
        self = object.__new__(cls)
        self._setup(None, HOST_HANDLE)
        self._info = {
            _platform_info.name: PLATFORM_NAME,
            _platform_info.vendor: VENDOR,
            _platform_info.version: f"pysycl {__version__} (Python {_pyplatform.python_version()})",
            _platform_info.extensions: [],
        }
        self._devices = [host_device._make(self)]
        return self

    def _new_native_context(self, devs: Sequence[device]) -> tuple[None, int]:
        # No backend context: a key of its own (negative, never an OpenCL handle).
        return None, -next(_context_keys)

    def has_extension(self, extension: str) -> bool:
        """Deprecated: the host platform has no OpenCL extensions."""
        return False


class host_device(device):  # noqa: N801 - spelled like the class it specializes
    """The host_debuggable device: runs kernels in the Python interpreter."""

    __slots__ = ()

    _backend = backend.ext_pysycl_host

    @classmethod
    def _make(cls, plat: host_platform) -> host_device:
        self = object.__new__(cls)
        self._setup(None, HOST_HANDLE, plat, None)
        self._aspects = ASPECTS
        return self

    def _query(self, param: _device_info) -> Any:
        return _host_info(param)

    def _is_available(self) -> bool:
        return True


_ALL_ORDERS = list(memory_order)
_ALL_SCOPES = list(memory_scope)
_FP = [fp_config.denorm, fp_config.inf_nan, fp_config.round_to_nearest, fp_config.fma,
       fp_config.correctly_rounded_divide_sqrt]


def _host_info(param: _device_info) -> Any:
    """The answer to one ``info.device`` descriptor (the device caches it)."""
    table = _host_table()
    if param in table:
        return table[param]
    if param.name.startswith(("preferred_vector_width_", "native_vector_width_")):
        return 1
    # Image limits and the like: the host device has no images.
    return 0


# long: one line per info descriptor, a table rather than logic.
@functools.cache
def _host_table() -> dict[_device_info, Any]:
    # One line per descriptor: a table, not logic, hence the length.
    D = _device_info  # noqa: N806 - the spec's namespace, short
    wg = MAX_WORK_GROUP_SIZE
    mem = _memory_bytes()
    return {
        D.device_type: device_type.custom,
        D.vendor_id: 0,
        D.max_compute_units: 1,
        D.max_work_item_dimensions: 3,
        D.max_work_item_sizes_1d: _id(wg),
        D.max_work_item_sizes_2d: _id(wg, wg),
        D.max_work_item_sizes_3d: _id(wg, wg, wg),
        D.max_work_group_size: wg,
        D.max_num_sub_groups: -(-wg // SUB_GROUP_SIZE),
        D.sub_group_independent_forward_progress: False,
        D.ext_oneapi_matrix_combinations: list(LOOP_COMBINATIONS),  # the numpy reference
        D.ext_pysycl_work_group_matrix_combinations: list(WG_LOOP_COMBINATIONS),
        D.sub_group_sizes: [SUB_GROUP_SIZE, 16, 32],  # the default first; reqd_sub_group_size
        D.max_clock_frequency: 0,
        D.address_bits: 64 if sys.maxsize > 2**32 else 32,
        D.max_mem_alloc_size: mem,
        D.image_support: False,
        D.max_parameter_size: 1 << 16,
        D.mem_base_addr_align: 8 * 64,
        D.half_fp_config: list(_FP),
        D.single_fp_config: list(_FP),
        D.double_fp_config: list(_FP),
        D.global_mem_cache_type: global_mem_cache_type.none,
        D.global_mem_cache_line_size: 0,
        D.global_mem_cache_size: 0,
        D.global_mem_size: mem,
        D.max_constant_buffer_size: mem,
        D.max_constant_args: 1 << 16,
        D.local_mem_type: local_mem_type["global"],
        D.local_mem_size: LOCAL_MEM_SIZE,
        D.error_correction_support: False,
        D.host_unified_memory: True,
        D.atomic_memory_order_capabilities: list(_ALL_ORDERS),
        D.atomic_fence_order_capabilities: list(_ALL_ORDERS),
        D.atomic_memory_scope_capabilities: list(_ALL_SCOPES),
        D.atomic_fence_scope_capabilities: list(_ALL_SCOPES),
        D.profiling_timer_resolution: 0,
        D.is_endian_little: sys.byteorder == "little",
        D.is_available: True,
        D.is_compiler_available: False,
        D.is_linker_available: False,
        D.execution_capabilities: [execution_capability.exec_kernel],
        D.queue_profiling: False,
        D.built_in_kernel_ids: [],
        D.built_in_kernels: [],
        D.name: f"Python {_pyplatform.python_version()} interpreter",
        D.vendor: VENDOR,
        D.driver_version: __version__,
        D.profile: "FULL_PROFILE",
        D.version: f"pysycl host {__version__}",
        D.backend_version: __version__,
        D.extensions: [],
        D.printf_buffer_size: 0,
        D.preferred_interop_user_sync: False,
        D.partition_max_sub_devices: 0,
        D.partition_properties: [],
        D.partition_affinity_domains: [],
        D.partition_type_property: partition_property.no_partition,
        D.partition_type_affinity_domain: partition_affinity_domain.not_applicable,
    }

"""The CUDA backend's platform, devices and contexts.

One platform, "NVIDIA CUDA", with one device per ``CUdevice`` of compute capability 6.0 or
later (the PTX target's floor, as on NVIDIA's OpenCL). A device's info answers and aspects
come from ``cuDeviceGetAttribute`` (:func:`_info_table`); its image target is
``("ptx", "sm_XY")``, the image NVIDIA's OpenCL loads too. A ``sycl.context`` holds each
device's *primary* context (``cuDevicePrimaryCtxRetain``), the one the CUDA runtime, CuPy,
PyTorch and JAX use, so their pointers and pysycl's are the same memory.
"""

from __future__ import annotations

import functools
import itertools
import threading
from collections.abc import Sequence
from typing import Any

from pysycl._backends.cuda import driver as d
from pysycl._backends.cuda.driver import cu
from pysycl._core.backend import backend
from pysycl._core.memory_model import memory_order, memory_scope
from pysycl._kernels.matrix_ptx import ptx_combinations, wg_ptx_combinations
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

PLATFORM_NAME = "NVIDIA CUDA"
VENDOR = "NVIDIA Corporation"
#: The PTX target's oldest compute capability (as the OpenCL path's)
MIN_COMPUTE_CAPABILITY = (6, 0)
#: Keys of CUDA objects: far from OpenCL handles (pointers) and the host's negative keys
PLATFORM_KEY = 0x7C0DA << 40
_DEVICE_KEY = PLATFORM_KEY + (1 << 32)
_context_keys = itertools.count(PLATFORM_KEY + (2 << 32))

_lock = threading.Lock()
_platform: list[cuda_platform] = []


class CudaContext:
    """The native side of a ``sycl.context`` of CUDA devices: their primary contexts."""

    __slots__ = ("__weakref__", "primary")

    def __init__(self, devs: Sequence[cuda_device]) -> None:
        #: device ordinal -> its retained primary ``CUcontext``
        self.primary: dict[int, Any] = {dv.ordinal: primary_context(dv.ordinal) for dv in devs}


_primaries: dict[int, Any] = {}


def primary_context(ordinal: int) -> Any:
    """Device ``ordinal``'s primary context, retained once for the process."""
    ctx = _primaries.get(ordinal)
    if ctx is None:
        with _lock:
            ctx = _primaries.get(ordinal)
            if ctx is None:
                dev = d.call(cu.cuDeviceGet, ordinal)
                ctx = _primaries[ordinal] = d.call(cu.cuDevicePrimaryCtxRetain, dev,
                                                   what="cuDevicePrimaryCtxRetain")
    return ctx


#: the context this thread made current last (``ctx``): the launch path's cheap check;
#: other code on the thread (CuPy, PyTorch, a ``cuCtxCreate``) may have changed it since
_current = threading.local()
#: the driver's codes of a call made while the thread's current context is wrong or gone
WRONG_CONTEXT = frozenset({201, 709})  # CUDA_ERROR_INVALID_CONTEXT, _CONTEXT_IS_DESTROYED


def make_current(ctx: Any) -> None:
    """``cuCtxSetCurrent(ctx)`` unless the driver says it is this thread's current context
    (asked, not remembered: another library may have made another one current, or destroyed
    the one that was)."""
    r = cu.cuCtxGetCurrent()
    if r[0] or r[1] is None or int(r[1]) != int(ctx):
        d.call(cu.cuCtxSetCurrent, ctx)
    _current.ctx = ctx


class cuda_platform(platform):  # noqa: N801 - spelled like the class it specializes
    """The CUDA driver's platform (``native``: None; CUDA has no platform object)."""

    __slots__ = ("_ordinals",)

    _backend = backend.ext_oneapi_cuda

    @classmethod
    def _make(cls, ordinals: Sequence[int]) -> cuda_platform:
        self = object.__new__(cls)
        self._setup(None, PLATFORM_KEY)
        v = d.driver_version()
        self._info = {
            _platform_info.name: PLATFORM_NAME,
            _platform_info.vendor: VENDOR,
            _platform_info.version: f"CUDA {v // 1000}.{v % 1000 // 10}",
            _platform_info.extensions: [],
        }
        self._ordinals = tuple(ordinals)
        return self

    def _query(self, param: _platform_info) -> Any:
        return self._info[param]

    def _make_root_devices(self) -> list[device]:
        return [cuda_device._make(o, self) for o in self._ordinals]

    def _new_native_context(self, devs: Sequence[device]) -> tuple[CudaContext, int]:
        return CudaContext(devs), next(_context_keys)  # type: ignore[arg-type]

    def has_extension(self, extension: str) -> bool:
        """Deprecated: the CUDA platform has no OpenCL extensions."""
        return False


class cuda_device(device):  # noqa: N801 - spelled like the class it specializes
    """A CUDA device (``native``: its ``CUdevice``)."""

    __slots__ = ("cc", "ordinal")

    _backend = backend.ext_oneapi_cuda
    #: its online compiler and linker are the driver's PTX JIT: no OpenCL C, no SPIR-V
    _compiles_opencl = False

    @classmethod
    def _make(cls, ordinal: int, plat: cuda_platform) -> cuda_device:
        self = object.__new__(cls)
        native = d.call(cu.cuDeviceGet, ordinal)
        self._setup(native, _DEVICE_KEY + ordinal, plat, None)
        self.ordinal = ordinal
        self.cc = compute_capability(native)
        return self

    def _query(self, param: _device_info) -> Any:
        table = _info_table(self.ordinal)
        if param in table:
            return table[param]
        if param.name.startswith(("preferred_vector_width_", "native_vector_width_")):
            return 1
        return 0  # image limits and the like: no images

    def _derive_aspects(self) -> frozenset[aspect]:
        return _aspects(self.ordinal, self.cc)

    def _image_targets(self) -> tuple[tuple[str, str], ...]:
        return (("ptx", f"sm_{self.cc[0]}{self.cc[1]}"),)

    def _is_available(self) -> bool:
        return True


def compute_capability(dev: Any) -> tuple[int, int]:
    return (d.attribute(dev, "COMPUTE_CAPABILITY_MAJOR"),
            d.attribute(dev, "COMPUTE_CAPABILITY_MINOR"))


def cuda_platforms() -> list[platform]:
    """The CUDA platform, when the driver has a device it can run (else none)."""
    if _platform:
        return list(_platform)
    if not d.available():  # (loads the driver: this module's ``cu`` is bound then)
        return []
    with _lock:
        if not _platform:
            n = int(d.call(cu.cuDeviceGetCount))
            ordinals = [o for o in range(n)
                        if compute_capability(d.call(cu.cuDeviceGet, o)) >= MIN_COMPUTE_CAPABILITY]
            if ordinals:
                _platform.append(cuda_platform._make(ordinals))
    return list(_platform)


def _aspects(ordinal: int, cc: tuple[int, int]) -> frozenset[aspect]:
    dev = d.call(cu.cuDeviceGet, ordinal)
    a = d.attribute
    # online_compiler/online_linker: the driver's JIT compiles and links PTX (kernel bundles
    # in input and object state), as intel/llvm's CUDA adapter reports them
    has = {aspect.gpu, aspect.fp64, aspect.atomic64, aspect.queue_profiling,
           aspect.ext_pysycl_ptx, aspect.usm_device_allocations, aspect.usm_host_allocations,
           aspect.online_compiler, aspect.online_linker}
    if cc >= (5, 3):
        has.add(aspect.fp16)
    if a(dev, "HOST_NATIVE_ATOMIC_SUPPORTED"):
        has.add(aspect.usm_atomic_host_allocations)
    if a(dev, "MANAGED_MEMORY"):
        has.add(aspect.usm_shared_allocations)
        if a(dev, "CONCURRENT_MANAGED_ACCESS"):
            has.add(aspect.usm_atomic_shared_allocations)
    if a(dev, "PAGEABLE_MEMORY_ACCESS"):
        has.add(aspect.usm_system_allocations)
    return frozenset(has)


_ALL_ORDERS = list(memory_order)
_ALL_SCOPES = list(memory_scope)
_FP = [fp_config.denorm, fp_config.inf_nan, fp_config.round_to_nearest,
       fp_config.round_to_zero, fp_config.round_to_inf, fp_config.fma,
       fp_config.correctly_rounded_divide_sqrt]


# long: one line per info descriptor, a table rather than logic.
@functools.cache
def _info_table(ordinal: int) -> dict[_device_info, Any]:
    D = _device_info  # noqa: N806 - the spec's namespace, short
    dev = d.call(cu.cuDeviceGet, ordinal)
    a = functools.partial(d.attribute, dev)
    x, y, z = a("MAX_BLOCK_DIM_X"), a("MAX_BLOCK_DIM_Y"), a("MAX_BLOCK_DIM_Z")
    wg = a("MAX_THREADS_PER_BLOCK")
    mem = int(d.call(cu.cuDeviceTotalMem, dev))
    name = d.call(cu.cuDeviceGetName, 256, dev)
    name = bytes(name).split(b"\0")[0].decode(errors="replace")
    v = d.driver_version()
    ver = f"{v // 1000}.{v % 1000 // 10}"
    cc = compute_capability(dev)
    return {
        D.device_type: device_type.gpu,
        D.vendor_id: 0x10DE,
        D.max_compute_units: a("MULTIPROCESSOR_COUNT"),
        D.max_work_item_dimensions: 3,
        D.max_work_item_sizes_1d: _id(x),
        D.max_work_item_sizes_2d: _id(y, x),
        D.max_work_item_sizes_3d: _id(z, y, x),
        D.max_work_group_size: wg,
        D.max_num_sub_groups: wg // 32,
        D.sub_group_independent_forward_progress: cc >= (7, 0),
        D.sub_group_sizes: [32],
        # joint_matrix: mma.sync tiles on sm_80+ (pysycl_numba/overloads/matrix_ptx.py)
        D.ext_oneapi_matrix_combinations: list(ptx_combinations(cc[0] * 10 + cc[1])),
        # work-group matrices: wgmma on sm_90 (pysycl_numba/overloads/matrix_wgmma.py)
        D.ext_pysycl_work_group_matrix_combinations: list(wg_ptx_combinations(cc[0] * 10
                                                                              + cc[1])),
        D.max_clock_frequency: a("CLOCK_RATE") // 1000,
        D.address_bits: 64,
        D.max_mem_alloc_size: mem,
        D.image_support: False,
        D.max_parameter_size: 4096,
        D.mem_base_addr_align: 8 * a("TEXTURE_ALIGNMENT"),
        D.half_fp_config: list(_FP),
        D.single_fp_config: list(_FP),
        D.double_fp_config: list(_FP),
        D.global_mem_cache_type: global_mem_cache_type.read_write,
        D.global_mem_cache_line_size: 128,
        D.global_mem_cache_size: a("L2_CACHE_SIZE"),
        D.global_mem_size: mem,
        D.max_constant_buffer_size: a("TOTAL_CONSTANT_MEMORY"),
        D.max_constant_args: 9,
        D.local_mem_type: local_mem_type.local,
        # the opt-in maximum (227 KiB on H100/H200), as DPC++'s CUDA adapter reports it: a
        # launch past 48 KiB raises the kernel's limit first (build.Built.allow_shared)
        D.local_mem_size: a("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN")
        or a("MAX_SHARED_MEMORY_PER_BLOCK"),
        D.error_correction_support: bool(a("ECC_ENABLED")),
        D.host_unified_memory: bool(a("INTEGRATED")),
        D.atomic_memory_order_capabilities: list(_ALL_ORDERS),
        D.atomic_fence_order_capabilities: list(_ALL_ORDERS),
        D.atomic_memory_scope_capabilities: list(_ALL_SCOPES),
        D.atomic_fence_scope_capabilities: list(_ALL_SCOPES),
        D.profiling_timer_resolution: 1000,
        D.is_endian_little: True,
        D.is_available: True,
        D.is_compiler_available: True,
        D.is_linker_available: True,
        D.execution_capabilities: [execution_capability.exec_kernel],
        D.queue_profiling: True,
        D.built_in_kernel_ids: [],
        D.built_in_kernels: [],
        D.name: name,
        D.vendor: VENDOR,
        D.driver_version: ver,
        D.profile: "FULL_PROFILE",
        D.version: f"{cc[0]}.{cc[1]}",
        D.backend_version: ver,
        D.extensions: [],
        D.printf_buffer_size: 0,
        D.preferred_interop_user_sync: False,
        D.partition_max_sub_devices: 0,
        D.partition_properties: [],
        D.partition_affinity_domains: [],
        D.partition_type_property: partition_property.no_partition,
        D.partition_type_affinity_domain: partition_affinity_domain.not_applicable,
    }

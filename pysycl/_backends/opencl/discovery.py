"""OpenCL discovery through pyopencl: platforms, devices, info queries, sub-devices, contexts.

This is the one module of the OpenCL backend's object model (platforms,
devices, contexts, info) that calls pyopencl. It returns plain Python values
(``int`` bitfields, ``str``, ``list``) and pyopencl handles; the SYCL-level
objects and types (``sycl.device``, ``info.fp_config``, ``aspect``, ...) are built
from them in ``pysycl._backends.opencl.objects`` and ``.device_info``.

pyopencl is imported lazily (:func:`cl`), so ``import pysycl`` stays free of it.
OpenCL errors become :class:`pysycl.exception` through :func:`translate_cl_error`
and :func:`cl_call`, which keep the OpenCL status in ``exception(..., cl_error=)``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging
import os
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

from pysycl._core.exceptions import errc, exception

if TYPE_CHECKING:
    from typing import Protocol

    import pyopencl

    from pysycl._core.launch_types import ContextRef

    class HasIntPtr(Protocol):
        """Any pyopencl object: each has its raw handle as ``int_ptr``."""

        @property
        def int_ptr(self) -> int: ...


_log = logging.getLogger("pysycl.cl")

T = TypeVar("T")

# --- OpenCL constants (cl.h / cl_ext.h), so callers need not import pyopencl ---------

DEVICE_TYPE_DEFAULT = 1 << 0
DEVICE_TYPE_CPU = 1 << 1
DEVICE_TYPE_GPU = 1 << 2
DEVICE_TYPE_ACCELERATOR = 1 << 3
DEVICE_TYPE_CUSTOM = 1 << 4
DEVICE_TYPE_ALL = 0xFFFFFFFF

PARTITION_EQUALLY = 0x1086
PARTITION_BY_COUNTS = 0x1087
PARTITION_BY_COUNTS_LIST_END = 0x0
PARTITION_BY_AFFINITY_DOMAIN = 0x1088

QUEUE_PROFILING_ENABLE = 1 << 1

# cl_intel_unified_shared_memory capability queries and bits.
DEVICE_HOST_MEM_CAPABILITIES_INTEL = 0x4190
DEVICE_DEVICE_MEM_CAPABILITIES_INTEL = 0x4191
DEVICE_SINGLE_DEVICE_SHARED_MEM_CAPABILITIES_INTEL = 0x4192
DEVICE_CROSS_DEVICE_SHARED_MEM_CAPABILITIES_INTEL = 0x4193
DEVICE_SHARED_SYSTEM_MEM_CAPABILITIES_INTEL = 0x4194
UNIFIED_SHARED_MEMORY_ACCESS_INTEL = 1 << 0
UNIFIED_SHARED_MEMORY_ATOMIC_ACCESS_INTEL = 1 << 1
UNIFIED_SHARED_MEMORY_CONCURRENT_ACCESS_INTEL = 1 << 2
UNIFIED_SHARED_MEMORY_CONCURRENT_ATOMIC_ACCESS_INTEL = 1 << 3

# Queries pyopencl's Device.get_info does not know (it answers INVALID_VALUE for
# any parameter missing from its own switch), read through clGetDeviceInfo.
DEVICE_SUB_GROUP_SIZES_INTEL = 0x4108
DEVICE_WARP_SIZE_NV = 0x4003
DEVICE_COMPUTE_CAPABILITY_MAJOR_NV = 0x4000
DEVICE_COMPUTE_CAPABILITY_MINOR_NV = 0x4001

# OpenCL 3.0 atomic capability bits (cl_device_atomic_capabilities).
ATOMIC_ORDER_RELAXED = 1 << 0
ATOMIC_ORDER_ACQ_REL = 1 << 1
ATOMIC_ORDER_SEQ_CST = 1 << 2
ATOMIC_SCOPE_WORK_ITEM = 1 << 3
ATOMIC_SCOPE_WORK_GROUP = 1 << 4
ATOMIC_SCOPE_DEVICE = 1 << 5
ATOMIC_SCOPE_ALL_DEVICES = 1 << 6

#: What pip users need when the loader finds nothing at all.
INSTALL_HINT = (
    "no OpenCL platform found. Install an OpenCL runtime: "
    "`pip install intel-opencl-rt intel-cmplr-lib-rt` (Intel CPU runtime, x86-64 Linux), "
    "`pip install pocl-binary-distribution` (PoCL), or a system ICD "
    "(e.g. Debian `intel-opencl-icd`, `pocl-opencl-icd`, or the NVIDIA driver), "
    "and check that /etc/OpenCL/vendors or OCL_ICD_VENDORS names it"
)


#: ``default`` of :func:`device_info` meaning "raise when the device cannot answer".
REQUIRED: object = object()


@functools.cache
def cl() -> ModuleType:
    """Import pyopencl on first use (keeps ``import pysycl`` light)."""
    import pyopencl

    return pyopencl


# --- errors --------------------------------------------------------------------------

# Which SYCL errc an OpenCL status maps onto; anything else is errc.runtime.
_ERRC_OF_STATUS: dict[int, errc] = {
    -4: errc.memory_allocation,  # MEM_OBJECT_ALLOCATION_FAILURE
    -5: errc.memory_allocation,  # OUT_OF_RESOURCES
    -6: errc.memory_allocation,  # OUT_OF_HOST_MEMORY
    -7: errc.profiling,  # PROFILING_INFO_NOT_AVAILABLE
    -11: errc.build,  # BUILD_PROGRAM_FAILURE
    -14: errc.event,  # EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST
    -15: errc.build,  # COMPILE_PROGRAM_FAILURE
    -17: errc.build,  # LINK_PROGRAM_FAILURE
    -18: errc.invalid,  # DEVICE_PARTITION_FAILED
    -30: errc.invalid,  # INVALID_VALUE
    -32: errc.platform,  # INVALID_PLATFORM
    -42: errc.build,  # INVALID_BINARY
    -43: errc.build,  # INVALID_BUILD_OPTIONS
    -44: errc.build,  # INVALID_PROGRAM
    -45: errc.build,  # INVALID_PROGRAM_EXECUTABLE
    -46: errc.kernel,  # INVALID_KERNEL_NAME
    -47: errc.kernel,  # INVALID_KERNEL_DEFINITION
    -48: errc.kernel,  # INVALID_KERNEL
    -49: errc.kernel_argument,  # INVALID_ARG_INDEX
    -50: errc.kernel_argument,  # INVALID_ARG_VALUE
    -51: errc.kernel_argument,  # INVALID_ARG_SIZE
    -52: errc.kernel_argument,  # INVALID_KERNEL_ARGS
    -53: errc.nd_range,  # INVALID_WORK_DIMENSION
    -54: errc.nd_range,  # INVALID_WORK_GROUP_SIZE
    -55: errc.nd_range,  # INVALID_WORK_ITEM_SIZE
    -56: errc.nd_range,  # INVALID_GLOBAL_OFFSET
    -57: errc.event,  # INVALID_EVENT_WAIT_LIST
    -58: errc.event,  # INVALID_EVENT
    -63: errc.nd_range,  # INVALID_GLOBAL_WORK_SIZE
    -66: errc.build,  # INVALID_COMPILER_OPTIONS
    -67: errc.build,  # INVALID_LINKER_OPTIONS
    -68: errc.invalid,  # INVALID_DEVICE_PARTITION_COUNT
    -1001: errc.runtime,  # PLATFORM_NOT_FOUND_KHR
}


def status_name(code: int) -> str:
    """Return the OpenCL name of a status code (``CL_INVALID_VALUE``), or the number."""
    try:
        return "CL_" + str(cl().status_code.to_string(code))
    except Exception:
        return f"CL status {code}"


def translate_cl_error(
    e: BaseException, what: str = "", code: errc | None = None,
    context: ContextRef | None = None
) -> exception:
    """Turn a ``pyopencl.Error`` into a :class:`pysycl.exception`.

    Args:
        e: the pyopencl error (any exception is accepted; non-OpenCL ones map to
            ``errc.runtime`` with no ``cl_error``).
        what: what pysycl was doing, prepended to the message.
        code: the errc to use instead of the one derived from the OpenCL status.
        context: the pysycl context the error relates to, if any.

    Returns:
        The exception to raise (``raise translate_cl_error(e) from e``).
    """
    status = getattr(e, "code", None)
    if callable(status):  # older pyopencl spelled it as a method
        status = status()
    cl_error = status if isinstance(status, int) else None
    if code is None:
        code = _ERRC_OF_STATUS.get(cl_error, errc.runtime) if cl_error is not None else errc.runtime
    detail = f"{status_name(cl_error)}: {e}" if cl_error is not None else str(e)
    msg = f"{what}: {detail}" if what else detail
    return exception(code, msg, context, cl_error=cl_error)


def cl_call(fn: Callable[..., T], *args: Any, what: str = "", **kwargs: Any) -> T:
    """Call a pyopencl function, converting its errors with :func:`translate_cl_error`."""
    try:
        return fn(*args, **kwargs)
    except cl().Error as e:
        raise translate_cl_error(e, what or getattr(fn, "__name__", "OpenCL call")) from e


# --- enumeration ---------------------------------------------------------------------


@functools.cache
def _enumerate() -> tuple[tuple[pyopencl.Platform, tuple[pyopencl.Device, ...]], ...]:
    """All (platform, root devices) pairs, cached: SYCL §4.6.2 says the set is fixed."""
    mod = cl()
    try:
        platforms = mod.get_platforms()
    except mod.Error as e:
        # ocl-icd answers PLATFORM_NOT_FOUND_KHR when no ICD is registered at all.
        _log.debug("clGetPlatformIDs failed: %s", e)
        platforms = []
    result = []
    for p in platforms:
        try:
            devices = tuple(p.get_devices())
        except mod.Error as e:
            _log.warning("pysycl: skipping OpenCL platform %r: %s", _safe(lambda p=p: p.name), e)
            continue
        if devices:
            result.append((p, devices))
    return tuple(result)


def _safe(fn: Callable[[], T], default: T | None = None) -> T | None:
    try:
        return fn()
    except Exception:
        return default


def platforms_and_devices() -> tuple[tuple[pyopencl.Platform, tuple[pyopencl.Device, ...]], ...]:
    """Return every OpenCL platform with at least one device, and its root devices.

    Raises:
        exception: ``errc.runtime`` with install instructions when there is none.
    """
    found = _enumerate()
    if not found:
        raise exception(errc.runtime, INSTALL_HINT)
    return found


def default_devices(cl_platform: pyopencl.Platform) -> list[pyopencl.Device]:
    """The platform's ``CL_DEVICE_TYPE_DEFAULT`` devices (``info::device_type::automatic``)."""
    mod = cl()
    try:
        return list(cl_platform.get_devices(device_type=mod.device_type.DEFAULT))
    except mod.Error:
        return []


def handle(obj: HasIntPtr) -> int:
    """The raw OpenCL handle (``cl_platform_id``, ``cl_device_id``, ...) as an int."""
    return int(obj.int_ptr)


# --- info queries ---------------------------------------------------------------------


def platform_info(cl_platform: pyopencl.Platform, key: str) -> Any:
    """Query a platform: ``key`` is a ``pyopencl.platform_info`` name (``"NAME"``)."""
    mod = cl()
    return cl_call(cl_platform.get_info, getattr(mod.platform_info, key),
                   what=f"clGetPlatformInfo(CL_PLATFORM_{key})")


def device_info(cl_device: pyopencl.Device, key: str, default: Any = REQUIRED) -> Any:
    """Query a device: ``key`` is a ``pyopencl.device_info`` name (``"MAX_COMPUTE_UNITS"``).

    Args:
        cl_device: the pyopencl device.
        key: the query's name without ``CL_DEVICE_``.
        default: returned when the device (or pyopencl) cannot answer; when left
            out, such a failure raises :class:`pysycl.exception`.
    """
    mod = cl()
    param = getattr(mod.device_info, key, None)
    if param is None:
        if default is not REQUIRED:
            return default
        raise exception(errc.feature_not_supported,
                        f"this pyopencl does not know CL_DEVICE_{key}")
    try:
        return cl_device.get_info(param)
    except mod.Error as e:
        if default is not REQUIRED:
            return default
        raise translate_cl_error(e, f"clGetDeviceInfo(CL_DEVICE_{key})") from e


@functools.cache
def _opencl_library() -> ctypes.CDLL | None:
    """The ICD loader pyopencl uses, opened through ctypes (for raw queries).

    OpenCL handles carry their ICD dispatch table, so any loader could dispatch
    them, but using the very library pyopencl loaded avoids a second loader
    instance reading the vendor list again.
    """
    cl()  # make sure pyopencl (and its loader) is loaded first
    candidates: list[str] = []
    if sys.platform.startswith("linux"):
        try:
            with open("/proc/self/maps") as maps:
                for line in maps:
                    path = line.rsplit(None, 1)[-1]
                    if "libOpenCL" in os.path.basename(path) and path not in candidates:
                        candidates.append(path)
        except OSError:
            pass
    found = ctypes.util.find_library("OpenCL")
    if found:
        candidates.append(found)
    for path in candidates:
        try:
            lib = ctypes.CDLL(path)
            fn = lib.clGetDeviceInfo
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_int32
        fn.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_size_t,
                       ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]
        return lib
    _log.debug("no OpenCL library for raw clGetDeviceInfo queries")
    return None


def raw_device_info(cl_device: pyopencl.Device, param: int) -> bytes | None:
    """``clGetDeviceInfo`` for a parameter pyopencl does not know; ``None`` if unanswered."""
    lib = _opencl_library()
    if lib is None:
        return None
    dev = ctypes.c_void_p(handle(cl_device))
    size = ctypes.c_size_t(0)
    if lib.clGetDeviceInfo(dev, param, 0, None, ctypes.byref(size)) != 0 or size.value == 0:
        return None
    buf = ctypes.create_string_buffer(size.value)
    if lib.clGetDeviceInfo(dev, param, size.value, buf, None) != 0:
        return None
    return buf.raw


def raw_device_info_uint(cl_device: pyopencl.Device, param: int) -> int | None:
    """A scalar (``cl_bitfield``/``cl_uint``/``size_t``) raw query; ``None`` if unanswered."""
    raw = raw_device_info(cl_device, param)
    if raw is None or len(raw) not in (4, 8):
        return None
    return int.from_bytes(raw, sys.byteorder)


def raw_device_info_size_array(cl_device: pyopencl.Device, param: int) -> list[int] | None:
    """A ``size_t[]`` raw query; ``None`` if unanswered."""
    raw = raw_device_info(cl_device, param)
    width = ctypes.sizeof(ctypes.c_size_t)
    if raw is None or len(raw) % width:
        return None
    return [int.from_bytes(raw[i:i + width], sys.byteorder) for i in range(0, len(raw), width)]


def usm_capabilities(cl_device: pyopencl.Device) -> dict[int, int]:
    """The ``cl_intel_unified_shared_memory`` capability bitfields, by query (0 if absent)."""
    params = (DEVICE_HOST_MEM_CAPABILITIES_INTEL, DEVICE_DEVICE_MEM_CAPABILITIES_INTEL,
              DEVICE_SINGLE_DEVICE_SHARED_MEM_CAPABILITIES_INTEL,
              DEVICE_CROSS_DEVICE_SHARED_MEM_CAPABILITIES_INTEL,
              DEVICE_SHARED_SYSTEM_MEM_CAPABILITIES_INTEL)
    if "cl_intel_unified_shared_memory" not in extensions(cl_device):
        return dict.fromkeys(params, 0)
    return {p: raw_device_info_uint(cl_device, p) or 0 for p in params}


def extensions(cl_device: pyopencl.Device) -> frozenset[str]:
    """The device's extension names."""
    return frozenset(str(device_info(cl_device, "EXTENSIONS", "")).split())


def il_version(cl_device: pyopencl.Device) -> str:
    """``CL_DEVICE_IL_VERSION`` (e.g. ``"SPIR-V_1.0 SPIR-V_1.1"``), empty when unsupported."""
    return str(device_info(cl_device, "IL_VERSION", "") or "").strip()


def sub_group_sizes(cl_device: pyopencl.Device) -> list[int]:
    """Supported sub-group sizes: Intel's query, NVIDIA's warp size, else none known."""
    sizes = raw_device_info_size_array(cl_device, DEVICE_SUB_GROUP_SIZES_INTEL)
    if sizes:
        return sizes
    if "cl_nv_device_attribute_query" in extensions(cl_device):
        warp = raw_device_info_uint(cl_device, DEVICE_WARP_SIZE_NV)
        if warp:
            return [warp]
    return []


def compute_capability(cl_device: pyopencl.Device) -> tuple[int, int] | None:
    """An NVIDIA device's compute capability (``cl_nv_device_attribute_query``), else None."""
    if "cl_nv_device_attribute_query" not in extensions(cl_device):
        return None
    major = raw_device_info_uint(cl_device, DEVICE_COMPUTE_CAPABILITY_MAJOR_NV)
    minor = raw_device_info_uint(cl_device, DEVICE_COMPUTE_CAPABILITY_MINOR_NV)
    return (major, minor) if major else None


# --- sub-devices and contexts ---------------------------------------------------------


def create_sub_devices(cl_device: pyopencl.Device,
                       properties: Sequence[int]) -> list[pyopencl.Device]:
    """``clCreateSubDevices`` with a zero-terminated property list (terminator added here)."""
    return cl_call(cl_device.create_sub_devices, [*properties, 0], what="clCreateSubDevices")


def create_context(cl_devices: Sequence[pyopencl.Device]) -> pyopencl.Context:
    """``clCreateContext`` for devices of one platform."""
    return cl_call(cl().Context, list(cl_devices), what="clCreateContext")


def context_devices(cl_context: pyopencl.Context) -> list[pyopencl.Device]:

    """The devices of a pyopencl context."""
    return list(cl_context.devices)

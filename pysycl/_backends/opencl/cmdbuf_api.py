"""``cl_khr_command_buffer``'s entry points through ``ctypes``, and which devices have them.

pyopencl does not wrap the extension. The functions are the driver's, looked up with
``clGetExtensionFunctionAddressForPlatform`` of the OpenCL ICD loader pyopencl uses (its
wheel's ``libOpenCL`` in ``pyopencl/.libs``, else the system's), on the platform of the
device; the handles passed are pyopencl's (``.int_ptr``). :func:`api_for` says, once per
device, whether its command buffers can run a command graph's replay on pysycl's queues,
and why not:

* the device reports ``cl_khr_command_buffer`` and the driver gives the entry points a
  graph needs (``clCreateCommandBufferKHR``, ``clCommandNDRangeKernelKHR``,
  ``clFinalizeCommandBufferKHR``, ``clEnqueueCommandBufferKHR``,
  ``clReleaseCommandBufferKHR``; the copy and fill ones are used where present);
* ``CL_DEVICE_COMMAND_BUFFER_REQUIRED_QUEUE_PROPERTIES_KHR`` asks nothing pysycl's
  in-order queue lacks.

The extension was provisional until 1.0 and its C signatures changed on the way: from
0.9.5 every command-recording function takes a ``properties`` list after the queue (before,
only ``clCommandNDRangeKernelKHR`` did). The version comes from
``CL_DEVICE_EXTENSIONS_WITH_VERSION`` (PoCL 5.0: 0.9.4; Intel's CPU runtime 2026: 1.0.0);
a device that does not say (OpenCL < 3.0) is taken as 0.9.0. Where the device has the
simultaneous-use capability, command buffers are made simultaneous-use (a replay may be
enqueued while the previous one runs: PoCL 5.0 and the drivers before 0.9.7 refuse to
enqueue a pending sequential-use buffer).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import glob
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyopencl as cl

_log = logging.getLogger("pysycl.opencl")

EXTENSION = "cl_khr_command_buffer"
#: ``PYSYCL_OPENCL_COMMAND_BUFFER=0``: graphs replay node by node even where the device
#: has the extension (comparisons, and a way around a driver's bug); ``=1``: command
#: buffers wherever the device has them, a CPU device's kernels-only graphs included
#: (:func:`pysycl._backends.opencl.cmdbuf.record_graph`)
ENV = "PYSYCL_OPENCL_COMMAND_BUFFER"

_CAPABILITIES = 0x12A9      # CL_DEVICE_COMMAND_BUFFER_CAPABILITIES_KHR
_REQUIRED_PROPS = 0x12AA    # CL_DEVICE_COMMAND_BUFFER_REQUIRED_QUEUE_PROPERTIES_KHR
_CAP_SIMULTANEOUS = 1 << 2  # CL_COMMAND_BUFFER_CAPABILITY_SIMULTANEOUS_USE_KHR
FLAGS = 0x1293              # CL_COMMAND_BUFFER_FLAGS_KHR
SIMULTANEOUS_USE = 1 << 0   # CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR
INVALID_OPERATION = -59     # CL_INVALID_OPERATION: a pending sequential-use buffer, enqueued
#: the first version whose copy and fill commands take a properties list
PROPERTIES_SINCE = (0, 9, 5)

_P, _U, _S, _I = ctypes.c_void_p, ctypes.c_uint, ctypes.c_size_t, ctypes.c_int
_PU, _PS = ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_size_t)
_PROPS = ctypes.POINTER(ctypes.c_uint64)
_SYNC = (_U, _PU, _PU, _P)  # the sync-point wait list, the sync point, the mutable handle
#: name -> (result, arguments after the command buffer and queue, whether it has properties
#: before 0.9.5); None: no command buffer and queue first
_SIGNATURES: dict[str, tuple[Any, tuple[Any, ...], bool] | tuple[Any, tuple[Any, ...]]] = {
    "clCreateCommandBufferKHR": (_P, (_U, ctypes.POINTER(_P), _PROPS, ctypes.POINTER(_I))),
    "clFinalizeCommandBufferKHR": (_I, (_P,)),
    "clReleaseCommandBufferKHR": (_I, (_P,)),
    "clEnqueueCommandBufferKHR": (_I, (_U, ctypes.POINTER(_P), _P, _U, ctypes.POINTER(_P),
                                       ctypes.POINTER(_P))),
    "clCommandNDRangeKernelKHR": (_I, (_P, _U, _PS, _PS, _PS, *_SYNC), True),
    "clCommandCopyBufferKHR": (_I, (_P, _P, _S, _S, _S, *_SYNC), False),
    "clCommandFillBufferKHR": (_I, (_P, _P, _S, _S, _S, *_SYNC), False),
    "clCommandSVMMemcpyKHR": (_I, (_P, _P, _S, *_SYNC), False),
    "clCommandSVMMemFillKHR": (_I, (_P, _P, _S, _S, *_SYNC), False),
}
_REQUIRED = ("clCreateCommandBufferKHR", "clFinalizeCommandBufferKHR",
             "clReleaseCommandBufferKHR", "clEnqueueCommandBufferKHR",
             "clCommandNDRangeKernelKHR")


@dataclass(frozen=True)
class Api:
    """The entry points of one device's command buffers (a record function takes the
    command buffer, then the command's own arguments and the sync-point arguments; the
    queue, NULL, and the properties, none, are passed here)."""

    version: tuple[int, int, int]
    simultaneous: bool
    create: Callable[..., Any]
    finalize: Callable[..., int]
    release: Callable[..., int]
    enqueue: Callable[..., int]
    ndrange: Callable[..., int]
    copy: Callable[..., int] | None
    fill: Callable[..., int] | None
    svm_copy: Callable[..., int] | None
    svm_fill: Callable[..., int] | None


@functools.cache
def loader() -> ctypes.CDLL | None:
    """The OpenCL ICD loader pyopencl uses (None: none could be loaded)."""
    here = os.path.dirname(cl.__file__)
    found = ctypes.util.find_library("OpenCL")
    names = [*sorted(glob.glob(os.path.join(here, ".libs", "libOpenCL*"))),
             *sorted(glob.glob(os.path.join(here + ".libs", "libOpenCL*"))),
             "libOpenCL.so.1", *([found] if found else [])]
    for name in names:
        try:
            lib = ctypes.CDLL(name)
            fn = lib.clGetExtensionFunctionAddressForPlatform
        except (OSError, AttributeError):
            continue
        fn.restype, fn.argtypes = _P, [_P, ctypes.c_char_p]
        lib.clGetDeviceInfo.restype = _I
        lib.clGetDeviceInfo.argtypes = [_P, _U, _S, _P, _PS]
        return lib
    return None


def entry_point(platform: cl.Platform, name: str, lib: ctypes.CDLL | None = None) -> int | None:
    """The address of extension function ``name`` on ``platform`` (None: the driver has
    none, or there is no loader)."""
    lib = lib or loader()
    if lib is None:
        return None
    return lib.clGetExtensionFunctionAddressForPlatform(platform.int_ptr, name.encode()) or None


def _function(address: int, result: Any, args: tuple[Any, ...], props: bool | None
              ) -> Callable[..., Any]:
    """The C function at ``address``; a command-recording one (``props`` not None: whether
    it takes a properties list) is called with the command buffer and its own arguments,
    the queue (NULL) and the properties (none) passed here."""
    if props is None:
        return ctypes.CFUNCTYPE(result, *args)(address)
    head = (_P, _P, _PROPS) if props else (_P, _P)
    fn = ctypes.CFUNCTYPE(result, *head, *args)(address)
    if props:
        return lambda cb, *a: fn(cb, None, None, *a)
    return lambda cb, *a: fn(cb, None, *a)


def version_of(dev: cl.Device) -> tuple[int, int, int] | None:
    """The version of ``cl_khr_command_buffer`` ``dev`` reports; (0, 9, 0) where it has the
    extension but says no version; None where it does not have it."""
    if EXTENSION not in dev.extensions.split():
        return None
    try:
        for e in dev.extensions_with_version:
            if e.name == EXTENSION:
                v = e.version
                return (v >> 22, (v >> 12) & 0x3FF, v & 0xFFF)
    except (cl.Error, AttributeError):  # OpenCL < 3.0: no versions
        pass
    return (0, 9, 0)


def _device_bits(lib: ctypes.CDLL, dev: cl.Device, param: int) -> int | None:
    """A bitfield of ``clGetDeviceInfo`` (None: the device refuses the query)."""
    out = ctypes.c_uint64(0)
    if lib.clGetDeviceInfo(dev.int_ptr, param, 8, ctypes.byref(out), None) != 0:
        return None
    return out.value


def api_for(dev: cl.Device, queue_properties: int) -> Api | str:
    """The command-buffer entry points of ``dev`` for a queue of ``queue_properties``, or
    why there are none (a sentence); cached per device."""
    got = _cached(dev)
    if isinstance(got, str):
        return got
    api, required = got
    if required & ~queue_properties:
        return (f"its command buffers need queue properties {required:#x}, which pysycl's "
                f"queue ({queue_properties:#x}) lacks")
    return api


@functools.cache
def _cached(dev: cl.Device) -> tuple[Api, int] | str:
    version = version_of(dev)
    if version is None:
        return f"the device does not report {EXTENSION}"
    lib = loader()
    if lib is None:
        return "no OpenCL ICD loader could be loaded through ctypes"
    props = version >= PROPERTIES_SINCE
    fns: dict[str, Callable[..., Any] | None] = {}
    for name, sig in _SIGNATURES.items():
        address = entry_point(dev.platform, name, lib)
        if address is None:
            if name in _REQUIRED:
                return f"the driver gives no {name}"
            fns[name] = None
            continue
        result, args, *since = sig
        fns[name] = _function(address, result, args,
                              None if not since else (True if since[0] else props))
    caps = _device_bits(lib, dev, _CAPABILITIES)
    required = _device_bits(lib, dev, _REQUIRED_PROPS)
    if caps is None or required is None:
        return "the device refuses the command-buffer queries"
    api = Api(version, bool(caps & _CAP_SIMULTANEOUS), fns["clCreateCommandBufferKHR"],  # type: ignore[arg-type]
              fns["clFinalizeCommandBufferKHR"], fns["clReleaseCommandBufferKHR"],  # type: ignore[arg-type]
              fns["clEnqueueCommandBufferKHR"], fns["clCommandNDRangeKernelKHR"],  # type: ignore[arg-type]
              fns["clCommandCopyBufferKHR"], fns["clCommandFillBufferKHR"],
              fns["clCommandSVMMemcpyKHR"], fns["clCommandSVMMemFillKHR"])
    _log.debug("%s %d.%d.%d on %r (simultaneous use: %s)", EXTENSION, *version, dev.name,
               api.simultaneous)
    return api, required


def enabled() -> bool:
    """Whether command graphs may use command buffers (``PYSYCL_OPENCL_COMMAND_BUFFER``)."""
    return os.environ.get(ENV, "").strip() != "0"


def forced() -> bool:
    """Whether command graphs use command buffers wherever the device has them
    (``PYSYCL_OPENCL_COMMAND_BUFFER=1``), kernels-only graphs on CPU devices included."""
    return os.environ.get(ENV, "").strip() == "1"

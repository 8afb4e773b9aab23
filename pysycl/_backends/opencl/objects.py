"""The OpenCL backend's platforms and devices: ``sycl.platform``/``sycl.device`` over pyopencl.

:func:`opencl_platforms` is the backend's discovery (the ICD loader's platforms
that have devices). Objects are canonical: one per ``cl_platform_id`` /
``cl_device_id`` (:func:`platform_of`, :func:`device_of`), so that equality,
hashing and identity agree. Root devices are held by their platform;
sub-devices live as long as the user holds them.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from pysycl._backends.opencl import discovery as _d
from pysycl._backends.opencl.device_info import DEVICE_QUERIES, derive_aspects, image_targets
from pysycl._core.backend import backend
from pysycl._objects.aspects import aspect
from pysycl._objects.context import AsyncHandler, context
from pysycl._objects.device import device
from pysycl._objects.info import _device_info, _platform_info, partition_property
from pysycl._objects.platform import platform

if TYPE_CHECKING:
    import pyopencl as cl

    from pysycl._objects.info import partition_affinity_domain

_lock = threading.Lock()
_platforms: dict[int, opencl_platform] = {}
_devices: weakref.WeakValueDictionary[int, opencl_device] = weakref.WeakValueDictionary()


class opencl_platform(platform):  # noqa: N801 - spelled like the class it specializes
    """An OpenCL platform (``native``: the ``pyopencl.Platform``)."""

    __slots__ = ("_cl_devices",)

    _backend = backend.opencl
    _cl_devices: tuple[cl.Device, ...]

    @classmethod
    def _make(cls, cl_platform: cl.Platform, cl_devices: Iterable[cl.Device]) -> opencl_platform:
        """The platform of a ``pyopencl.Platform`` whose root devices are ``cl_devices``."""
        self = object.__new__(cls)
        self._setup(cl_platform, _d.handle(cl_platform))
        self._cl_devices = tuple(cl_devices)
        return self

    def _query(self, param: _platform_info) -> Any:
        if param is _platform_info.extensions:
            return str(_d.platform_info(self._native, "EXTENSIONS")).split()
        return str(_d.platform_info(self._native, param.name.upper())).strip()

    def _make_root_devices(self) -> list[device]:
        return [device_of(d, self) for d in self._cl_devices]

    def _automatic_devices(self) -> list[device]:
        return [device_of(d, self) for d in _d.default_devices(self._native)]

    def _new_native_context(self, devs: Sequence[device]) -> tuple[cl.Context, int]:
        native = _d.create_context([d.native for d in devs])
        return native, _d.handle(native)


class opencl_device(device):  # noqa: N801 - spelled like the class it specializes
    """An OpenCL device or sub-device (``native``: the ``pyopencl.Device``)."""

    __slots__ = ()

    _backend = backend.opencl

    @classmethod
    def _make(cls, cl_device: cl.Device, key: int, plat: platform, parent: device | None) -> opencl_device:
        """The device of a ``pyopencl.Device`` (``key``: its handle)."""
        self = object.__new__(cls)
        self._setup(cl_device, key, plat, parent)
        return self

    @property
    def _cl_platform(self) -> cl.Platform:
        # The pyopencl Platform; the former attribute, kept for its readers.
        return self._native.platform

    def _query(self, param: _device_info) -> Any:
        return DEVICE_QUERIES[param](self)

    def _derive_aspects(self) -> frozenset[aspect]:
        return derive_aspects(self._native)

    def _image_targets(self) -> tuple[tuple[str, str], ...]:
        return image_targets(self._native)

    def _usm_needs_own_context(self) -> bool:
        # NVIDIA's OpenCL (driver 580, two H100s, measured 2026-11-27): in a context of
        # two GPUs, a kernel given a clSVMAlloc pointer fails on the first GPU with
        # CL_INVALID_KERNEL_ARGS and on the second runs but writes nothing; cl_mem
        # buffers work in the same context, and SVM works in a context of one GPU.
        return "NVIDIA" in str(self._platform.get_info(_platform_info.vendor)).upper()

    def _is_available(self) -> bool:
        # Selectors score availability; a device that cannot say counts as available.
        return bool(_d.device_info(self._native, "AVAILABLE", True))

    def _partition(self, prop: partition_property,
                   value: int | Sequence[int] | partition_affinity_domain) -> list[device]:
        if prop is partition_property.partition_equally:
            props = [_d.PARTITION_EQUALLY, value]
        elif prop is partition_property.partition_by_counts:
            # OpenCL ends the list at 0 (CL_DEVICE_PARTITION_BY_COUNTS_LIST_END).
            props = [_d.PARTITION_BY_COUNTS, *value, _d.PARTITION_BY_COUNTS_LIST_END]
        else:
            props = [_d.PARTITION_BY_AFFINITY_DOMAIN, value.value]
        subs = _d.create_sub_devices(self._native, props)
        return [device_of(c, self._platform, parent=self) for c in subs]


def opencl_platforms() -> list[platform]:
    """The OpenCL platforms that have devices (the OpenCL backend's discovery).

    Raises:
        exception: ``errc.runtime`` with install instructions when the loader
            finds no platform at all.
    """
    result: list[platform] = []
    for cl_platform, cl_devices in _d.platforms_and_devices():
        key = _d.handle(cl_platform)
        with _lock:
            p = _platforms.get(key)
            if p is None:
                p = _platforms[key] = opencl_platform._make(cl_platform, cl_devices)
        result.append(p)
    return result


def platform_of(cl_platform: cl.Platform) -> platform:
    """The canonical platform of a ``pyopencl.Platform``."""
    key = _d.handle(cl_platform)
    p = _platforms.get(key)
    if p is None:
        opencl_platforms()
        p = _platforms.get(key)
    if p is None:  # a platform the enumeration did not show (no devices)
        with _lock:
            p = _platforms.setdefault(key, opencl_platform._make(cl_platform, ()))
    return p


def device_of(cl_device: cl.Device, plat: platform | None = None,
              parent: device | None = None) -> device:
    """The canonical device of a ``pyopencl.Device`` (of ``plat``, sub-device of ``parent``)."""
    key = _d.handle(cl_device)
    with _lock:
        dev = _devices.get(key)
        if dev is not None:
            return dev
    # The platform lookup may enumerate (and take the lock): outside it.
    owner = plat if plat is not None else platform_of(cl_device.platform)
    with _lock:
        dev = _devices.get(key)
        if dev is None:
            dev = _devices[key] = opencl_device._make(cl_device, key, owner, parent)
        return dev


def context_of(cl_context: cl.Context, async_handler: AsyncHandler | None = None) -> context:
    """A ``sycl.context`` over an existing ``pyopencl.Context`` (retained, not copied)."""
    devs = [device_of(c) for c in _d.context_devices(cl_context)]
    return context._wrap(cl_context, _d.handle(cl_context), devs, async_handler)

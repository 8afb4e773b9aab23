"""What the object modules read of the classes above them: ``PlatformRef``, ``PlatformDeviceRef``.

The order inside ``_objects`` (issue 23: no import cycle, annotations counted) is
``discovery`` -> ``selector`` -> ``device`` -> ``context`` -> ``platform``: the selector
scores the visible devices discovery lists, a device's constructor selects, a context
holds devices, and a platform's constructor selects and its default context is a
context. ``device`` and ``context`` name their platform, and ``discovery`` and
``selector`` the devices and platforms they walk, through these protocols instead of
importing the classes. The real ``sycl.platform`` and ``sycl.device`` (and every
backend's subclasses) satisfy them.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from pysycl._core.launch_types import DeviceRef

if TYPE_CHECKING:
    from pysycl._core.backend import backend
    from pysycl._objects.info import _platform_info, device_type


class PlatformDeviceRef(DeviceRef, Protocol):
    """A ``sycl.device`` as discovery and the selectors read it: ``DeviceRef`` (key,
    name, image targets, aspects, info) and its platform, type and availability."""

    def get_platform(self) -> PlatformRef: ...
    def _device_type(self) -> device_type: ...
    def _is_available(self) -> bool: ...


class PlatformRef(Protocol):
    """A ``sycl.platform`` as the modules below it read it (its devices, info, backend,
    default context, and the backend context of some of its devices)."""

    @property
    def key(self) -> Hashable: ...
    @property
    def root_devices(self) -> Sequence[PlatformDeviceRef]: ...
    def get_backend(self) -> backend: ...
    def get_info(self, param: _platform_info) -> Any: ...
    def get_devices(self, device_type: device_type = ...) -> Sequence[PlatformDeviceRef]: ...
    def ext_oneapi_get_default_context(self) -> Any: ...
    def _new_native_context(self, devs: Sequence[Any]) -> tuple[Any, int]: ...

"""``sycl::platform`` (SYCL 2020 §4.6.2), backend-neutral.

A backend makes its platforms as subclasses of :class:`platform` that answer
the backend part (``_query``: one info descriptor; ``_make_root_devices``;
``_new_native_context``; ``_automatic_devices``), as
``pysycl._backends.opencl.objects`` and ``pysycl._backends.host.device`` do.
Platform objects are canonical: one Python object per backend platform, so
equality and hashing (common reference semantics, §4.5.2) are cheap. Which
platforms exist and which devices are visible is :mod:`pysycl._objects.discovery`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, NoReturn

from pysycl._core.backend import backend
from pysycl._core.exceptions import exception
from pysycl._objects import discovery
from pysycl._objects.aspects import aspect
from pysycl._objects.common import common_reference
from pysycl._objects.context import context
from pysycl._objects.device import device
from pysycl._objects.display import Rows, object_list, table
from pysycl._objects.info import _device_info, _platform_info, device_type
from pysycl._objects.selector import default_selector_v, select_device


class platform(common_reference):  # noqa: N801 - the spec's spelling
    """A SYCL platform: one backend platform and its devices.

    ``platform()`` is the platform of the device ``default_selector_v`` picks;
    ``platform(selector)`` the platform of the device ``selector`` picks (Table 15).

    Args:
        selector: a device selector (a callable taking a device and returning an
            int-convertible score), default ``default_selector_v``; a device
            gives its own platform.

    Raises:
        exception: ``errc.runtime`` when no device satisfies the selector.
    """

    __slots__ = ("_default_context", "_devices", "_handle", "_info", "_native")

    #: The backend of the class's platforms (set by each backend's subclass).
    _backend: ClassVar[backend]

    _devices: list[device] | None
    _info: dict[_platform_info, Any]
    _default_context: context | None

    def __new__(cls, selector: Callable[[device], Any] | device | None = None) -> platform:
        if isinstance(selector, device):
            return selector.get_platform()
        return select_device(default_selector_v if selector is None else selector).get_platform()

    def _setup(self, native: Any, key: int) -> None:
        """Fill in a new platform (backends call it on ``object.__new__(their_class)``)."""
        self._native = native
        self._handle = key
        self._devices = None
        self._info = {}
        self._default_context = None

    # --- what a backend answers ---

    def _query(self, param: _platform_info) -> Any:
        """The answer to one ``info.platform`` descriptor, asked of the backend."""
        raise NotImplementedError

    def _make_root_devices(self) -> list[device]:
        """The platform's root devices (asked once, when first needed)."""
        raise NotImplementedError

    def _new_native_context(self, devs: Sequence[device]) -> tuple[Any, int]:
        """A new backend context of ``devs`` (devices of this platform): (native, key)."""
        raise NotImplementedError

    def _automatic_devices(self) -> list[device]:
        """The devices ``info.device_type.automatic`` names (the backend's default devices)."""
        return []

    # --- static ---

    @staticmethod
    def get_platforms() -> list[platform]:
        """All platforms with at least one visible device (Table 17).

        Raises:
            exception: ``errc.runtime`` with install instructions when the OpenCL
                loader finds no platform at all.
        """
        return object_list(discovery.visible_platforms())

    # --- members ---

    @property
    def root_devices(self) -> list[device]:
        """Every root device of the platform, ``PYSYCL_DEVICE_FILTER`` ignored (the cached list)."""
        if self._devices is None:
            self._devices = self._make_root_devices()
        return self._devices

    def get_backend(self) -> backend:
        """The SYCL backend of this platform."""
        return self._backend

    def get_devices(self, device_type: device_type = device_type.all) -> list[device]:
        """The visible devices of this platform of the given type (Table 16).

        Args:
            device_type: an ``info.device_type``; ``automatic`` means the
                backend's default device(s) of the platform, ``host`` matches nothing.
        """
        if not isinstance(device_type, _device_type):
            raise TypeError(f"device_type must be a sycl.info.device_type, not {device_type!r}")
        devices = discovery.visible_devices(self)
        if device_type is _device_type.all:
            return devices
        if device_type is _device_type.automatic:
            defaults = self._automatic_devices()
            return [d for d in devices if d in defaults]
        return [d for d in devices if d._device_type() is device_type]

    def get_info(self, param: _platform_info) -> Any:
        """Query ``info.platform.*`` (Table 18).

        Raises:
            TypeError: when ``param`` is not an ``info.platform`` descriptor.
        """
        if not isinstance(param, _platform_info):
            raise TypeError(f"platform.get_info takes a sycl.info.platform descriptor, "
                            f"not {param!r}")
        try:
            return self._info[param]
        except KeyError:
            pass
        value = self._info[param] = self._query(param)
        return value

    def has(self, asp: aspect) -> bool:
        """Whether every device of this platform has ``asp`` (Table 16)."""
        if not isinstance(asp, aspect):
            raise TypeError(f"platform.has takes a sycl.aspect, not {asp!r}")
        return all(d.has(asp) for d in discovery.visible_devices(self))

    def has_extension(self, extension: str) -> bool:
        """Deprecated: whether every device supports an OpenCL extension."""
        return all(d.has_extension(extension) for d in discovery.visible_devices(self))

    def ext_oneapi_get_default_context(self) -> context:
        """The platform's default context: all its devices (oneAPI extension spelling).

        Made when first asked, of every device of the platform visible then
        (hidden ones stay out, unless all are hidden).
        """
        with _default_lock:
            ctx = self._default_context
            if ctx is None:
                ctx = self._default_context = context._of_devices(
                    self.get_devices() or self.root_devices)
            return ctx

    def __reduce__(self) -> NoReturn:
        raise TypeError("sycl.platform objects cannot be pickled")

    def _repr_html_(self) -> str:
        """The platform and its devices as an HTML table."""
        g = self.get_info
        rows: Rows = [("vendor", g(_platform_info.vendor)),
                      ("version", g(_platform_info.version)),
                      ("backend", self.get_backend().name)]
        for i, d in enumerate(self.get_devices()):
            rows.append((f"device {i}", f"{d.get_info(_device_info.name)} "
                                        f"[{d.get_info(_device_info.device_type).name}]"))
        return table(rows, title=f"sycl.platform: {g(_platform_info.name)}")

    def __repr__(self) -> str:
        try:
            name = self.get_info(_platform_info.name)
        except exception:
            name = "?"
        return f"<sycl.platform [{self._backend.name}] {name!r}>"


_default_lock = threading.Lock()  # one default context per platform, made once
_device_type = device_type  # get_devices' parameter hides the enum's name

"""``sycl::platform`` (SYCL 2020 §4.6.2) over OpenCL platforms.

Platform objects are canonical: one Python object per ``cl_platform_id``, so
equality and hashing (common reference semantics, §4.5.2) are cheap.

``PYSYCL_DEVICE_FILTER`` (comma-separated, case-insensitive substrings, e.g.
``intel`` or ``pocl,nvidia``) hides every device that matches none of them, and
every platform left without devices. A token matches a platform's name or vendor
(then it keeps the whole platform) or, if it matches no platform, a device name.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from pysycl._backends import base as _backend_registry
from pysycl._backends.opencl import discovery as _d
from pysycl._core.backend import backend
from pysycl._core.exceptions import exception
from pysycl._objects.aspects import aspect
from pysycl._objects.info import _platform_info, device_type

if TYPE_CHECKING:
    from pysycl._objects.context import context
    from pysycl._objects.device import device

_log = logging.getLogger("pysycl.platform")

FILTER_ENV = "PYSYCL_DEVICE_FILTER"

_lock = threading.Lock()
_platforms: dict[int, platform] = {}


def device_filter() -> list[str]:
    """The lower-cased substrings of ``PYSYCL_DEVICE_FILTER`` (empty: everything visible)."""
    raw = os.environ.get(FILTER_ENV, "")
    return [t.strip().lower() for t in raw.split(",") if t.strip()]


def _visible_pairs(pairs: list[tuple[platform, device]], tokens: list[str]
                   ) -> set[tuple[int, int]]:
    """The (platform, device) handles the filter keeps.

    A token that occurs in some platform's name or vendor selects whole platforms
    (``intel``, ``pocl``, ``nvidia``); a token that occurs in no platform's name or
    vendor is matched against device names (``epyc``, ``h200``). So ``intel``
    never picks PoCL's ``pthread-Intel(R) Xeon`` device on an Intel host.
    """
    def pnames(p: platform) -> tuple[str, str]:
        return (str(p.get_info(_platform_info.name)).lower(),
                str(p.get_info(_platform_info.vendor)).lower())

    platform_tokens = {t for t in tokens for p, _ in pairs if any(t in n for n in pnames(p))}
    device_tokens = [t for t in tokens if t not in platform_tokens]
    keep = set()
    for p, d in pairs:
        if (any(t in n for t in platform_tokens for n in pnames(p))
                or any(t in d._name().lower() for t in device_tokens)):
            keep.add((p._handle, d._handle))
    return keep


def _all_platforms() -> list[platform]:
    """Every platform that has devices, canonical objects, enumeration order.

    Each registered backend's, in registration order: OpenCL's, then pysycl's
    host interpreter platform (the host_debuggable device).
    """
    return [p for b in _backend_registry.registered() for p in b.platforms()]


def opencl_platforms() -> list[platform]:
    """The OpenCL platforms that have devices (the OpenCL backend's discovery)."""
    result = []
    for cl_platform, cl_devices in _d.platforms_and_devices():
        key = _d.handle(cl_platform)
        with _lock:
            p = _platforms.get(key)
            if p is None:
                p = platform._create(cl_platform, cl_devices)
                _platforms[key] = p
        result.append(p)
    return result


def _platform_of(cl_platform: Any) -> platform:
    """The canonical platform of a pyopencl platform."""
    key = _d.handle(cl_platform)
    p = _platforms.get(key)
    if p is None:
        _all_platforms()
        p = _platforms.get(key)
    if p is None:  # a platform the enumeration did not show (no devices)
        with _lock:
            p = _platforms.setdefault(key, platform._create(cl_platform, ()))
    return p


class platform:  # noqa: N801 - the spec's spelling
    """A SYCL platform: one OpenCL platform and its devices.

    ``platform()`` is the platform of the device ``default_selector_v`` picks;
    ``platform(selector)`` the platform of the device ``selector`` picks (Table 15).

    Args:
        selector: a device selector (a callable taking a device and returning an
            int-convertible score), default ``default_selector_v``.

    Raises:
        exception: ``errc.runtime`` when no device satisfies the selector.
    """

    __slots__ = ("_cl", "_cl_devices", "_default_context", "_devices", "_handle", "_info")

    _cl: Any
    _cl_devices: tuple[Any, ...]
    _devices: list[device] | None
    _handle: int
    _info: dict[_platform_info, Any]
    _default_context: context | None


    @property
    def native(self) -> Any:
        """The backend's own object (a pyopencl object; None on the host device)."""
        return self._cl

    @property
    def key(self) -> int:
        """A process-unique integer naming this object: what caches and residency are keyed by."""
        return self._handle

    def __new__(cls, selector: Callable[[device], Any] | None = None) -> platform:
        from pysycl._objects.selector import default_selector_v, select_device

        return select_device(default_selector_v if selector is None else selector).get_platform()

    @classmethod
    def _create(cls, cl_platform: Any, cl_devices: Iterable[Any]) -> platform:
        self = object.__new__(cls)
        self._cl = cl_platform
        self._cl_devices = tuple(cl_devices)
        self._handle = _d.handle(cl_platform)
        self._devices = None
        self._info = {}
        self._default_context = None
        return self

    # --- static ---

    @staticmethod
    def get_platforms() -> list[platform]:
        """All platforms with at least one visible device (Table 17).

        Raises:
            exception: ``errc.runtime`` with install instructions when the OpenCL
                loader finds no platform at all.
        """
        from pysycl._objects.display import object_list

        return object_list(p for p in _all_platforms() if p._visible_devices())

    # --- members ---

    def _root_devices(self) -> list[device]:
        if self._devices is None:
            from pysycl._objects.device import device

            self._devices = [device._from_cl(d, self) for d in self._cl_devices]
        return self._devices

    def _visible_devices(self) -> list[device]:
        tokens = device_filter()
        if not tokens:
            return list(self._root_devices())
        pairs = [(p, d) for p in _all_platforms() for d in p._root_devices()]
        keep = _visible_pairs(pairs, tokens)
        return [d for d in self._root_devices() if (self._handle, d._handle) in keep]

    def get_backend(self) -> backend:
        """The SYCL backend of this platform: always ``backend.opencl`` here."""
        return backend.opencl

    def get_devices(self, device_type: device_type = device_type.all) -> list[device]:
        """The visible devices of this platform of the given type (Table 16).

        Args:
            device_type: an ``info.device_type``; ``automatic`` means OpenCL's
                default device(s) of the platform, ``host`` matches nothing.
        """
        from pysycl._objects.info import device_type as dt

        if not isinstance(device_type, dt):
            raise TypeError(f"device_type must be a sycl.info.device_type, not {device_type!r}")
        devices = self._visible_devices()
        if device_type is dt.all:
            return devices
        if device_type is dt.automatic:
            defaults = {_d.handle(c) for c in _d.default_devices(self._cl)}
            return [d for d in devices if _d.handle(d._cl) in defaults]
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
        if param is _platform_info.extensions:
            value: Any = str(_d.platform_info(self._cl, "EXTENSIONS")).split()
        else:
            value = str(_d.platform_info(self._cl, param.name.upper())).strip()
        self._info[param] = value
        return value

    def has(self, asp: aspect) -> bool:
        """Whether every device of this platform has ``asp`` (Table 16)."""
        if not isinstance(asp, aspect):
            raise TypeError(f"platform.has takes a sycl.aspect, not {asp!r}")
        return all(d.has(asp) for d in self._visible_devices())

    def has_extension(self, extension: str) -> bool:
        """Deprecated: whether every device supports an OpenCL extension."""
        return all(extension in _d.extensions(d._cl) for d in self._visible_devices())

    def ext_oneapi_get_default_context(self) -> context:
        """The platform's default context: all its devices (oneAPI extension spelling)."""
        from pysycl._objects.context import platform_default_context

        return platform_default_context(self)

    # --- common reference semantics ---

    def __eq__(self, other: object) -> bool:
        return isinstance(other, platform) and other._handle == self._handle

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(("platform", self._handle))

    def __copy__(self) -> platform:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> platform:
        return self

    def __reduce__(self) -> Any:
        raise TypeError("sycl.platform objects cannot be pickled")

    def _repr_html_(self) -> str:
        from pysycl._objects.display import platform_html

        return platform_html(self)

    def __repr__(self) -> str:
        try:
            name = self.get_info(_platform_info.name)
        except exception:
            name = "?"
        return f"<sycl.platform [opencl] {name!r}>"

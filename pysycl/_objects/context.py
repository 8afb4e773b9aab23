"""``sycl::context`` (SYCL 2020 §4.6.3), backend-neutral.

The C++ overloads (Table 19) become one constructor::

    context()                         # default_selector_v's device
    context(async_handler)            # same, with an async handler
    context(dev[, async_handler])     # one device
    context([dev0, dev1][, async_handler])   # devices of one platform
    context(plat[, async_handler])    # every visible device of a platform (pysycl)

Each construction makes a new backend context (the platform's
``_new_native_context``: an OpenCL context; nothing for the host device).
Queues built from only a device share the platform's default context
(:func:`default_context_for`), so that their buffers and events live in one
context, as in DPC++.

``platform`` lies above this module (its default context is a context): it is
annotated as :class:`pysycl._objects.refs.PlatformRef`, and a platform argument is
recognised by its class's ``get_platforms``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from pysycl import property as _prop
from pysycl._core.backend import backend
from pysycl._core.exceptions import errc, exception, exception_list
from pysycl._objects.common import common_reference
from pysycl._objects.device import device
from pysycl._objects.info import _context_info, _device_info

if TYPE_CHECKING:
    from pysycl._objects.refs import PlatformRef
    from pysycl.property import P, _Property

AsyncHandler = Callable[[exception_list], None]

_lock = threading.Lock()
_per_device_default: dict[device, context] = {}


def _is_platform(obj: object) -> bool:
    # Only the platform class has the static get_platforms (context and device do not).
    return callable(getattr(type(obj), "get_platforms", None))


class context(common_reference):  # noqa: N801 - the spec's spelling
    """A SYCL context: devices of one platform sharing memory objects.

    Args:
        devices: a ``device``, a sequence of devices (same platform), a
            ``platform``, or ``None`` for the device ``default_selector_v`` picks.
            A callable that is none of these is taken as ``async_handler``
            (the ``context(async_handler)`` overload).
        async_handler: called with an ``exception_list`` of asynchronous errors.
        properties: the property list; SYCL 2020 defines no context property.

    Raises:
        exception: ``errc.invalid`` when the devices are empty or belong to more
            than one platform; ``errc.runtime`` when no device can be selected.
        TypeError: for arguments of the wrong type.
    """

    # __weakref__: caches of per-context objects (built kernels) drop them when it goes
    __slots__ = ("__weakref__", "_async_handler", "_devices", "_handle", "_native", "_platform",
                 "_properties")

    _devices: tuple[device, ...]
    _platform: PlatformRef
    _async_handler: AsyncHandler | None
    _properties: tuple[_Property, ...]

    def __init__(
        self,
        devices: device | Sequence[device] | PlatformRef | AsyncHandler | None = None,
        async_handler: AsyncHandler | None = None,
        properties: Iterable[_Property] = (),
    ) -> None:
        if callable(devices) and async_handler is None:
            devices, async_handler = None, devices  # the context(async_handler) overload
        props = tuple(_prop.checked(properties, (), "sycl.context"))  # SYCL 2020 defines none
        if async_handler is not None and not callable(async_handler):
            raise TypeError(f"async_handler must be callable, not {async_handler!r}")
        if devices is None:
            devs = [device()]
        elif isinstance(devices, device):
            devs = [devices]
        elif _is_platform(devices):
            devs = devices.get_devices()  # type: ignore[union-attr]
        elif isinstance(devices, Sequence) and not isinstance(devices, (str, bytes)):
            devs = list(devices)
            for d in devs:
                if not isinstance(d, device):
                    raise TypeError(f"context devices must be sycl.device objects, not {d!r}")
        else:
            raise TypeError("context takes a device, a sequence of devices, a platform or an "
                            f"async_handler, not {devices!r}")
        devs = list(dict.fromkeys(devs))  # a device listed twice is one device
        if not devs:
            raise exception(errc.invalid, "a context needs at least one device")
        plats = {d.get_platform() for d in devs}
        if len(plats) > 1:
            # Table 19: "all SYCL devices in the deviceList parameter have the same
            # associated SYCL platform".
            raise exception(errc.invalid, "the devices of a context must share one platform; got "
                            + ", ".join(f"{d!r} on {d.get_platform()!r}" for d in devs))
        self._init(*devs[0].get_platform()._new_native_context(devs), devs, async_handler,
                   props)

    def _init(self, native: Any, key: int, devs: Sequence[device],
              async_handler: AsyncHandler | None, properties: tuple[_Property, ...]) -> None:
        self._native = native
        self._handle = key
        self._devices = tuple(devs)
        self._platform = devs[0].get_platform()
        self._async_handler = async_handler
        self._properties = properties

    @classmethod
    def _wrap(cls, native: Any, key: int, devs: Sequence[device],
              async_handler: AsyncHandler | None = None) -> context:
        """A context over an existing backend context (interop: ``make_context``)."""
        self = object.__new__(cls)
        self._init(native, key, devs, async_handler, ())
        return self

    @classmethod
    def _of_devices(cls, devs: Sequence[device]) -> context:
        """A new context of ``devs`` (one platform), no handler, no properties."""
        return cls._wrap(*devs[0].get_platform()._new_native_context(devs), devs)

    # --- members ---

    def get_backend(self) -> backend:
        """The SYCL backend of this context (its platform's)."""
        return self._platform.get_backend()

    def get_platform(self) -> PlatformRef:
        """The platform of this context's devices."""
        return self._platform

    def get_devices(self) -> list[device]:
        """The devices of this context."""
        return list(self._devices)

    @property
    def async_handler(self) -> AsyncHandler | None:
        """The asynchronous error handler the context was made with, or None."""
        return self._async_handler

    @property
    def devices(self) -> tuple[device, ...]:
        """The devices of this context, as the tuple the context holds (no copy)."""
        return self._devices

    def get_info(self, param: _context_info) -> Any:
        """Query ``info.context.*`` (Table 21).

        The atomic capabilities are those every device of the context supports.
        """
        if not isinstance(param, _context_info):
            raise TypeError(f"context.get_info takes a sycl.info.context descriptor, "
                            f"not {param!r}")
        if param is _context_info.platform:
            return self._platform
        if param is _context_info.devices:
            return self.get_devices()
        per_device = [d.get_info(_device_info[param.name]) for d in self._devices]
        common = set(per_device[0]).intersection(*per_device[1:])
        return [v for v in per_device[0] if v in common]

    def has_property(self, prop_type: type[_Property]) -> bool:
        """Whether the context was constructed with a property of this type (§4.5.4)."""
        return any(isinstance(p, prop_type) for p in self._properties)

    def get_property(self, prop_type: type[P]) -> P:
        """The property of this type the context was constructed with (§4.5.4).

        Raises:
            exception: ``errc.invalid`` when there is none.
        """
        for p in self._properties:
            if isinstance(p, prop_type):
                return p
        raise exception(errc.invalid, f"this context was not constructed with "
                        f"{getattr(prop_type, '__name__', prop_type)}")

    def __repr__(self) -> str:
        names = ", ".join(repr(d.display_name) for d in self._devices)
        return f"<sycl.context [{self.get_backend().name}] {names}>"


def default_context_for(dev: device) -> context:
    """The context a queue made from only a device uses (one per platform).

    Root devices share their platform's default context; a sub-device, a device
    hidden when that context was made, or a device whose USM works only in a context
    of its own (NVIDIA's OpenCL: ``device._usm_needs_own_context``) when the platform
    has several, gets its own cached one-device context.
    """
    if not isinstance(dev, device):
        raise TypeError(f"default_context_for takes a sycl.device, not {dev!r}")
    if dev.parent is None:
        ctx = dev.get_platform().ext_oneapi_get_default_context()
        if dev in ctx.devices and (len(ctx.devices) == 1 or not dev._usm_needs_own_context()):
            return ctx
    with _lock:
        ctx = _per_device_default.get(dev)
        if ctx is None:
            ctx = context._of_devices([dev])
            _per_device_default[dev] = ctx
        return ctx

"""``sycl::device`` (SYCL 2020 §4.6.4) over OpenCL devices.

Device objects are canonical: one Python object per ``cl_device_id`` (a cache),
so equality, hashing (common reference semantics, §4.5.2) and identity agree
and are cheap. Info answers and the aspect set are cached per device, since a
device does not change while a program runs (§4.6.4).

Attributes used by the rest of the runtime:
    ``_cl``: the pyopencl ``Device``; ``_cl_platform``: the pyopencl ``Platform``.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from pysycl._backends.opencl import discovery as _d
from pysycl._core.backend import backend
from pysycl._core.exceptions import errc, exception
from pysycl._objects.aspects import aspect, derive_aspects
from pysycl._objects.info import (
    DEVICE_QUERIES,
    UNCACHED_DEVICE_INFO,
    _device_info,
    device_type,
    device_type_of,
    partition_affinity_domain,
    partition_property,
)
from pysycl._objects.platform import _platform_of, platform

_log = logging.getLogger("pysycl.device")

_lock = threading.Lock()
# Canonical device per cl_device_id. Root devices are also held strongly by
# their platform; sub-devices live as long as the user holds them.
_devices: weakref.WeakValueDictionary[int, device] = weakref.WeakValueDictionary()


class device:  # noqa: N801 - the spec's spelling
    """A SYCL device: one OpenCL device (or sub-device).

    ``device()`` is the device ``default_selector_v`` picks; ``device(selector)``
    the device ``selector`` picks (Table 22). The result is the same object as
    the one ``device.get_devices()`` lists.

    Args:
        selector: a device selector (callable taking a device, returning an
            int-convertible score), default ``default_selector_v``.

    Raises:
        exception: ``errc.runtime`` when no device satisfies the selector.
    """

    __slots__ = ("__weakref__", "_aspects", "_cl", "_cl_platform", "_handle", "_info",
                 "_parent", "_platform", "_type")

    _cl: Any
    _cl_platform: Any
    _handle: int
    _platform: platform
    _parent: device | None
    _aspects: frozenset[aspect] | None
    _info: dict[_device_info, Any]
    _type: device_type | None


    @property
    def native(self) -> Any:
        """The backend's own object (a pyopencl object; None on the host device)."""
        return self._cl

    @property
    def key(self) -> int:
        """A process-unique integer naming this object: what caches and residency are keyed by."""
        return self._handle

    def __new__(cls, selector: Callable[[device], Any] | None = None) -> device:
        from pysycl._objects.selector import default_selector_v, select_device

        return select_device(default_selector_v if selector is None else selector)

    @classmethod
    def _from_cl(cls, cl_device: Any, plat: platform | None = None,
                 parent: device | None = None) -> device:
        """The canonical device of a pyopencl device."""
        key = _d.handle(cl_device)
        with _lock:
            dev = _devices.get(key)
            if dev is not None:
                return dev
            dev = object.__new__(cls)
            dev._cl = cl_device
            dev._cl_platform = cl_device.platform
            dev._handle = key
            dev._platform = plat if plat is not None else _platform_of(dev._cl_platform)
            dev._parent = parent
            dev._aspects = None
            dev._info = {}
            dev._type = None
            _devices[key] = dev
            return dev

    # --- static ---

    @staticmethod
    def get_devices(device_type: device_type = device_type.all) -> list[device]:
        """All visible devices of all platforms with the given type (Table 24)."""
        from pysycl._objects.display import object_list

        return object_list(d for p in platform.get_platforms() for d in p.get_devices(device_type))

    # --- queries ---

    def _name(self) -> str:
        return str(self.get_info(_device_info.name))

    def _device_type(self) -> device_type:
        if self._type is None:
            self._type = device_type_of(int(_d.device_info(self._cl, "TYPE")))
        return self._type

    def _platform_name(self) -> str:
        from pysycl._objects.info import _platform_info

        return str(self._platform.get_info(_platform_info.name))

    def _is_available(self) -> bool:
        return bool(_d.device_info(self._cl, "AVAILABLE", True))

    def get_backend(self) -> backend:
        """The SYCL backend of this device: always ``backend.opencl`` here."""
        return backend.opencl

    def get_platform(self) -> platform:
        """The platform this device belongs to."""
        return self._platform

    def is_cpu(self) -> bool:
        """Same as ``has(aspect.cpu)``."""
        return self.has(aspect.cpu)

    def is_gpu(self) -> bool:
        """Same as ``has(aspect.gpu)``."""
        return self.has(aspect.gpu)

    def is_accelerator(self) -> bool:
        """Same as ``has(aspect.accelerator)``."""
        return self.has(aspect.accelerator)

    def has(self, asp: aspect) -> bool:
        """Whether this device has the aspect ``asp`` (§4.6.4.3)."""
        if not isinstance(asp, aspect):
            raise TypeError(f"device.has takes a sycl.aspect, not {asp!r}")
        return asp in self._aspect_set()

    def _aspect_set(self) -> frozenset[aspect]:
        if self._aspects is None:
            self._aspects = derive_aspects(self._cl)
        return self._aspects

    def ext_oneapi_can_compile(self, lang: Any) -> bool:
        """Whether this device builds kernel bundles from source in ``lang`` (kernel_compiler)."""
        from pysycl.ext.oneapi.experimental import can_compile

        return can_compile(self, lang)

    def has_extension(self, extension: str) -> bool:
        """Deprecated: whether the device reports an OpenCL extension."""
        return extension in _d.extensions(self._cl)

    def get_info(self, param: _device_info) -> Any:
        """Query ``info.device.*`` (Table 25); returns the spec's type.

        Raises:
            TypeError: when ``param`` is not an ``info.device`` descriptor.
            exception: ``errc.invalid`` for ``parent_device`` of a root device.
        """
        try:
            return self._info[param]
        except KeyError:
            pass
        except TypeError:  # unhashable
            pass
        if not isinstance(param, _device_info):
            raise TypeError(f"device.get_info takes a sycl.info.device descriptor, not {param!r}")
        value = DEVICE_QUERIES[param](self)
        if param not in UNCACHED_DEVICE_INFO:
            self._info[param] = value
        return value

    # --- sub-devices ---

    def create_sub_devices(self, prop: partition_property, value: Any) -> list[device]:
        """Partition this device (Table 23); ``prop`` stands for the template parameter.

        * ``create_sub_devices(info.partition_property.partition_equally, count)``
        * ``create_sub_devices(info.partition_property.partition_by_counts, [c0, c1, ...])``
        * ``create_sub_devices(info.partition_property.partition_by_affinity_domain, domain)``

        Raises:
            exception: ``errc.feature_not_supported`` when the device does not
                support ``prop`` (or the affinity domain); ``errc.invalid`` when
                the value is out of range, as Table 23 says.
            ValueError: for ``partition_property.no_partition`` (ill-formed in C++).
            TypeError: when ``value`` has the wrong type for ``prop``.
        """
        if not isinstance(prop, partition_property) or prop is partition_property.no_partition:
            raise ValueError(
                "create_sub_devices needs info.partition_property.partition_equally, "
                f"partition_by_counts or partition_by_affinity_domain, not {prop!r}")
        supported = self.get_info(_device_info.partition_properties)
        if prop not in supported:
            raise exception(
                errc.feature_not_supported,
                f"{self._name()!r} does not support {prop.name} "
                f"(it supports: {', '.join(p.name for p in supported) or 'no partitioning'})")
        max_cu = int(self.get_info(_device_info.max_compute_units))
        if prop is partition_property.partition_equally:
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"partition_equally takes an int count, not {value!r}")
            if value > max_cu:
                raise exception(errc.invalid, f"partition_equally count {value} exceeds the "
                                f"{max_cu} compute units of {self._name()!r}")
            if value < 1:
                raise exception(errc.invalid, f"partition_equally count must be at least 1, "
                                f"not {value}")
            props: list[int] = [_d.PARTITION_EQUALLY, value]
        elif prop is partition_property.partition_by_counts:
            if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
                raise TypeError(f"partition_by_counts takes a sequence of counts, not {value!r}")
            counts = [int(c) for c in value]
            if any(c < 0 for c in counts):
                raise exception(errc.invalid, f"partition_by_counts counts must not be "
                                f"negative: {counts}")
            # "For each non-zero value M in the counts vector, a sub device is created";
            # OpenCL ends the list at 0 (CL_DEVICE_PARTITION_BY_COUNTS_LIST_END).
            nonzero = [c for c in counts if c]
            max_sub = int(self.get_info(_device_info.partition_max_sub_devices))
            if len(nonzero) > max_sub:
                raise exception(errc.invalid, f"partition_by_counts asks for {len(nonzero)} "
                                f"sub-devices; {self._name()!r} allows at most {max_sub}")
            if sum(nonzero) > max_cu:
                raise exception(errc.invalid, f"partition_by_counts asks for {sum(nonzero)} "
                                f"compute units; {self._name()!r} has {max_cu}")
            if not nonzero:
                return []
            props = [_d.PARTITION_BY_COUNTS, *nonzero, _d.PARTITION_BY_COUNTS_LIST_END]
        else:
            if not isinstance(value, partition_affinity_domain):
                raise TypeError("partition_by_affinity_domain takes an "
                                f"info.partition_affinity_domain, not {value!r}")
            domains = self.get_info(_device_info.partition_affinity_domains)
            if value not in domains:
                raise exception(
                    errc.feature_not_supported,
                    f"{self._name()!r} does not support partitioning by affinity domain "
                    f"{value.name} (it supports: "
                    f"{', '.join(d.name for d in domains) or 'none'})")
            props = [_d.PARTITION_BY_AFFINITY_DOMAIN, value.value]
        cl_subs = _d.create_sub_devices(self._cl, props)
        return [device._from_cl(c, self._platform, parent=self) for c in cl_subs]

    # --- common reference semantics ---

    def __eq__(self, other: object) -> bool:
        return isinstance(other, device) and other._handle == self._handle

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(("device", self._handle))

    def __copy__(self) -> device:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> device:
        return self

    def _repr_html_(self) -> str:
        from pysycl._objects.display import device_html

        return device_html(self)

    def __repr__(self) -> str:
        try:
            kind = self._device_type().name
            name = self._name()
        except exception:
            kind, name = "?", "?"
        sub = " (sub-device)" if self._parent is not None else ""
        return f"<sycl.device [opencl:{kind}] {name!r}{sub}>"

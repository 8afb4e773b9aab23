"""``sycl::device`` (SYCL 2020 §4.6.4), backend-neutral.

A backend makes its devices as subclasses of :class:`device` that answer the
backend part (``_query``: one info descriptor; ``_derive_aspects``;
``_partition``: sub-devices), as ``pysycl._backends.opencl.objects`` and
``pysycl._backends.host.device`` do. Device objects are canonical (the backend
hands out one object per device), so equality, hashing (common reference
semantics, §4.5.2) and identity agree and are cheap. Info answers and the aspect
set are cached per device, since a device does not change while a program runs
(§4.6.4). ``platform`` lies above this module (its constructor selects a device): a
device names its platform as :class:`pysycl._objects.refs.PlatformRef`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from pysycl._core.backend import backend
from pysycl._core.exceptions import errc, exception
from pysycl._objects import discovery
from pysycl._objects.aspects import aspect
from pysycl._objects.common import common_reference
from pysycl._objects.display import fmt_bytes, object_list, table
from pysycl._objects.info import (
    _device_info,
    _platform_info,
    device_type,
    partition_affinity_domain,
    partition_property,
    source_language,
)
from pysycl._objects.selector import default_selector_v, select_device

if TYPE_CHECKING:
    from pysycl._objects.refs import PlatformRef

#: Descriptors whose answer may change while the program runs: never cached.
UNCACHED_DEVICE_INFO = frozenset({_device_info.is_available})


class device(common_reference):  # noqa: N801 - the spec's spelling
    """A SYCL device: one device (or sub-device) of a backend.

    ``device()`` is the device ``default_selector_v`` picks; ``device(selector)``
    the device ``selector`` picks (Table 22). The result is the same object as
    the one ``device.get_devices()`` lists.

    Args:
        selector: a device selector (callable taking a device, returning an
            int-convertible score), default ``default_selector_v``; a device
            is returned as it is.

    Raises:
        exception: ``errc.runtime`` when no device satisfies the selector.
    """

    __slots__ = ("__weakref__", "_aspects", "_handle", "_info", "_native", "_parent",
                 "_platform", "_targets")

    #: The backend of the class's devices (set by each backend's subclass).
    _backend: ClassVar[backend]
    #: Whether ``online_compiler`` compiles OpenCL C and SPIR-V (not a CUDA device's: the
    #: driver compiles PTX only)
    _compiles_opencl: ClassVar[bool] = True

    _platform: PlatformRef
    _parent: device | None
    _aspects: frozenset[aspect] | None
    _info: dict[_device_info, Any]

    def __new__(cls, selector: Callable[[device], Any] | device | None = None) -> device:
        if isinstance(selector, device):
            return selector
        return select_device(default_selector_v if selector is None else selector)

    def _setup(self, native: Any, key: int, plat: PlatformRef, parent: device | None) -> None:
        """Fill in a new device (backends call it on ``object.__new__(their_class)``)."""
        self._native = native
        self._handle = key
        self._platform = plat
        self._parent = parent
        self._aspects = None
        self._info = {}
        self._targets: tuple[tuple[str, str], ...] | None = None

    # --- what a backend answers ---

    def _query(self, param: _device_info) -> Any:
        """The answer to one ``info.device`` descriptor, asked of the backend."""
        raise NotImplementedError

    def _derive_aspects(self) -> frozenset[aspect]:
        """Every aspect the device has, asked of the backend (then cached)."""
        raise NotImplementedError

    def _image_targets(self) -> tuple[tuple[str, str], ...]:
        """The Python-kernel image targets ``(format, arch)`` it loads, preferred first."""
        return ()

    def _usm_needs_own_context(self) -> bool:
        """Whether USM on this device works only in a context of this device alone (then a
        queue made from the device alone gets such a context: :func:`default_context_for`)."""
        return False

    def _partition(self, prop: partition_property,
                   value: int | Sequence[int] | partition_affinity_domain) -> list[device]:
        """Sub-devices: ``value`` is the count, the non-zero counts, or the affinity domain.

        Called once the arguments are checked against the device's info.
        """
        raise NotImplementedError

    # --- static ---

    @staticmethod
    def get_devices(device_type: device_type = device_type.all) -> list[device]:
        """All visible devices of all platforms with the given type (Table 24)."""
        return object_list(d for p in discovery.visible_platforms()
                           for d in p.get_devices(device_type))

    # --- queries ---

    @property
    def display_name(self) -> str:
        """``info.device.name`` as a ``str`` (what messages and reprs show)."""
        return str(self.get_info(_device_info.name))

    @property
    def parent(self) -> device | None:
        """The device this sub-device was partitioned from; None for a root device."""
        return self._parent

    def _name(self) -> str:
        # The former spelling of ``display_name``, kept for callers not yet moved.
        return self.display_name

    def _device_type(self) -> device_type:
        return self.get_info(_device_info.device_type)  # type: ignore[no-any-return]

    def _is_available(self) -> bool:
        """Whether the device is available (what selectors score)."""
        return bool(self.get_info(_device_info.is_available))

    def get_backend(self) -> backend:
        """The SYCL backend of this device."""
        return self._backend

    def get_platform(self) -> PlatformRef:
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
        aspects = self._aspects
        if aspects is None:
            aspects = self._aspects = self._derive_aspects()
        if asp in aspects:
            return True
        if not isinstance(asp, aspect):
            raise TypeError(f"device.has takes a sycl.aspect, not {asp!r}")
        return False

    @property
    def image_targets(self) -> tuple[tuple[str, str], ...]:
        """The device-image targets its Python kernels compile to, preferred first.

        ``(format, arch)``: ``("spirv", "")`` or ``("ptx", "sm_90")``; empty for a
        device that loads neither (the host_debuggable device interprets kernels).
        """
        t = self._targets
        if t is None:
            t = self._targets = self._image_targets()
        return t

    def ext_pysycl_image_formats(self) -> list[str]:
        """The image formats Python kernels compile to for this device: ``["ptx:sm_90"]``..."""
        return [f"{f}:{a}" if a else f for f, a in self.image_targets]

    def ext_oneapi_can_compile(self, lang: source_language) -> bool:
        """Whether this device builds kernel bundles from source in ``lang`` (kernel_compiler).

        OpenCL C needs an online compiler (of OpenCL C: not a CUDA device's); SPIR-V also
        ``aspect.ext_pysycl_spirv``; PTX (``ext_pysycl_ptx``) ``aspect.ext_pysycl_ptx``.
        """
        if not isinstance(lang, source_language):
            raise TypeError(f"ext_oneapi_can_compile takes a source_language, not {lang!r}")
        if lang is source_language.ext_pysycl_ptx:
            return self.has(aspect.ext_pysycl_ptx)
        if not self.has(aspect.online_compiler) or not self._compiles_opencl:
            return False
        return lang is not source_language.spirv or self.has(aspect.ext_pysycl_spirv)

    def has_extension(self, extension: str) -> bool:
        """Deprecated: whether the device reports an OpenCL extension."""
        return extension in self.get_info(_device_info.extensions)

    def get_info(self, param: _device_info) -> Any:
        """Query ``info.device.*`` (Table 25); returns the spec's type.

        Raises:
            TypeError: when ``param`` is not an ``info.device`` descriptor.
            exception: ``errc.invalid`` for ``parent_device`` of a root device.
        """
        try:
            return self._info[param]
        except (KeyError, TypeError):  # not asked yet, or unhashable
            pass
        if not isinstance(param, _device_info):
            raise TypeError(f"device.get_info takes a sycl.info.device descriptor, not {param!r}")
        if param is _device_info.parent_device:
            if self._parent is None:
                # Table 25: errc::invalid when this is not a sub-device.
                raise exception(errc.invalid, f"info.device.parent_device: {self!r} is not a "
                                "sub-device")
            value: Any = self._parent
        elif param is _device_info.platform:
            value = self._platform
        elif param is _device_info.aspects:
            value = [a for a in aspect if self.has(a)]
        else:
            value = self._query(param)
        if param not in UNCACHED_DEVICE_INFO:
            self._info[param] = value
        return value

    # --- sub-devices ---

    def create_sub_devices(self, prop: partition_property,
                           value: int | Sequence[int] | partition_affinity_domain) -> list[device]:
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
                f"{self.display_name!r} does not support {prop.name} "
                f"(it supports: {', '.join(p.name for p in supported) or 'no partitioning'})")
        if prop is partition_property.partition_equally:
            self._check_equally(value)
        elif prop is partition_property.partition_by_counts:
            value = self._check_counts(value)
            if not value:
                return []
        else:
            self._check_domain(value)
        return self._partition(prop, value)

    def _check_equally(self, count: object) -> None:
        if isinstance(count, bool) or not isinstance(count, int):
            raise TypeError(f"partition_equally takes an int count, not {count!r}")
        max_cu = int(self.get_info(_device_info.max_compute_units))
        if count > max_cu:
            raise exception(errc.invalid, f"partition_equally count {count} exceeds the "
                            f"{max_cu} compute units of {self.display_name!r}")
        if count < 1:
            raise exception(errc.invalid, f"partition_equally count must be at least 1, "
                            f"not {count}")

    def _check_counts(self, value: Any) -> list[int]:
        """The non-zero counts of a ``partition_by_counts`` request, checked."""
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
            raise TypeError(f"partition_by_counts takes a sequence of counts, not {value!r}")
        counts = [int(c) for c in value]
        if any(c < 0 for c in counts):
            raise exception(errc.invalid, f"partition_by_counts counts must not be "
                            f"negative: {counts}")
        # "For each non-zero value M in the counts vector, a sub device is created".
        nonzero = [c for c in counts if c]
        max_sub = int(self.get_info(_device_info.partition_max_sub_devices))
        if len(nonzero) > max_sub:
            raise exception(errc.invalid, f"partition_by_counts asks for {len(nonzero)} "
                            f"sub-devices; {self.display_name!r} allows at most {max_sub}")
        max_cu = int(self.get_info(_device_info.max_compute_units))
        if sum(nonzero) > max_cu:
            raise exception(errc.invalid, f"partition_by_counts asks for {sum(nonzero)} "
                            f"compute units; {self.display_name!r} has {max_cu}")
        return nonzero

    def _check_domain(self, value: object) -> None:
        if not isinstance(value, partition_affinity_domain):
            raise TypeError("partition_by_affinity_domain takes an "
                            f"info.partition_affinity_domain, not {value!r}")
        domains = self.get_info(_device_info.partition_affinity_domains)
        if value not in domains:
            raise exception(
                errc.feature_not_supported,
                f"{self.display_name!r} does not support partitioning by affinity domain "
                f"{value.name} (it supports: {', '.join(d.name for d in domains) or 'none'})")

    # --- display ---

    def _repr_html_(self) -> str:
        g = self.get_info
        D = _device_info  # noqa: N806
        rows = [
            ("platform", self.get_platform().get_info(_platform_info.name)),
            ("type", g(D.device_type).name),
            ("version", g(D.version)),
            ("driver", g(D.driver_version)),
            ("compute units", g(D.max_compute_units)),
            ("max work-group size", g(D.max_work_group_size)),
            ("global memory", fmt_bytes(g(D.global_mem_size))),
            ("local memory", fmt_bytes(g(D.local_mem_size))),
            ("max allocation", fmt_bytes(g(D.max_mem_alloc_size))),
            ("aspects", " ".join(a.name for a in g(D.aspects))),
        ]
        return table(rows, title=f"sycl.device: {g(D.name)}")

    def __repr__(self) -> str:
        try:
            kind = self._device_type().name
            name = self.display_name
        except exception:
            kind, name = "?", "?"
        sub = " (sub-device)" if self._parent is not None else ""
        return f"<sycl.device [{self._backend.name}:{kind}] {name!r}{sub}>"

"""Device selection (SYCL 2020 §4.6.1): the standard selectors and ``select_device``.

A device selector is any callable taking a ``device`` and returning a value
convertible to ``int``. :func:`select_device` scores every visible device of
every platform (or the devices it is given, e.g. a context's), keeps the highest
score (the first one in enumeration order on ties) and rejects strictly negative
scores (§4.6.1.1).

This module lies below ``device`` and ``platform`` (their constructors select):
it uses devices only through their methods (:class:`pysycl._objects.refs.PlatformDeviceRef`).
"""

from __future__ import annotations

import logging
import operator
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from pysycl._core.exceptions import errc, exception
from pysycl._objects import discovery
from pysycl._objects.aspects import aspect
from pysycl._objects.info import _platform_info, device_type

if TYPE_CHECKING:
    from pysycl._objects.refs import PlatformDeviceRef

_log = logging.getLogger("pysycl.selector")

Selector = Callable[["PlatformDeviceRef"], Any]
#: The device class a selection returns (``sycl.device``: what it was given, or lists).
_D = TypeVar("_D", bound="PlatformDeviceRef")

# default_selector_v's heuristic. The components are summed; every real device
# scores >= 0 (the spec: default_selector_v "must always return a device").
_SCORE_KERNELS = 1000  # loads SPIR-V or PTX, i.e. runs Python kernels compiled by pysycl_numba
_SCORE_GPU = 300
_SCORE_ACCELERATOR = 200
_SCORE_CPU = 100
_SCORE_AVAILABLE = 10
_SCORE_POCL = -50     # PoCL: selectable, but below a vendor runtime of the same kind
_SCORE_HOST = -1      # the host_debuggable interpreter device: never the default


def _default_score(dev: PlatformDeviceRef) -> int:
    score = 0
    if dev.image_targets:
        score += _SCORE_KERNELS
    if dev.has(aspect.gpu):
        score += _SCORE_GPU
    elif dev.has(aspect.accelerator):
        score += _SCORE_ACCELERATOR
    elif dev.has(aspect.cpu):
        score += _SCORE_CPU
    if dev._is_available():
        score += _SCORE_AVAILABLE
    if "portable computing language" in str(
            dev.get_platform().get_info(_platform_info.name)).lower():
        score += _SCORE_POCL
    if dev.has(aspect.host_debuggable):
        return _SCORE_HOST  # the interpreter device: only ever chosen on request
    return max(score, 0)


class default_selector:  # noqa: N801 - the spec's spelling (SYCL 1.2.1 compatibility type)
    """Scores devices by pysycl's heuristic; ``default_selector_v`` is an instance.

    Preference: devices that run Python kernels (``aspect.ext_pysycl_spirv`` or
    ``aspect.ext_pysycl_ptx``) first; then GPU over accelerator over CPU (so an
    NVIDIA GPU beats Intel's CPU runtime); PoCL below a vendor runtime of the
    same kind. Never negative for a real device; negative for the
    host_debuggable interpreter device, which is never the default.
    """

    def __call__(self, dev: PlatformDeviceRef) -> int:
        return _default_score(dev)

    def __repr__(self) -> str:
        return "sycl.default_selector_v"


class _TypeSelector:
    _type: device_type

    def __call__(self, dev: PlatformDeviceRef) -> int:
        # Table 14: only devices of this type; the others are rejected.
        if dev._device_type() is not self._type:
            return -1
        return _default_score(dev)

    def __repr__(self) -> str:
        return f"sycl.{self._type.name}_selector_v"


class cpu_selector(_TypeSelector):  # noqa: N801
    """Selects a device of type ``info.device_type.cpu`` (Table 14)."""

    _type = device_type.cpu


class gpu_selector(_TypeSelector):  # noqa: N801
    """Selects a device of type ``info.device_type.gpu`` (Table 14)."""

    _type = device_type.gpu


class accelerator_selector(_TypeSelector):  # noqa: N801
    """Selects a device of type ``info.device_type.accelerator`` (Table 14)."""

    _type = device_type.accelerator


default_selector_v = default_selector()
cpu_selector_v = cpu_selector()
gpu_selector_v = gpu_selector()
accelerator_selector_v = accelerator_selector()


class _AspectSelector:
    def __init__(self, required: Iterable[aspect], denied: Iterable[aspect]) -> None:
        self.required = tuple(required)
        self.denied = tuple(denied)
        for a in (*self.required, *self.denied):
            if not isinstance(a, aspect):
                raise TypeError(f"aspect_selector takes sycl.aspect values, not {a!r}")

    def __call__(self, dev: PlatformDeviceRef) -> int:
        if not all(dev.has(a) for a in self.required):
            return -1
        if any(dev.has(a) for a in self.denied):
            return -1
        # Among acceptable devices, rank as default_selector_v does ("If no aspects
        # are passed in, the generated selector behaves like default_selector"),
        # but accept every device that has the required aspects (the host device
        # scores negative for default_selector_v only).
        return max(_default_score(dev), 0)

    def __repr__(self) -> str:
        req = ", ".join(f"aspect.{a.name}" for a in self.required)
        deny = ", ".join(f"aspect.{a.name}" for a in self.denied)
        return f"sycl.aspect_selector([{req}], deny_list=[{deny}])"


def aspect_selector(*aspects: aspect | Iterable[aspect],
                    deny_list: Iterable[aspect] = ()) -> Selector:
    """A selector accepting only devices with every given aspect and none denied (§4.6.1.1).

    Both C++ overloads::

        aspect_selector(aspect.gpu, aspect.fp16)
        aspect_selector([aspect.fp16, aspect.fp64], [aspect.emulated, aspect.custom])
        aspect_selector([aspect.fp16], deny_list=[aspect.custom])

    Args:
        *aspects: the required aspects, or one sequence of required aspects
            optionally followed by a sequence of denied aspects.
        deny_list: aspects the device must not have.

    Returns:
        A device selector.
    """
    if aspects and not isinstance(aspects[0], aspect):
        if len(aspects) > 2 or (len(aspects) == 2 and deny_list):
            raise TypeError("aspect_selector(aspect_list, deny_list=()) takes at most two lists")
        required = list(aspects[0])  # type: ignore[arg-type]
        denied = list(aspects[1]) if len(aspects) == 2 else list(deny_list)  # type: ignore
    else:
        required, denied = list(aspects), list(deny_list)  # type: ignore[arg-type]
    return _AspectSelector(required, denied)  # type: ignore[arg-type]


def _selector_name(selector: object) -> str:
    return getattr(selector, "__qualname__", None) or repr(selector)


def select_device(selector: Callable[[_D], Any], devices: Sequence[_D] | None = None) -> _D:
    """Pick the device a selector scores highest (§4.6.1.1).

    Args:
        selector: a callable ``device -> int-convertible``.
        devices: the candidates (a context's devices, say); default every
            visible device of every platform, in enumeration order.

    Returns:
        The highest-scoring device; the first in order on ties.

    Raises:
        exception: ``errc.runtime`` when every score is negative or no device
            is visible.
        TypeError: when ``selector`` is not callable or returns a non-integer.
    """
    if not callable(selector):
        raise TypeError(f"a device selector must be callable (device -> int), not {selector!r}")
    candidates = list(devices) if devices is not None else [
        d for p in discovery.visible_platforms() for d in p.get_devices()]
    best: _D | None = None
    best_score = -1
    scores = []
    for dev in candidates:
        raw = selector(dev)
        try:
            score = operator.index(raw) if not isinstance(raw, bool) else int(raw)
        except TypeError:
            try:
                score = int(raw)
            except (TypeError, ValueError):
                raise TypeError(f"device selector {_selector_name(selector)} returned {raw!r} "
                                f"for {dev!r}; it must return an int") from None
        scores.append((dev, score))
        if score >= 0 and (best is None or score > best_score):
            best, best_score = dev, score
    _log.debug("select_device(%s): %s", _selector_name(selector), scores)
    if best is None:
        if not candidates and devices is None:
            # all_platforms() already raised if the loader found nothing.
            raise exception(
                errc.runtime,
                f"no device satisfies {_selector_name(selector)}: {discovery.FILTER_ENV}="
                f"{','.join(discovery.device_filter())!r} hides every device (there are: "
                f"{', '.join(map(repr, discovery.hidden_device_names()))})")
        listed = "; ".join(f"{d!r} scored {s}" for d, s in scores)
        raise exception(errc.runtime, f"no device satisfies {_selector_name(selector)}: every "
                        f"device scored negative ({listed})")
    return best

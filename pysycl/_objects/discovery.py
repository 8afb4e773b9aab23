"""Platform discovery: the registered backends' platforms, and which devices are visible.

Every registered backend (``pysycl._core.backends``) lists its platforms, in
registration order: OpenCL's, then pysycl's host interpreter platform.

``PYSYCL_DEVICE_FILTER`` (comma-separated, case-insensitive substrings, e.g.
``intel`` or ``pocl,nvidia``) hides every device that matches none of them, and
every platform left without devices. A token matches a platform's name or vendor
(then it keeps the whole platform) or, if it matches no platform, a device name.

This module knows platforms and devices only through their methods (it lies
below the classes, which use it): :mod:`pysycl._objects.refs`' protocols.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from pysycl._core import backends as _backend_registry
from pysycl._objects.aspects import aspect
from pysycl._objects.info import _device_info, _platform_info

if TYPE_CHECKING:
    from pysycl._objects.refs import PlatformDeviceRef, PlatformRef

FILTER_ENV = "PYSYCL_DEVICE_FILTER"


def device_filter() -> list[str]:
    """The lower-cased substrings of ``PYSYCL_DEVICE_FILTER`` (empty: everything visible)."""
    raw = os.environ.get(FILTER_ENV, "")
    return [t.strip().lower() for t in raw.split(",") if t.strip()]


def all_platforms(every: bool = False) -> list[PlatformRef]:
    """Every platform that has devices, canonical objects, enumeration order (filter ignored,
    except that a filter of ``backend:`` tokens only, ``cuda:gpu``, asks no other backend:
    starting NVIDIA's OpenCL beside CUDA costs a process a third of a second; ``every``:
    all backends, for messages that list what the filter hides)."""
    only = None if every else _only_backends()
    return [p for b in _backend_registry.registered()
            if only is None or b.kind.value in only for p in b.platforms()]


def _only_backends() -> set[str] | None:
    """The backends a filter made only of ``backend:`` tokens names (None: any filter else)."""
    tokens = device_filter()
    kinds = {_BACKEND_PREFIXES.get(t.partition(":")[0]) if ":" in t else None for t in tokens}
    if not tokens or None in kinds:
        return None
    return kinds  # type: ignore[return-value]


def _names(p: PlatformRef) -> tuple[str, str]:
    return (str(p.get_info(_platform_info.name)).lower(),
            str(p.get_info(_platform_info.vendor)).lower())


#: ``backend:`` prefixes of filter tokens (``cuda:gpu``, ``opencl:nvidia``, ``host:``)
_BACKEND_PREFIXES = {"opencl": "opencl", "cuda": "ext_oneapi_cuda",
                     "ext_oneapi_cuda": "ext_oneapi_cuda", "host": "ext_pysycl_host",
                     "ext_pysycl_host": "ext_pysycl_host"}
_TYPE_WORDS = {"gpu", "cpu", "accelerator", "*", ""}


def _visible_pairs(tokens: list[str]) -> set[tuple[int, int]]:
    """The (platform, device) keys the filter keeps.

    A token that occurs in some platform's name or vendor selects whole platforms
    (``intel``, ``pocl``, ``nvidia``); a token that occurs in no platform's name or
    vendor is matched against device names (``epyc``, ``h200``). So ``intel``
    never picks PoCL's ``pthread-Intel(R) Xeon`` device on an Intel host. A token
    ``backend:rest`` (``cuda:gpu``, ``opencl:*``, ``opencl:nvidia``) keeps the devices of
    that backend whose type is ``rest`` (``gpu``, ``cpu``, ``accelerator``, ``*`` or
    nothing: every one) or whose platform or device name contains ``rest``.
    """
    pairs = [(p, d) for p in all_platforms() for d in p.root_devices]
    keep: set[tuple[int, int]] = set()
    plain = []
    for t in tokens:
        b, sep, rest = t.partition(":")
        if sep and b in _BACKEND_PREFIXES:
            for p, d in pairs:
                if p.get_backend().value != _BACKEND_PREFIXES[b]:
                    continue
                if rest in _TYPE_WORDS:
                    ok = rest in ("*", "") or d.get_info(_device_info.device_type).name == rest
                else:
                    ok = any(rest in n for n in _names(p)) or rest in d.display_name.lower()
                if ok:
                    keep.add((p.key, d.key))
        else:
            plain.append(t)
    platform_tokens = {t for t in plain for p, _ in pairs if any(t in n for n in _names(p))}
    device_tokens = [t for t in plain if t not in platform_tokens]
    return keep | {(p.key, d.key) for p, d in pairs
                   if any(t in n for t in platform_tokens for n in _names(p))
                   or any(t in d.display_name.lower() for t in device_tokens)}


def visible_devices(plat: PlatformRef) -> list[PlatformDeviceRef]:
    """The root devices of ``plat`` that ``PYSYCL_DEVICE_FILTER`` leaves visible."""
    tokens = device_filter()
    if not tokens:
        return list(plat.root_devices)
    keep = _visible_pairs(tokens)
    return [d for d in plat.root_devices if (plat.key, d.key) in keep]


def visible_platforms() -> list[PlatformRef]:
    """The platforms with at least one visible device, in enumeration order."""
    return [p for p in all_platforms() if visible_devices(p)]


def hidden_device_names() -> list[str]:
    """The names of every root device, visible or not (for "the filter hides all" errors)."""
    return [d.display_name for p in all_platforms(every=True) for d in p.root_devices]


def runs_python_kernels(d: PlatformDeviceRef) -> bool:
    """Whether ``d`` runs kernels written in Python: it loads one of pysycl's device images
    (SPIR-V or PTX), or it is the host_debuggable interpreter device."""
    return bool(d.image_targets) or d.has(aspect.host_debuggable)


def no_python_kernels_note(dev: PlatformDeviceRef) -> str | None:
    """What to tell a user whose default device ``dev`` cannot run Python kernels (None when
    it can): which ``PYSYCL_DEVICE_FILTER`` chose it and the devices that can, filter ignored."""
    if runs_python_kernels(dev):
        return None
    can = [d for p in all_platforms(every=True) for d in p.root_devices
           if runs_python_kernels(d)]
    names = ", ".join(repr(d) for d in can) or "none"
    raw = os.environ.get(FILTER_ENV, "")
    why = (f"{FILTER_ENV}={raw!r} hides the devices that can: {names}" if device_filter() else
           f"the devices that can: {names}")
    return (f"pysycl: the default device {dev!r} cannot run Python kernels (it loads neither "
            f"SPIR-V nor PTX; OpenCL C kernels and memory commands run); {why}. Change "
            f"{FILTER_ENV}, or pass a device or selector to sycl.queue(...) (docs/devices.md)")

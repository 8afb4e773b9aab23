"""Which kernels can run on which device, answered without compiling (§4.11.2).

A Python kernel's variant is compatible with a device that loads one of its image
targets (SPIR-V with an online compiler, or PTX of the device's compute
capability), or runs the Python kernel itself (the host_debuggable device:
:data:`PYTHON_TARGET`), and has every aspect the kernel needs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from pysycl._bundles.kernel_bundle import _aspect
from pysycl._bundles.kernel_id import _Variant, get_kernel_id, kernel_id, variants_of

if TYPE_CHECKING:
    from pysycl._objects.device import device


def _check_kids(kids: kernel_id | Iterable[kernel_id], what: str) -> list[kernel_id]:
    if isinstance(kids, kernel_id):
        kids = [kids]
    if isinstance(kids, (str, bytes)) or not isinstance(kids, Iterable):
        raise TypeError(f"{what}: kernel ids must be a sequence of sycl.kernel_id")
    out = list(dict.fromkeys(kids))
    for k in out:
        if not isinstance(k, kernel_id):
            raise TypeError(f"{what}: expected sycl.kernel_id objects, not {k!r}")
    return out



#: The "image" of a device that runs Python kernels in the interpreter: the kernel itself.
PYTHON_TARGET = ("python", "")


def _variant_target(dev: device) -> tuple[str, str] | None:
    """The image target a Python kernel's bundle image takes for ``dev``, or None."""
    from pysycl._core.backend import backend
    from pysycl._objects.aspects import aspect

    if dev.get_backend() is backend.ext_pysycl_host:
        return PYTHON_TARGET
    for t in dev.image_targets:
        if t[0] == "ptx" or dev.has(aspect.online_compiler):  # SPIR-V is compiled online
            return t
    return None


def _variant_compatible(v: _Variant, dev: device) -> bool:
    if _variant_target(dev) is None:
        return False
    need, _exact = v.required_aspects()
    return all(dev.has(_aspect(a)) for a in need)


def _kid_compatible(kid: kernel_id, dev: device) -> bool:
    return any(_variant_compatible(v, dev) for v in variants_of(kid))


def is_compatible(kernel_ids: str | kernel_id | Iterable[kernel_id], dev: device) -> bool:
    """Whether every kernel of ``kernel_ids`` can run on ``dev`` (answered without compiling).

    ``is_compatible(kernel_name_or_id, dev)`` also takes one kernel name (the
    C++ ``is_compatible<KernelName>(dev)``) or one id.
    """
    from pysycl._objects.device import device

    if isinstance(kernel_ids, str):
        kernel_ids = [get_kernel_id(kernel_ids)]
    kids = _check_kids(kernel_ids, "is_compatible")
    if not isinstance(dev, device):
        raise TypeError(f"is_compatible takes a sycl.device, not {type(dev).__name__}")
    return all(_kid_compatible(k, dev) for k in kids)

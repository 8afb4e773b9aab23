"""``sycl::opencl``: the OpenCL backend interop namespace (backend appendix).

The OpenCL status behind an exception, extension queries, reference counts and
kernel bundles from OpenCL programs or kernels (``create_bundle``). Native
objects are pyopencl objects (see ``sycl.get_native``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pysycl._core.exceptions import exception
from pysycl._objects.device import device as _device
from pysycl._objects.info import info as _info
from pysycl._objects.platform import platform as _platform

if TYPE_CHECKING:
    from pysycl._bundles.kernel_bundle import bundle_state, kernel_bundle
    from pysycl._objects.context import context


def get_error_code(exc: exception) -> int | None:
    """The OpenCL status code (``CL_*``, negative) that caused ``exc``, or None.

    ``sycl::opencl::get_error_code`` hands back the ``cl_int`` of the failing call.
    """
    if not isinstance(exc, exception):
        raise TypeError(f"get_error_code takes a sycl.exception, not {type(exc).__name__}")
    return exc.cl_error


def has_extension(obj: _device | _platform, extension: str) -> bool:
    """Whether a platform or device reports an OpenCL extension (``opencl::has_extension``)."""
    if isinstance(obj, _device):
        return obj.has_extension(extension)
    if isinstance(obj, _platform):
        return extension in obj.get_info(_info.platform.extensions)
    raise TypeError(f"has_extension takes a sycl.platform or sycl.device, not {type(obj).__name__}")


def get_reference_count(obj: object) -> int:
    """The OpenCL reference count of a native (pyopencl) object (``opencl::get_reference_count``).

    Raises:
        TypeError: not a reference-counted pyopencl object (a platform id is not).
    """
    from pysycl._backends.opencl import programs

    return programs.reference_count(obj)


def create_bundle(ctxt: context, devs: Sequence[_device],
                  cl_objects: Sequence[Any], *,
                  state: bundle_state | None = None) -> kernel_bundle:
    """A kernel bundle from ``pyopencl.Program`` objects (in ``state``) or ``pyopencl.Kernel``
    objects (executable) — ``sycl::opencl::create_bundle``.

    Raises:
        exception: ``errc.build`` when an OpenCL call fails; ``errc.invalid``
            when a program's state cannot give ``state``.
    """
    from pysycl._backends.opencl.source_bundles import create_bundle as _create
    from pysycl._bundles.bundle import bundle_state

    return _create(ctxt, devs, cl_objects,
                   state=bundle_state.executable if state is None else state)

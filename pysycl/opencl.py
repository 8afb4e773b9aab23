"""``sycl::opencl``: the OpenCL backend interop namespace (backend appendix).

Only what the runtime foundation needs so far: the OpenCL status behind an
exception, and extension queries.
"""

from __future__ import annotations

from typing import Any

from pysycl._exceptions import exception


def get_error_code(exc: exception) -> int | None:
    """The OpenCL status code (``CL_*``, negative) that caused ``exc``, or None.

    ``sycl::opencl::get_error_code`` hands back the ``cl_int`` of the failing call.
    """
    if not isinstance(exc, exception):
        raise TypeError(f"get_error_code takes a sycl.exception, not {type(exc).__name__}")
    return exc._cl_error


def has_extension(obj: Any, extension: str) -> bool:
    """Whether a platform or device reports an OpenCL extension (``opencl::has_extension``)."""
    from pysycl._device import device
    from pysycl._platform import platform

    if isinstance(obj, device):
        return obj.has_extension(extension)
    if isinstance(obj, platform):
        return extension in obj.get_info(_platform_extensions())
    raise TypeError(f"has_extension takes a sycl.platform or sycl.device, not {type(obj).__name__}")


def _platform_extensions() -> Any:
    from pysycl._info import info

    return info.platform.extensions

"""``python -m pysycl`` / ``pysycl-ls``: list SYCL platforms and devices, like ``sycl-ls``.

One line per device::

    [opencl:cpu][opencl:0] Intel(R) OpenCL, AMD EPYC OpenCL 3.0 (Build 0) [2026.22.10.0.01_160000]

``--verbose`` adds, for each platform and device, every ``info`` descriptor.
This is a command-line tool, so it prints to stdout.
"""

from __future__ import annotations

import argparse
import enum
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pysycl._core.exceptions import exception
from pysycl._objects.aspects import aspect
from pysycl._objects.device import device
from pysycl._objects.discovery import FILTER_ENV
from pysycl._objects.info import _device_info, _platform_info
from pysycl._objects.platform import platform
from pysycl._objects.selector import default_selector_v, select_device

if TYPE_CHECKING:
    from pysycl._core.backend import backend


def _fmt(value: Any) -> str:
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    if isinstance(value, (device, platform)):
        return repr(value)
    return str(value)


def device_line(dev: device, index: int) -> str:
    """The ``sycl-ls`` line of one device."""
    kind = dev.get_info(_device_info.device_type).name
    pname = dev.get_platform().get_info(_platform_info.name)
    return (f"[{dev.get_backend().name}:{kind}][{dev.get_backend().name}:{index}] "
            f"{pname}, {dev.get_info(_device_info.name)} "
            f"{dev.get_info(_device_info.version)} [{dev.get_info(_device_info.driver_version)}]")


def _verbose(plats: Sequence[platform]) -> None:
    default = None
    try:
        default = select_device(default_selector_v)
    except exception:
        pass
    print(f"\nPlatforms: {len(plats)}")
    for pi, p in enumerate(plats):
        print(f"Platform [#{pi + 1}]:")
        print(f"    Backend: {p.get_backend().name}")
        for d in _platform_info:
            print(f"    {d.name}: {_fmt(p.get_info(d))}")
        devs = p.get_devices()
        print(f"    Devices: {len(devs)}")
        for di, dev in enumerate(devs):
            mark = "  (default_selector_v)" if dev == default else ""
            print(f"    Device [#{di}]:{mark}")
            for desc in _device_info:
                try:
                    value = _fmt(dev.get_info(desc))
                except exception as e:
                    value = f"<{e.code().name}: {e.what()}>"
                print(f"        {desc.name}: {value}")


def _kernel_formats(dev: device) -> str:
    """What Python kernels become on ``dev``: its image formats, or why they cannot run."""
    formats = dev.ext_pysycl_image_formats()
    if formats:
        return " ".join(formats)
    if dev.has(aspect.host_debuggable):
        return "interpreted (host_debuggable)"
    return "no (loads neither SPIR-V nor PTX; OpenCL C bundles only)"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``pysycl-ls`` and ``python -m pysycl``."""
    parser = argparse.ArgumentParser(
        prog="pysycl-ls",
        description="List the SYCL platforms and devices pysycl sees (like sycl-ls). "
                    f"{FILTER_ENV} (comma-separated substrings of platform or device "
                    "names) restricts them.")
    parser.add_argument("--verbose", "-v", action="store_true",
                        help="print every info descriptor of every platform and device")
    args = parser.parse_args(argv)
    try:
        plats = platform.get_platforms()
    except exception as e:
        print(f"pysycl-ls: {e.what()}", file=sys.stderr)
        return 1
    index: dict[backend, int] = {}
  # numbered per backend, as sycl-ls does
    for p in plats:
        for dev in p.get_devices():
            i = index.get(dev.get_backend(), 0)
            print(device_line(dev, i))
            print("    aspects: " + " ".join(a.name for a in dev.get_info(_device_info.aspects)))
            print("    Python kernels: " + _kernel_formats(dev))
            index[dev.get_backend()] = i + 1
    if not plats:
        print(f"pysycl-ls: no device visible ({FILTER_ENV} hides them all)", file=sys.stderr)
        return 1
    if args.verbose:
        _verbose(plats)
    return 0


def _cli() -> int:
    try:
        return main()
    except BrokenPipeError:  # `pysycl-ls --verbose | head`: not an error
        sys.stdout = None  # type: ignore[assignment]  # no flush at exit
        return 0


if __name__ == "__main__":
    sys.exit(_cli())

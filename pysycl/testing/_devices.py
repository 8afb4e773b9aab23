"""The devices to test kernels on (:func:`pysycl.testing.devices`)."""

from __future__ import annotations

import pysycl as sycl


def devices(python_kernels: bool = True) -> list[sycl.device]:
    """The devices of this machine, in ``sycl.device.get_devices()`` order.

    Args:
        python_kernels: only those that run kernels written in Python: devices
            that load one of pysycl's device images (SPIR-V or PTX) and the
            host_debuggable device, which runs them in the interpreter. False:
            every device.
    """
    found = sycl.device.get_devices()
    if not python_kernels:
        return found
    return [d for d in found if d.image_targets or d.has(sycl.aspect.host_debuggable)]

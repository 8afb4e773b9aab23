"""Testing kernels: the devices to test on, hypothesis strategies, a cross-device oracle.

``pysycl.testing`` is what a test suite of SYCL kernels written in Python needs
(docs/testing.md):

* :func:`devices` -- every device that runs Python kernels, the host_debuggable
  device included;
* :mod:`pysycl.testing.strategies` -- hypothesis strategies for ranges, ids and
  nd_ranges valid on a device (the only part that needs hypothesis);
* :func:`assert_same_on_devices` (:mod:`pysycl.testing.oracle`) -- run the same
  work on every device and compare the results with the host_debuggable
  device's and with each other;
* the pytest plugin :mod:`pysycl.testing.plugin` (installed with pysycl: the
  ``pytest11`` entry point ``_pysycl_pytestplugin``): the ``sycl_device`` and
  ``sycl_queue`` fixtures, ``--sycl-devices``, the ``sycl_requires`` marker.

This package imports neither pytest nor hypothesis unless asked to. Importing it
makes hypothesis deadlines leave out pysycl's first-time work -- the compiler's
import, a kernel's first compile and build (:mod:`pysycl.testing._deadline`).
"""

from __future__ import annotations

from pysycl.testing import _deadline
from pysycl.testing._devices import devices
from pysycl.testing.oracle import DeviceResults, assert_same_on_devices

__all__ = ["DeviceResults", "assert_same_on_devices", "devices"]


# A kernel's first compile is not an example's work: hypothesis leaves it out of the
# deadline (docs/testing.md, "Deadlines"). Idle outside hypothesis examples.
_deadline.install()

"""``sycl::native`` (SYCL 2020 §4.17.5): float32 math on OpenCL's ``native_*`` built-ins.

Their accuracy is implementation-defined (they may be faster).

``sycl::native::sin(x)`` is ``sycl.native.sin(x)`` in a kernel; float32 numbers, ``vec`` and
``marray`` only. On the host (and the host_debuggable device) they compute as the accurate
functions; a device may return less accurate results, within what OpenCL allows.
"""

from __future__ import annotations

from pysycl._objects.sycl_math import NATIVE as _F

cos = _F["cos"]
divide = _F["divide"]
exp = _F["exp"]
exp2 = _F["exp2"]
exp10 = _F["exp10"]
log = _F["log"]
log2 = _F["log2"]
log10 = _F["log10"]
powr = _F["powr"]
recip = _F["recip"]
rsqrt = _F["rsqrt"]
sin = _F["sin"]
sqrt = _F["sqrt"]
tan = _F["tan"]

__all__ = ["cos", "divide", "exp", "exp2", "exp10", "log", "log2", "log10", "powr", "recip",
           "rsqrt", "sin", "sqrt", "tan"]

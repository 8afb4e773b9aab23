"""``sycl::ext::oneapi``: oneAPI extensions pysycl implements (``experimental``, ``bfloat16``)."""

from __future__ import annotations

from pysycl.ext.oneapi import bfloat16, experimental

__all__ = ["bfloat16", "experimental"]

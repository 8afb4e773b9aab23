"""``sycl::ext::oneapi``: oneAPI extensions pysycl implements (``experimental``)."""

from __future__ import annotations

from pysycl.ext.oneapi import experimental

__all__ = ["experimental"]

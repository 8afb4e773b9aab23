"""What the lower bundle modules read of a kernel bundle and its device images.

``kernel_bundle`` (the top of :mod:`pysycl._bundles`) makes ``sycl.kernel`` objects
(:mod:`pysycl._bundles.kernel`) and keeps device images of the registered kernels
(:mod:`pysycl._bundles.kernel_id`); those two annotate with these protocols instead of
importing ``kernel_bundle``, so the imports of the layer point one way: ``kernel_id`` →
``kernel`` → ``kernel_bundle``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol


class ImageRef(Protocol):
    """A device image of a bundle: its Python-kernel variants by name, its built programs
    by device, and the native kernels and argument information of its kernels."""

    @property
    def variants(self) -> Mapping[str, Any]: ...
    @property
    def programs(self) -> Mapping[Any, Any]: ...
    def cl_kernel(self, dev: Any, name: str) -> Any: ...
    def arg_info(self, dev: Any, name: str) -> tuple[tuple[str, str] | None, ...]: ...


class BundleRef(Protocol):
    """A kernel bundle as its kernels read it: its context and devices."""

    @property
    def devices(self) -> Any: ...
    def get_backend(self) -> Any: ...
    def get_context(self) -> Any: ...
    def get_devices(self) -> Any: ...

"""The public ``get_native`` and ``make_*``: each dispatches to its backend's ``interop``.

``get_native(obj, backend)`` asks ``backend``'s interop module (SYCL 2020 §4.5.1.2: the
backend is the template argument; default ``backend.opencl`` as before). ``make_*``
take the native object first, as C++'s ``make_device<backend>(native)`` does; the
backend is the ``backend=`` keyword (DESIGN.md's mapping of template parameters), or,
without it, the backend whose interop owns the object's type (pyopencl objects: OpenCL;
``cuda.bindings`` handles: ``backend.ext_oneapi_cuda``). A plain integer handle needs
``backend=``. Backends without native objects (the host device) raise
``errc.backend_mismatch``.
"""

from __future__ import annotations

from typing import Any

from pysycl._core import backends as _backends
from pysycl._core.backend import backend as _backend
from pysycl._core.exceptions import errc, exception


def _module(kind: _backend, what: str) -> Any:
    if not isinstance(kind, _backend):
        raise TypeError(f"backend must be a sycl.backend, not {kind!r}")
    mod = getattr(_backends.get(kind), "interop", None)
    if mod is None:
        raise exception(errc.backend_mismatch, f"{what}: {kind!r} has no native objects")
    return mod


def _for(native: Any, kind: _backend | None, what: str) -> Any:
    """The interop module of ``kind``, or of the backend owning ``native``'s type."""
    if kind is not None:
        return _module(kind, what)
    for b in _backends.registered():
        mod = getattr(b, "interop", None)
        if mod is not None and mod.owns(native):
            return mod
    return _module(_backend.opencl, what)  # its messages name what it takes


def _has(mod: Any, name: str, kind: Any) -> Any:
    fn = getattr(mod, name, None)
    if fn is None:
        raise exception(errc.feature_not_supported, f"{name}: not available for "
                        f"{kind if kind is not None else 'this backend'!r}")
    return fn


def get_native(obj: Any, backend: _backend = _backend.opencl) -> Any:
    """``sycl::get_native<backend>(obj)``: the native object(s) behind a SYCL object.

    OpenCL: pyopencl objects (docs/interop.md); ``backend.ext_oneapi_cuda``: CUDA driver
    handles (``CUdevice``, ``CUcontext``, ``CUstream``, ``CUevent``, ``CUdeviceptr``).

    Raises:
        exception: ``errc.backend_mismatch`` when ``obj`` belongs to another backend.
    """
    return _module(backend, "get_native").get_native(obj, backend)


def make_platform(native: Any, *, backend: _backend | None = None) -> Any:
    """``sycl::make_platform<backend>(native)``."""
    return _has(_for(native, backend, "make_platform"), "make_platform", backend)(native)


def make_device(native: Any, *, backend: _backend | None = None) -> Any:
    """``sycl::make_device<backend>(native)``: a ``pyopencl.Device`` or a ``CUdevice``."""
    return _has(_for(native, backend, "make_device"), "make_device", backend)(native)


def make_context(native: Any, async_handler: Any = None, *,
                 backend: _backend | None = None) -> Any:
    """``sycl::make_context<backend>(native)``: a ``pyopencl.Context`` or a primary
    ``CUcontext``."""
    fn = _has(_for(native, backend, "make_context"), "make_context", backend)
    return fn(native, async_handler)


def make_queue(native: Any, ctx: Any, async_handler: Any = None, *,
               backend: _backend | None = None) -> Any:
    """``sycl::make_queue<backend>(native, ctx)``: a ``pyopencl.CommandQueue`` or a
    ``CUstream`` of ``ctx``."""
    fn = _has(_for(native, backend, "make_queue"), "make_queue", backend)
    return fn(native, ctx, async_handler)


def make_event(native: Any, ctx: Any, *, backend: _backend | None = None) -> Any:
    """``sycl::make_event<backend>(native, ctx)``: a ``pyopencl.Event`` or a ``CUevent``."""
    return _has(_for(native, backend, "make_event"), "make_event", backend)(native, ctx)


def make_kernel(native: Any, ctx: Any, *, backend: _backend | None = None) -> Any:
    """``sycl::make_kernel<backend>(native, ctx)`` (OpenCL: a ``pyopencl.Kernel``)."""
    return _has(_for(native, backend, "make_kernel"), "make_kernel", backend)(native, ctx)


def make_kernel_bundle(native: Any, ctx: Any, *, state: Any,
                       backend: _backend | None = None) -> Any:
    """``sycl::make_kernel_bundle<backend, state>(native, ctx)`` (OpenCL: a
    ``pyopencl.Program``)."""
    fn = _has(_for(native, backend, "make_kernel_bundle"), "make_kernel_bundle", backend)
    return fn(native, ctx, state=state)

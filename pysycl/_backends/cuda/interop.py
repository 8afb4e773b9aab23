"""CUDA backend interop (intel/llvm's ``sycl_ext_oneapi_backend_cuda``): ``get_native``
and ``make_*`` over the driver API's handles.

Native objects are ``cuda.bindings.driver`` handles: ``get_native`` of a device is its
``CUdevice``; of a context its ``CUcontext`` (the device's primary context; a list of
them for a context of several devices); of a queue its ``CUstream``; of an event its
``CUevent`` (None for a command that needed none); of a platform the list of its
``CUdevice``; of a buffer the list of ``CUdeviceptr`` of its device copies (``[]``
before a command used it); of a USM pointer its ``CUdeviceptr``. ``make_device``,
``make_context``, ``make_queue`` and ``make_event`` take such handles (or their integer
values). pysycl's contexts are the devices' primary contexts (the CUDA runtime's, CuPy's,
PyTorch's), so ``make_context`` accepts a primary context only, and gives the device's
default context. Handles stay the application's: pysycl never destroys a stream or an
event it did not create.
"""

from __future__ import annotations

from typing import Any

from pysycl._backends.cuda import driver as d
from pysycl._backends.cuda import objects as _obj
from pysycl._core.backend import backend as _backend
from pysycl._core.exceptions import errc, exception
from pysycl._objects.context import AsyncHandler, context, default_context_for
from pysycl._objects.device import device
from pysycl._objects.platform import platform

CUDA = _backend.ext_oneapi_cuda


def owns(native: Any) -> bool:
    """Whether ``native`` is a handle of NVIDIA's bindings (what this module takes)."""
    return type(native).__module__.startswith("cuda.")


def _handle(x: Any) -> int:
    try:
        return int(x)
    except (TypeError, ValueError):
        raise TypeError(f"expected a CUDA handle (cuda.bindings.driver object or int), not "
                        f"{type(x).__name__}") from None


def get_native(obj: Any, backend: _backend = CUDA) -> Any:
    """The CUDA handle(s) behind a SYCL object of the CUDA backend (see the module)."""
    from pysycl._backends.cuda.executor import CUDAExecutor
    from pysycl._commands.event import event
    from pysycl._commands.queue import queue
    from pysycl._memory.buffer import buffer
    from pysycl._memory.usm import usm_pointer

    if isinstance(obj, usm_pointer):
        if obj.allocation.ctx.get_backend() is not CUDA:
            raise exception(errc.backend_mismatch, f"get_native: {obj!r} is no CUDA allocation")
        obj.check_live("get_native")
        return d.cu.CUdeviceptr(obj.address)
    if isinstance(obj, buffer):
        return [d.cu.CUdeviceptr(int(m)) for k, m in obj.coherence.dev.items()
                if _cuda_key(k)]
    if isinstance(obj, (platform, device, context, queue, event)):
        own = obj.get_backend()
        if own is not CUDA:
            raise exception(errc.backend_mismatch, f"get_native: the {type(obj).__name__} "
                            f"belongs to {own!r}, not {CUDA!r}")
    else:
        raise TypeError(f"get_native: {type(obj).__name__} has no CUDA native object")
    if isinstance(obj, platform):
        return [dv.native for dv in obj.get_devices()]
    if isinstance(obj, device):
        return obj.native
    if isinstance(obj, context):
        prim = [obj.native.primary[dv.ordinal] for dv in obj.devices]  # type: ignore[attr-defined]
        return prim[0] if len(prim) == 1 else prim
    if isinstance(obj, queue):
        ex = obj.executor
        if not isinstance(ex, CUDAExecutor):
            raise exception(errc.backend_mismatch, "get_native: the queue has no CUDA stream")
        return ex.native
    nat = obj._cl
    return None if nat is None else nat.h


def _cuda_key(key: Any) -> bool:
    """A buffer's device-copy key of a CUDA context (its key, or (context, device))."""
    k = key[0] if isinstance(key, tuple) else key
    return isinstance(k, int) and (k >> 40) == (_obj.PLATFORM_KEY >> 40)


def _devices() -> list[device]:
    from pysycl._backends.cuda.objects import cuda_platforms

    return [dv for p in cuda_platforms() for dv in p.get_devices()]


def make_platform(cu_devices: Any = None) -> platform:
    """The CUDA platform (``cu_devices``, if given, must be devices of it)."""
    from pysycl._backends.cuda.objects import cuda_platforms

    plats = cuda_platforms()
    if not plats:
        raise exception(errc.invalid, "make_platform: no CUDA platform (no NVIDIA driver)")
    for h in cu_devices or ():
        make_device(h)
    return plats[0]


def make_device(cu_device: Any) -> device:
    """The SYCL device of a ``CUdevice`` (``errc.invalid``: no such CUDA device)."""
    h = _handle(cu_device)
    for dv in _devices():
        if int(dv.native) == h:
            return dv
    raise exception(errc.invalid, f"make_device: CUdevice {h} is no CUDA device of pysycl "
                    f"(it lists {len(_devices())}; compute capability 6.0 and later)")


def _device_of_context(cu_context: Any, what: str) -> device:
    """The device whose primary context ``cu_context`` is (``errc.invalid`` for others)."""
    h = _handle(cu_context)
    for dv in _devices():
        if int(_obj.primary_context(dv.ordinal)) == h:  # type: ignore[attr-defined]
            return dv
    raise exception(errc.invalid, f"{what}: CUcontext {h:#x} is no device's primary context; "
                    "pysycl's CUDA contexts are the primary ones (cuDevicePrimaryCtxRetain, "
                    "as the CUDA runtime, CuPy and PyTorch use)")


def make_context(cu_context: Any, async_handler: AsyncHandler | None = None) -> context:
    """The SYCL context of a device's primary ``CUcontext`` (that device's default context;
    with ``async_handler``, a new context of the device)."""
    dv = _device_of_context(cu_context, "make_context")
    if async_handler is None:
        return default_context_for(dv)
    return context(dv, async_handler)


def make_queue(cu_stream: Any, ctx: context, async_handler: AsyncHandler | None = None) -> Any:
    """A SYCL queue over an application's ``CUstream`` of a primary context of ``ctx``'s
    devices (the stream stays the application's)."""
    from pysycl._backends.cuda.executor import CUDAExecutor
    from pysycl._commands.queue import queue

    if not isinstance(ctx, context) or ctx.get_backend() is not CUDA:
        raise exception(errc.invalid, f"make_queue: {ctx!r} is no CUDA context")
    s = cu_stream if isinstance(cu_stream, d.cu.CUstream) else d.cu.CUstream(_handle(cu_stream))
    owner = d.call(d.cu.cuStreamGetCtx, s, what="make_queue: the stream's context")
    dv = _device_of_context(owner, "make_queue")
    if dv not in ctx.devices:
        raise exception(errc.invalid, f"make_queue: the stream belongs to {dv.display_name!r}, "
                        f"which is not in {ctx!r}", ctx)
    ex = CUDAExecutor(ctx, dv, profiling=False, native=s)
    return queue._from_executor(ctx, dv, ex, async_handler)


class _NativeEvent:
    """An application's ``CUevent`` (``h``), never destroyed by pysycl."""

    __slots__ = ("__weakref__", "h")

    def __init__(self, h: Any) -> None:
        self.h = h


class CUDAEvents:
    """The event operations of events made by ``make_event`` (they have no queue)."""

    def wait_event(self, native: Any) -> None:
        d.call(d.cu.cuEventSynchronize, native.h, what="waiting for a CUDA event")

    def wait_events(self, natives: Any) -> None:
        for n in natives:
            if n is not None:
                self.wait_event(n)

    def status(self, native: Any) -> str:
        c = d.code_of(d.cu.cuEventQuery(native.h))
        if c == 600:  # CUDA_ERROR_NOT_READY
            return "running"
        if c:
            raise exception(errc.event, f"the CUDA event failed: {d.error_name(c)}")
        return "complete"

    def profile(self, native: Any, which: str) -> int:
        raise exception(errc.invalid, "pysycl: an event made by make_event has no profiling "
                        "information")


EVENTS = CUDAEvents()


def make_event(cu_event: Any, ctx: context) -> Any:
    """A SYCL event over an application's ``CUevent`` (its context must be ``ctx``'s)."""
    from pysycl._commands.event import event

    if not isinstance(ctx, context) or ctx.get_backend() is not CUDA:
        raise exception(errc.invalid, f"make_event: {ctx!r} is no CUDA context")
    h = cu_event if isinstance(cu_event, d.cu.CUevent) else d.cu.CUevent(_handle(cu_event))
    return event._make(None, _NativeEvent(h), ops=EVENTS)  # type: ignore[arg-type]


def has_native_event(ev: Any) -> bool:
    """``sycl::ext::oneapi::cuda::has_native_event``: the event has a ``CUevent``."""
    return ev.get_backend() is CUDA and getattr(ev, "_cl", None) is not None

"""OpenCL backend interop (``sycl2020-opencl-backend.adoc``): ``get_native`` and ``make_*``.

Native objects are **pyopencl objects** (``pyopencl.Platform``, ``Device``,
``Context``, ``CommandQueue``, ``Event``, ``Buffer``, ``Program``, ``Kernel``);
their raw OpenCL handle is ``obj.int_ptr``. Per the backend's table,
``get_native`` of an event or a buffer returns a *list* (``std::vector<cl_event>``,
``std::vector<cl_mem>``), of a kernel_bundle a list of programs. pyopencl keeps
OpenCL reference counts: a native object stays valid after the SYCL object is
gone and vice versa.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pysycl._backends.opencl.objects import context_of, device_of, platform_of
from pysycl._core.backend import backend as _backend
from pysycl._core.exceptions import errc, exception
from pysycl._objects.context import AsyncHandler, context
from pysycl._objects.device import device
from pysycl._objects.platform import platform

if TYPE_CHECKING:
    import pyopencl as cl

    from pysycl._bundles.kernel import kernel
    from pysycl._bundles.kernel_bundle import bundle_state, kernel_bundle
    from pysycl._commands.event import event
    from pysycl._commands.queue import queue


def owns(native: Any) -> bool:
    """Whether ``native`` is a pyopencl object (what this module's ``make_*`` take)."""
    return type(native).__module__.split(".")[0] == "pyopencl"


def _check_backend(obj: object, be: object) -> None:
    if not isinstance(be, _backend):
        raise TypeError(f"backend must be a sycl.backend, not {be!r}")
    own = obj.get_backend() if hasattr(obj, "get_backend") else _backend.opencl
    if be is not own:
        raise exception(errc.backend_mismatch, f"get_native: {_sycl_name(obj)} belongs to "
                        f"{own!r}, not {be!r}")


def _sycl_name(obj: object) -> str:
    """The SYCL class of ``obj`` (``device``, not the backend's ``opencl_device``)."""
    for cls in (platform, device, context):
        if isinstance(obj, cls):
            return cls.__name__
    return type(obj).__name__


def get_native(obj: Any, backend: _backend = _backend.opencl) -> Any:
    """The native OpenCL object(s) behind a SYCL object (``sycl::get_native<backend::opencl>``).

    For a buffer: the backend appendix's "list of active buffers", the
    ``pyopencl.Buffer`` of every context in which a command used it (``[]`` before
    any did). They hold the current data only where that copy is current, and
    writes made to them here are not seen by pysycl; native code that writes a
    buffer runs in ``h.host_task(lambda ih: ...)`` through ``ih.get_native_mem(acc)``
    of a write accessor (SYCL 2020 §4.10.2).

    Raises:
        exception: ``errc.backend_mismatch`` when ``backend`` is not the object's;
            ``errc.invalid`` for a bundle not in executable/object/input state with programs.
        TypeError: for objects without a native counterpart.
    """
    from pysycl._backends.opencl import programs as clp
    from pysycl._bundles.bundle import kernel_bundle
    from pysycl._bundles.kernel import kernel
    from pysycl._commands.event import event
    from pysycl._commands.queue import queue
    from pysycl._memory.buffer import buffer

    if not isinstance(obj, (platform, device, context, queue, event, buffer, kernel_bundle,
                            kernel)):
        raise TypeError(f"get_native: {type(obj).__name__} has no OpenCL native object")
    if isinstance(obj, buffer):
        if not isinstance(backend, _backend):
            raise TypeError(f"backend must be a sycl.backend, not {backend!r}")
        if backend is not _backend.opencl:
            raise exception(errc.backend_mismatch, f"get_native: buffer belongs to "
                            f"sycl.backend.opencl, not {backend!r}")
        return list(obj.coherence.dev.values())
    _check_backend(obj, backend)
    if isinstance(obj, (platform, device, context)):
        return obj.native
    if isinstance(obj, queue):
        return obj.executor.native
    if isinstance(obj, event):
        return [] if obj.native is None else [obj.native]
    if isinstance(obj, kernel):
        return obj.native_any()
    progs: dict[int, cl.Program] = {}
    for img in obj.images:
        for prg in img.programs.values():
            progs.setdefault(clp.handle(prg), prg)
    return [clp.wrap_program(p) for p in progs.values()]


def _need(obj: object, kind: str, what: str) -> None:
    from pysycl._backends.opencl import programs as clp

    if not clp.is_cl_object(obj, kind):
        raise TypeError(f"{what} takes a pyopencl {kind} object, not {type(obj).__name__}")


def make_platform(cl_platform: cl.Platform) -> platform:
    """The SYCL platform of a ``pyopencl.Platform``."""
    _need(cl_platform, "platform", "make_platform")
    return platform_of(cl_platform)


def make_device(cl_device: cl.Device) -> device:
    """The SYCL device of a ``pyopencl.Device``."""
    _need(cl_device, "device", "make_device")
    return device_of(cl_device)


def make_context(cl_context: cl.Context, async_handler: AsyncHandler | None = None) -> context:
    """A SYCL context over a ``pyopencl.Context`` (retained, not copied)."""
    _need(cl_context, "context", "make_context")
    return context_of(cl_context, async_handler)


def make_queue(cl_queue: cl.CommandQueue, ctx: context,
               async_handler: AsyncHandler | None = None) -> queue:
    """A SYCL queue over a ``pyopencl.CommandQueue`` of ``ctx``'s OpenCL context.

    Raises:
        exception: ``errc.invalid`` when the queue's context is not ``ctx``'s.
    """
    from pysycl._backends.opencl import programs as clp
    from pysycl._backends.opencl.executor import OpenCLExecutor
    from pysycl._commands.queue import queue

    _need(cl_queue, "queue", "make_queue")
    qctx, qdev = clp.queue_context_device(cl_queue)
    if clp.handle(qctx) != ctx.key:
        raise exception(errc.invalid, "make_queue: the OpenCL queue belongs to another context",
                        ctx)
    dev = device_of(qdev)
    return queue._from_executor(ctx, dev, OpenCLExecutor(ctx, dev, profiling=False,
                                                         native=cl_queue), async_handler)


def make_event(cl_event: cl.Event, ctx: context) -> event:
    """A SYCL event over a ``pyopencl.Event`` of ``ctx``.

    Raises:
        exception: ``errc.invalid`` when the event's context is not ``ctx``'s.
    """
    from pysycl._backends.opencl import programs as clp
    from pysycl._backends.opencl.executor import EVENTS
    from pysycl._commands.event import event

    _need(cl_event, "event", "make_event")
    if clp.handle(clp.event_context(cl_event)) != ctx.key:
        raise exception(errc.invalid, "make_event: the OpenCL event belongs to another context",
                        ctx)
    return event._make(None, cl_event, ops=EVENTS)


def make_kernel(cl_kernel: cl.Kernel, ctx: context) -> kernel:
    """A SYCL kernel over a ``pyopencl.Kernel`` (its bundle holds the kernel's program)."""
    from pysycl._backends.opencl.source_bundles import create_bundle

    _need(cl_kernel, "kernel", "make_kernel")
    kb = create_bundle(ctx, ctx.get_devices(), [cl_kernel])
    from pysycl._backends.opencl import programs as clp

    return kb.ext_pysycl_get_kernel_by_name(clp.kernel_name(cl_kernel))


def make_kernel_bundle(cl_program: cl.Program, ctx: context, *,
                       state: bundle_state) -> kernel_bundle:
    """A bundle in ``state`` from a ``pyopencl.Program`` (compiled/linked as needed).

    Raises:
        exception: ``errc.invalid`` — the program is executable but ``state`` is
            not; ``state`` is input but the program already has a binary; an
            OpenCL error.
    """
    from pysycl._backends.opencl.source_bundles import create_bundle

    return create_bundle(ctx, ctx.get_devices(), [cl_program], state=state, _single=True)

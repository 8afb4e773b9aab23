"""The backend interface: what a backend provides, and the registry of backends.

A backend (OpenCL, CUDA, the host interpreter) is one object implementing
:class:`Backend`. It discovers its platforms and, for every ``sycl.queue`` on one
of its devices, makes an :class:`Executor` that runs that queue's command groups.
The layers below never import a backend: platform discovery iterates
:func:`registered`, a queue asks :func:`get` for its device's backend, and
buffers reach device copies through the executor that made them. The package
root registers the backends (``pysycl/__init__.py``), so a new backend is a new
folder under ``pysycl/_backends/`` plus one ``register`` call, never new branches.

It lives in ``_core`` (it imports nothing of pysycl but ``_core``): every layer may use it,
and the backends' folders under ``pysycl/_backends/`` implement it.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from pysycl._core.backend import backend
from pysycl._core.exceptions import errc, exception

if TYPE_CHECKING:  # annotations only: low-layer types, never the objects above
    import numpy as np

    from pysycl._core.launch_types import ContextRef, DeviceRef, LaunchLike, QueueRef, Submission


class Executor(Protocol):
    """Runs the command groups of one ``sycl.queue`` on one device of a backend.

    ``native`` is the backend's queue (a ``pyopencl.CommandQueue``; None for the
    host device). Native events are whatever the backend's commands return
    (``pyopencl.Event``; None for work already complete). ``key`` names the copy
    of a buffer this queue's commands use (:mod:`pysycl._memory.coherence`): the
    context's ``key``, or ``(context key, device key)`` in a context of several
    devices. A command that must follow another queue's command on the same
    buffer has that command's native event in its wait list only where the keys
    are equal, or where both executors have the same optional ``event_domain`` (CUDA:
    any stream waits for any event of the process); else the host waits for it.

    Optional: ``copy_from(mem, src_executor, src_mem, nbytes, wait_for)`` brings a
    buffer's copy ``mem`` up to date from another executor's copy without the host (CUDA:
    one GPU, or two with peer access), returning its native event, or None where it cannot
    (then the data goes through the host copy).
    """

    native: Any
    key: Hashable

    def submit(self, sub: Submission) -> Any:
        """Run the command a handler recorded (``handler.submission()``); return its native
        event (None: complete, or nothing to wait for). The queue makes the ``sycl.event``.

        A dependency in ``sub.waits`` of another backend or context is waited for on the
        host; one of this executor's context goes into the command's wait list.
        """
        ...

    def launch(self, q: QueueRef, kind: str, index_space: Any, fn: Any, name: str | None) -> Any:
        """``q.parallel_for(index_space, fn)`` (``kind`` ``"range"``/``"nd_range"``) or
        ``q.single_task(fn)`` (``index_space`` None) with no dependencies and no command
        group: check the kernel as a handler would, launch it and return its native event.
        The hot path of USM programs: a backend may remember a launch and repeat it while
        the kernel's captures still fit (docs/design/launch.md §2.6).
        """
        ...

    def launch_reductions(self, q: QueueRef, kind: str, index_space: Any,
                          reductions: Sequence[Any], fn: Any, name: str | None) -> Any:
        """``q.parallel_for(index_space, *reductions, fn)`` with no dependencies and no
        command group (``reductions``: what came between the index space and the kernel,
        checked as a handler checks them): launch it and return its native event. A backend
        may remember the launch and repeat it while the kernel's captures and the
        reductions' kinds still fit (docs/design/launch.md §4.2).
        """
        ...

    def wait(self) -> None:
        """Block until every command submitted to this executor has completed."""
        ...

    def wait_events(self, natives: Sequence[Any]) -> None:
        """Block until the given native events of this backend have completed."""
        ...

    def wait_event(self, native: Any) -> None:
        """Block until one native event of this backend has completed."""
        ...

    def status(self, native: Any) -> str:
        """``"submitted"``, ``"running"`` or ``"complete"`` (``errc.event`` if it failed)."""
        ...

    def profile(self, native: Any, which: str) -> int:
        """A native event's ``"submit"``, ``"start"`` or ``"end"`` timestamp in nanoseconds."""
        ...

    def read(self, host: np.ndarray, mem: Any, wait_for: Sequence[Any] | None) -> None:
        """Blocking copy of device memory ``mem`` (this executor's context) into ``host``."""
        ...

    def read_back(self, host: np.ndarray, mem: Any, after: Any) -> Any:
        """Non-blocking copy of ``mem`` into ``host`` behind native event ``after`` (keep
        ``host`` alive until it completes); return its native event."""
        ...

    def alloc(self, nbytes: int) -> Any:
        """Device memory of ``nbytes`` in this executor's context."""
        ...

    def alloc_visible(self, nbytes: int) -> tuple[Any, Any, np.ndarray] | None:
        """Memory of ``nbytes`` that this executor's kernels and the host both see with no
        copy (read by the host once the kernels using it completed): ``(owner, kernel
        argument, host bytes)``; None where the device has none (then :meth:`alloc`)."""
        ...

    def write(self, mem: Any, host: np.ndarray, wait_for: Sequence[Any] | None) -> Any:
        """Copy ``host`` into device memory ``mem``; return the native event."""
        ...

    def before_host_sees(self, st: Any) -> None:
        """The host is about to see the data of buffer storage ``st`` (a
        ``pysycl._memory.coherence.Coherence`` this executor used): report what launches
        that used it left for this point."""
        ...

    def settle(self, finished: bool = False) -> None:
        """A synchronization point after a wait: what launch steps left for it (kernel
        output, failed asserts, bounds violations; ``finished``: every command of this
        executor completed)."""
        ...

    def free(self, mem: Any) -> None:
        """Let go of device memory ``mem`` (of :meth:`alloc`): a buffer's copy is going.

        Nothing the backend remembers may keep it alive afterwards; commands still
        using it keep it until they complete.
        """
        ...


class DeviceExecutor(Executor, Protocol):
    """The executor of a backend that runs compiled kernels on a device (every backend whose
    ``programs`` is not None): :class:`Executor`, and what the target-neutral launch code
    (:mod:`pysycl._kernels.reduction`, :mod:`pysycl._bundles.kernel`) asks of it.
    ``k`` is a compiled kernel (:class:`pysycl._kernels.cache.Kernel`); native kernels
    are whatever the backend builds.
    """

    #: the queue's prepared launches and what launch code keeps with them (a reduction's
    #: :class:`pysycl._kernels.reduction_plan.ReductionPlan`), by key; bounded by its users
    launches: dict[Any, Any]

    def build(self, k: Any, spec: Any = None, bound: int = 0, fn: Any = None,
              name: str | None = None) -> Any:
        """``k`` built for this queue's context and device (with specialization constant
        values ``spec``; with a launch bound ``bound`` where the format has them), once;
        errors name ``name`` when given."""
        ...

    def bounded_kernel(self, k: Any, native: Any, nd: Any, spec: Any = None, fn: Any = None,
                       name: str | None = None, bundle: bool = False) -> Any:
        """``native``, or a build of ``k`` whose launch bound admits ``nd``'s work-group
        where the device caps unbounded kernels below it."""
        ...

    def kernel_limits(self, native: Any) -> tuple[int, tuple[int, ...], int]:
        """(max work-group size, max work-item sizes fastest first, free local memory bytes)
        of a built kernel on this device."""
        ...

    def resident_groups(self, native: Any, wg: int, local_bytes: int) -> int | None:
        """How many work-groups of ``wg`` work-items, each with ``local_bytes`` of local
        memory, one compute unit holds at once for built kernel ``native`` (CUDA's
        occupancy); None where the driver does not say (OpenCL)."""
        ...

    def local_memory(self, nbytes: int) -> Any:
        """The kernel argument of ``nbytes`` of local memory per work-group."""
        ...

    def launch_native(self, native: Any, gsize: tuple[int, ...], lsize: tuple[int, ...] | None,
                      args: Sequence[Any], wait_for: Sequence[Any] | None,
                      holds: Any = None) -> Any:
        """A ``sycl.kernel`` object's launch: set ``args`` (values by index; ``("local",
        nbytes)`` for local memory) on native kernel ``native`` and enqueue it over native
        sizes (fastest dimension first); hold ``holds`` until it completes; its native
        event."""
        ...

    def prepared(self, k: Any, native: Any, gsize: tuple[int, ...],
                 lsize: tuple[int, ...] | None) -> LaunchLike:
        """This queue's launch of compiled kernel ``k`` built as ``native`` over native sizes:
        ``enqueue(args, holds, wait_for)`` (a reduction's kernels)."""
        ...


class Programs(Protocol):
    """A backend's programs for kernel bundles (:mod:`pysycl._bundles`): create, compile,
    link, build, binaries and the kernels of a program -- the bundle layer's whole
    driver surface (UR's program and kernel tables). Contexts and devices are the
    backend's native ones (``ctx.native``, ``dev.native``); programs and kernels are
    whatever the backend makes. Failures raise ``pysycl.exception`` (``errc.build``
    with the build log, ``errc.invalid`` for rejected options).
    """

    def from_il(self, ctx: Any, il: bytes) -> Any:
        """A program of a SPIR-V module."""
        ...

    def from_il_specialized(self, ctx: Any, il: bytes, values: Sequence[Any]) -> Any:
        """A program of a SPIR-V module with specialization constant values (by SpecId;
        None: the default) set natively, before its build."""
        ...

    def from_source(self, ctx: Any, source: str) -> Any:
        """A program of source text (OpenCL C)."""
        ...

    def from_binaries(self, ctx: Any, devices: Sequence[Any], binaries: Sequence[bytes]) -> Any:
        """A program of one device binary (or PTX text) per device."""
        ...

    def compile_program(self, prg: Any, devices: Sequence[Any], options: Any = "") -> None:
        """Compile ``prg`` to an object for ``devices``."""
        ...

    def link_programs(self, ctx: Any, programs: Sequence[Any], devices: Sequence[Any],
                      options: Any = "") -> Any:
        """An executable program linked from compiled ones."""
        ...

    def build_program(self, prg: Any, devices: Sequence[Any], options: Any = "") -> None:
        """Build ``prg`` into an executable for ``devices``."""
        ...

    def build_log(self, prg: Any, devices: Sequence[Any]) -> str:
        """The build logs of ``prg`` on ``devices``."""
        ...

    def binaries(self, prg: Any) -> dict[int, bytes]:
        """Device binaries of a built program by device handle (:meth:`handle`)."""
        ...

    def handle(self, obj: Any) -> int:
        """The native handle of a backend object (a device: the key of :meth:`binaries`)."""
        ...

    def device_cache_key(self, device: Any) -> str:
        """What a device binary depends on besides its input (driver, device): the
        device-binary cache's key part."""
        ...

    def kernel_names(self, prg: Any) -> list[str]:
        """The kernels of a built program."""
        ...

    def create_kernel(self, prg: Any, name: str, device: Any = None) -> Any:
        """Kernel ``name`` of a built program (arguments set by ``set_arg``), for ``device``
        (a native device; None: any, where one kernel object serves every device)."""
        ...

    def typed_kernel(self, prg: Any, name: str, arg_dtypes: Sequence[Any],
                     device: Any = None) -> Any:
        """Kernel ``name`` of a built program with its argument types known (a Python
        kernel's flattened arguments), for ``device`` as :meth:`create_kernel`."""
        ...

    def kernel_info(self, k: Any, key: str) -> Any:
        """A kernel's information by the OpenCL name of the query (``"NUM_ARGS"``,
        ``"ATTRIBUTES"``)."""
        ...

    def kernel_work_group_info(self, k: Any, device: Any, key: str) -> Any:
        """A kernel's work-group information on ``device`` by the OpenCL name of the query
        (``"WORK_GROUP_SIZE"``, ``"COMPILE_WORK_GROUP_SIZE"``, ...)."""
        ...

    def kernel_args_info(self, k: Any, device: Any) -> tuple[tuple[str, str] | None, ...]:
        """Per argument of kernel ``k``: (address qualifier, type name), or None."""
        ...


class Backend(Protocol):
    """One backend: discovery of its platforms and the executors of its queues.

    Optional attributes, looked up with ``getattr`` where used: ``interop`` (a module with
    ``owns(native)``, ``get_native(obj, backend)`` and the ``make_*`` it supports: the
    public entry points of :mod:`pysycl._backends.interop` dispatch to it),
    ``foreign_memory(v, q, who)`` (another library's device array as
    ``(native, shape, strides in bytes or None, dtype, read-only)``, ordered before the
    queue's next command: ``pysycl._memory.usm_api.device_array``) and
    ``pointer_kind(address, ctx)`` (``(USM kind name, device)`` of a raw address the
    backend's driver knows: ``sycl.get_pointer_type``). An allocation's native side may
    have ``dlpack_device``, ``sync_consumer(ctx_key, stream)`` and ``cai_stream(ctx_key)``
    (DLPack and ``__cuda_array_interface__`` export of device memory).
    """

    kind: backend
    #: its programs for kernel bundles (None: a backend that runs no device code)
    programs: Programs | None

    def platforms(self) -> list[Any]:
        """This backend's ``sycl.platform`` objects that have devices, in enumeration order."""
        ...

    def executor(self, ctx: ContextRef, dev: DeviceRef, *, profiling: bool) -> Executor:
        """A new executor for a queue on device ``dev`` in context ``ctx``."""
        ...

    def usm_alloc(self, ctx: ContextRef, dev: DeviceRef | None, kind: str, nbytes: int,
                  alignment: int) -> Any:
        """A USM allocation (``kind``: ``"device"``, ``"host"``, ``"shared"``) of ``nbytes``.

        The result has ``address`` (an ``int``), ``kernel_arg(byte_offset)`` (the
        backend's kernel argument of a pointer into it) and ``release()``.
        """
        ...

    def usm_borrow(self, owner: np.ndarray) -> Any:
        """Host memory ``owner`` as an allocation's native side (never released by pysycl)."""
        ...

    def usm_table(self, arr: np.ndarray, ctx: ContextRef) -> Any:
        """A read-only device copy of the C-contiguous host array ``arr``, made now
        (a lookup table, :mod:`pysycl._memory.tables`), as an allocation's native side."""
        ...


_registry: list[Backend] = []


def register(b: Backend) -> None:
    """Add backend ``b`` (the package root registers OpenCL, then the host device)."""
    if any(x.kind == b.kind for x in _registry):
        raise exception(errc.invalid, f"pysycl: backend {b.kind} is registered twice")
    _registry.append(b)


def registered() -> tuple[Backend, ...]:
    """The registered backends, in registration order (the platform enumeration order)."""
    return tuple(_registry)


def get(kind: backend) -> Backend:
    """The registered backend of ``kind``."""
    for b in _registry:
        if b.kind == kind:
            return b
    raise exception(errc.backend_mismatch, f"pysycl: no backend {kind} is available")

"""The OpenCL executor: runs one queue's command groups as OpenCL commands.

It owns the dependencies between command groups on the same buffers
(read-after-write, write-after-read, write-after-write) and the data movement,
through each buffer's :class:`~pysycl._memory.coherence.Coherence`.

* Every SYCL queue has one in-order OpenCL queue. Commands on the same queue
  are therefore already ordered; only dependencies on *other* queues become
  OpenCL wait lists. That keeps the submit path free of event bookkeeping in
  the common single-queue case.
* Data moves only when the copy a command needs is stale, and never for
  ``no_init``.
* Everything that can fail for a user mistake (kernel compilation, argument
  checks, accessor/context mismatches) happens in :meth:`OpenCLExecutor.submit`
  *before* the first OpenCL command is enqueued, so a failed command group
  leaves buffers and host data as they were.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from pysycl._backends import reductions as _reductions
from pysycl._backends import submit as _submit
from pysycl._backends.opencl import cmdbuf as _cmdbuf
from pysycl._backends.opencl import exec as x
from pysycl._backends.opencl import launch as _launch
from pysycl._backends.opencl import programs as _programs
from pysycl._backends.opencl import usm as _usm
from pysycl._backends.opencl.build import builds as _builds
from pysycl._commands.commands import (
    CopyCommand,
    FillCommand,
    PrefetchCommand,
    USMCopyCommand,
    USMFillCommand,
)
from pysycl._core.exceptions import errc, exception, hidden_in_tracebacks
from pysycl._kernels import again as _again
from pysycl._kernels import bounds as _bounds
from pysycl._kernels import kprint as _kprint
from pysycl._kernels import steps as _steps
from pysycl._memory import coherence
from pysycl._memory.accessor import accessor
from pysycl._memory.usm_api import drop_through, forget_until
from pysycl._objects.info import info

if TYPE_CHECKING:
    import pyopencl as cl

    from pysycl._kernels.cache import Kernel
    from pysycl._objects.context import context
    from pysycl._objects.device import device
    from pysycl._objects.range import nd_range

#: pytest leaves this module's frames out of a kernel's reported failure (a failed assert,
#: a bounds violation): the user's synchronizing line shows where it surfaced.
__tracebackhide__ = hidden_in_tracebacks


_Launch = _launch.OpenCLLaunch
_MAX_ALLOC, _GLOBAL_MEM = info.device.max_mem_alloc_size, info.device.global_mem_size
#: CL_MEM_OBJECT_ALLOCATION_FAILURE, CL_OUT_OF_RESOURCES: a buffer allocated at first use failed
_NO_MEMORY = (-4, -5)


class OpenCLEvents:
    """Waiting for and asking about native OpenCL events (no queue needed)."""

    __slots__ = ()
    #: an executor's buffer-copy key and context (``make_event``'s events have neither: a
    #: command depending on one waits for it on the host)
    key: Any = None
    context: Any = None
    #: ``(native event, objects)`` of commands holding USM or host memory (an executor's own)
    inflight: deque[tuple[cl.Event, Any]] | tuple[()] = ()
    #: the process's enqueue lock: a command is enqueued and added to ``inflight`` under it
    lock = x.launch_lock
    #: the OpenCL queue (an executor's own; events of ``make_event`` have none)
    native: cl.CommandQueue | None = None
    #: an executor's newest command, when it was enqueued, its launch's shape (kernel and
    #: sizes), and the shape of a launch that completed quickly (see :meth:`wait_event`)
    last: cl.Event | None = None
    since = 0.0
    shape: object = None
    quick: object = None

    def wait_events(self, natives: Sequence[cl.Event | None]) -> None:
        if len(natives) == 1:  # the common case: one event.wait()
            if natives[0] is not None:
                self.wait_event(natives[0])
        else:
            x.wait([e for e in natives if e is not None])

    def wait_event(self, native: cl.Event) -> None:
        """``event.wait()`` of one command (the loop-of-kernels path: kept short).

        In the main thread a wait polls, then waits so that Ctrl-C interrupts it
        (:func:`exec.wait_one`). That costs microseconds against the driver's own wait
        for a tiny kernel on a CPU device, so the wait for the queue's newest command is
        the driver's when its launch has the same kernel and sizes (``shape``) as the
        previous newest one, which completed within :data:`QUICK_S` of its enqueue.
        """
        shape = self.shape
        if native is self.last and shape is not None and (shape is self.quick
                                                          or shape == self.quick):
            try:
                native.wait()
            except x.cl.Error as e:
                raise x.translate_cl_error(e, x.WAIT_FAILED, errc.runtime) from e
            if _now() - self.since >= QUICK_S:  # it ran long: the next one polls
                self.quick = None
        else:
            x.wait_one(native, self.native)
            if native is self.last:
                self.quick = shape if _now() - self.since < QUICK_S else None
        d = self.inflight
        if d:  # what commands up to this one held (USM) may go: forget_until, inlined
            lock = self.lock
            if lock.acquire(False):
                drop_through(d, native)  # its first case: the newest was waited for
                lock.release()

    def settle(self, finished: bool = False) -> None:
        _steps.settle(self.native if finished else None)

    def before_host_sees(self, st: coherence.Coherence) -> None:
        # the kernels that wrote st may have printed, failed an assert or gone out of bounds
        if _steps.active or _kprint.pending or _bounds.watching:
            _steps.settle(storage=st)

    def status(self, native: cl.Event) -> str:
        st = x.status(native)
        if st < 0:
            raise exception(errc.event, f"the command failed with OpenCL status {st}", cl_error=st)
        return "complete" if st == x.COMPLETE else "running" if st == x.RUNNING else "submitted"

    def profile(self, native: cl.Event, which: str) -> int:
        return x.profile(native, which)


_now = time.perf_counter
#: a launch whose command completed within this (s) of its enqueue is quick: the next
#: launch like it is waited for by the driver (OpenCLEvents.wait_event)
QUICK_S = 0.01

#: The event operations of events made by ``make_event`` (they have no queue).
EVENTS = OpenCLEvents()


submit = _submit.submit


class OpenCLExecutor(OpenCLEvents):
    """The executor of one ``sycl.queue`` on an OpenCL device: one in-order OpenCL queue."""

    # Plain slots, read on every submit:
    #   context, device   the queue's
    #   key               what buffers key their copy for this queue by: ``context.key``;
    #                     ``(context.key, device.key)`` in a context of several devices
    #   build_key         ``(context.key, device.key)``: what built kernels are cached by
    #   cl_context        ``context.native``
    #   native            the OpenCL command queue
    #   launches          the queue's kernel launches (launch.Launch): by (built kernel,
    #                     sizes), and handler-less ones by the kernel's code (False: none)
    #   inflight          what its commands using USM hold until they complete (usm_api)
    #   last, since, shape, quick  its newest command's event, enqueue time and launch
    #                     shape, the shape of a quick launch (OpenCLEvents.wait_event)
    __slots__ = ("__weakref__", "build_key", "cl_context", "context", "device", "inflight", "key",
                 "last", "launches", "native", "quick", "shape", "since")

    def __init__(self, ctx: context, dev: device, *, profiling: bool,
                 native: cl.CommandQueue | None = None) -> None:
        self.context = ctx
        self.device = dev
        # A context of several devices: a copy per device, data moving between them
        # through the host as between contexts, so that a buffer's correctness never
        # rests on the driver migrating one allocation between devices.
        self.key: int | tuple[int, int] = (ctx.key if len(ctx.devices) == 1
                                           else (ctx.key, dev.key))
        self.build_key = (ctx.key, dev.key)
        self.cl_context = ctx.native
        # ``native``: an application's own OpenCL queue (``make_queue``)
        self.native = native if native is not None else x.create_queue(ctx.native, dev.native,
                                                                       profiling)
        self.launches: dict[object, Any] = {}
        self.inflight = deque()
        _builds.watch_context(ctx)  # its built kernels go when the context does
        self.last: cl.Event | None = None
        self.since = 0.0
        self.shape: object = None
        self.quick: object = None

    #: ``Executor.submit``: the command group recorded in a ``Submission``; its native event
    submit = submit
    #: the launches of this executor's kernels (:mod:`pysycl._backends.launching`)
    launch_class = _Launch
    #: a command graph's nodes as one command buffer (``cl_khr_command_buffer``), or None
    #: (:func:`pysycl._backends.opencl.cmdbuf.record_graph`)
    record_graph = _cmdbuf.record_graph
    #: a ``sycl.kernel`` object's graph node pre-bound (a ``cl_kernel`` of its own), or None
    prebind_object = staticmethod(_cmdbuf.prebind_object)

    @property
    def uneven_groups(self) -> bool:
        """Whether the device runs non-uniform work-groups (a last one smaller than the
        others: ``CL_DEVICE_NON_UNIFORM_WORK_GROUP_SUPPORT``, OpenCL 3.0; a range launch's
        sizes, :func:`pysycl._kernels.rangesize.range_sizes`)."""
        try:
            return bool(self.device.native.non_uniform_work_group_support)
        except (AttributeError, x.cl.Error):  # OpenCL < 3.0 headers or device: no
            return False

    def marker(self, wait_for: Sequence[cl.Event] | None) -> cl.Event:
        """A command that completes when ``wait_for`` have (an empty index space's)."""
        return x.marker(self.native, wait_for=wait_for)

    def fill(self, cmd: FillCommand, wait_for: list[cl.Event]) -> cl.Event | None:
        """``handler.fill`` of an accessor."""
        return _fill(self, cmd, wait_for)

    def copy(self, cmd: CopyCommand, wait_for: list[cl.Event]) -> cl.Event | None:
        """``handler.copy`` between accessors and host arrays."""
        return _copy(self, cmd, wait_for)

    def usm_command(self, cmd: USMCopyCommand | USMFillCommand | PrefetchCommand,
                    wait_for: list[cl.Event] | None) -> cl.Event:
        """A USM copy, fill, prefetch or advice."""
        return _usm_command(self, cmd, wait_for)

    # --- built kernels (pysycl._backends.opencl.build)
    def build(self, k: Kernel, spec: tuple[np.generic | None, ...] | None = None,
              bound: int = 0, fn: Callable[..., Any] | None = None,
              name: str | None = None) -> cl.Kernel:
        """``k`` built for this queue's context and device[, with ``spec`` values][, the PTX
        launch bound ``bound``] (once); errors name ``name`` when given."""
        if spec is None and not bound:  # the common case: one dict look-up each
            b = _builds.by_kernel.get(id(k))
            if b is not None:
                clk = b.natives.get(self.build_key)
                if clk is not None:
                    return clk
        return _builds.kernel(k, self.context, self.device, spec, fn, name,  # type: ignore[arg-type]
                              bound)

    def last_args(self, k: Kernel) -> dict[cl.Kernel, list[Any]]:
        """Built kernel -> the arguments it was last launched with, for ``k``'s kernels
        (``Launch.enqueue`` sets only changed ones)."""
        return _builds.builds(k).last

    def kernel_limits(self, native: cl.Kernel) -> tuple[int, tuple[int, ...], int]:
        """(max work-group size, max work-item sizes in OpenCL order, free local memory
        bytes) of the built kernel ``native`` on this device."""
        return _builds.limits(self.device, native)

    def bounded_kernel(self, k: Kernel, native: cl.Kernel, nd: nd_range,
                       spec: tuple[np.generic | None, ...] | None = None,
                       fn: Callable[..., Any] | None = None, name: str | None = None,
                       bundle: bool = False) -> cl.Kernel:
        """``native``, or on a PTX device for a work-group wider than it may run, ``k`` built
        with a launch bound that fits (a kernel of a bundle: ``native``)."""
        return _builds.bounded(k, self.device, native, nd, None if bundle else (
            lambda n: self.build(k, spec, n, fn, name)))

    #: ``Executor.launch``: ``q.parallel_for(r, kernel)``, ``q.single_task(kernel)`` with no
    #: dependencies and no command group (:func:`pysycl._backends.launching.launch`: a
    #: remembered launch when it fits, else the whole way; one frame, no wrapper)
    launch = _launch.launch
    #: ``Executor.launch_reductions``: ``q.parallel_for(r, *reductions, kernel)`` with no
    #: dependencies (:func:`pysycl._backends.reductions.launch_reductions`: a remembered
    #: reduction launch when it fits, else the whole way)
    launch_reductions = _reductions.launch_reductions

    def prepared(self, k: Kernel, native: cl.Kernel, gsize: tuple[int, ...],
                 lsize: tuple[int, ...] | None) -> _launch.Launch:
        """``Executor.prepared``: this queue's launch of a built kernel over native sizes
        (:func:`pysycl._backends.launching.prepared`)."""
        return _launch.prepared(self, k, native, gsize, lsize)

    def launch_native(self, native: cl.Kernel, gsize: tuple[int, ...],
                      lsize: tuple[int, ...] | None, args: Sequence[Any],
                      wait_for: Sequence[cl.Event] | None, holds: Any = None) -> cl.Event:
        """``Executor.launch_native``: a kernel of a bundle launched with ``set_arg``
        arguments (``("local", nbytes)`` for local memory), each set by index (a refused
        one is ``errc.kernel_argument`` naming it); an empty range is a marker."""
        if 0 in gsize:
            return x.marker(self.native, wait_for=wait_for)
        return _programs.launch_interop(self.native, native, gsize, lsize, args, wait_for,
                                        self.inflight if holds is not None else None, holds)

    def resident_groups(self, native: Any, wg: int, local_bytes: int) -> int | None:
        return None  # (OpenCL has no occupancy query)

    def local_memory(self, nbytes: int) -> cl.LocalMemory:
        """The kernel argument of ``nbytes`` of local memory per work-group."""
        return x.local_memory(nbytes)

    def wait(self) -> None:
        d = self.inflight
        try:
            held = d[-1][0]  # enqueued before the finish: complete after it
        except IndexError:
            held = None
        last, shape = self.last, self.shape
        if last is None or (shape is not None and shape == self.quick):
            x.finish(self.native)  # nothing known, or a quick launch (wait_event): the driver's
        else:
            x.finish(self.native, last)
        if last is not None:
            self.quick = shape if _now() - self.since < QUICK_S else None
        if _steps.active or _kprint.pending or _bounds.watching:
            _steps.settle(self.native)  # launch steps: output, failed asserts, violations
        if held is not None:
            forget_until(self, held)

    def read(self, host: np.ndarray, mem: cl.Buffer, wait_for: Sequence[cl.Event] | None) -> None:
        x.read(self.native, host, mem, wait_for=wait_for, blocking=True)

    def read_back(self, host: np.ndarray, mem: cl.Buffer, after: cl.Event) -> cl.Event:
        return x.read(self.native, host, mem, wait_for=[after], blocking=False)

    def alloc_visible(self, nbytes: int) -> tuple[_usm.SVMMemory, cl.SVM, np.ndarray] | None:
        caps = _usm.svm_caps(self.device.native)
        if not caps & _usm.FINE:
            return None  # no fine-grained buffer SVM: a buffer, read at the synchronization point
        mem = _usm.SVMMemory(self.cl_context, caps, "host", nbytes, 128)
        return mem, mem.kernel_arg(0), mem.host_bytes(nbytes)

    def alloc(self, nbytes: int) -> cl.Buffer:
        try:
            return x.alloc(self.cl_context, nbytes)
        except exception as e:  # the driver decides (NVIDIA's allows more than max_mem_alloc_size)
            if e.code() is not errc.memory_allocation and nbytes <= self.device.get_info(
                    _MAX_ALLOC):
                raise
            raise self.no_memory(e, e.what()) from e

    def no_memory(self, e: exception, what: str) -> exception:
        """``errc.memory_allocation`` for device memory the driver could not allocate
        (``what``: which and how many bytes), with the device's limits."""
        d = self.device
        return exception(errc.memory_allocation, f"{what}: device {d.display_name!r} "
                         f"allows allocations of {d.get_info(_MAX_ALLOC)} bytes "
                         f"(info.device.max_mem_alloc_size; its global memory is "
                         f"{d.get_info(_GLOBAL_MEM)} bytes)", self.context,
                         cl_error=e.cl_error)

    def first_use_failed(self, e: exception, *nbytes: int) -> exception:
        """``e``, raised by a write, fill, copy or kernel using buffers' device copies of
        ``nbytes``: drivers that allocate at first use (NVIDIA's OpenCL) report a buffer
        too large there (``CL_MEM_OBJECT_ALLOCATION_FAILURE``, ``CL_OUT_OF_RESOURCES``),
        which becomes ``errc.memory_allocation`` naming the bytes, as at ``clCreateBuffer``."""
        if e.cl_error not in _NO_MEMORY or not nbytes:
            return e
        which = (f"the device copy of a buffer of {nbytes[0]} bytes" if len(nbytes) == 1 else
                 f"the device copies of buffers of {', '.join(map(str, nbytes))} bytes")
        return self.no_memory(e, f"{e.what()}: {which} could not be allocated")

    def write(self, mem: cl.Buffer, host: np.ndarray, wait_for: Sequence[cl.Event] | None) -> cl.Event:
        try:
            return x.write(self.native, mem, host, wait_for=wait_for)
        except exception as e:
            raise self.first_use_failed(e, host.nbytes) from e

    def free(self, mem: cl.Buffer) -> None:
        # kernels and kept launches remember their last arguments: the buffer must not live
        # on in them
        _builds.forget_memory((mem,))
        _again.forget_memory((mem,))


def _usm_command(ex: OpenCLExecutor, cmd: USMCopyCommand | USMFillCommand | PrefetchCommand,
                 wait_for: list[cl.Event] | None) -> cl.Event:
    """Enqueue a USM copy, fill or prefetch; it holds its memory (a copy's host array may be
    a temporary) until it completes: enqueued and added to ``ex.inflight`` in one step."""
    n = cmd.nbytes
    keep = cmd.keep
    with ex.lock:
        if not n or (type(cmd) is PrefetchCommand and cmd.advice is not None):
            ev = x.marker(ex.native, wait_for=wait_for)  # nothing to do: mem_advise is a hint
        elif type(cmd) is USMCopyCommand:
            ev = _usm.memcpy(ex.native, cmd.dst, cmd.src, n, wait_for)
        elif type(cmd) is USMFillCommand:
            if cmd.staged:  # host memory on a device without system SVM
                ev, pattern = _usm.fill_by_copy(ex.native, cmd.dst, cmd.pattern, n, wait_for)
                keep = (keep, pattern)
            else:
                ev = _usm.fill(ex.native, cmd.dst, cmd.pattern, n, wait_for)
        else:
            ev = _usm.migrate(ex.native, cmd.address, n, wait_for)
        ex.inflight.append((ev, keep))
    ex.shape = (type(cmd), n)  # a loop of copies learns quick waits too (wait_event)
    return ev


def _fill(ex: OpenCLExecutor, cmd: FillCommand, wait_for: list[cl.Event]) -> cl.Event | None:
    acc = cmd.dest
    st = acc.coherence
    pattern = np.asarray(cmd.value, dtype=acc.dtype).reshape(1)  # a reinterpreted buffer's type
    ev = None
    mem = st.dev[ex.key]
    isz = acc.dtype.itemsize
    try:
        for off, n in acc.segments():
            ev = x.fill(ex.native, mem, pattern, off * isz, n * isz, wait_for=wait_for or None)
            wait_for = []
    except exception as e:
        raise ex.first_use_failed(e, st.nbytes) from e
    return ev


def _copy(ex: OpenCLExecutor, cmd: CopyCommand, wait_for: list[cl.Event]) -> cl.Event | None:
    src, dst = cmd.src, cmd.dest
    clq, key = ex.native, ex.key
    if isinstance(src, accessor) and isinstance(dst, accessor):
        ss, ds = src.segments(), dst.segments()
        if len(ss) == 1 and len(ds) == 1 and src.dtype == dst.dtype:
            isz = src.dtype.itemsize
            try:
                return x.copy_buffer(clq, dst.coherence.dev[key], src.coherence.dev[key],
                                     ss[0][1] * isz, ds[0][0] * isz, ss[0][0] * isz,
                                     wait_for=wait_for or None)
            except exception as e:
                raise ex.first_use_failed(e, dst.coherence.nbytes) from e
        raise _submit.copy_refused("accessors")
    if isinstance(src, accessor):  # device -> host array
        segs = src.segments()
        if len(segs) == 1 and dst.flags.c_contiguous and dst.dtype == src.dtype:
            off, n = segs[0]
            if _steps.active or _bounds.watching:  # failed launches: report before the host sees
                x.wait([e for e in wait_for if e is not None])
                x.finish(clq)
                _steps.settle(clq, src.coherence)
            return x.read(clq, dst.reshape(-1)[:n], src.coherence.dev[key],
                          off * src.dtype.itemsize, wait_for=wait_for or None, blocking=True)
        raise _submit.copy_refused("to host", src.dtype)
    # host array -> device
    segs = dst.segments()
    src_arr = np.ascontiguousarray(src, dtype=dst.dtype).reshape(-1)
    if len(segs) != 1 or src_arr.size < segs[0][1]:
        raise _submit.copy_refused("to device")
    off, n = segs[0]
    try:
        return x.write(clq, dst.coherence.dev[key], src_arr[:n].copy(), off * dst.dtype.itemsize,
                       wait_for=wait_for or None)
    except exception as e:
        raise ex.first_use_failed(e, dst.coherence.nbytes) from e

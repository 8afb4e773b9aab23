"""The CUDA executor: one ``sycl.queue`` on a CUDA device is one non-blocking stream.

Commands run in stream order (an in-order queue, which every SYCL queue may be); a
command's native event is a ``CUevent`` recorded after it (:class:`Event`, from a pool).
Dependencies on commands of another CUDA queue -- of any context and any GPU of the
process -- are ``cuStreamWaitEvent``; others are waited for on the host
(:mod:`pysycl._backends.submit`). A buffer's copy on one GPU takes the data of another
GPU's copy device to device where they have peer access (:meth:`CUDAExecutor.copy_from`).
Waits poll ``cuEventQuery`` in the main thread so that Ctrl-C interrupts them.

A kernel that faults leaves a *sticky* error in its context: every later call fails. The
wait that sees it raises ``errc.runtime`` naming the kernels in flight, and marks the
device dead: new queues on it are refused with the reason (CUDA keeps the error for the
process's life; other devices go on, docs/gpu.md).

A queue over an application's stream (``make_queue``) waits by its newest command's event,
not by the stream, which its owner may destroy first (:meth:`CUDAExecutor.wait`).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from math import prod
from typing import TYPE_CHECKING, Any

import numpy as np

from pysycl._backends import launching as _launching
from pysycl._backends import reductions as _reductions
from pysycl._backends import submit as _submit
from pysycl._backends.cuda import driver as d
from pysycl._backends.cuda import launch as _launch
from pysycl._backends.cuda import memory as _mem
from pysycl._backends.cuda import objects as _obj
from pysycl._backends.cuda.build import builds as _builds
from pysycl._backends.cuda.driver import cu
from pysycl._backends.cuda.launch import Event, ProfiledEvent
from pysycl._commands.commands import PrefetchCommand, USMCopyCommand, USMFillCommand
from pysycl._core.exceptions import errc, exception, hidden_in_tracebacks
from pysycl._kernels import bounds as _bounds
from pysycl._kernels import kprint as _kprint
from pysycl._kernels import steps as _steps
from pysycl._kernels.ptx_bounds import launch_bound
from pysycl._memory.accessor import accessor
from pysycl._memory.usm_api import drop_through, forget_until
from pysycl._objects.info import info

if TYPE_CHECKING:
    from pysycl._commands.commands import CopyCommand, FillCommand
    from pysycl._kernels.cache import Kernel
    from pysycl._objects.context import context
    from pysycl._objects.device import device
    from pysycl._objects.range import nd_range

__tracebackhide__ = hidden_in_tracebacks

_NOT_READY = 600
_now = time.perf_counter
_query = cu.cuEventQuery if cu is not None else None


def bind_driver(driver: Any) -> None:
    """The driver loaded after this module: its aliases (``driver._bind_loaded``)."""
    global _query
    _query = driver.cuEventQuery
_DISABLE_TIMING = 2
#: devices (ordinals) a kernel fault left unusable, with the error
dead: dict[int, str] = {}
_MAX_ALLOC = info.device.max_mem_alloc_size


def _block(query: Callable[[], Any], sync: Callable[[], Any]) -> int:
    """Wait for a stream or event: the driver's blocking wait outside the main thread; in
    it a poll (so that Ctrl-C interrupts the wait). The final ``CUresult`` code."""
    r = query()
    c = int(r[0] if type(r) is tuple else r)
    if c != _NOT_READY:
        return c
    if threading.current_thread() is not threading.main_thread():
        r = sync()
        return int(r[0] if type(r) is tuple else r)
    t0 = _now()
    pause = 0.0
    while True:
        r = query()
        c = int(r[0] if type(r) is tuple else r)
        if c != _NOT_READY:
            return c
        if _now() - t0 > 1e-3:  # past a millisecond: sleep, longer and longer
            pause = min(pause * 2 or 2e-5, 2e-3)
            time.sleep(pause)


def _device_ordinal(owner: Any) -> int | None:
    """The GPU of a USM copy's end when it is device memory (``sycl.malloc_device``)."""
    native = getattr(getattr(owner, "allocation", None), "native", None)
    return native.ordinal if getattr(native, "kind", None) == "device" else None


class CUDAExecutor:
    """The executor of one ``sycl.queue`` on a CUDA device."""

    __slots__ = (
        "__weakref__",
        "build_key",
        "context",
        "cuctx",
        "device",
        "inflight",
        "key",
        "last",
        "launches",
        "native",
        "own_stream",
        "pool",
        "profiling",
        "quick",
        "ref",
        "ref_ns",
        "shape",
        "since",
        "started",
        "submitted",
    )

    lock = _launch._lock
    #: any stream of the process waits for any CUDA event (``cuStreamWaitEvent`` across
    #: contexts and devices): other CUDA queues' events join wait lists, not host waits
    event_domain = "cuda"
    #: the launches of this executor's kernels (:mod:`pysycl._backends.launching`)
    launch_class = _launch.CUDALaunch
    #: CUDA has no partial blocks (range launches of PTX images loop over the items)
    uneven_groups = False
    submit = _submit.submit
    #: ``launch(q, kind, space, fn, name)``: the C relaunch where built (:mod:`.launch`)
    launch = _launch.relaunch
    #: ``launch_reductions(q, kind, space, reductions, fn, name)``: a remembered reduction
    #: launch when it fits, else the whole way (:mod:`pysycl._backends.reductions`)
    launch_reductions = _reductions.launch_reductions

    def __init__(self, ctx: context, dev: device, *, profiling: bool,
                 native: Any = None) -> None:
        self.context, self.device = ctx, dev
        ordinal = dev.ordinal  # type: ignore[attr-defined]
        if ordinal in dead:
            raise exception(errc.runtime, f"pysycl: {dev.display_name!r} is unusable in this "
                            f"process: a kernel faulted on it ({dead[ordinal]}). CUDA keeps "
                            "such an error for the process's life (NVIDIA's driver: the process "
                            "must be restarted; resetting the primary context does not clear "
                            "it); other devices still work. Run with PYSYCL_BOUNDS_CHECK=1 to "
                            "get the fault as an error at the line instead", ctx)
        self.cuctx = ctx.native.primary[ordinal]
        _obj.make_current(self.cuctx)
        self.key: Any = ctx.key if len(ctx.devices) == 1 else (ctx.key, dev.key)
        self.build_key = (ctx.key, dev.key)
        #: the queue's stream: its own (never destroyed), or an application's (``make_queue``),
        #: which its owner may destroy while this executor is garbage not yet collected
        self.own_stream = native is None
        self.native = native if native is not None else d.call(
            cu.cuStreamCreate, cu.CUstream_flags.CU_STREAM_NON_BLOCKING.value,
            what="creating a CUDA stream")
        self.pool: list[Any] = []
        #: a profiling queue: timed events, one before each command too (:meth:`begin`)
        self.profiling = profiling
        self.started: Any = None
        self.submitted = 0
        self.ref: Any = None
        self.ref_ns = 0
        if profiling:  # the time origin: an event recorded now, and the host's clock
            self.ref = self.new_event()
            d.call(cu.cuEventRecord, self.ref, self.native)
            d.call(cu.cuEventSynchronize, self.ref)
            self.ref_ns = time.monotonic_ns()
        self.launches: dict[object, Any] = {}
        self.inflight: deque[tuple[Any, Any]] = deque()
        self.last: Any = None
        self.since = 0.0
        self.shape: object = None
        self.quick: object = None

    # --- events
    def new_event(self) -> Any:
        """A new ``CUevent`` for the pool (no timing unless the queue profiles: recording
        it costs less). The context is made current first: a thread that never used this
        GPU has none, and events belong to the current context."""
        _obj.make_current(self.cuctx)
        return d.call(cu.cuEventCreate, 0 if self.profiling else _DISABLE_TIMING)

    def begin(self) -> None:
        """A profiling queue: record the start of the next command."""
        if self.profiling:
            pool = self.pool
            if self.started is not None:  # a command that began twice (a copy's write)
                pool.append(self.started)
            self.submitted = time.monotonic_ns()  # before the command reaches the stream
            h = pool.pop() if pool else self.new_event()
            d.call(cu.cuEventRecord, h, self.native)
            self.started = h

    def record(self) -> Event:
        """A new event recorded on the stream (after everything enqueued so far)."""
        pool = self.pool
        h = pool.pop() if pool else self.new_event()
        r = cu.cuEventRecord(h, self.native)
        if r[0]:
            pool.append(h)
            raise self.failed(int(r[0]), "recording a CUDA event")
        if self.profiling:
            start, self.started = self.started, None
            return ProfiledEvent(h, pool, start, self.submitted if start is not None
                                 else time.monotonic_ns())
        return Event(h, pool)

    def stream_waits(self, wait_for: Sequence[Any]) -> None:
        """The stream waits for ``wait_for`` (events of this context) before what follows."""
        for e in wait_for:
            if e is not None:
                d.call(cu.cuStreamWaitEvent, self.native, e.h, 0)

    def marker(self, wait_for: Sequence[Any] | None) -> Event:
        if wait_for:
            self.stream_waits(wait_for)
        self.begin()
        return self.record()

    def failed(self, code: int, what: str) -> exception:
        """The exception of a failed call; a kernel fault also marks the context dead."""
        if d.is_sticky(code):
            shape = self.shape
            names = (f"kernel {shape.k.name} (or a command before it)"
                     if isinstance(shape, _launch.CUDALaunch) else "a kernel")
            dead.setdefault(self.device.ordinal, f"{names}: {d.error_name(code)}")  # type: ignore[attr-defined]
            return d.error(code, f"{what}: {names} faulted on {self.device.display_name!r}; "
                           "CUDA keeps this error: the device runs no more commands in this "
                           "process (buffers keep the host data they had; restart the process, "
                           "or the Jupyter kernel, to use the GPU again)")
        return d.error(code, what)

    def launch_failed(self, code: int, k: Kernel) -> exception:
        kind = errc.nd_range if code == 701 else errc.kernel  # LAUNCH_OUT_OF_RESOURCES
        if d.is_sticky(code):
            return self.failed(code, f"{k.where}: kernel launch")
        return d.error(code, f"{k.where}: kernel launch failed", kind)

    def wait_event(self, native: Event) -> None:
        h = native.h
        c = self._wait(2, h)
        if c:
            raise self.failed(c, "waiting for a command")
        q = self.inflight
        if q and self.lock.acquire(False):
            drop_through(q, native)
            self.lock.release()

    def sync(self, what: str) -> None:
        """Wait until the stream has done everything enqueued on it (``what`` names the
        operation in the error of a failure)."""
        c = self._wait(3, self.native)
        if c:
            raise self.failed(c, what)

    def _wait(self, which: int, h: Any) -> int:
        """Wait for event (``which`` 2) or stream (3) ``h``: the final code. Polled in C
        without the GIL where the extension was built; again after making this GPU's
        context current if another library had changed the thread's."""
        for _ in range(2):
            if _launch.native_launch():
                c = _launch.wait_native(_launch.entries[which], h)
            elif which == 2:
                c = _block(lambda: _query(h), lambda: cu.cuEventSynchronize(h))
            else:
                c = _block(lambda: cu.cuStreamQuery(h), lambda: cu.cuStreamSynchronize(h))
            if c not in _obj.WRONG_CONTEXT:
                return c
            _obj.make_current(self.cuctx)
        return c

    def wait_events(self, natives: Sequence[Any]) -> None:
        for e in natives:
            if e is not None:
                self.wait_event(e)

    def wait(self) -> None:
        q = self.inflight
        held = q[-1][0] if q else None
        if self.own_stream:
            self.sync("waiting for the queue")
        # An application's stream (make_queue): this queue's newest command, by its event
        # (pysycl's own). The owner may destroy the stream while this executor, unreachable,
        # still waits in the context's set of queues (sycl.free finishes them all): a query
        # of a destroyed stream fails or crashes the process.
        elif (last := self._newest()) is not None and (c := self._wait(2, last.h)):
            raise self.failed(c, "waiting for the queue")
        if _steps.active or _kprint.pending or _bounds.watching:
            _steps.settle(self.native)
        if held is not None:
            forget_until(self, held)

    def _newest(self) -> Event | None:
        """The event of this queue's newest command (None: none yet)."""
        last = self.last
        return last if type(last) is Event or type(last) is ProfiledEvent else None

    def pending(self) -> Event | None:
        """An event after this queue's work so far: recorded now on its own stream; on an
        application's stream, its newest command's (:meth:`wait`)."""
        return self.record() if self.own_stream else self._newest()

    def status(self, native: Event) -> str:
        r = _query(native.h)
        c = int(r[0] if type(r) is tuple else r)
        if c == _NOT_READY:
            return "running"
        if c:
            raise exception(errc.event, f"the command failed: {d.error_name(c)}")
        return "complete"

    def profile(self, native: Event, which: str) -> int:
        """``command_submit`` (the host's clock at the enqueue), ``command_start`` and
        ``command_end`` (``cuEventElapsedTime`` from the queue's reference event) in ns,
        on one timeline; waits for the command first."""
        if type(native) is not ProfiledEvent:
            raise exception(errc.invalid, "pysycl: the queue was not made with "
                            "property.queue.enable_profiling")
        self.wait_event(native)
        if which == "submit":
            return int(native.submit)
        h = native.h if which == "end" else (native.start or native.h)
        ms = d.call(cu.cuEventElapsedTime, self.ref, h, what="reading a profiling event")
        return self.ref_ns + round(float(ms) * 1e6)

    def settle(self, finished: bool = False) -> None:
        _steps.settle(self.native if finished else None)

    def before_host_sees(self, st: Any) -> None:
        if _steps.active or _kprint.pending or _bounds.watching:
            _steps.settle(storage=st)

    # --- memory
    def alloc(self, nbytes: int) -> _mem.DeviceMem:
        try:
            return _mem.alloc_device(self.cuctx, nbytes, f"a device buffer of {nbytes} bytes")
        except exception as e:
            if e.code() is not errc.memory_allocation:
                raise
            dv = self.device
            raise exception(errc.memory_allocation, f"{e.what()}: device {dv.display_name!r} "
                            f"allows allocations of {dv.get_info(_MAX_ALLOC)} bytes "
                            "(info.device.max_mem_alloc_size)", self.context) from e

    def alloc_visible(self, nbytes: int) -> None:
        return None  # buffers' copies are device memory, read at the synchronization point

    def free(self, mem: _mem.DeviceMem) -> None:
        # Launches remember their last arguments as plain integers: nothing keeps memory.
        _obj.make_current(self.cuctx)
        mem.release()

    def native_mem(self, mem: _mem.DeviceMem) -> Any:
        """A buffer's device memory as ``interop_handle.get_native_mem`` gives it on CUDA: a
        ``CUdeviceptr`` (intel/llvm's CUDA backend extension)."""
        return cu.CUdeviceptr(int(mem))

    def first_use_failed(self, e: exception, *nbytes: int) -> exception:
        return e  # CUDA allocates at cuMemAlloc: nothing fails at first use

    def read(self, host: np.ndarray, mem: Any, wait_for: Sequence[Any] | None) -> None:
        _obj.make_current(self.cuctx)
        if wait_for:
            self.stream_waits(wait_for)
        n = host.nbytes
        if n:
            d.call(cu.cuMemcpyDtoHAsync, host.ctypes.data, int(mem), n, self.native,
                   what="copying device memory to the host")
        self.sync("copying device memory to the host")

    def read_back(self, host: np.ndarray, mem: Any, after: Any) -> Event:
        _obj.make_current(self.cuctx)  # (its event: created in this GPU's context)
        self.stream_waits([after])
        self.begin()
        if host.nbytes:
            d.call(cu.cuMemcpyDtoHAsync, host.ctypes.data, int(mem), host.nbytes, self.native,
                   what="copying device memory to the host")
        return self.record()

    def write(self, mem: Any, host: np.ndarray, wait_for: Sequence[Any] | None,
              byte_offset: int = 0) -> Event:
        _obj.make_current(self.cuctx)
        if wait_for:
            self.stream_waits(wait_for)
        self.begin()
        host = np.ascontiguousarray(host)
        if host.nbytes:
            d.call(cu.cuMemcpyHtoDAsync, int(mem) + byte_offset, host.ctypes.data, host.nbytes,
                   self.native, what="copying host memory to the device")
        return self.record()

    # --- commands (pysycl._backends.submit)
    def fill(self, cmd: FillCommand, wait_for: list[Any]) -> Event | None:
        _obj.make_current(self.cuctx)  # a thread's first command on this GPU
        acc = cmd.dest
        pattern = np.asarray(cmd.value, dtype=acc.dtype).reshape(1)
        base = int(acc.coherence.dev[self.key])
        isz = acc.dtype.itemsize
        if wait_for:
            self.stream_waits(wait_for)
        self.begin()
        keep = []
        for off, n in acc.segments():
            keep.append(self._fill_bytes(base + off * isz, pattern, n * isz))
        ev = self.record()
        if any(k is not None for k in keep):
            with self.lock:
                self.inflight.append((ev, keep))
        return ev

    def _fill_bytes(self, dst: int, pattern: np.ndarray, nbytes: int) -> np.ndarray | None:
        """Fill ``nbytes`` at ``dst`` with ``pattern``; the staging array to keep, if any."""
        p = pattern.view(np.uint8)
        s = self.native
        if len(p) == 1 or not p.any() or (p == p[0]).all():
            d.call(cu.cuMemsetD8Async, dst, int(p[0]), nbytes, s)
        elif len(p) == 2:
            d.call(cu.cuMemsetD16Async, dst, int(pattern.view(np.uint16)[0]), nbytes // 2, s)
        elif len(p) == 4:
            d.call(cu.cuMemsetD32Async, dst, int(pattern.view(np.uint32)[0]), nbytes // 4, s)
        else:
            src = np.tile(p, nbytes // len(p))
            d.call(cu.cuMemcpyHtoDAsync, dst, src.ctypes.data, nbytes, s)
            return src
        return None

    def copy(self, cmd: CopyCommand, wait_for: list[Any]) -> Event | None:
        src, dst = cmd.src, cmd.dest
        key = self.key
        _obj.make_current(self.cuctx)  # a thread's first command on this GPU
        if wait_for:
            self.stream_waits(wait_for)
        self.begin()
        if isinstance(src, accessor) and isinstance(dst, accessor):
            ss, ds = src.segments(), dst.segments()
            if len(ss) == 1 and len(ds) == 1 and src.dtype == dst.dtype:
                isz = src.dtype.itemsize
                d.call(cu.cuMemcpyDtoDAsync, int(dst.coherence.dev[key]) + ds[0][0] * isz,
                       int(src.coherence.dev[key]) + ss[0][0] * isz, ss[0][1] * isz,
                       self.native)
                return self.record()
            raise _submit.copy_refused("accessors")
        if isinstance(src, accessor):  # device -> host array
            segs = src.segments()
            if len(segs) == 1 and dst.flags.c_contiguous and dst.dtype == src.dtype:
                off, n = segs[0]
                if _steps.active or _bounds.watching:
                    self.wait()
                view = dst.reshape(-1)[:n]
                d.call(cu.cuMemcpyDtoHAsync, view.ctypes.data,
                       int(src.coherence.dev[key]) + off * src.dtype.itemsize, view.nbytes,
                       self.native)
                ev = self.record()
                self.wait_event(ev)
                return ev
            raise _submit.copy_refused("to host", src.dtype)
        segs = dst.segments()
        src_arr = np.ascontiguousarray(src, dtype=dst.dtype).reshape(-1)
        if len(segs) != 1 or src_arr.size < segs[0][1]:
            raise _submit.copy_refused("to device")
        off, n = segs[0]
        return self.write(dst.coherence.dev[key], src_arr[:n].copy(), None,
                          off * dst.dtype.itemsize)

    def usm_command(self, cmd: USMCopyCommand | USMFillCommand | PrefetchCommand,
                    wait_for: list[Any] | None) -> Event:
        n = cmd.nbytes
        keep: Any = cmd.keep
        s = self.native
        if n and type(cmd) is USMCopyCommand:  # between two GPUs: peer access first
            ends = [_device_ordinal(k) for k in keep]
            if None not in ends:
                _mem.count_between(ends[1], ends[0], n)
        _obj.make_current(self.cuctx)
        with self.lock:
            if wait_for:
                self.stream_waits(wait_for)
            self.begin()
            if n and type(cmd) is USMCopyCommand:
                d.call(cu.cuMemcpyAsync, cmd.dst, cmd.src, n, s, what=f"USM copy of {n} bytes")
            elif n and type(cmd) is USMFillCommand and cmd.staged:
                # host memory the device cannot use (no pageable access): filled on the host
                # once the stream reached this point
                self._host_fill(cmd.dst, cmd.pattern, n)
            elif n and type(cmd) is USMFillCommand:
                staged = self._fill_bytes(cmd.dst, cmd.pattern, n)
                if staged is not None:
                    keep = (keep, staged)
            elif n and type(cmd) is PrefetchCommand and cmd.advice is None:
                self._prefetch(cmd.address, n)
            ev = self.record()
            self.inflight.append((ev, keep))
        self.shape = (type(cmd), n)
        return ev

    def copy_from(self, mem: Any, src_ex: Any, src_mem: Any, nbytes: int,
                  wait_for: Sequence[Any] | None) -> Event | None:
        """A buffer's copy ``mem`` on this device takes the current data from ``src_mem`` of
        another executor without the host (:meth:`Coherence.prepare_device
        <pysycl._memory.coherence.Coherence.prepare_device>`): the same GPU (two contexts),
        or two GPUs with peer access (``cuMemcpyPeerAsync`` on this queue's stream, after
        ``wait_for``). None where it cannot (another backend, no peer access)."""
        if type(src_ex) is not CUDAExecutor:
            return None
        a, b = src_ex.device.ordinal, self.device.ordinal  # type: ignore[attr-defined]
        if not _mem.peer_access(a, b):
            return None
        _obj.make_current(self.cuctx)
        if wait_for:
            self.stream_waits(wait_for)
        self.begin()
        if nbytes and a == b:
            d.call(cu.cuMemcpyDtoDAsync, int(mem), int(src_mem), nbytes, self.native,
                   what="copying a buffer between two contexts of one GPU")
        elif nbytes:
            d.call(cu.cuMemcpyPeerAsync, int(mem), self.cuctx, int(src_mem), src_ex.cuctx,
                   nbytes, self.native, what=f"copying a buffer from GPU {a} to GPU {b}")
            _mem.between_devices["peer"] += nbytes
        return self.record()

    def _host_fill(self, dst: int, pattern: np.ndarray, n: int) -> None:
        """Fill ``n`` bytes of plain host memory at ``dst`` after the stream's earlier work."""
        self.sync("a USM fill of host memory")
        view = np.ctypeslib.as_array((np.ctypeslib.ctypes.c_uint8 * n).from_address(dst))
        p = pattern.view(np.uint8)
        view[:] = np.tile(p, n // len(p))

    def _prefetch(self, address: int, n: int) -> None:
        """``cuMemPrefetchAsync`` of managed memory towards the device (else nothing)."""
        loc = cu.CUmemLocation()
        loc.type = cu.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
        loc.id = self.device.ordinal  # type: ignore[attr-defined]
        cu.cuMemPrefetchAsync(address, n, loc, 0, self.native)  # not managed: a no-op

    # --- kernels
    def build(self, k: Kernel, spec: Any = None, bound: int = 0, fn: Any = None,
              name: str | None = None) -> Any:
        if spec is None and not bound:
            b = _builds.by_kernel.get(id(k))
            if b is not None:
                built = b.natives.get(self.build_key)
                if built is not None:
                    return built
        return _builds.kernel(k, self.context, self.device, spec, fn, name, bound)

    def last_args(self, k: Kernel) -> dict[Any, list[Any]]:
        return _builds.builds(k).last

    def kernel_limits(self, native: Any) -> tuple[int, tuple[int, ...], int]:
        dv = self.device
        sizes = tuple(reversed(dv.get_info(info.device.max_work_item_sizes_3d).values))
        free = dv.get_info(info.device.local_mem_size) - native.static_shared
        return (native.max_threads, sizes, free)

    def bounded_kernel(self, k: Kernel, native: Any, nd: nd_range, spec: Any = None,
                       fn: Any = None, name: str | None = None, bundle: bool = False) -> Any:
        """``native``, or for a work-group wider than the registers the JIT gave ``native``
        allow (``CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`` < 1024), ``k`` loaded again with
        the launch bound ``.maxntid`` that fits it (a kernel of a bundle: ``native``)."""
        size = prod(nd.get_local_range().values)
        if bundle or size <= native.max_threads:
            return native
        n = launch_bound(size, int(self.device.get_info(info.device.max_work_group_size)))
        try:
            return _builds.kernel(k, self.context, self.device, spec, fn, name, n)
        except exception as e:
            raise exception(errc.nd_range, f"{k.where}: a work-group of {size} work-items "
                            f"needs the kernel built with the launch bound .maxntid {n}, and "
                            f"the driver could not build it: {e}") from e

    def resident_groups(self, native: Any, wg: int, local_bytes: int) -> int | None:
        return int(d.call(cu.cuOccupancyMaxActiveBlocksPerMultiprocessor, native.fn, wg,
                          local_bytes, what="the kernel's occupancy"))

    def local_memory(self, nbytes: int) -> _launch.LocalMem:
        return _launch.LocalMem(nbytes)

    def prepared(self, k: Kernel, native: Any, gsize: tuple[int, ...],
                 lsize: tuple[int, ...] | None) -> Any:
        return _launching.prepared(self, k, native, gsize, lsize)

    def launch_native(self, native: Any, gsize: tuple[int, ...], lsize: tuple[int, ...] | None,
                      args: Sequence[Any], wait_for: Sequence[Any] | None,
                      holds: Any = None) -> Any:
        _obj.make_current(self.cuctx)
        return _launch.launch_native(self, native, gsize, lsize, args, wait_for, holds)

"""Kernel launches on a CUDA stream: :class:`CUDALaunch`, the ``cuLaunchKernel`` of a
backend-neutral :class:`~pysycl._backends.launching.Launch`.

A ``CUfunction`` keeps no arguments: ``cuLaunchKernel`` takes an array of pointers to
the argument values. Each launch (built kernel, sizes, queue) packs its values into one
buffer of its own with ``struct.pack_into`` -- only when they differ from its last ones --
and keeps the pointer array to it, so the binding call gets one integer (measured on an
H200: 4.3 us per back-to-back launch this way, 4.6 us with the bindings' tuple packing,
CuPy's ``RawKernel`` 6.1 us; docs/design/cuda.md §1). Where the C extension
``_native`` was built, the launch and its event's record are one C call instead, reading
the record ``rec`` this launch keeps (its layout: ``_native.c``; ~1.8 us less a launch than
the bindings' two calls), and the newest event is recorded again for the next command
when nothing but the queue refers to it (:func:`_unobserved`).

A remembered handler-less launch (``q.parallel_for(r, k)`` again) goes further: each
Python launch of it leaves a *prime* -- what its refresh read (``_native.Primed``, updated
in place) -- and the executor's ``launch`` is the C call ``_native.Relaunch``
(:data:`relaunch`), which, while nothing of the prime changed (same captured objects, index
space, kernel-cache generation, properties; bounds mode off; pointers live; the enqueue lock
free), does the whole remembered launch itself: the argument buffer already holds those
values. Everything else takes :func:`pysycl._backends.launching.launch` as before; packing
the buffer drops the prime (docs/design/launch.md §4.1).

Sizes: ``gsize``/``lsize`` come in native order (x fastest). An nd_range launch is
``grid = gsize / lsize``, ``block = lsize``. A Python range kernel's launch is the
runtime's (:mod:`pysycl._kernels.rangesize`: blocks of 256, 1-D or 32 x 8 for a 2-D/3-D
range, the kernel loops over the items), made by the base ``Launch``. A ``sycl.kernel`` object's range launch
(:func:`launch_native`) has no work-group size, and CUDA has no partial blocks while its
image computes the global range as ``nctaid * ntid``: the block is the largest divisor
of the range within the device's limits (:func:`block_for`), so the grid covers it.

Local accessors are offsets into the launch's dynamic shared memory
(:mod:`pysycl._backends.cuda.build`): :class:`LocalMem` arguments get consecutive
16-byte-aligned offsets (1024-byte aligned from 1 KiB up, :func:`local_offset`), and their
total is the launch's shared memory bytes.
"""

from __future__ import annotations

import struct
import sys
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from pysycl._backends.cuda import driver as d
from pysycl._backends.cuda import graphs as _graphs
from pysycl._backends.cuda.driver import cu
from pysycl._backends.cuda.objects import (
    WRONG_CONTEXT,
    _current,  # .ctx: what this thread made current last (the launch's cheap check)
    make_current,
)
from pysycl._backends.launching import (
    Launch,
    hold,
    launch,
    prepare,
    prepared,
    same_holds,
    same_signs,
)
from pysycl._core.abi import PROPS_ATTR
from pysycl._core.exceptions import errc, exception
from pysycl._kernels import bounds as _bounds
from pysycl._kernels.cache import kernels
from pysycl._memory.usm import usm_pointer
from pysycl._memory.usm_api import PRUNE_AT, prune

if TYPE_CHECKING:
    from pysycl._backends.launching import LaunchingExecutor
    from pysycl._kernels.cache import Kernel

__all__ = ["CUDALaunch", "LocalMem", "block_for", "launch", "launch_native", "pack_native",
           "prepare", "prepared", "relaunch"]

try:  # the launch in one C call (pysycl/_backends/cuda/_native.c), built where a compiler was
    from pysycl._backends.cuda import _native as _ext
    from pysycl._backends.cuda._native import launch as _native
    from pysycl._backends.cuda._native import wait as wait_native
except ImportError:  # the bindings' calls instead
    _ext = _native = wait_native = None

_lock = threading.Lock()
_now = time.perf_counter
_launch_kernel = cu.cuLaunchKernel if cu is not None else None
_record = cu.cuEventRecord if cu is not None else None
#: the driver's ``cuLaunchKernel``, ``cuEventRecord``, ``cuEventQuery`` and ``cuStreamQuery``
#: for ``_native`` (set once the driver is loaded)
entries: tuple[int, ...] = ()


def bind_driver(driver: Any) -> None:
    """The driver loaded after this module: its aliases (``driver._bind_loaded``)."""
    global _launch_kernel, _record
    _launch_kernel, _record = driver.cuLaunchKernel, driver.cuEventRecord


def native_launch() -> bool:
    """Whether remembered launches and waits go through ``_native`` (the extension was built
    and the driver's entry points were found)."""
    global entries
    if _native is None:
        return False
    if not entries:
        found = d.entry_points("cuLaunchKernel", "cuEventRecord", "cuEventQuery",
                               "cuStreamQuery")
        if not all(found):
            return False
        entries = found
    return True


_refs = sys.getrefcount


def _unobserved() -> int:
    """What ``sys.getrefcount`` says of an executor's newest event that nothing else refers
    to, read as :meth:`CUDALaunch.enqueue` reads it (its ``ex.last`` and one local).

    A launch records its command's ``CUevent`` after the kernel; in a loop of launches whose
    events are dropped at once (``q.parallel_for(...)`` as a statement) the previous event is
    referred to only by the queue, and recording *it* again for the new command saves an
    event object and its return to the pool (~0.4 us a launch on an H200 host). An event
    anything else holds (a ``sycl.event``, a dependency, a graph) is never recorded again.
    Measured here, not assumed: interpreters differ in what the count includes."""
    class Holder:
        __slots__ = ("last",)

    ex = Holder()
    ex.last = object()
    ev = ex.last
    return _refs(ev)


_UNOBSERVED = _unobserved()

#: the largest block a range launch picks (a multiple of the warp where the range allows)
RANGE_BLOCK = 256


class Event:
    """A command's completion: a ``CUevent`` of its executor's pool, recorded on the stream;
    it goes back to the pool when the last reference goes."""

    __slots__ = ("__weakref__", "h", "pool")

    def __init__(self, h: Any, pool: list[Any]) -> None:
        self.h, self.pool = h, pool

    def __del__(self) -> None:
        self.pool.append(self.h)


class ProfiledEvent(Event):
    """An event of a profiling queue: also the ``CUevent`` recorded before the command and
    the host's clock at its submission (``time.monotonic_ns``)."""

    __slots__ = ("start", "submit")

    def __init__(self, h: Any, pool: list[Any], start: Any, submit: int) -> None:
        super().__init__(h, pool)
        self.start, self.submit = start, submit

    def __del__(self) -> None:
        self.pool.append(self.h)
        if self.start is not None:
            self.pool.append(self.start)


def local_offset(shm: int, nbytes: int) -> int:
    """Where a local buffer of ``nbytes`` goes after ``shm`` bytes of dynamic shared memory:
    16-byte aligned, 1024-byte aligned from 1 KiB up (a work-group matrix's 128-byte
    swizzle repeats every 1024 bytes from the buffer's start: ``wgmma`` reads it so)."""
    a = 1024 if nbytes >= 1024 else 16
    return -(-shm // a) * a


class LocalMem:
    """A local accessor's memory: ``nbytes`` of the launch's dynamic shared memory."""

    __slots__ = ("nbytes",)

    def __init__(self, nbytes: int) -> None:
        self.nbytes = int(nbytes)

    def __eq__(self, other: object) -> bool:
        return type(other) is LocalMem and other.nbytes == self.nbytes

    def __hash__(self) -> int:
        return hash(("local", self.nbytes))


#: CUDA's largest block per dimension (x, y, z)
MAX_BLOCK = (1024, 1024, 64)


def block_for(gsize: tuple[int, ...], limit: int = RANGE_BLOCK) -> tuple[int, ...]:
    """The block of a range launch over ``gsize`` (native order): per dimension the largest
    divisor of the size that keeps the block within ``limit`` work-items (x first) and
    within CUDA's per-dimension limits."""
    block = []
    left = limit
    for n, cap in zip(gsize, MAX_BLOCK, strict=False):
        b = 1
        for c in range(min(n, left, cap), 0, -1):
            if n % c == 0:
                b = c
                break
        block.append(b)
        left = max(left // b, 1)
    return tuple(block)


def _char(dt: Any) -> str:
    """The ``struct`` code of one argument (None: a pointer, a local offset)."""
    if dt is None:
        return "Q"
    dt = np.dtype(dt)
    if dt.fields is None and dt.char in "?bBhHiIlLqQefd":
        return {"l": "q", "L": "Q"}.get(dt.char, dt.char)
    return f"{dt.itemsize}s"


class CUDALaunch(Launch):
    """A Python kernel built for one CUDA queue (``clk``: its :class:`Built`), its grid and
    block, and the packed argument buffer. ``primes``: whether it keeps a prime for the C
    relaunch (the C call is built, the queue does not profile); ``primer`` that prime
    (``_native.Primed``, made at the first), ``primed`` the prime while it holds (the
    buffer holds the values it was updated with), else None."""

    __slots__ = ("argp", "argv", "block", "buf", "fmt", "grid", "head", "last", "primed",
                 "primer", "primes", "raw", "rec", "reca", "shmem")

    def __init__(self, ex: LaunchingExecutor, k: Kernel, clk: Any, kind: str, space: Any,
                 gsize: tuple[int, ...], lsize: tuple[int, ...] | None) -> None:
        super().__init__(ex, k, clk, kind, space, gsize, lsize)
        gsize, lsize = self.gsize, self.lsize  # a range launch's: the runtime's choice
        block = lsize if lsize is not None else block_for(gsize, min(RANGE_BLOCK,
                                                                     clk.max_threads))
        grid = tuple(g // b for g, b in zip(gsize, block, strict=True))
        self.grid = (*grid, 1, 1, 1)[:3]
        self.block = (*block, 1, 1, 1)[:3]
        #: cuLaunchKernel's first seven arguments: the function, grid and block
        self.head = (clk.fn, *self.grid, *self.block)
        self.layout(k.arg_dtypes)
        self.shmem = 0
        self.last: list[Any] | None = None
        #: the record ``_native.launch`` reads (its layout: _native.c); None: the bindings
        self.rec: np.ndarray | None = None
        self.reca = 0
        if native_launch():
            self.rec = np.array([*entries[:2], int(clk.fn), *self.grid, *self.block, 0,
                                 int(ex.native), self.argp], np.uint64)
            self.reca = self.rec.ctypes.data
        self.primed: Any = None
        self.primer: Any = None
        self.primes = bool(self.reca) and _ext is not None and not ex.profiling

    def layout(self, dtypes: Sequence[Any]) -> None:
        """The argument buffer of arguments of ``dtypes`` (None: a pointer) and the array of
        pointers to each value in it, ``cuLaunchKernel``'s ``kernelParams``."""
        chars = [_char(t) for t in dtypes]
        self.raw = tuple(i for i, c in enumerate(chars) if c.endswith("s"))
        self.fmt = "@" + "".join(chars)
        size = struct.calcsize(self.fmt)
        self.buf = np.zeros(max(size, 8), np.uint8)
        base = self.buf.ctypes.data
        offsets = [struct.calcsize("@" + "".join(chars[:i]) + chars[i]) - struct.calcsize(
            "@" + chars[i]) for i in range(len(chars))]
        self.argv = np.array([base + o for o in offsets] or [0], np.uint64)
        self.argp = self.argv.ctypes.data if chars else 0

    def _pack(self, args: list[Any]) -> None:
        """Write ``args`` into the argument buffer (local memory: offsets, and the total);
        the C relaunch's prime, made for the buffer's last values, goes."""
        self.primed = None
        vals = list(args)
        shm = 0
        for i, v in enumerate(vals):
            if type(v) is LocalMem:
                shm = local_offset(shm, v.nbytes)
                vals[i] = shm
                shm += -(-v.nbytes // 16) * 16
        for i in self.raw:
            vals[i] = np.asarray(vals[i]).tobytes()
        if shm:
            self.clk.allow_shared(shm)
        struct.pack_into(self.fmt, self.buf, 0, *vals)
        self.shmem = shm
        if self.rec is not None:
            self.rec[9] = shm

    # long: the one enqueue of every launch, in one frame (helper calls cost ~50 ns each)
    def enqueue(self, args: list[Any], holds: Any, wait_for: Sequence[Any] | None,
                bound: dict[Any, list[Any]] | None = None, seen: tuple[Any, ...] | None = None
                ) -> Any:
        """Pack ``args`` (unless they are this launch's last ones), wait for ``wait_for`` on
        the stream, launch, record the command's event and hold ``holds`` until it
        completes; ``seen``: the values the refresh of a remembered launch read
        (:func:`~pysycl._backends.launching.launch`), which prime the C relaunch once the
        launch succeeded (any other launch drops the prime)."""
        ex = self.ex
        dq = ex.inflight
        if getattr(_current, "ctx", None) is not ex.cuctx:  # another GPU's, or none
            make_current(ex.cuctx)
        with _lock:  # the argument buffer is this launch's: one launch at a time
            self.primed = None
            last = self.last
            if bound is None or last != args or (self.floats
                                                 and not same_signs(last, args, self.floats)):
                self._pack(args)
                self.last = args if bound is not None else None
            if wait_for:
                ex.stream_waits(wait_for)
            if ex.profiling:
                ev = self._profiled(ex)
            else:
                ev = ex.last
                # the newest command's event, if nothing but the queue refers to it (its
                # sycl.event is gone): recorded again for this command (see _unobserved)
                if type(ev) is not Event or _refs(ev) != _UNOBSERVED + (
                        1 if dq and dq[-1][0] is ev else 0):
                    ev = None
                pool = ex.pool
                h = ev.h if ev is not None else pool.pop() if pool else ex.new_event()
                if self.reca:  # launch and record in one C call (_launch, inlined)
                    c = _native(self.reca, h)
                else:
                    c = self._launch(h)
                if c in WRONG_CONTEXT:  # another library changed the thread's context
                    make_current(ex.cuctx)
                    c = self._launch(h)
                if c:
                    if ev is None:
                        pool.append(h)
                    raise ex.launch_failed(c, self.k)
                if ev is None:
                    ev = Event(h, pool)
            if holds is not None:
                prev = dq[-1] if dq else None  # (ev recorded again: its entry holds these)
                if prev is None or prev[0] is not ev or not same_holds(prev[1], holds):
                    hold(ex, self, ev, holds)
            ex.last = ev
            ex.shape = self
            if seen is not None and self.primes:  # the buffer holds what the refresh read
                self._prime(seen)
        if holds is not None and len(dq) > PRUNE_AT:
            prune(ex)
        return ev

    def again(self, args: list[Any], wait_for: Sequence[Any] | None) -> Any:
        """:meth:`enqueue` of the arguments this launch was last enqueued with (a command
        group submitted again: :mod:`pysycl._kernels.again`): one C call where
        nothing is to wait for and ``_native`` was built (``enqueue_again``: it refuses
        what the Python way must do)."""
        if not wait_for and _again is not None:
            ev = _again(self, args)
            if ev is not None:
                return ev
        return self.enqueue(args, None, wait_for, self.bound)

    def _prime(self, seen: tuple[Any, ...]) -> None:
        """The C relaunch's prime: the values the refresh read for the arguments packed now
        (under the enqueue lock). The refresh of a launch keeps its shape (``_remember``
        replaces it only by the same function), so its modes and names do too."""
        pr = self.primer
        if pr is None:
            r = self.refresh
            pr = self.primer = _ext.Primed(self.kind, self.space, self.gen, self.k.props,
                                           self.k, self.reca, r.modes, r.names)
        if pr.update(seen):
            self.primed = pr

    def _launch(self, h: Any) -> int:
        """Launch (the arguments packed) and record event ``h`` after it (None: no event):
        the driver's code."""
        if self.reca:  # launch and record in one C call
            return _native(self.reca, h)
        r = _launch_kernel(*self.head, self.shmem, self.ex.native, self.argp, 0)
        if r[0] or h is None:
            return int(r[0])
        return int(_record(h, self.ex.native)[0])

    def prebound(self, args: list[Any]) -> Any:
        """A command graph's kernel node: this launch with ``args`` (:mod:`.graphs`)."""
        return _graphs.Node(self, args)

    replayer = staticmethod(_graphs.replayer)

    def launch_bare(self, args: list[Any]) -> None:
        """Launch with ``args``, recording no event (a CUDA graph's capture: the caller holds
        the enqueue lock); the next launch packs its own arguments again."""
        self._pack(args)
        self.last = None
        c = self._launch(None)
        if c:
            raise self.ex.launch_failed(c, self.k)

    def _profiled(self, ex: Any) -> Any:
        """The launch on a profiling queue: timed events before and after it."""
        ex.begin()
        c = self._launch(None)
        if c:
            raise ex.launch_failed(c, self.k)
        return ex.record()


#: ``CUDAExecutor.launch``: the C relaunch (a method descriptor: ``ex.launch(q, kind, space,
#: fn, name)``), which takes :func:`~pysycl._backends.launching.launch` whenever it cannot
#: launch a primed launch itself; that function itself where the extension was not built.
relaunch: Any = launch
#: ``_native.enqueue_again`` (:meth:`CUDALaunch.again`), None where it was not built
_again: Any = None
if _ext is not None:
    _ext.configure(launch, Event, _lock, _current, kernels, _bounds.mode, kernels.stats,
                   usm_pointer, (np.number, np.bool_), PRUNE_AT, PROPS_ATTR)
    relaunch = _ext.Relaunch()
    _again = _ext.enqueue_again


def _value_bytes(name: str, i: int, a: Any) -> bytes:
    """The bytes of ``sycl.kernel`` argument ``i``: a pointer (an int: device memory, a USM
    address) is 8 bytes, a numpy scalar its own (bool: one byte)."""
    if isinstance(a, np.generic):
        return bytes([1 if a else 0]) if a.dtype == bool else a.tobytes()
    if isinstance(a, int) and not isinstance(a, bool):
        return struct.pack("@Q", a)
    raise exception(errc.kernel_argument, f"kernel {name!r} argument {i}: a "
                    f"{type(a).__name__} cannot be passed to a CUDA kernel")


def pack_native(name: str, args: Sequence[Any], sizes: Sequence[int] | None
                ) -> tuple[np.ndarray, list[int], int]:
    """A ``sycl.kernel`` launch's arguments for ``cuLaunchKernel``: (one buffer holding every
    value 8-byte aligned, each value's offset in it, dynamic shared memory bytes). Local
    memory (``("local", nbytes)``) is an offset into the launch's dynamic shared memory, 16
    bytes aligned, as :class:`CUDALaunch` passes it. ``sizes``: the kernel's parameter sizes
    (``cuFuncGetParamInfo``), each value checked against its parameter's."""
    vals, shm = [], 0
    for i, a in enumerate(args):
        if isinstance(a, tuple) and a and a[0] == "local":
            shm = local_offset(shm, int(a[1]))
            vals.append(struct.pack("@Q", shm))
            shm += -(-max(int(a[1]), 1) // 16) * 16
        else:
            vals.append(_value_bytes(name, i, a))
        if sizes is not None and i < len(sizes) and len(vals[-1]) != sizes[i]:
            what = "a local_accessor" if isinstance(a, tuple) else (
                f"a numpy {a.dtype}" if isinstance(a, np.generic) else "a pointer")
            raise exception(errc.kernel_argument, f"kernel {name!r} argument {i} ({what}, "
                            f"{len(vals[-1])} bytes) does not fit its parameter {i} "
                            f"({sizes[i]} bytes)")
    offsets, total = [], 0
    for v in vals:
        offsets.append(total)
        total += -(-len(v) // 8) * 8
    buf = np.zeros(max(total, 8), np.uint8)
    for o, v in zip(offsets, vals, strict=True):
        buf[o:o + len(v)] = np.frombuffer(v, np.uint8)
    return buf, offsets, shm


def launch_native(ex: Any, k: Any, gsize: tuple[int, ...], lsize: tuple[int, ...] | None,
                  args: Sequence[Any], wait_for: Sequence[Any] | None,
                  holds: Any = None) -> Any:
    """``DeviceExecutor.launch_native`` on a CUDA stream: ``sycl.kernel`` object ``k`` (a
    :class:`pysycl._backends.cuda.programs.Kernel`) over native sizes, its ``set_arg``
    values by index; a range launch's block as :func:`block_for` picks it."""
    name = k.entry
    block = lsize if lsize is not None else block_for(gsize, min(RANGE_BLOCK, k.max_threads))
    n = int(np.prod(block))
    if n > k.max_threads or any(b > c for b, c in zip(block, MAX_BLOCK, strict=False)):
        raise exception(errc.nd_range, f"kernel {name!r}: a work-group of {tuple(block)} "
                        f"work-items (fastest first); on {ex.device.display_name!r} it takes "
                        f"at most {k.max_threads}, and {MAX_BLOCK} per dimension")
    grid = tuple(g // b for g, b in zip(gsize, block, strict=True))
    g3, b3 = (*grid, 1, 1, 1)[:3], (*block, 1, 1, 1)[:3]
    sizes = k.param_sizes() if hasattr(k, "param_sizes") else None
    buf, offsets, shm = pack_native(name, args, sizes)
    free = ex.kernel_limits(k)[2]
    if shm > free:
        raise exception(errc.nd_range, f"kernel {name!r}: its local accessors need "
                        f"{shm} bytes of local memory per work-group, more than the "
                        f"{free} bytes {ex.device.display_name!r} has for this kernel")
    argv = np.array([buf.ctypes.data + o for o in offsets] or [0], np.uint64)
    with _lock:
        if shm:
            k.allow_shared(shm)
        if wait_for:
            ex.stream_waits(wait_for)
        ex.begin()  # a profiling queue: the command's start
        r = _launch_kernel(k.fn, g3[0], g3[1], g3[2], b3[0], b3[1], b3[2], shm, ex.native,
                           argv.ctypes.data if args else 0, 0)  # the driver copies the values
        if r[0]:
            code = int(r[0])
            if d.is_sticky(code):
                raise ex.failed(code, f"kernel {name!r}: launch")
            raise d.error(code, f"kernel {name!r}: launch failed",
                          errc.nd_range if code == 701 else errc.kernel)
        ev = ex.record()
        if holds is not None:
            ex.inflight.append((ev, holds))
    ex.last = ev
    ex.shape = None
    return ev

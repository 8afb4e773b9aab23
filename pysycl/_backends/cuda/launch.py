"""Kernel launches on a CUDA stream: :class:`CUDALaunch`, the ``cuLaunchKernel`` of a
backend-neutral :class:`~pysycl._backends.launching.Launch`.

A ``CUfunction`` keeps no arguments: ``cuLaunchKernel`` takes an array of pointers to
the argument values. Each launch (built kernel, sizes, queue) packs its values into one
buffer of its own with ``struct.pack_into`` -- only when they differ from its last ones --
and keeps the pointer array to it, so the binding call gets one integer (measured on an
H200: 4.3 us per back-to-back launch this way, 4.6 us with the bindings' tuple packing,
CuPy's ``RawKernel`` 6.1 us; docs/design/cuda.md §1).

Sizes: ``gsize``/``lsize`` come in native order (x fastest). An nd_range launch is
``grid = gsize / lsize``, ``block = lsize``. A range launch has no work-group size, and
CUDA has no partial blocks while the PTX image computes the global range as
``nctaid * ntid``: the block is the largest divisor of the range within the device's
limits (:func:`block_for`), so the grid covers the range exactly.

Local accessors are offsets into the launch's dynamic shared memory
(:mod:`pysycl._backends.cuda.build`): :class:`LocalMem` arguments get consecutive
16-byte-aligned offsets, and their total is the launch's shared memory bytes.
"""

from __future__ import annotations

import struct
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from pysycl._backends.cuda import driver as d
from pysycl._backends.cuda.driver import cu
from pysycl._backends.launching import Launch, launch, prepare, prepared, same_signs
from pysycl._core.exceptions import errc
from pysycl._memory.usm_api import PRUNE_AT, prune

if TYPE_CHECKING:
    from pysycl._backends.launching import LaunchingExecutor
    from pysycl._kernels.cache import Kernel

__all__ = ["CUDALaunch", "LocalMem", "block_for", "launch", "prepare", "prepared"]

_lock = threading.Lock()
_now = time.perf_counter
_launch_kernel = cu.cuLaunchKernel if cu is not None else None
_record = cu.cuEventRecord if cu is not None else None
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
    block, and the packed argument buffer."""

    __slots__ = ("argp", "argv", "block", "buf", "fmt", "grid", "head", "last", "raw", "shmem")

    def __init__(self, ex: LaunchingExecutor, k: Kernel, clk: Any, kind: str, space: Any,
                 gsize: tuple[int, ...], lsize: tuple[int, ...] | None) -> None:
        super().__init__(ex, k, clk, kind, space, gsize, lsize)
        block = lsize if lsize is not None else block_for(gsize, min(RANGE_BLOCK,
                                                                     clk.max_threads))
        grid = tuple(g // b for g, b in zip(gsize, block, strict=True))
        self.grid = (*grid, 1, 1, 1)[:3]
        self.block = (*block, 1, 1, 1)[:3]
        #: cuLaunchKernel's first seven arguments: the function, grid and block
        self.head = (clk.fn, *self.grid, *self.block)
        chars = [_char(t) for t in k.arg_dtypes]
        self.raw = tuple(i for i, c in enumerate(chars) if c.endswith("s"))
        self.fmt = "@" + "".join(chars)
        size = struct.calcsize(self.fmt)
        self.buf = np.zeros(max(size, 8), np.uint8)
        base = self.buf.ctypes.data
        offsets = [struct.calcsize("@" + "".join(chars[:i]) + chars[i]) - struct.calcsize(
            "@" + chars[i]) for i in range(len(chars))]
        self.argv = np.array([base + o for o in offsets] or [0], np.uint64)
        self.argp = self.argv.ctypes.data if chars else 0
        self.shmem = 0
        self.last: list[Any] | None = None

    def _pack(self, args: list[Any]) -> None:
        """Write ``args`` into the argument buffer (local memory: offsets, and the total)."""
        vals = list(args)
        shm = 0
        for i, v in enumerate(vals):
            if type(v) is LocalMem:
                vals[i] = shm
                shm += -(-v.nbytes // 16) * 16
        for i in self.raw:
            vals[i] = np.asarray(vals[i]).tobytes()
        if shm:
            self.clk.allow_shared(shm)
        struct.pack_into(self.fmt, self.buf, 0, *vals)
        self.shmem = shm

    def enqueue(self, args: list[Any], holds: Any, wait_for: Sequence[Any] | None,
                bound: dict[Any, list[Any]] | None = None) -> Any:
        """Pack ``args`` (unless they are this launch's last ones), wait for ``wait_for`` on
        the stream, launch, record the command's event and hold ``holds`` until it
        completes."""
        ex = self.ex
        with _lock:  # the argument buffer is this launch's: one launch at a time
            last = self.last
            if bound is None or last != args or (self.floats
                                                 and not same_signs(last, args, self.floats)):
                self._pack(args)
                self.last = args if bound is not None else None
            stream = ex.native
            if wait_for:
                ex.stream_waits(wait_for)
            if ex.profiling:
                ex.begin()
            r = _launch_kernel(*self.head, self.shmem, stream, self.argp, 0)
            if r[0]:
                raise ex.launch_failed(int(r[0]), self.k)
            if ex.profiling:
                ev = ex.record()
            else:
                pool = ex.pool
                h = pool.pop() if pool else ex.new_event()
                if _record(h, stream)[0]:
                    pool.append(h)
                    raise ex.launch_failed(int(_record(h, stream)[0]), self.k)
                ev = Event(h, pool)
            if holds is not None:
                dq = ex.inflight
                prev = dq[-1] if dq and ex.shape is self else None
                if (prev is not None and prev[0] is ex.last and type(holds) is tuple
                        and type(prev[1]) is tuple and prev[1] == holds):
                    dq[-1] = (ev, prev[1])
                else:
                    dq.append((ev, holds))
        ex.last = ev
        ex.shape = self
        if holds is not None and len(ex.inflight) > PRUNE_AT:
            prune(ex)
        return ev


def launch_error(code: int, k: Kernel) -> Any:
    """The ``sycl.exception`` of a refused ``cuLaunchKernel``."""
    return d.error(code, f"{k.where}: kernel launch failed", errc.kernel)

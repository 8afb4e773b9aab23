"""The Python around a remembered CUDA launch, measured on a machine without a GPU.

``q.parallel_for(r, k)`` runs through the CUDA backend's real code -- the queue's fast path,
the executor's ``launch``, the remembered :class:`~pysycl._backends.cuda.launch.CUDALaunch`
and the C extension ``_native`` -- with the driver's entry points pointed at a C function
that does nothing and returns 0 (libc's ``strlen`` of an empty string, as
tests/cuda_backend/test_cuda_native.py does), so what is timed is pysycl's own work per
launch. The executor and the launch are made without a driver (``object.__new__`` and their
fields set as ``CUDAExecutor``/``CUDALaunch`` set them); the kernel is compiled for the CPU
(its arguments and captures are the same on every target). Rows, interleaved round by round
(300 rounds of 1,000 launches; the median and the best round: on a shared machine the best
is the steadier figure):

* ``python path``: the remembered launch in Python (``launching.launch``, the refresh,
  ``CUDALaunch.enqueue``; the C launch call);
* ``C relaunch``: the one C call of ``_native.Relaunch`` (where this tree has it);
* ``changing capture``: a captured number that changes at every launch (1,000 functions of
  one code): the Python way every time, after the C call's refusal where there is one;
* ``C launch only``: ``_native.launch(record, event)``, the floor.

    python benchmarks/bench_relaunch_cpu.py

On a GPU the driver's own time (cuLaunchKernel + cuEventRecord, ~3.5-4 us) comes on top:
benchmarks/bench_cuda_launch.py measures that, with CuPy beside it.
"""

from __future__ import annotations

import ctypes
import statistics
import time
from collections import deque
from typing import Any

import numpy as np

import pysycl as sycl
from pysycl._backends.cuda import launch as cl
from pysycl._backends.cuda import objects as cobj
from pysycl._backends.cuda.executor import CUDAExecutor
from pysycl._kernels.argplan import refresh_for
from pysycl._kernels.cache import kernels

N = 1000
ROUNDS = 300
_EMPTY = ctypes.create_string_buffer(1)
#: a C function that returns 0 whatever its arguments (``strlen("")``) and a handle it reads
NOOP = ctypes.cast(ctypes.CDLL(None).strlen, ctypes.c_void_p).value
EMPTY = ctypes.addressof(_EMPTY)


def stub_executor() -> Any:
    """A ``CUDAExecutor`` with its fields as ``__init__`` sets them, made without a driver."""
    ex = object.__new__(CUDAExecutor)
    ex.launches, ex.inflight, ex.pool = {}, deque(), [EMPTY] * 8
    ex.last = ex.shape = ex.quick = ex.started = ex.ref = None
    ex.cuctx, ex.native, ex.profiling, ex.since = object(), EMPTY, False, 0.0
    ex.submitted = ex.ref_ns = 0
    return ex


def stub_launch(ex: Any, ln0: Any) -> Any:
    """A ``CUDALaunch`` of ``ln0``'s kernel (a launch of the CPU queue) on ``ex``, its
    record pointing at the no-op entry points."""
    ln = object.__new__(cl.CUDALaunch)
    for a in ("k", "kind", "space", "gsize", "lsize", "tail", "kinds", "floats", "pointers",
              "printer", "gen"):
        setattr(ln, a, getattr(ln0, a))
    ln.ex, ln.clk, ln.bound = ex, None, {}
    ln.grid, ln.block = (1, 1, 1), (256, 1, 1)
    if hasattr(cl.CUDALaunch, "layout"):
        ln.layout(ln0.k.arg_dtypes)
    else:  # (the tree before the C relaunch: CUDALaunch.__init__'s layout, inlined)
        chars = [cl._char(t) for t in ln0.k.arg_dtypes]
        ln.raw, ln.fmt = (), "@" + "".join(chars)
        ln.buf = np.zeros(64, np.uint8)
        ln.argv = np.array([ln.buf.ctypes.data + 8 * i for i in range(len(chars))], np.uint64)
        ln.argp = ln.argv.ctypes.data
    ln.head, ln.shmem, ln.last = (EMPTY, *ln.grid, *ln.block), 0, None
    ln.rec = np.array([NOOP, NOOP, EMPTY, *ln.grid, *ln.block, 0, EMPTY, ln.argp], np.uint64)
    ln.reca = ln.rec.ctypes.data
    if hasattr(cl.CUDALaunch, "primed"):
        ln.primed, ln.primer, ln.primes = None, None, True
    return ln


def make_kernel(p: Any, v: Any) -> Any:
    def k(i):  # type: ignore[no-untyped-def]
        p[i] = p[i] + v
    return k


def _compile_queue() -> sycl.queue:
    """A queue of a device that compiles Python kernels: the CPU's OpenCL where there is
    one, else the default device (on a GPU machine, the GPU)."""
    try:
        return sycl.queue(sycl.cpu_selector_v)
    except sycl.exception:
        return sycl.queue()


def setup() -> tuple[Any, ...]:
    cpu = _compile_queue()
    p = sycl.malloc_device(1024, cpu, dtype=np.float32)
    r = sycl.range(1024)
    k0 = make_kernel(p, np.float32(1))
    cpu.parallel_for(r, k0)
    cpu.parallel_for(r, k0).wait()
    ln0 = cpu.executor.launches[k0.__code__]
    ptr = p + 0  # the same memory, its CUDA kernel argument: the address
    ptr.native_arg = int(p)
    k = make_kernel(ptr, np.float32(1))
    ex = stub_executor()
    ln = stub_launch(ex, ln0)
    seen = {"seen": True} if "seen" in refresh_for.__code__.co_varnames else {}
    ln.refresh, ln.want = refresh_for(k, ln0.k, ln.tail, **seen)
    ex.launches[k.__code__] = ln
    q = sycl.queue(cpu.get_device())  # its executor: the stub
    q.executor = ex
    cobj._current.ctx = ex.cuctx
    changing = [make_kernel(ptr, np.float32(v)) for v in range(N)]
    return q, r, k, ln, ex, (cpu, p, changing)


def main() -> None:
    q, r, k, ln, ex, keep = setup()
    relaunch = hasattr(cl.CUDALaunch, "primed")

    def python_path() -> None:
        if relaunch:
            ln.primes, ln.primed = False, None
        for _ in range(N):
            q.parallel_for(r, k)
        if relaunch:
            ln.primes = True

    def c_relaunch() -> None:
        for _ in range(N):
            q.parallel_for(r, k)

    h, reca, native = EMPTY, ln.reca, cl._native

    def floor() -> None:
        for _ in range(N):
            native(reca, h)

    changing = keep[2]

    def changing_capture() -> None:
        for fn in changing:
            q.parallel_for(r, fn)
        q.parallel_for(r, k)

    cases = {"python path": python_path, "C launch only": floor,
             "changing capture": changing_capture}
    if relaunch:
        cases["C relaunch"] = c_relaunch
    hits0 = kernels.stats["memory_hits"]
    res: dict[str, list[float]] = {c: [] for c in cases}
    for _ in range(ROUNDS):
        for c, fn in cases.items():
            t0 = time.perf_counter()
            fn()
            res[c].append((time.perf_counter() - t0) / N * 1e6)
    print(f"per launch (us), no-op driver, {ROUNDS} rounds of {N}; "
          f"remembered-launch hits: {kernels.stats['memory_hits'] - hits0}")
    for c, v in res.items():
        print(f"{c:17s} median {statistics.median(v):6.3f}  best {min(v):6.3f}")
    ex.inflight.clear()
    sycl.free(keep[1], keep[0])


if __name__ == "__main__":
    main()

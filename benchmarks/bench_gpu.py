"""Issue #11's GPU benchmark: pysycl Python kernels beside OpenCL C and CuPy, side by side.

Run it from the repository root (no ``make``, no package index; it needs numpy,
pyopencl and pysycl's own dependencies, and uses CuPy if it imports)::

    python benchmarks/bench_gpu.py --json gpu.json        # the first OpenCL GPU, all rows
    python benchmarks/bench_gpu.py --rows triad,matmul    # only some rows
    python benchmarks/bench_gpu.py --device cpu --small   # smoke test on Intel's CPU device

with an interpreter that imports pysycl (``.venv/bin/python``, or ``PYTHONPATH=.
python3`` where numpy, numba, llvmlite and pyopencl are installed). It prints one
markdown table (stdout; progress and tracebacks go to stderr) and, with ``--json
FILE``, every number and sample. ``--device gpu`` (default) takes the first OpenCL
GPU pysycl lists; ``--device cpu`` the CPU device that runs Python kernels
(SPIR-V). Sizes: ``--stream-log2`` (28), ``--matmul-n`` (4096), ``--stencil-n``
(8192); repetitions: ``--reps``, ``--batch``, ``--matmul-reps``, ``--matmul-batch``,
``--latency-reps``, ``--compile-reps``; ``--small`` picks quick ones for all.

Every row runs in its own child process (this script with ``--no-isolate --rows
ROW``; the parent merges their JSON), so a crash (segfault, ``LLVM ERROR`` abort) or a
hang (``--row-timeout``, 150 s) costs one row, not the run; ``--no-isolate`` runs all
rows in this process. A device the selector cannot find exits with code 2 and the
list of visible devices.

Columns: pysycl (a Python kernel through ``q.submit``, buffers and accessors),
OpenCL C (the same algorithm hand-written, through pyopencl, on the same device, in a
context of its own so that one peer's kernel fault cannot fail the others) and CuPy
(only if ``import cupy`` works and the device is NVIDIA; "n/a" otherwise). Rows (``--rows`` names):

* ``copy``: device-to-device copy of 2^28 float32, read + write bytes counted:
  ``cl.enqueue_copy`` buffer to buffer (the reference bandwidth every other GB/s is
  divided by, "% of copy"), pysycl ``handler.copy`` accessor to accessor, CuPy
  ``cudaMemcpyAsync`` device to device.
* ``triad`` ``a[i] = b[i] + s*c[i]`` and ``vadd`` ``c[i] = a[i] + b[i]`` of 2^28 float32
  (12 bytes per element); CuPy: an ``ElementwiseKernel`` and ``cupy.add(out=)``.
* ``matmul``: 4096^2 float32, 16x16 work-groups with two 16x16 local tiles and
  barriers (the kernel of bench_ndrange.py), GFLOP/s; CuPy: ``cupy.matmul``
  (cuBLAS SGEMM, a different algorithm: the reference). Checked on whole sampled rows
  and random entries against float64 numpy.
* ``reduce``: sum of 2^28 float32: ``sycl.reduction`` (one element per work-item, as
  a user writes it) vs a two-stage OpenCL C reduction (grid-stride loads and a local
  tree into one partial per work-group, then one work-group sums the partials) vs
  ``cupy.sum``; GB/s of the input; relative error against float64 numpy ≤ 2e-4.
* ``reduce_nd``: the same sum as an ``nd_range`` reduction in work-groups of 256, one
  element per work-item (it runs looped: ``pysycl_numba.looped``), beside the same peers.
* ``stencil``: one 2-D 5-point Jacobi sweep on 8192^2 float32 (borders copied),
  8 bytes per point (one read, one write); CuPy n/a (no single-kernel equivalent).
* ``submit``: ``q.submit(cg).wait()`` of a single_task with one accessor vs pyopencl
  ``kernel(queue, (1,), None, buf).wait()`` (as bench_submit.py); µs, time ratio.
  CuPy: a 1-element ElementwiseKernel launch + stream synchronize.
* ``compile``: fresh processes (``sys.executable``, ``PYSYCL_CACHE_DIR`` a new temporary
  folder, ``CUDA_CACHE_DISABLE=1`` so the NVIDIA driver's own JIT cache does not hide its
  build; ``--keep-driver-cache`` leaves it on) running a vector-add lambda: *cold*
  (empty cache: Numba + SPIR-V/PTX emission + driver build), *warm kernel cache* (second
  process, same folder: no Numba), and, through a kernel bundle (``declare_kernel`` +
  ``sycl.build`` + ``use_kernel_bundle``), *cold*, *warm kernel cache* (binaries
  removed) and *warm binary cache* (pysycl's per-device ``CL_PROGRAM_BINARIES`` cache,
  which only ``sycl.build`` uses). Reported: process start (spawn) to the checked first
  result, measured by this process; inside the child the import + queue time and the
  first ``submit().wait()`` (or ``build``); whether Numba was imported; the cache
  counters (``sycl.ext.kernel_cache_stats``); the files in the cache folder afterwards.

How it times: every peer's arrays are created and uploaded once and stay on the device.
Each peer runs once first and its result is compared with numpy; a failing or wrong
peer is reported (``error [k]`` / ``WRONG [k]``, details under the table) and not
timed. Then, round-robin over the peers (so drift hits all alike), one sample =
``--batch`` launches enqueued back to back followed by one wait (pysycl
``q.wait()``, pyopencl ``queue.finish()``, CuPy ``stream.synchronize()``), divided by
``--batch``; the table shows the median of ``--reps`` samples after one warm-up
sample. Wall clock (``time.perf_counter``), the same method for every peer: launch
overhead that the runtime overlaps with the device's work is hidden, overhead it
cannot overlap is counted. The ``submit`` row instead waits after every launch. Any
row or peer that fails is reported in the table; the run goes on.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform as _platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import pysycl as sycl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import OpenCLPeer

PEERS = ("pysycl", "opencl", "cupy")
ROWS = ("copy", "triad", "vadd", "matmul", "reduce", "reduce_nd", "stencil", "submit",
        "compile")
TS = 16   # matmul tile
WG = 256  # work-group size of the OpenCL C reduction

# The device choice as source text: evaluated here and pasted into the compile-time
# children, so both processes pick the same device.
_SELECTOR_SRC = {
    "gpu": "lambda d: 1 if d.has(sycl.aspect.gpu) else -1",  # the first GPU
    "cpu": "sycl.aspect_selector(sycl.aspect.cpu, sycl.aspect.ext_pysycl_spirv)",
}


# ---------------------------------------------------------------- OpenCL C peer
OPENCL_C = """
__kernel void triad(__global float *a, __global const float *b, __global const float *c,
                    float s) {
    size_t i = get_global_id(0); a[i] = b[i] + s * c[i];
}
__kernel void vadd(__global const float *a, __global const float *b, __global float *c) {
    size_t i = get_global_id(0); c[i] = a[i] + b[i];
}
#define TS 16
__kernel void matmul_tiled(__global const float *A, __global const float *B, __global float *C,
                           long n) {
    __local float As[TS][TS];
    __local float Bs[TS][TS];
    size_t li = get_local_id(1), lj = get_local_id(0);
    size_t i = get_global_id(1), j = get_global_id(0);
    float acc = 0.0f;
    for (long t = 0; t < n; t += TS) {
        As[li][lj] = A[i * n + t + lj];
        Bs[li][lj] = B[(t + li) * n + j];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TS; ++k) acc += As[li][k] * Bs[k][lj];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    C[i * n + j] = acc;
}
__kernel void reduce_partial(__global const float *x, __global float *partial, long n,
                             __local float *tmp) {
    size_t lid = get_local_id(0);
    float acc = 0.0f;
    for (long i = get_global_id(0); i < n; i += get_global_size(0)) acc += x[i];
    tmp[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t s = get_local_size(0) / 2; s > 0; s >>= 1) {
        if (lid < s) tmp[lid] += tmp[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) partial[get_group_id(0)] = tmp[0];
}
__kernel void reduce_final(__global const float *partial, __global float *out, long n,
                           __local float *tmp) {
    size_t lid = get_local_id(0), L = get_local_size(0);
    float a = 0.0f;
    for (long i = lid; i < n; i += L) a += partial[i];
    tmp[lid] = a;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t s = L / 2; s > 0; s >>= 1) {
        if (lid < s) tmp[lid] += tmp[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) out[0] = tmp[0];
}
__kernel void jacobi(__global const float *src, __global float *dst, long n) {
    long i = get_global_id(1), j = get_global_id(0);
    if (i == 0 || j == 0 || i == n - 1 || j == n - 1) {
        dst[i * n + j] = src[i * n + j];
    } else {
        dst[i * n + j] = 0.25f * (src[(i - 1) * n + j] + src[(i + 1) * n + j]
                                  + src[i * n + j - 1] + src[i * n + j + 1]);
    }
}
__kernel void one(__global int *o) { o[0] = 1; }
"""

_CL_ARGS: dict[str, list[Any] | None] = {
    "triad": [None, None, None, np.float32], "vadd": None,
    "matmul_tiled": [None, None, None, np.int64],
    "reduce_partial": [None, None, np.int64, None], "reduce_final": [None, None, np.int64, None],
    "jacobi": [None, None, np.int64], "one": None,
}


# ------------------------------------------------------------------- pysycl side
def _copy_cg(S: sycl.buffer, D: sycl.buffer) -> Callable[[sycl.handler], None]:
    def cg(h: sycl.handler) -> None:
        h.copy(S.get_access(h, sycl.access_mode.read),
               D.get_access(h, sycl.access_mode.write, properties=[sycl.no_init]))
    return cg


def _triad_cg(A: sycl.buffer, B: sycl.buffer, C: sycl.buffer, s: np.float32,
              n: int) -> Callable[[sycl.handler], None]:
    def cg(h: sycl.handler) -> None:
        a = A.get_access(h, sycl.access_mode.write, properties=[sycl.no_init])
        b = B.get_access(h, sycl.access_mode.read)
        c = C.get_access(h, sycl.access_mode.read)

        def triad(i: sycl.item) -> None:
            a[i] = b[i] + s * c[i]
        h.parallel_for(sycl.range(n), triad)
    return cg


def _vadd_cg(A: sycl.buffer, B: sycl.buffer, C: sycl.buffer, n: int) -> Callable[[sycl.handler], None]:
    def cg(h: sycl.handler) -> None:
        ra = A.get_access(h, sycl.access_mode.read)
        rb = B.get_access(h, sycl.access_mode.read)
        wc = C.get_access(h, sycl.access_mode.write, properties=[sycl.no_init])
        h.parallel_for(sycl.range(n), lambda i: wc.__setitem__(i, ra[i] + rb[i]))
    return cg


def _matmul_cg(A: sycl.buffer, B: sycl.buffer, C: sycl.buffer, n: int) -> Callable[[sycl.handler], None]:
    def cg(h: sycl.handler) -> None:
        a = A.get_access(h, sycl.access_mode.read)
        b = B.get_access(h, sycl.access_mode.read)
        c = C.get_access(h, sycl.access_mode.write, properties=[sycl.no_init])
        at = sycl.local_accessor(np.float32, sycl.range(TS, TS), h)
        bt = sycl.local_accessor(np.float32, sycl.range(TS, TS), h)
        nn = n

        def matmul_tiled(it: sycl.nd_item) -> None:
            li, lj = it.get_local_id(0), it.get_local_id(1)
            i, j = it.get_global_id(0), it.get_global_id(1)
            acc = np.float32(0)
            for t in range(0, nn, 16):
                at[li, lj] = a[i, t + lj]
                bt[li, lj] = b[t + li, j]
                it.barrier(sycl.access.fence_space.local_space)
                for k in range(16):
                    acc += at[li, k] * bt[k, lj]
                it.barrier(sycl.access.fence_space.local_space)
            c[i, j] = acc

        h.parallel_for(sycl.nd_range(sycl.range(n, n), sycl.range(TS, TS)), matmul_tiled)
    return cg


def _reduction_cg(X: sycl.buffer, S: sycl.buffer, n: int, nd: bool = False
                  ) -> Callable[[sycl.handler], None]:
    """The sum of ``X`` into ``S``: a range reduction, or (``nd``) an nd_range one in
    work-groups of ``WG``, one item a work-item."""
    init = [sycl.property.reduction.initialize_to_identity()]

    def cg(h: sycl.handler) -> None:
        x = X.get_access(h, sycl.access_mode.read)
        red = sycl.reduction(S, h, sycl.plus(), properties=init)
        if nd:
            h.parallel_for(sycl.nd_range(sycl.range(n), sycl.range(WG)), red,
                           lambda it, r: r.combine(x[it.get_global_id(0)]))
        else:
            h.parallel_for(sycl.range(n), red, lambda i, r: r.combine(x[i]))
    return cg


def _jacobi_cg(SRC: sycl.buffer, DST: sycl.buffer, n: int) -> Callable[[sycl.handler], None]:
    last = n - 1

    def cg(h: sycl.handler) -> None:
        src = SRC.get_access(h, sycl.access_mode.read)
        dst = DST.get_access(h, sycl.access_mode.write, properties=[sycl.no_init])

        def jacobi(it: sycl.item) -> None:
            i, j = it[0], it[1]
            if i == 0 or j == 0 or i == last or j == last:
                dst[i, j] = src[i, j]
            else:
                dst[i, j] = np.float32(0.25) * (src[i - 1, j] + src[i + 1, j]
                                                + src[i, j - 1] + src[i, j + 1])
        h.parallel_for(sycl.range(n, n), jacobi)
    return cg


def _single_cg(OUT: sycl.buffer) -> Callable[[sycl.handler], None]:
    def cg(h: sycl.handler) -> None:
        o = OUT.get_access(h, sycl.access_mode.write)
        h.single_task(lambda: o.__setitem__(0, 1))
    return cg


# ------------------------------------------------------------------ bookkeeping
class NotAvailableError(Exception):
    """A peer that does not exist here (no CuPy, not an NVIDIA device): "n/a"."""


class WrongResultError(Exception):
    """A peer's result differs from numpy's: reported, not timed."""


@dataclass
class Impl:
    """One peer's way of running a benchmark: launch (no wait), sync, fetch the result."""

    launch: Callable[[], object]
    sync: Callable[[], None]
    result: Callable[[], Any]


@dataclass
class Cell:
    """One peer's outcome in one row."""

    status: str = "n/a"            # ok | n/a | error | wrong
    value: float | None = None     # in the row's unit
    seconds: float | None = None   # median seconds per launch
    note: str = ""
    samples: list[float] = field(default_factory=list)


@dataclass
class Row:
    """A table row: one benchmark, its unit and work, a cell per peer."""

    key: str
    name: str
    unit: str
    work: float                    # bytes, flops or 1 (latency) per launch
    cells: dict[str, Cell] = field(default_factory=dict)
    note: str = ""
    lower_is_better: bool = False


def _short(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}".strip()
    return " ".join(text.split())[:400]


def _time_round_robin(live: dict[str, Impl], batch: int, reps: int, cells: dict[str, Cell]) -> None:
    """Median seconds per launch of each peer: ``batch`` launches then one sync per sample.

    The first round is a warm-up. Peers alternate sample by sample; one that fails
    while being timed gets an error cell and leaves the rotation.
    """
    samples: dict[str, list[float]] = {k: [] for k in live}
    for r in range(reps + 1):
        for name, impl in list(live.items()):
            try:
                t0 = time.perf_counter()
                for _ in range(batch):
                    impl.launch()
                impl.sync()
                dt = (time.perf_counter() - t0) / batch
            except Exception as e:  # one peer's failure is reported, not fatal
                cells[name] = Cell("error", note="while timing: " + _short(e))
                del live[name]
                continue
            if r:
                samples[name].append(dt)
    for name in live:
        t = statistics.median(samples[name])
        cells[name] = Cell("ok", seconds=t, samples=samples[name])


def run_row(row: Row, factories: dict[str, Callable[[], Impl]], check: Callable[[Any], None],
            batch: int, reps: int) -> Row:
    """Build every peer, run each once and check it, then time the correct ones."""
    live: dict[str, Impl] = {}
    for name in PEERS:
        fac = factories.get(name)
        if fac is None:
            row.cells[name] = Cell("n/a", note="not measured for this row")
            continue
        try:
            impl = fac()
            impl.launch()
            impl.sync()
            check(impl.result())
        except NotAvailableError as e:
            row.cells[name] = Cell("n/a", note=str(e))
            continue
        except WrongResultError as e:
            row.cells[name] = Cell("wrong", note=str(e))
            continue
        except Exception as e:
            row.cells[name] = Cell("error", note=_short(e))
            continue
        live[name] = impl
    _time_round_robin(live, batch, reps, row.cells)
    for c in row.cells.values():
        if c.status == "ok" and c.seconds:
            c.value = (c.seconds * 1e6) if row.lower_is_better else row.work / c.seconds / 1e9
    return row


# ---------------------------------------------------------------------- checks
def check_close(got: np.ndarray, ref: np.ndarray, rtol: float, atol: float = 0.0,
                what: str = "") -> None:
    """Raise WrongResultError unless |got - ref| <= atol + rtol * |ref| everywhere (chunked)."""
    got, ref = np.asarray(got).reshape(-1), np.asarray(ref).reshape(-1)
    if got.shape != ref.shape:
        raise WrongResultError(f"{what}shape {got.shape}, expected {ref.shape}")
    if np.array_equal(got, ref):
        return
    step, nbad, first = 1 << 22, 0, ""
    for s in range(0, ref.size, step):
        g, r = got[s:s + step].astype(np.float64), ref[s:s + step].astype(np.float64)
        bad = ~(np.abs(g - r) <= atol + rtol * np.abs(r))  # NaN counts as bad
        if bad.any():
            nbad += int(bad.sum())
            if not first:
                k = int(np.flatnonzero(bad)[0])
                first = f"first at flat index {s + k}: got {float(g[k])!r}, expected {float(r[k])!r}"
    if nbad:
        raise WrongResultError(f"{what}{nbad} of {ref.size} elements differ beyond rtol {rtol}, "
                               f"atol {atol}; {first}")


# --------------------------------------------------------------------- context
class Bench:
    """The device, its peers, shared host data and the rows measured so far."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.q = sycl.queue(eval(_SELECTOR_SRC[args.device], {"sycl": sycl}))
        self.dev = self.q.get_device()
        self.cl_peer: OpenCLPeer | None = None
        self.cl_error = ""
        try:
            # A context of its own: a kernel fault poisons the (CUDA) context it ran in,
            # and one peer's fault must not fail the others.
            own = sycl.queue(sycl.context(self.dev), self.dev)
            with warnings.catch_warnings():  # pyopencl's "non-empty compiler output" notice
                warnings.simplefilter("ignore")
                self.cl_peer = OpenCLPeer(own, OPENCL_C, _CL_ARGS)
        except Exception as e:
            self.cl_error = _short(e)
        self.cp, self.cp_reason = _cupy(self.dev)
        self.rng = np.random.default_rng(0)
        self._data: dict[str, np.ndarray] = {}

    # -- shared host data
    def vec(self, name: str, n: int) -> np.ndarray:
        key = f"{name}{n}"
        if key not in self._data:
            self._data[key] = self.rng.random(n, dtype=np.float32)
        return self._data[key]

    def describe(self) -> dict[str, Any]:
        d, info = self.dev, sycl.info.device
        out = {"platform": d.get_platform().get_info(sycl.info.platform.name)}
        for k in ("name", "vendor", "version", "driver_version", "max_compute_units",
                  "global_mem_size"):
            try:
                out[k] = d.get_info(getattr(info, k))
            except Exception as e:
                out[k] = f"? ({_short(e)})"
        out["cupy"] = "yes" if self.cp is not None else f"n/a: {self.cp_reason}"
        return out

    # -- peers
    def cl(self) -> OpenCLPeer:
        if self.cl_peer is None:
            raise RuntimeError(f"OpenCL C program did not build: {self.cl_error}")
        return self.cl_peer

    def cupy(self) -> Any:
        if self.cp is None:
            raise NotAvailableError(self.cp_reason)
        return self.cp

    def cl_impl(self, launch: Callable[[], object], result: Callable[[], Any]) -> Impl:
        p = self.cl()
        return Impl(launch, p.q.finish, result)

    def cp_impl(self, launch: Callable[[], object], result: Callable[[], Any]) -> Impl:
        cp = self.cupy()
        stream = cp.cuda.get_current_stream()
        return Impl(launch, stream.synchronize, result)

    def sycl_impl(self, cg: Callable[[sycl.handler], None], result: Callable[[], Any]) -> Impl:
        q = self.q
        return Impl(lambda: q.submit(cg), q.wait_and_throw, result)


def _cupy(dev: sycl.device) -> tuple[Any, str]:
    vendor = f"{dev.get_info(sycl.info.device.vendor)} {dev.get_platform().get_info(sycl.info.platform.name)}"
    if "nvidia" not in vendor.lower():
        return None, "device is not NVIDIA"
    try:
        import cupy as cp

        if cp.cuda.runtime.getDeviceCount() < 1:
            return None, "CuPy sees no CUDA device"
        return cp, ""
    except Exception as e:
        return None, f"import cupy failed: {_short(e)}"


def _host(buf: sycl.buffer) -> np.ndarray:
    with sycl.host_accessor(buf, sycl.access_mode.read) as h:
        return np.array(h, copy=True)


def _quiet(buf: sycl.buffer) -> sycl.buffer:
    buf.set_write_back(False)  # results are read with host_accessor; no write-back at exit
    return buf


# ------------------------------------------------------------------------ rows
def row_copy(b: Bench) -> Row:
    n = 1 << b.args.stream_log2
    src = b.vec("b", n)
    row = Row("copy", f"copy buffer→buffer 2^{b.args.stream_log2} f32 (r+w bytes)", "GB/s", 8 * n)

    def sy() -> Impl:
        S, D = sycl.buffer(src), _quiet(sycl.buffer(np.zeros(n, np.float32)))
        return b.sycl_impl(_copy_cg(S, D), lambda: _host(D))

    def ocl() -> Impl:
        p = b.cl()
        ds, dd = p.buf(src), p.buf(np.zeros(n, np.float32))
        return b.cl_impl(lambda: p.cl.enqueue_copy(p.q, dd, ds),
                         lambda: p.read(np.empty(n, np.float32), dd))

    def cpy() -> Impl:
        cp = b.cupy()
        ds, dd = cp.asarray(src), cp.zeros(n, cp.float32)
        stream = cp.cuda.get_current_stream()
        return b.cp_impl(lambda: dd.data.copy_from_device_async(ds.data, ds.nbytes, stream),
                         lambda: cp.asnumpy(dd))

    row.note = "OpenCL C column: `cl.enqueue_copy`; pysycl: `handler.copy`; CuPy: cudaMemcpyAsync"
    return run_row(row, {"pysycl": sy, "opencl": ocl, "cupy": cpy},
                   lambda got: check_close(got, src, 0.0), b.args.batch, b.args.reps)


def row_triad(b: Bench) -> Row:
    n = 1 << b.args.stream_log2
    bb, cc = b.vec("b", n), b.vec("c", n)
    s = np.float32(3.0)
    ref = bb + s * cc
    row = Row("triad", f"triad a = b + s·c 2^{b.args.stream_log2} f32", "GB/s", 12 * n)

    def sy() -> Impl:
        A = _quiet(sycl.buffer(np.zeros(n, np.float32)))
        return b.sycl_impl(_triad_cg(A, sycl.buffer(bb), sycl.buffer(cc), s, n), lambda: _host(A))

    def ocl() -> Impl:
        p = b.cl()
        da, db, dc = p.buf(np.zeros(n, np.float32)), p.buf(bb), p.buf(cc)
        k = p.k["triad"]
        return b.cl_impl(lambda: k(p.q, (n,), None, da, db, dc, s),
                         lambda: p.read(np.empty(n, np.float32), da))

    def cpy() -> Impl:
        cp = b.cupy()
        k = cp.ElementwiseKernel("float32 b, float32 c, float32 s", "float32 a",
                                 "a = b + s * c", "bench_gpu_triad")
        da, db, dc = cp.zeros(n, cp.float32), cp.asarray(bb), cp.asarray(cc)
        return b.cp_impl(lambda: k(db, dc, s, da), lambda: cp.asnumpy(da))

    # FMA contraction (allowed in OpenCL C and CUDA) rounds once where numpy rounds twice.
    return run_row(row, {"pysycl": sy, "opencl": ocl, "cupy": cpy},
                   lambda got: check_close(got, ref, 2e-6), b.args.batch, b.args.reps)


def row_vadd(b: Bench) -> Row:
    n = 1 << b.args.stream_log2
    aa, bb = b.vec("b", n), b.vec("c", n)
    ref = aa + bb
    row = Row("vadd", f"vector add c = a + b 2^{b.args.stream_log2} f32", "GB/s", 12 * n)

    def sy() -> Impl:
        C = _quiet(sycl.buffer(np.zeros(n, np.float32)))
        return b.sycl_impl(_vadd_cg(sycl.buffer(aa), sycl.buffer(bb), C, n), lambda: _host(C))

    def ocl() -> Impl:
        p = b.cl()
        da, db, dc = p.buf(aa), p.buf(bb), p.buf(np.zeros(n, np.float32))
        k = p.k["vadd"]
        return b.cl_impl(lambda: k(p.q, (n,), None, da, db, dc),
                         lambda: p.read(np.empty(n, np.float32), dc))

    def cpy() -> Impl:
        cp = b.cupy()
        da, db, dc = cp.asarray(aa), cp.asarray(bb), cp.zeros(n, cp.float32)
        return b.cp_impl(lambda: cp.add(da, db, out=dc), lambda: cp.asnumpy(dc))

    return run_row(row, {"pysycl": sy, "opencl": ocl, "cupy": cpy},
                   lambda got: check_close(got, ref, 0.0), b.args.batch, b.args.reps)


def row_matmul(b: Bench) -> Row:
    n = b.args.matmul_n
    if n % TS:
        raise ValueError(f"--matmul-n must be a multiple of {TS}")
    rng = np.random.default_rng(1)
    am = rng.random((n, n), dtype=np.float32)
    bm = rng.random((n, n), dtype=np.float32)
    rows = np.unique(np.r_[0, n // 3, n - 1, rng.integers(0, n, 5)])
    ref_rows = am[rows].astype(np.float64) @ bm.astype(np.float64)
    pi, pj = rng.integers(0, n, 64), rng.integers(0, n, 64)
    ref_pts = np.einsum("ij,ji->i", am[pi].astype(np.float64), bm[:, pj].astype(np.float64))
    row = Row("matmul", f"tiled matmul {n}² f32 (16x16 local tiles)", "GFLOP/s", 2.0 * n ** 3)
    row.note = "CuPy: `cupy.matmul` (cuBLAS SGEMM, another algorithm)"

    def sy() -> Impl:
        C = _quiet(sycl.buffer(np.zeros((n, n), np.float32)))
        return b.sycl_impl(_matmul_cg(sycl.buffer(am), sycl.buffer(bm), C, n), lambda: _host(C))

    def ocl() -> Impl:
        p = b.cl()
        da, db, dc = p.buf(am), p.buf(bm), p.buf(np.zeros((n, n), np.float32))
        k = p.k["matmul_tiled"]
        return b.cl_impl(lambda: k(p.q, (n, n), (TS, TS), da, db, dc, np.int64(n)),
                         lambda: p.read(np.empty((n, n), np.float32), dc))

    def cpy() -> Impl:
        cp = b.cupy()
        da, db, dc = cp.asarray(am), cp.asarray(bm), cp.zeros((n, n), cp.float32)
        return b.cp_impl(lambda: cp.matmul(da, db, out=dc), lambda: cp.asnumpy(dc))

    def check(got: np.ndarray) -> None:
        got = np.asarray(got).reshape(n, n)
        check_close(got[rows], ref_rows, 1e-3, what=f"rows {rows.tolist()}: ")
        check_close(got[pi, pj], ref_pts, 1e-3, what="sampled entries: ")

    return run_row(row, {"pysycl": sy, "opencl": ocl, "cupy": cpy}, check,
                   b.args.matmul_batch, b.args.matmul_reps)


def row_reduce(b: Bench, nd: bool = False) -> Row:
    n = 1 << b.args.stream_log2
    x = b.vec("b", n)
    want = float(np.sum(x, dtype=np.float64))
    row = Row("reduce_nd" if nd else "reduce", f"sum 2^{b.args.stream_log2} f32"
              + (f", nd_range (groups of {WG})" if nd else ""), "GB/s", 4 * n)
    groups = max(1, min(2048, n // (WG * 8)))
    row.note = ("pysycl: `sycl.reduction` (1 element per work-item"
                + (f" of an nd_range in work-groups of {WG}" if nd else "") + f"); OpenCL C: "
                f"{groups} groups x {WG} grid-stride + final group; CuPy: `cupy.sum`")

    def sy() -> Impl:
        S = _quiet(sycl.buffer(np.zeros(1, np.float32)))
        return b.sycl_impl(_reduction_cg(sycl.buffer(x), S, n, nd), lambda: float(_host(S)[0]))

    def ocl() -> Impl:
        p = b.cl()
        dx, dp, do = p.buf(x), p.buf(np.zeros(groups, np.float32)), p.buf(np.zeros(1, np.float32))
        k1, k2 = p.k["reduce_partial"], p.k["reduce_final"]
        lm = p.cl.LocalMemory(WG * 4)

        def launch() -> None:
            k1(p.q, (groups * WG,), (WG,), dx, dp, np.int64(n), lm)
            k2(p.q, (WG,), (WG,), dp, do, np.int64(groups), lm)
        return b.cl_impl(launch, lambda: float(p.read(np.zeros(1, np.float32), do)[0]))

    def cpy() -> Impl:
        cp = b.cupy()
        dx, out = cp.asarray(x), cp.zeros((), cp.float32)
        return b.cp_impl(lambda: cp.sum(dx, out=out), lambda: float(out))

    def check(got: float) -> None:
        if not abs(got - want) <= 2e-4 * abs(want):
            raise WrongResultError(f"sum {got!r}, float64 numpy {want!r} "
                                   f"(relative error {abs(got - want) / abs(want):.2e} > 2e-4)")

    return run_row(row, {"pysycl": sy, "opencl": ocl, "cupy": cpy}, check,
                   b.args.batch, b.args.reps)


def row_stencil(b: Bench) -> Row:
    n = b.args.stencil_n
    src = np.random.default_rng(2).random((n, n), dtype=np.float32)
    ref = src.copy()
    ref[1:-1, 1:-1] = np.float32(0.25) * (src[:-2, 1:-1] + src[2:, 1:-1] + src[1:-1, :-2]
                                          + src[1:-1, 2:])
    row = Row("stencil", f"Jacobi 5-point {n}² f32 (r+w bytes)", "GB/s", 8.0 * n * n)

    def sy() -> Impl:
        D = _quiet(sycl.buffer(np.zeros((n, n), np.float32)))
        return b.sycl_impl(_jacobi_cg(sycl.buffer(src), D, n), lambda: _host(D))

    def ocl() -> Impl:
        p = b.cl()
        ds, dd = p.buf(src), p.buf(np.zeros((n, n), np.float32))
        k = p.k["jacobi"]
        return b.cl_impl(lambda: k(p.q, (n, n), None, ds, dd, np.int64(n)),
                         lambda: p.read(np.empty((n, n), np.float32), dd))

    factories: dict[str, Callable[[], Impl]] = {"pysycl": sy, "opencl": ocl}
    return run_row(row, factories, lambda got: check_close(got, ref, 1e-6),
                   b.args.batch, b.args.reps)


def row_submit(b: Bench) -> Row:
    row = Row("submit", "submit + wait, 1 work-item (single_task, 1 accessor)", "µs", 1.0,
              lower_is_better=True)
    row.note = ("each launch waited for; OpenCL C column: pyopencl `kernel(queue, (1,), None, "
                "buf).wait()`; CuPy: 1-element ElementwiseKernel + stream sync")
    noop: Callable[[], None] = lambda: None  # noqa: E731

    def sy() -> Impl:
        OUT = _quiet(sycl.buffer(np.zeros(1, np.int32)))
        cg, q = _single_cg(OUT), b.q
        return Impl(lambda: q.submit(cg).wait(), noop, lambda: _host(OUT))

    def ocl() -> Impl:
        p = b.cl()
        d = p.buf(np.zeros(1, np.int32))
        k = p.k["one"]
        return Impl(lambda: k(p.q, (1,), None, d).wait(), noop,
                    lambda: p.read(np.zeros(1, np.int32), d))

    def cpy() -> Impl:
        cp = b.cupy()
        k = cp.ElementwiseKernel("int32 x", "int32 o", "o = x + 1", "bench_gpu_one")
        x, d = cp.zeros(1, cp.int32), cp.zeros(1, cp.int32)
        stream = cp.cuda.get_current_stream()

        def launch() -> None:
            k(x, d)
            stream.synchronize()
        return Impl(launch, noop, lambda: cp.asnumpy(d))

    def check(got: np.ndarray) -> None:
        if int(np.asarray(got)[0]) != 1:
            raise WrongResultError(f"o[0] = {int(np.asarray(got)[0])}, expected 1")

    return run_row(row, {"pysycl": sy, "opencl": ocl, "cupy": cpy}, check, 1,
                   b.args.latency_reps)


# --------------------------------------------------------------- compile times
_CHILD = textwrap.dedent("""
    import json, sys, time
    t0 = time.perf_counter()
    import numpy as np
    import pysycl as sycl
    q = sycl.queue({selector})
    t_queue = time.perf_counter()
    n = 1 << 16
    a = np.arange(n, dtype=np.float32); b = np.full(n, 2.0, np.float32)
    A, B, C = sycl.buffer(a), sycl.buffer(b), sycl.buffer(np.zeros(n, np.float32))

    def vadd(x, y, z):
        return lambda i: z.__setitem__(i, x[i] + y[i])

    kb = None
    if {bundle}:
        R = sycl.ext.accessor_type
        sycl.ext.declare_kernel(vadd, kernel_name="bench_gpu.vadd", index_space=sycl.range(1),
                                captures={{"x": R(np.float32, 1, "read"), "y": R(np.float32, 1, "read"),
                                          "z": R(np.float32, 1, "write")}})
        kb = sycl.build(sycl.get_kernel_bundle(q.get_context(), state=sycl.bundle_state.input))
    t_build = time.perf_counter()

    def cg(h):
        if kb is not None:
            h.use_kernel_bundle(kb)
        h.parallel_for(sycl.range(n), vadd(A.get_access(h, sycl.access_mode.read),
                                           B.get_access(h, sycl.access_mode.read),
                                           C.get_access(h, sycl.access_mode.write)))
    q.submit(cg).wait()
    t_submit = time.perf_counter()
    with sycl.host_accessor(C, sycl.access_mode.read) as hc:
        ok = bool(np.array_equal(np.asarray(hc), a + b))
    t_result = time.perf_counter()
    res = {{"ok": ok, "import_queue_s": t_queue - t0, "build_s": t_build - t_queue,
           "first_submit_s": t_submit - t_build, "in_process_s": t_result - t0,
           "numba": "numba" in sys.modules, "stats": sycl.ext.kernel_cache_stats()}}
    print("BENCH_GPU_RESULT " + json.dumps(res), flush=True)
""")


def _cache_files(d: Path) -> dict[str, int]:
    """Files in the cache folder: kernel entries and device binaries (the ICD folder aside)."""
    k = d / "kernels"
    bins = [p for p in (k / "binaries").rglob("*") if p.is_file()] if (k / "binaries").is_dir() else []
    ents = [p for p in k.rglob("*") if p.is_file() and "binaries" not in p.relative_to(k).parts] \
        if k.is_dir() else []
    return {"kernel_entries": len(ents), "binaries": len(bins)}


def _child(args: argparse.Namespace, cache: Path, bundle: bool) -> dict[str, Any]:
    env = dict(os.environ, PYSYCL_CACHE_DIR=str(cache))
    if not args.keep_driver_cache:
        env["CUDA_CACHE_DISABLE"] = "1"
    src = _CHILD.format(selector=_SELECTOR_SRC[args.device], bundle=bundle)
    marker = "BENCH_GPU_RESULT "
    with tempfile.TemporaryFile("w+") as errf:  # a file, not a pipe: no deadlock on chatter
        t0 = time.perf_counter()
        p = subprocess.Popen([sys.executable, "-c", src], env=env, stdout=subprocess.PIPE,
                             stderr=errf, text=True)
        watchdog = threading.Timer(args.compile_timeout, p.kill)  # a hang before the result line
        watchdog.start()
        line, t_line = "", 0.0
        try:
            assert p.stdout is not None
            for line in p.stdout:
                if line.startswith(marker):
                    t_line = time.perf_counter()
                    break
            p.communicate()
        finally:
            watchdog.cancel()
        errf.seek(0)
        err = errf.read()
    if not t_line:
        tail = " | ".join(err.strip().splitlines()[-3:])
        raise RuntimeError(f"child exited {p.returncode} (killed after --compile-timeout "
                           f"{args.compile_timeout:g} s if -9): {tail[-400:]}")
    out = json.loads(line[len(marker):])
    if not out["ok"]:
        raise WrongResultError("child's vector add differs from numpy")
    out["first_result_s"] = t_line - t0
    out["cache"] = _cache_files(cache)
    return out


def bench_compile(b: Bench) -> list[dict[str, Any]]:
    """Cold and warm fresh processes; each entry: label, what it measures, medians or error."""
    args = b.args
    plans = [
        ("plain", [("cold (empty cache: Numba + SPIR-V/PTX + driver build)", "keep"),
                   ("warm kernel cache (2nd process, same cache)", "keep")]),
        ("bundle", [("bundle cold (declare_kernel + sycl.build)", "keep"),
                    ("bundle, warm kernel cache (binaries removed)", "drop_binaries"),
                    ("bundle, warm binary cache", "keep")]),
    ]
    results: dict[str, list[dict[str, Any]]] = {}
    errors: dict[str, str] = {}
    for _ in range(args.compile_reps):
        for kind, steps in plans:
            with tempfile.TemporaryDirectory(prefix="pysycl-bench-gpu-") as d:
                cache = Path(d)
                for label, prep in steps:
                    if label in errors:
                        continue
                    if prep == "drop_binaries":
                        shutil.rmtree(cache / "kernels" / "binaries", ignore_errors=True)
                    try:
                        results.setdefault(label, []).append(_child(args, cache, kind == "bundle"))
                    except Exception as e:
                        errors[label] = _short(e)
    out = []
    for kind, steps in plans:
        for label, _prep in steps:
            if label in errors:
                out.append({"label": label, "error": errors[label]})
                continue
            rs = results[label]
            entry = {"label": label, "bundle": kind == "bundle", "runs": rs}
            for k in ("first_result_s", "import_queue_s", "build_s", "first_submit_s", "in_process_s"):
                entry[k] = statistics.median(r[k] for r in rs)
            last = rs[-1]
            entry.update(numba=last["numba"], stats=last["stats"], cache=last["cache"])
            out.append(entry)
    return out


# --------------------------------------------------------------------- output
@dataclass
class Results:
    """What one run measured: the device, the table rows, the compile-time entries."""

    device: dict[str, Any] = field(default_factory=dict)
    rows: list[Row] = field(default_factory=list)
    compile: list[dict[str, Any]] = field(default_factory=list)


def _fmt(v: float) -> str:
    if v >= 100:
        return f"{v:.0f}"
    return f"{v:.1f}" if v >= 10 else f"{v:.2f}"


def render(res: Results, args: argparse.Namespace, elapsed: float) -> str:
    """The markdown tables, then the numbered errors the cells refer to."""
    notes: list[str] = []

    def note(text: str) -> int:
        if text not in notes:
            notes.append(text)
        return notes.index(text) + 1

    def cell(c: Cell | None) -> str:
        if c is None or c.status == "n/a":
            return "n/a"
        if c.status == "ok" and c.value is not None:
            return _fmt(c.value)
        return f"{'WRONG' if c.status == 'wrong' else 'error'} [{note(c.note)}]"

    copy_bw = next((r.cells["opencl"].value for r in res.rows if r.key == "copy"
                    and "opencl" in r.cells and r.cells["opencl"].status == "ok"), None)
    d, a = res.device, args
    lines = [
        f"Device: **{d.get('platform', '?')} / {d.get('name', '?')}** (driver "
        f"{d.get('driver_version', '?')}, {d.get('version', '?')}, {d.get('max_compute_units', '?')} "
        f"compute units); host `{_platform.node()}`, Python {_platform.python_version()}, numpy "
        f"{np.__version__}; CuPy: {d.get('cupy', '?')}. `benchmarks/bench_gpu.py --device "
        f"{a.device}{' --small' if a.small else ''}`: medians of {a.reps} samples of {a.batch} "
        f"back-to-back launches + one wait (matmul: {a.matmul_reps} x {a.matmul_batch}; submit: "
        f"{a.latency_reps} launches, each waited for), peers alternating; every result checked "
        f"against numpy before timing. Total {elapsed:.0f} s.",
        "",
        "| benchmark | unit | pysycl | OpenCL C | CuPy | pysycl / OpenCL C | pysycl / CuPy "
        "| % of copy BW (pysycl / OpenCL C / CuPy) |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in res.rows:
        cs = [r.cells.get(p) for p in PEERS]
        vals = [c.value if c is not None and c.status == "ok" else None for c in cs]

        def ratio(x: float | None, y: float | None, lower: bool = r.lower_is_better) -> str:
            if x is None or not y:
                return "n/a"
            return f"{x / y:.2f}x" + (" (time)" if lower else "")
        frac = "n/a"
        if r.unit == "GB/s" and copy_bw:
            frac = " / ".join("n/a" if v is None else f"{100 * v / copy_bw:.0f}%" for v in vals)
        lines.append(f"| {r.name} | {r.unit} | {cell(cs[0])} | {cell(cs[1])} | {cell(cs[2])} | "
                     f"{ratio(vals[0], vals[1])} | {ratio(vals[0], vals[2])} | {frac} |")
    row_notes = [f"*{r.key}*: {r.note}" for r in res.rows if r.note]
    if row_notes:
        lines += ["", "Row notes: " + "; ".join(row_notes) + "."]

    if res.compile:
        lines += ["", "| fresh process, vector add of 2^16 f32 | spawn → first result s "
                  "| import + queue s | build s | first submit + wait s | Numba imported "
                  "| compiles / disk hits / driver builds / binary hits | cache files after "
                  "(kernel entries / binaries) |",
                  "| --- | ---: | ---: | ---: | ---: | --- | --- | --- |"]
        for e in res.compile:
            if "error" in e:
                lines.append(f"| {e['label']} | error [{note(e['error'])}] | | | | | | |")
                continue
            s = e["stats"]
            hits = s.get("binary_hits", 0) + s.get("native_hits", 0)  # bundles' + submits'
            builds = s.get("cl_builds", 0) + s.get("cl_compiles", 0) - s.get("native_hits", 0)
            build = f"{e['build_s']:.3f}" if e["bundle"] else "—"
            lines.append(
                f"| {e['label']} | {e['first_result_s']:.3f} | {e['import_queue_s']:.3f} | "
                f"{build} | {e['first_submit_s']:.3f} | {'yes' if e['numba'] else 'no'} | "
                f"{s.get('compiles', 0)} / {s.get('disk_hits', 0)} / {builds} / "
                f"{hits} | {e['cache']['kernel_entries']} / "
                f"{e['cache']['binaries']} |")
    if notes:
        lines += ["", "Errors and wrong results:", ""]
        lines += [f"{i}. {n}" for i, n in enumerate(notes, 1)]
    return "\n".join(lines)


def to_json(res: Results, args: argparse.Namespace, elapsed: float) -> dict[str, Any]:
    rows = [{**{k: v for k, v in vars(r).items() if k != "cells"},
             "cells": {p: vars(c) for p, c in r.cells.items()}} for r in res.rows]
    return {"device": res.device, "args": vars(args), "elapsed_s": elapsed,
            "host": _platform.node(), "python": _platform.python_version(), "numpy": np.__version__,
            "date": time.strftime("%Y-%m-%d %H:%M:%S"), "rows": rows, "compile": res.compile}


def _rows_from_json(data: dict[str, Any]) -> list[Row]:
    return [Row(**{**r, "cells": {p: Cell(**c) for p, c in r["cells"].items()}})
            for r in data["rows"]]


# ------------------------------------------------------------------------ main
_ROW_FUNCS: dict[str, Callable[[Bench], Row]] = {
    "copy": row_copy, "triad": row_triad, "vadd": row_vadd, "matmul": row_matmul,
    "reduce": row_reduce, "reduce_nd": lambda b: row_reduce(b, nd=True),
    "stencil": row_stencil, "submit": row_submit,
}
_SIZES = {  # flag -> (full, --small)
    "stream_log2": (28, 22), "matmul_n": (4096, 256), "stencil_n": (8192, 1024),
    "reps": (15, 7), "batch": (10, 5), "matmul_reps": (5, 3), "matmul_batch": (2, 2),
    "latency_reps": (2000, 300), "compile_reps": (1, 1),
}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    ap.add_argument("--device", choices=("gpu", "cpu"), default="gpu",
                    help="gpu: the first OpenCL GPU; cpu: the CPU device that runs SPIR-V")
    ap.add_argument("--small", action="store_true", help="quick sizes and repetitions")
    ap.add_argument("--rows", default=",".join(ROWS), help=f"comma-separated subset of {ROWS}")
    ap.add_argument("--json", metavar="FILE", help="also write every number to FILE")
    helps = {"stream_log2": "log2 elements of copy/triad/vadd/reduce", "matmul_n":
             "matmul size, a multiple of 16", "stencil_n": "Jacobi grid size", "reps":
             "timed samples per peer", "batch": "launches per sample", "matmul_reps":
             "timed matmul samples", "matmul_batch": "matmul launches per sample", "latency_reps":
             "submit + wait repetitions", "compile_reps": "fresh processes per cache state"}
    for k, (full, small) in _SIZES.items():
        ap.add_argument("--" + k.replace("_", "-"), type=int,
                        help=f"{helps[k]} ({full}; --small: {small})")
    ap.add_argument("--compile-timeout", type=float, default=60.0,
                    help="seconds each compile-time child may take (60)")
    ap.add_argument("--keep-driver-cache", action="store_true",
                    help="let the NVIDIA driver's JIT cache work in the compile-time children")
    ap.add_argument("--no-isolate", dest="isolate", action="store_false",
                    help="run every row in this process (default: one child process per row, "
                    "so a crash or hang in one row costs only that row)")
    ap.add_argument("--row-timeout", type=float, default=150.0,
                    help="seconds a row's child process may take (150)")
    ap.add_argument("--row-child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    for k, (full, small) in _SIZES.items():
        if getattr(args, k) is None:
            setattr(args, k, small if args.small else full)
    args.rows = [r.strip() for r in args.rows.split(",") if r.strip()]
    unknown = [r for r in args.rows if r not in ROWS]
    if unknown:
        ap.error(f"unknown rows {unknown}; choose from {ROWS}")
    return args


def run_inprocess(args: argparse.Namespace) -> Results:
    """Every requested row in this process. Raises only if the device cannot be used at all."""
    b = Bench(args)
    res = Results(device=b.describe())
    if not args.row_child:
        print(f"bench_gpu: {res.device}", file=sys.stderr)
    for key in args.rows:
        t0 = time.perf_counter()
        if key == "compile":
            try:
                res.compile = bench_compile(b)
            except Exception as e:
                res.compile = [{"label": "compile-time children", "error": _short(e)}]
        else:
            try:
                res.rows.append(_ROW_FUNCS[key](b))
            except Exception as e:  # the row reports it, the run goes on
                traceback.print_exc(file=sys.stderr)
                res.rows.append(Row(key, key, "", 0.0, {p: Cell("error", note=f"{key}: {_short(e)}")
                                                       for p in PEERS}))
            if b.cp is not None:
                b.cp.get_default_memory_pool().free_all_blocks()
        gc.collect()
        if not args.row_child:
            print(f"bench_gpu: {key} done in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return res


def _row_child_argv(args: argparse.Namespace, key: str, out: Path) -> list[str]:
    argv = [sys.executable, str(Path(__file__).resolve()), "--device", args.device, "--rows", key,
            "--no-isolate", "--row-child", "--json", str(out),
            "--compile-timeout", str(args.compile_timeout)]
    for k in _SIZES:
        argv += ["--" + k.replace("_", "-"), str(getattr(args, k))]
    if args.small:
        argv.append("--small")
    if args.keep_driver_cache:
        argv.append("--keep-driver-cache")
    return argv


def run_isolated(args: argparse.Namespace) -> Results:
    """One child process per row (this script with ``--no-isolate``): a segfault, an
    ``LLVM ERROR`` abort or a hang in one row costs that row only."""
    res = Results()
    for key in args.rows:
        with tempfile.TemporaryDirectory(prefix="bench-gpu-row-") as d:
            out = Path(d) / "row.json"
            err, t0 = "", time.perf_counter()
            # Its own session, so that a timeout also ends the compile-time grandchildren.
            p = subprocess.Popen(_row_child_argv(args, key, out), stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True, start_new_session=True)
            try:
                _, stderr = p.communicate(timeout=args.row_timeout)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                _, stderr = p.communicate()
                err = f"row process killed after --row-timeout {args.row_timeout:g} s"
            sys.stderr.write(stderr)
            print(f"bench_gpu: {key} done in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
            if p.returncode == 2 and not out.exists():
                raise SystemExit(2)  # no such device: the child said which exist
            if not err and not out.exists():
                tail = " | ".join(stderr.strip().splitlines()[-3:])[-400:]
                err = f"row process ended with code {p.returncode} without results: {tail}"
            if err:
                if key == "compile":
                    res.compile = [{"label": "compile-time children", "error": err}]
                else:
                    res.rows.append(Row(key, key, "", 0.0, {p: Cell("error", note=err)
                                                           for p in PEERS}))
                continue
            data = json.loads(out.read_text())
            res.device = res.device or data["device"]
            res.rows += _rows_from_json(data)
            res.compile = res.compile or data["compile"]
    return res


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    t_start = time.perf_counter()
    try:
        res = run_isolated(args) if args.isolate else run_inprocess(args)
    except SystemExit as e:
        return int(e.code or 0)
    except Exception as e:  # no such device: say which exist, exit non-zero
        devs = [f"{d.get_platform().get_info(sycl.info.platform.name)} / "
                f"{d.get_info(sycl.info.device.name)}" for d in sycl.device.get_devices()]
        print(f"bench_gpu: no usable {args.device} device ({_short(e)}); visible: {devs}",
              file=sys.stderr)
        return 2
    elapsed = time.perf_counter() - t_start
    if args.json:
        Path(args.json).write_text(json.dumps(to_json(res, args, elapsed), indent=1, default=str))
    if not args.row_child:
        print(render(res, args, elapsed))
    return 0


if __name__ == "__main__":
    sys.exit(main())

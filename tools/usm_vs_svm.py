"""Measure OpenCL SVM against ``cl_intel_unified_shared_memory`` on Intel's OpenCL CPU runtime.

pysycl implements SYCL USM on OpenCL with shared virtual memory (``clSVMAlloc``,
``clEnqueueSVMMemcpy``, ``clSetKernelArgSVMPointer``, all bound by pyopencl).
Intel's runtimes also offer the ``cl_intel_unified_shared_memory`` extension
(``clDeviceMemAllocINTEL`` ...), which pyopencl does not bind.  This script
decides between the two by measurement, on the Intel OpenCL CPU device, in one
process, each case as alternating SVM/USM pairs (the order flips every pair):

1. allocation + free of 1 MiB: coarse-grained SVM vs ``clDeviceMemAllocINTEL``,
   and fine-grained buffer SVM vs ``clSharedMemAllocINTEL``;
2. host->device and device->host copies of 128 MiB (blocking):
   ``clEnqueueSVMMemcpy`` vs ``clEnqueueMemcpyINTEL``;
3. the nstream kernel ``a[i] += b[i] + s*c[i]`` over 2^25 floats with SVM
   pointer arguments vs Intel USM pointer arguments (enqueue + wait);
4. enqueue + wait latency of a one-work-item kernel with one pointer argument,
   with the argument set once beforehand and with it set before every launch (the
   latter includes the Python binding cost: pyopencl for SVM, ctypes for USM).

Rows marked "both via ctypes" call the core SVM entry points (``clSVMAlloc``,
``clSVMFree``, ``clSetKernelArgSVMPointer``) through ctypes as well: a control
with the same binding cost on both sides, so what differs there is the runtime.

The Intel entry points come from ``clGetExtensionFunctionAddressForPlatform`` of
the ICD loader that pyopencl itself loaded.  Every variant's results are checked
against numpy before it is timed.  The table's times are medians; the ratio is
the median of the per-pair ratios USM/SVM (below 1: Intel USM faster).

Run: ``python tools/usm_vs_svm.py [--quick]``.  Not part of the test suite.
"""

from __future__ import annotations

import argparse
import ctypes
import statistics
import sys
import time
import warnings
from collections.abc import Callable

import numpy as np

import pysycl  # noqa: F401  (sets up the Intel OpenCL CPU runtime's ICD before pyopencl)

import pyopencl as cl  # isort: skip

MIB = 1 << 20
KERNELS = """
__kernel void nstream(__global float *a, __global const float *b,
                      __global const float *c, float s) {
    size_t i = get_global_id(0);
    a[i] += b[i] + s * c[i];
}
__kernel void tiny(__global int *p) { p[0] += 1; }
"""

vp, sz, u32, i32 = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint32, ctypes.c_int32
# cl_mem_properties_intel is a cl_bitfield (cl_ulong); props may be NULL.
_PROTOS = {
    "clDeviceMemAllocINTEL": ctypes.CFUNCTYPE(vp, vp, vp, vp, sz, u32, ctypes.POINTER(i32)),
    "clSharedMemAllocINTEL": ctypes.CFUNCTYPE(vp, vp, vp, vp, sz, u32, ctypes.POINTER(i32)),
    "clHostMemAllocINTEL": ctypes.CFUNCTYPE(vp, vp, vp, sz, u32, ctypes.POINTER(i32)),
    "clMemBlockingFreeINTEL": ctypes.CFUNCTYPE(i32, vp, vp),
    "clEnqueueMemcpyINTEL": ctypes.CFUNCTYPE(i32, vp, u32, vp, vp, sz, u32, vp, vp),
    "clSetKernelArgMemPointerINTEL": ctypes.CFUNCTYPE(i32, vp, u32, vp),
}
# Core SVM entry points, called through ctypes too: a control that pays the same
# binding cost as the Intel ones, so that a difference left over is the runtime's.
_SVM_PROTOS = {
    "clSVMAlloc": ((vp, ctypes.c_uint64, sz, u32), vp),
    "clSVMFree": ((vp, vp), None),
    "clSetKernelArgSVMPointer": ((vp, u32, vp), i32),
}


class IntelUSM:
    """The ``cl_intel_unified_shared_memory`` entry points, through ctypes."""

    def __init__(self, platform: cl.Platform, ctx: cl.Context, dev: cl.Device) -> None:
        lib = ctypes.CDLL(loaded_libopencl())
        get = lib.clGetExtensionFunctionAddressForPlatform
        get.argtypes, get.restype = [vp, ctypes.c_char_p], vp
        self.fn: dict[str, Callable[..., int]] = {}
        for name, proto in _PROTOS.items():
            addr = get(platform.int_ptr, name.encode())
            if not addr:
                raise RuntimeError(f"{name} not exported by {platform.name}")
            self.fn[name] = proto(addr)
        self.ctx, self.dev = vp(ctx.int_ptr), vp(dev.int_ptr)
        for name, (argtypes, restype) in _SVM_PROTOS.items():
            f = getattr(lib, name)
            f.argtypes, f.restype = argtypes, restype
            self.fn[name] = f

    @staticmethod
    def _check(err: int, what: str) -> None:
        if err != 0:
            raise RuntimeError(f"{what} failed: CL error {err}")

    def alloc(self, kind: str, nbytes: int, alignment: int = 0) -> int:
        err = i32(0)
        if kind == "host":
            p = self.fn["clHostMemAllocINTEL"](self.ctx, None, nbytes, alignment, ctypes.byref(err))
        else:
            name = "clDeviceMemAllocINTEL" if kind == "device" else "clSharedMemAllocINTEL"
            p = self.fn[name](self.ctx, self.dev, None, nbytes, alignment, ctypes.byref(err))
        self._check(err.value, f"{kind} USM alloc of {nbytes} bytes")
        if not p:
            raise RuntimeError(f"{kind} USM alloc returned NULL")
        return p

    def svm_alloc(self, flags: int, nbytes: int) -> int:
        p = self.fn["clSVMAlloc"](self.ctx, flags, nbytes, 0)
        if not p:
            raise RuntimeError("clSVMAlloc returned NULL")
        return p

    def svm_free(self, ptr: int) -> None:
        self.fn["clSVMFree"](self.ctx, ptr)

    def svm_set_arg(self, kernel: cl.Kernel, index: int, ptr: int) -> None:
        self._check(self.fn["clSetKernelArgSVMPointer"](kernel.int_ptr, index, ptr),
                    "clSetKernelArgSVMPointer")

    def free(self, ptr: int) -> None:
        self._check(self.fn["clMemBlockingFreeINTEL"](self.ctx, ptr), "clMemBlockingFreeINTEL")

    def memcpy(self, q: cl.CommandQueue, dst: int, src: int, nbytes: int) -> None:
        """A blocking ``clEnqueueMemcpyINTEL`` (no event)."""
        err = self.fn["clEnqueueMemcpyINTEL"](q.int_ptr, 1, dst, src, nbytes, 0, None, None)
        self._check(err, "clEnqueueMemcpyINTEL")

    def set_arg(self, kernel: cl.Kernel, index: int, ptr: int) -> None:
        self._check(self.fn["clSetKernelArgMemPointerINTEL"](kernel.int_ptr, index, ptr),
                    "clSetKernelArgMemPointerINTEL")


def loaded_libopencl() -> str:
    """The path of the libOpenCL that pyopencl's extension module linked (now mapped)."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if "libOpenCL" in path.rsplit("/", 1)[-1]:
                return path
    raise RuntimeError("no libOpenCL mapped after importing pyopencl")


class _At:
    """A numpy-visible view of an address: what ``cl.SVM`` wraps (as pysycl does)."""

    __slots__ = ("__array_interface__",)

    def __init__(self, address: int, nbytes: int) -> None:
        self.__array_interface__ = {"data": (address, False), "shape": (max(nbytes, 1),),
                                    "typestr": "|u1", "version": 3}


def svm_at(address: int, nbytes: int = 1) -> cl.SVM:
    return cl.SVM(np.asarray(_At(address, nbytes)))


def svm_memcpy(q: cl.CommandQueue, dst: int, src: int, nbytes: int) -> None:
    """A blocking ``clEnqueueSVMMemcpy`` (either end may be plain host memory)."""
    cl._cl._enqueue_svm_memcpy(q, 1, svm_at(dst, nbytes), svm_at(src, nbytes), byte_count=nbytes)


def paired(svm: Callable[[], None], usm: Callable[[], None], pairs: int,
           inner: int = 1) -> tuple[float, float, float]:
    """Median seconds per call of ``svm`` and ``usm`` and the median per-pair ratio usm/svm.

    Each sample times ``inner`` back-to-back calls; the SVM/USM order alternates.
    """
    t_svm, t_usm = [], []
    clock = time.perf_counter

    def sample(f: Callable[[], None]) -> float:
        t0 = clock()
        for _ in range(inner):
            f()
        return (clock() - t0) / inner

    for f in (svm, usm):  # warm-up
        sample(f)
    for k in range(pairs):
        if k % 2:
            u = sample(usm)
            s = sample(svm)
        else:
            s = sample(svm)
            u = sample(usm)
        t_svm.append(s)
        t_usm.append(u)
    ratio = statistics.median(u / s for u, s in zip(t_usm, t_svm, strict=True))
    return statistics.median(t_svm), statistics.median(t_usm), ratio


def fmt_time(t: float) -> str:
    return f"{t * 1e3:.2f} ms" if t >= 1e-3 else f"{t * 1e6:.1f} µs"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer pairs (a smoke run)")
    args = ap.parse_args()
    scale = 0.2 if args.quick else 1.0

    def n(pairs: int) -> int:
        return max(3, int(pairs * scale)) | 1  # odd: a true median

    platform = next(p for p in cl.get_platforms() if "Intel" in p.name)
    dev = platform.get_devices()[0]
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx, dev)
    usm = IntelUSM(platform, ctx, dev)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cl.CompilerWarning)
        prg = cl.Program(ctx, KERNELS).build()
    print(f"device: {dev.name} | {platform.name} {platform.version} | driver {dev.driver_version}")
    print(f"ICD loader: {loaded_libopencl()}\n")
    rows: list[tuple[str, str, str, str]] = []

    def row(case: str, res: tuple[float, float, float], nbytes: int = 0) -> None:
        s, u, r = res
        cell = (lambda t: f"{fmt_time(t)} ({nbytes / t / 1e9:.1f} GB/s)") if nbytes else fmt_time
        rows.append((case, cell(s), cell(u), f"{r:.2f}"))
        print(f"  {case}: SVM {cell(s)} | USM {cell(u)} | ratio {r:.2f}", flush=True)

    # -- 1. allocation + free, 1 MiB --------------------------------------------------
    rw = cl.svm_mem_flags.READ_WRITE
    fine = rw | cl.svm_mem_flags.SVM_FINE_GRAIN_BUFFER
    for flags, kind in ((rw, "device"), (fine, "shared")):  # correctness: a round trip
        a = cl.SVMAllocation(ctx, MIB, 0, flags)
        p = usm.alloc(kind, MIB)
        src = np.arange(MIB // 4, dtype=np.int32)
        back_s, back_u = np.zeros_like(src), np.zeros_like(src)
        svm_memcpy(q, int(a.svm_ptr), src.ctypes.data, MIB)
        svm_memcpy(q, back_s.ctypes.data, int(a.svm_ptr), MIB)
        usm.memcpy(q, p, src.ctypes.data, MIB)
        usm.memcpy(q, back_u.ctypes.data, p, MIB)
        assert np.array_equal(back_s, src) and np.array_equal(back_u, src), kind
        if kind == "shared":  # host-visible without a map on both sides
            assert np.array_equal(np.ctypeslib.as_array((ctypes.c_int32 * (MIB // 4)).from_address(p)),
                                  src)
        a.release()
        usm.free(p)

    def svm_alloc_free(flags: int) -> Callable[[], None]:
        return lambda: cl.SVMAllocation(ctx, MIB, 0, flags).release()

    def usm_alloc_free(kind: str) -> Callable[[], None]:
        return lambda: usm.free(usm.alloc(kind, MIB))

    print("1. alloc + free of 1 MiB")
    row("alloc+free 1 MiB: coarse SVM vs device USM",
        paired(svm_alloc_free(rw), usm_alloc_free("device"), n(301), inner=20))
    row("alloc+free 1 MiB: fine-grain SVM vs shared USM",
        paired(svm_alloc_free(fine), usm_alloc_free("shared"), n(301), inner=20))

    def ctypes_svm_alloc_free(flags: int) -> Callable[[], None]:
        return lambda: usm.svm_free(usm.svm_alloc(int(flags), MIB))

    row("alloc+free 1 MiB: coarse SVM vs device USM, both via ctypes",
        paired(ctypes_svm_alloc_free(rw), usm_alloc_free("device"), n(301), inner=20))
    row("alloc+free 1 MiB: fine-grain SVM vs shared USM, both via ctypes",
        paired(ctypes_svm_alloc_free(fine), usm_alloc_free("shared"), n(301), inner=20))

    # -- 2. copies, 128 MiB -----------------------------------------------------------
    nbytes = 128 * MIB
    host = np.random.default_rng(0).integers(0, 2**31, nbytes // 4, dtype=np.int32)
    back = np.ones_like(host)  # written, so its pages are resident before timing
    svm_dev = cl.SVMAllocation(ctx, nbytes, 0, rw)
    usm_dev = usm.alloc("device", nbytes)
    sp = int(svm_dev.svm_ptr)
    for h2d, d2h, dptr in ((svm_memcpy, svm_memcpy, sp), (usm.memcpy, usm.memcpy, usm_dev)):
        back[:] = 0
        h2d(q, dptr, host.ctypes.data, nbytes)
        d2h(q, back.ctypes.data, dptr, nbytes)
        assert np.array_equal(back, host)
    hp, bp = host.ctypes.data, back.ctypes.data
    print("2. copies of 128 MiB (blocking)")
    row("H->D copy 128 MiB", paired(lambda: svm_memcpy(q, sp, hp, nbytes),
                                    lambda: usm.memcpy(q, usm_dev, hp, nbytes), n(41)), nbytes)
    row("D->H copy 128 MiB", paired(lambda: svm_memcpy(q, bp, sp, nbytes),
                                    lambda: usm.memcpy(q, bp, usm_dev, nbytes), n(41)), nbytes)
    svm_dev.release()
    usm.free(usm_dev)
    del host, back

    # -- 3. nstream, 2^25 floats -------------------------------------------------------
    count = 1 << 25
    nb = count * 4
    rng = np.random.default_rng(1)
    a0, b0, c0 = (rng.random(count, dtype=np.float32) for _ in range(3))
    s = np.float32(3.0)
    svm_bufs = [cl.SVMAllocation(ctx, nb, 0, rw) for _ in range(3)]
    usm_bufs = [usm.alloc("device", nb) for _ in range(3)]
    k_svm, k_usm = prg.nstream, cl.Kernel(prg, "nstream")  # two objects: args set once each
    for i, (sb, ub, h) in enumerate(zip(svm_bufs, usm_bufs, (a0, b0, c0), strict=True)):
        svm_memcpy(q, int(sb.svm_ptr), h.ctypes.data, nb)
        usm.memcpy(q, ub, h.ctypes.data, nb)
        k_svm.set_arg(i, svm_at(int(sb.svm_ptr)))
        usm.set_arg(k_usm, i, ub)
    k_svm.set_arg(3, s)
    k_usm.set_arg(3, s)
    gsize = (count,)

    def run_svm() -> None:
        cl.enqueue_nd_range_kernel(q, k_svm, gsize, None).wait()

    def run_usm() -> None:
        cl.enqueue_nd_range_kernel(q, k_usm, gsize, None).wait()

    expect = a0 + (b0 + s * c0)
    for run, out, copy in ((run_svm, int(svm_bufs[0].svm_ptr), svm_memcpy),
                           (run_usm, usm_bufs[0], usm.memcpy)):
        run()
        got = np.empty_like(a0)
        copy(q, got.ctypes.data, out, nb)
        assert np.allclose(got, expect, rtol=1e-6), "nstream result"
    print("3. nstream a[i] += b[i] + s*c[i], 2^25 floats (enqueue + wait)")
    row("nstream 2^25 floats", paired(run_svm, run_usm, n(61)), 4 * nb)  # reads a, b, c; writes a
    for sb in svm_bufs:
        sb.release()
    for ub in usm_bufs:
        usm.free(ub)

    # -- 4. one-work-item kernel latency -------------------------------------------------
    tsvm = cl.SVMAllocation(ctx, 64, 0, rw)
    tusm = usm.alloc("device", 64)
    tsp = int(tsvm.svm_ptr)
    zero = np.zeros(16, dtype=np.int32)
    svm_memcpy(q, tsp, zero.ctypes.data, 64)
    usm.memcpy(q, tusm, zero.ctypes.data, 64)
    t_svm, t_usm = prg.tiny, cl.Kernel(prg, "tiny")
    t_svm.set_arg(0, svm_at(tsp))
    usm.set_arg(t_usm, 0, tusm)
    one = (1,)

    def tiny_svm() -> None:
        cl.enqueue_nd_range_kernel(q, t_svm, one, None).wait()

    def tiny_usm() -> None:
        cl.enqueue_nd_range_kernel(q, t_usm, one, None).wait()

    def tiny_svm_arg() -> None:
        t_svm.set_arg(0, svm_at(tsp))
        cl.enqueue_nd_range_kernel(q, t_svm, one, None).wait()

    def tiny_usm_arg() -> None:
        usm.set_arg(t_usm, 0, tusm)
        cl.enqueue_nd_range_kernel(q, t_usm, one, None).wait()

    def tiny_svm_ctypes_arg() -> None:
        usm.svm_set_arg(t_svm, 0, tsp)
        cl.enqueue_nd_range_kernel(q, t_svm, one, None).wait()

    for f in (tiny_svm, tiny_usm, tiny_svm_arg, tiny_usm_arg, tiny_svm_ctypes_arg):
        f()
    res = np.zeros(16, dtype=np.int32)
    for ptr, copy, times in ((tsp, svm_memcpy, 3), (tusm, usm.memcpy, 2)):
        copy(q, res.ctypes.data, ptr, 64)
        assert res[0] == times, "tiny kernel result"
    print("4. one-work-item kernel, enqueue + wait")
    row("tiny kernel, arg preset", paired(tiny_svm, tiny_usm, n(1001), inner=10))
    row("tiny kernel, set arg + launch", paired(tiny_svm_arg, tiny_usm_arg, n(1001), inner=10))
    row("tiny kernel, set arg + launch, both via ctypes",
        paired(tiny_svm_ctypes_arg, tiny_usm_arg, n(1001), inner=10))
    tsvm.release()
    usm.free(tusm)

    print("\n| case | SVM | Intel USM | USM/SVM ratio |\n| --- | --- | --- | --- |")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print("\nratio: median of per-pair time ratios USM/SVM (< 1: Intel USM faster)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

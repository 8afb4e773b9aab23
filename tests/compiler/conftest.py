"""Helpers for compiler tests: compile a Python kernel and run it through raw pyopencl.

``run(kernel, shape, ...)`` finds the kernel's captures the way the runtime
does (closure cells, then referenced globals), maps numpy arrays wrapped in
:class:`R`/:class:`W`/:class:`RW` to accessors, arrays wrapped in :class:`Ptr`
to USM pointers (pyopencl SVM) and numbers to scalars,
compiles with ``pysycl_numba.compile_kernel``, builds the SPIR-V with
``pyopencl.Program(ctx, il)``, sets the flat arguments of
``pysycl._core.abi`` and enqueues with the SYCL range reversed.
"""

from __future__ import annotations

import shutil
import subprocess
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyopencl as cl
import pytest

import pysycl  # noqa: F401 - sets up the OpenCL ICD loader before pyopencl
from pysycl._core.abi import (
    BOUNDS_ERR_BYTES,
    AccessorType,
    Capture,
    CompiledKernel,
    IndexSpace,
    PointerType,
    ScalarType,
)

SPIRV_VAL = shutil.which("spirv-val")


@dataclass
class Acc:
    """A numpy array captured as an accessor (``mode``), optionally a sub-range."""

    array: np.ndarray
    mode: str
    offset: tuple[int, ...] | None = None
    range: tuple[int, ...] | None = None


def R(a: np.ndarray, **kw: Any) -> Acc:  # noqa: N802
    """Read accessor."""
    return Acc(a, "read", **kw)


def W(a: np.ndarray, **kw: Any) -> Acc:  # noqa: N802
    """Write accessor."""
    return Acc(a, "write", **kw)


def RW(a: np.ndarray, **kw: Any) -> Acc:  # noqa: N802
    """Read-write accessor."""
    return Acc(a, "read_write", **kw)


@dataclass
class Ptr:
    """A numpy array captured as a USM pointer to its element ``offset``.

    The harness copies the whole array into an SVM allocation, passes
    ``cl.SVM`` of the view at ``offset`` (``clSetKernelArgSVMPointer``) and,
    unless ``readonly``, copies the allocation back into ``array`` afterwards.
    """

    array: np.ndarray
    readonly: bool = False
    offset: int = 0


def capture_values(fn: Callable[..., Any]) -> dict[str, tuple[str, Any]]:
    """name -> (source, value) of what ``fn`` captures (accessors and numbers only)."""
    out: dict[str, tuple[str, Any]] = {}
    code = fn.__code__
    for name, cell in zip(code.co_freevars, fn.__closure__ or (), strict=True):
        v = cell.cell_contents
        if isinstance(v, (Acc, Ptr, bool, int, float, complex, np.generic)):
            out[name] = ("freevar", v)
    for name in code.co_names:
        if name in fn.__globals__ and name not in out:
            v = fn.__globals__[name]
            if isinstance(v, (Acc, Ptr, np.generic)):
                out[name] = ("global", v)
    return out


def capture_type(v: Any) -> Any:
    """The ABI type of a captured test value."""
    if isinstance(v, Acc):
        return AccessorType(v.array.dtype, v.array.ndim, v.mode)
    if isinstance(v, Ptr):
        return PointerType(v.array.dtype, v.readonly)
    if isinstance(v, bool):
        return ScalarType(np.dtype(np.bool_))
    if isinstance(v, int):
        return ScalarType(np.dtype(np.int64))
    if isinstance(v, float):
        return ScalarType(np.dtype(np.float64))
    if isinstance(v, complex):
        return ScalarType(np.dtype(np.complex128))
    return ScalarType(np.asarray(v).dtype)


def make_captures(fn: Callable[..., Any]) -> tuple[tuple[Capture, ...], list[Any]]:
    """Captures (ABI) and their values, in kernel-argument order."""
    vals = capture_values(fn)
    caps = tuple(Capture(n, src, capture_type(v)) for n, (src, v) in vals.items())
    return caps, [v for _, v in vals.values()]


def compile_for(fn: Callable[..., Any], ndim: int | None) -> CompiledKernel:
    """Compile ``fn`` as a range kernel of ``ndim`` dims (``None``: single_task)."""
    from pysycl_numba import compile_kernel

    index = IndexSpace("single_task", 0) if ndim is None else IndexSpace("range", ndim)
    caps, _ = make_captures(fn)
    fmt, arch = TARGET
    return compile_kernel(fn, index, caps, entry_name="k_" + fn.__name__.replace("<", "").replace(">", ""),
                          image_format=fmt, arch=arch)


#: The image target the harness compiles for: SPIR-V, or PTX where the only device with
#: Python kernels is an NVIDIA GPU (set by :class:`Device`).
TARGET = ("spirv", "")


def spirv_validate(binary: bytes, tmp_path: Any, env: str = "opencl2.2") -> None:
    """Run spirv-val on ``binary`` (skips without spirv-val).

    fp16 kernels use ``env="spv1.2"``: the OpenCL environments of spirv-val
    reject the Float16 capability, which OpenCL grants via cl_khr_fp16.
    """
    if binary[:4] != b"\x03\x02\x23\x07":  # PTX (the harness on an NVIDIA GPU)
        from tests.conftest import ptxas_check

        ptxas_check(binary, TARGET[1])
        return
    if SPIRV_VAL is None:
        pytest.skip("spirv-val not installed")
    p = tmp_path / "k.spv"
    p.write_bytes(binary)
    r = subprocess.run([SPIRV_VAL, "--target-env", env, str(p)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


class Device:
    """An OpenCL context + queue on the first SPIR-V capable device, else an NVIDIA GPU
    (the harness then compiles PTX for its compute capability)."""

    def __init__(self) -> None:
        global TARGET
        nvidia = None
        for plat in cl.get_platforms():
            for dev in plat.get_devices():
                if "SPIR-V" in (getattr(dev, "il_version", "") or ""):
                    self._use(dev)
                    return
                if nvidia is None and "cl_nv_device_attribute_query" in dev.extensions.split():
                    nvidia = dev
        if nvidia is None:
            raise LookupError("no SPIR-V capable OpenCL device and no NVIDIA GPU")
        TARGET = ("ptx", f"sm_{nvidia.compute_capability_major_nv}"
                         f"{nvidia.compute_capability_minor_nv}")
        self._use(nvidia)

    def _use(self, dev: cl.Device) -> None:
        self.device = dev
        self.ctx = cl.Context([dev])
        self.queue = cl.CommandQueue(self.ctx)

    def build(self, ck: CompiledKernel) -> cl.Kernel:
        """Build the SPIR-V (or PTX) module and return its kernel."""
        with warnings.catch_warnings():
            # The Intel runtime's build log ("successfully vectorized") is noise.
            warnings.simplefilter("ignore", cl.CompilerWarning)
            if ck.format == "ptx":
                prg = cl.Program(self.ctx, [self.device], [ck.binary]).build()
            else:
                prg = cl.Program(self.ctx, ck.binary).build()
        return cl.Kernel(prg, ck.entry)

    def launch(self, ck: CompiledKernel, values: list[Any], global_range: tuple[int, ...] | None) -> None:
        """Set the flat args of ``values`` (per ``ck.captures``), run, copy results back."""
        kernel = self.build(ck)
        args: list[Any] = []
        copies: list[tuple[Any, np.ndarray]] = []
        mf = cl.mem_flags
        for cap, v in zip(ck.captures, values, strict=True):
            if isinstance(cap.type, PointerType):
                svm = cl.svm_empty(self.ctx, cl.svm_mem_flags.READ_WRITE, v.array.size,
                                   v.array.dtype)
                # (a copy: pyopencl refuses read-only host arrays as copy sources)
                cl.enqueue_copy(self.queue, cl.SVM(svm), np.array(v.array).ravel())
                args.append(cl.SVM(svm[v.offset:]))
                if not cap.type.readonly:
                    copies.append((cl.SVM(svm), v.array))
            elif isinstance(cap.type, AccessorType):
                arr = np.ascontiguousarray(v.array)
                buf = cl.Buffer(self.ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=arr)
                shape = arr.shape
                off = v.offset or (0,) * arr.ndim
                rng = v.range or shape
                lin = 0
                for d in range(arr.ndim):
                    lin = lin * shape[d] + off[d]
                args += [buf, np.int64(lin)] + [np.int64(r) for r in rng] + [np.int64(s) for s in shape[1:]]
                if cap.type.mode != "read":
                    copies.append((buf, v.array))
            else:
                dt = cap.type.dtype
                args.append(np.uint8(v) if dt == np.bool_ else dt.type(v))
        ranged = ck.index.kind == "range" and global_range is not None
        if ranged:  # a range kernel's entry point takes the user's range (SYCL order)
            args += [np.int64(r) for r in global_range]  # type: ignore[union-attr]
        if ck.bounds_checked:  # the error buffer (pysycl._core.abi), read by last_error()
            self.err = cl.Buffer(self.ctx, mf.READ_WRITE | mf.COPY_HOST_PTR,
                                 hostbuf=np.zeros(BOUNDS_ERR_BYTES, np.uint8))
            args.append(self.err)
        kernel.set_args(*args)
        if global_range is None:
            cl.enqueue_nd_range_kernel(self.queue, kernel, (1,), None)
        elif ranged and ck.format == "ptx":  # a 1-D launch whose work-items loop over items
            cl.enqueue_nd_range_kernel(self.queue, kernel, (int(np.prod(global_range)),), None)
        else:
            cl.enqueue_nd_range_kernel(self.queue, kernel, tuple(reversed(global_range)), None)
        for buf, host in copies:
            tmp = np.empty_like(np.ascontiguousarray(host))
            cl.enqueue_copy(self.queue, tmp.reshape(-1) if isinstance(buf, cl.SVM) else tmp, buf)
            host[...] = tmp
        self.queue.finish()


    def last_error(self) -> np.ndarray:
        """The ``long`` words of the last bounds-checked launch's error buffer."""
        out = np.zeros(BOUNDS_ERR_BYTES // 8, np.int64)
        cl.enqueue_copy(self.queue, out, self.err)
        self.queue.finish()
        return out


@pytest.fixture(scope="session")
def device() -> Device:
    """The SPIR-V capable OpenCL device (skip when there is none)."""
    try:
        return Device()
    except LookupError as e:
        pytest.skip(str(e))


@pytest.fixture
def run(device: Device) -> Callable[..., CompiledKernel]:
    """``run(kernel, global_range_or_None)`` compiles and runs a kernel; returns it."""

    def _run(fn: Callable[..., Any], global_range: tuple[int, ...] | int | None) -> CompiledKernel:
        if isinstance(global_range, int):
            global_range = (global_range,)
        caps, values = make_captures(fn)
        # PTX targets (sm_60 and later) have .f16 arithmetic though NVIDIA's OpenCL
        # reports no cl_khr_fp16 (docs/gpu.md).
        has_fp16 = TARGET[0] == "ptx" or "cl_khr_fp16" in device.device.extensions.split()
        if not has_fp16 and any(getattr(c.type, "dtype", None) == np.float16 for c in caps):
            pytest.skip("float16 needs fp16, which this device lacks")
        ck = compile_for(fn, None if global_range is None else len(global_range))
        device.launch(ck, values, global_range)
        return ck

    return _run

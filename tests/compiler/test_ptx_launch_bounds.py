"""Launch bounds of PTX images (``.maxntid``): work-groups of 512 and 1024 on NVIDIA GPUs.

NVIDIA's OpenCL reports ``CL_KERNEL_WORK_GROUP_SIZE`` 256 for every kernel (measured
on an H100, OpenCL C kernels too): what a kernel without a bound is sure to get. An
``nd_range`` with wider work-groups builds the kernel's PTX once more with
``.maxntid`` (``pysycl._kernels.ptx_bounds``), which makes the assembler fit the
kernel to that many work-items (at most 65536 / N registers each). Here, without a
GPU: the directive, the bound chosen, and NVIDIA's assembler's register counts
(``ptxas -v``, where CUDA is installed); tests/kernels/test_gpu.py runs such
kernels 1024 wide on the GPU (issue 21, item 14).
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile

import numpy as np
import pytest

import pysycl as sycl
from pysycl._kernels.ptx_bounds import launch_bound, with_launch_bound
from tests.conftest import PTXAS

from . import register_heavy


def _ptxas_usage(ptx: bytes) -> tuple[int, int]:
    """(registers, spill-store bytes) ptxas reports for ``ptx`` (sm_90)."""
    if PTXAS is None:
        pytest.skip("ptxas (CUDA) is not installed")
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.ptx")
        with open(src, "wb") as f:
            f.write(ptx)
        r = subprocess.run([PTXAS, "-v", "-arch=sm_90", src, "-o", os.path.join(d, "k.cubin")],
                           capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    regs = re.search(r"Used (\d+) registers", r.stderr)
    spills = re.search(r"(\d+) bytes spill stores", r.stderr)
    assert regs is not None, r.stderr
    return int(regs.group(1)), int(spills.group(1)) if spills else 0


@pytest.mark.parametrize(("size", "bound"), [(257, 512), (384, 512), (512, 512), (513, 1024),
                                             (768, 1024), (1024, 1024), (2048, 1024)])
def test_the_bound_is_the_next_power_of_two_within_the_device(size: int, bound: int) -> None:
    assert launch_bound(size, 1024) == bound


def test_a_register_heavy_kernel_fits_1024_work_items_with_its_bound(
        kq: sycl.queue, ptx_images: list) -> None:
    x = np.linspace(0.1, 1.0, 2048)
    np.testing.assert_allclose(register_heavy.run(kq, x, 256), register_heavy.expected(x),
                               rtol=1e-12)
    (img,) = ptx_images
    wide = with_launch_bound(img.binary, img.entry, 1024)
    assert f".entry {img.entry}(" in wide.decode()
    head = wide.decode().split(f".entry {img.entry}(", 1)[1].split("{", 1)[0]
    assert head.rstrip().endswith(".maxntid 1024, 1, 1")
    regs, _ = _ptxas_usage(img.binary)
    assert regs > 64  # unbounded: 1024 work-items would need more than 65536 registers
    regs, spills = _ptxas_usage(wide)
    assert regs <= 64 and spills > 0  # bounded: it fits, spilling what does not
    regs, _ = _ptxas_usage(with_launch_bound(img.binary, img.entry, 512))
    assert 64 < regs <= 128  # 512 wide: up to 128 registers each


def test_a_launch_bound_is_refused_where_it_cannot_go(kq: sycl.queue, ptx_images: list) -> None:
    b = sycl.buffer(np.zeros(64, np.float32))

    def cg(h: sycl.handler) -> None:
        acc = b.get_access(h, sycl.access_mode.write)
        h.parallel_for(sycl.nd_range(sycl.range(64), sycl.range(32)),
                       lambda it: acc.__setitem__(it.get_global_id(0), 1.0))

    kq.submit(cg).wait()
    (img,) = ptx_images
    with pytest.raises(ValueError, match="no_such_entry"):
        with_launch_bound(img.binary, "no_such_entry", 512)
    twice = with_launch_bound(img.binary, img.entry, 512)
    with pytest.raises(ValueError, match="already declares a launch bound"):
        with_launch_bound(twice, img.entry, 1024)

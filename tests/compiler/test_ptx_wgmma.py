"""Work-group joint_matrix on PTX without a GPU: the kernels of
tests/kernels/test_work_group_matrix.py compiled for sm_90 are ``wgmma`` kernels (emitted for
``sm_90a``, accepted by NVIDIA's assembler, accumulators in registers), and refused for
sm_80 with the combinations sm_90 offers. The same kernels run on H100/H200 in the GPU suite."""

from __future__ import annotations

import re

import numpy as np
import pytest

import pysycl as sycl
from tests.compiler.test_ptx_matrix import ptx_archs  # noqa: F401 - the fixture
from tests.conftest import ptxas_check
from tests.kernels import test_work_group_matrix as twg

_WGMMA = {"fp16": "m64n{n}k16.f32.f16.f16", "bf16": "m64n{n}k16.f32.bf16.bf16",
          "tf32": "m64n{n}k8.f32.tf32.tf32"}


@pytest.mark.parametrize("kind", list(twg.KINDS))
@pytest.mark.parametrize("bn", [8, 64])
def test_gemm_as_wgmma(kq: sycl.queue, ptx_archs: dict, kind: str, bn: int) -> None:  # noqa: F811
    isz = np.dtype(twg.KINDS[kind][1]).itemsize
    a, b, want = twg._operands(kind, np.random.default_rng(4), 64, bn, 128 // isz)
    np.testing.assert_array_equal(twg._gemm(kq, kind, a, b, bn), want)
    (ptx,) = ptx_archs["sm_90"]
    assert isinstance(ptx, str), ptx
    assert ".target sm_90a" in ptx
    assert len(re.findall(r"wgmma\.mma_async\.sync\.aligned\." + re.escape(
        _WGMMA[kind].format(n=bn)), ptx)) == 1  # one mad in the (not unrolled) K loop
    assert "wgmma.wait_group.sync.aligned 0" in ptx and "fence.proxy.async" in ptx
    assert not re.search(r"\b(ld|st)\.local\b", ptx)  # accumulators live in registers
    ptxas_check(ptx.encode(), "sm_90a")
    (e,) = ptx_archs["sm_80"]
    assert isinstance(e, sycl.exception) and e.code() == sycl.errc.kernel_not_supported
    assert "wgmma" in str(e) and "layout.ext_pysycl_swizzle128" in str(e)


def test_two_warpgroups_as_wgmma(kq: sycl.queue, ptx_archs: dict) -> None:  # noqa: F811
    twg.test_two_warpgroups_wide_tiles_and_an_initial_c(kq, False)
    (ptx,) = ptx_archs["sm_90"]
    assert "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16" in ptx
    ptxas_check(ptx.encode(), "sm_90a")


def test_apply_as_wgmma(kq: sycl.queue, ptx_archs: dict) -> None:  # noqa: F811
    twg.test_apply_sees_rows_and_columns(kq)
    (ptx,) = ptx_archs["sm_90"]
    assert isinstance(ptx, str), ptx
    assert ".target sm_90a" in ptx  # (its accumulator waits for products: wgmma.wait_group)
    ptxas_check(ptx.encode(), "sm_90a")

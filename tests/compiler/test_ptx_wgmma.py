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


def _submit(q: sycl.queue, cg) -> None:  # type: ignore[no-untyped-def]
    """``q.submit(cg)``; on an NVIDIA GPU (PTX: the kernel compiles for it), a kernel the
    test expects sm_90 to refuse raises there, which the test's checks of the sm_90
    compile then describe."""
    if q.get_device().has(sycl.aspect.ext_pysycl_spirv):
        q.submit(cg)
    else:
        with pytest.raises(sycl.exception) as e:
            q.submit(cg)
        assert e.value.code() == sycl.errc.kernel_not_supported


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


def test_a_and_b_from_global_memory_are_refused_on_sm90(kq: sycl.queue, ptx_archs: dict) -> None:  # noqa: F811
    """wgmma reads A and B from local memory: a swizzled tile loaded from a global accessor
    runs by loops on the CPU device, and is errc.kernel_not_supported naming the call's
    memory on sm_90."""
    a = np.zeros(64 * 64, np.float16)
    out = np.zeros(64 * 16, np.float32)
    with sycl.buffer(a) as A, sycl.buffer(out) as O:
        def cg(h):  # type: ignore[no-untyped-def]
            ra = A.get_access(h, sycl.access_mode.read)
            wo = O.get_access(h, sycl.access_mode.write)

            def kernel(it):  # type: ignore[no-untyped-def]
                g = it.get_group()
                acc = twg.jm.joint_matrix(g, np.float32, twg.jm.use.accumulator, 64, 16)
                ta = twg.jm.joint_matrix(g, np.float16, twg.jm.use.a, 64, 16, twg.SWZ)
                tb = twg.jm.joint_matrix(g, np.float16, twg.jm.use.b, 16, 16, twg.SWZ)
                twg.jm.joint_matrix_fill(g, acc, 0.0)
                twg.jm.joint_matrix_load(g, ta, (ra, 0), 64)
                twg.jm.joint_matrix_load(g, tb, (ra, 0), 64)
                twg.jm.joint_matrix_mad(g, acc, ta, tb, acc)
                twg.jm.joint_matrix_store(g, acc, (wo, 0), 16, twg.jm.layout.row_major)

            h.parallel_for(sycl.nd_range((128,), (128,)), kernel)

        _submit(kq, cg)
    assert (out == 0).all()
    (e,) = ptx_archs["sm_90"]
    assert isinstance(e, sycl.exception) and e.code() == sycl.errc.kernel_not_supported
    assert "local memory" in str(e) and "joint_matrix_load" in str(e)
    assert "test_ptx_wgmma.py:" in str(e)  # the call's line


def test_a_swizzled_sub_group_tile(kq: sycl.queue, ptx_archs: dict) -> None:  # noqa: F811
    """The swizzled layout on a sub-group tile: read by loops (un-swizzled) on the CPU
    device; on NVIDIA GPUs (mma.sync fragments) kernel_not_supported, never a tile read as
    if it were row-major."""
    jm = twg.jm
    src = np.arange(16 * 64, dtype=np.float16)  # 16 rows of 128 bytes, swizzled below
    lin = np.empty_like(src)
    for i in range(src.size):
        lin[i] = src[twg.swizzled(i, 2)]  # element i (logical) lies at swizzled(i)
    out = np.zeros(16 * 16, np.float32)
    with sycl.buffer(src) as S, sycl.buffer(out) as O:
        def cg(h):  # type: ignore[no-untyped-def]
            rs = S.get_access(h, sycl.access_mode.read)
            wo = O.get_access(h, sycl.access_mode.write)

            def kernel(it):  # type: ignore[no-untyped-def]
                sg = it.get_sub_group()
                ta = jm.joint_matrix(sg, np.float16, jm.use.a, 16, 16, twg.SWZ)
                tb = jm.joint_matrix(sg, np.float16, jm.use.b, 16, 16, jm.layout.row_major)
                c = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
                jm.joint_matrix_fill(sg, c, 0.0)
                jm.joint_matrix_load(sg, ta, (rs, 0), 64)
                jm.joint_matrix_load(sg, tb, (rs, 0), 64)  # B: the first 16 halves of 16 rows
                jm.joint_matrix_mad(sg, c, ta, tb, c)
                jm.joint_matrix_store(sg, c, (wo, 0), 16, jm.layout.row_major)

            h.parallel_for(sycl.nd_range((32,), (32,)), kernel)

        _submit(kq, cg)
    if kq.get_device().has(sycl.aspect.ext_pysycl_spirv):
        a = lin.reshape(16, 64)[:, :16].astype(np.float32)
        b = src.reshape(16, 64)[:, :16].astype(np.float32)
        np.testing.assert_allclose(out.reshape(16, 16), a @ b, rtol=1e-3)
    (e,) = ptx_archs["sm_90"]
    assert isinstance(e, sycl.exception) and e.code() == sycl.errc.kernel_not_supported
    assert "work-group matrices" in str(e)


@pytest.mark.parametrize("in_flight", [0, 4])
def test_barriers_leave_the_declared_products_in_flight(kq: sycl.queue, ptx_archs: dict,  # noqa: F811
                                                        in_flight: int) -> None:
    """``ext_pysycl_mads_in_flight(n)``: each work-group barrier of the pipelined kernel
    waits with ``wgmma.wait_group n`` (0 by default); the store's wait stays 0."""
    from tests.kernels import test_work_group_matrix_flight as tfl

    a, b, ai, bi = tfl._operands(1, 64, 16, 2 * tfl.KT)
    np.testing.assert_array_equal(tfl._pipelined(kq, a, b, 3, in_flight),
                                  (ai @ bi).astype(np.float32))
    (ptx,) = ptx_archs["sm_90"]
    assert isinstance(ptx, str), ptx
    code = "\n".join(ln.strip() for ln in ptx.splitlines()
                     if ln.strip() and not ln.strip().startswith("//"))
    waits = re.findall(r"wgmma\.wait_group\.sync\.aligned (\d+);\n(\S+)", code)
    at_barriers = {n for n, nxt in waits if nxt.startswith("barrier.") or nxt.startswith("bar.")}
    assert at_barriers == {str(in_flight)}, waits
    assert "0" in {n for n, _ in waits}  # before the accumulator's store
    ptxas_check(ptx.encode(), "sm_90a")


@pytest.mark.parametrize("in_flight", [False, True])
def test_the_benchmark_gemm_is_not_serialised_by_ptxas(kq: sycl.queue, ptx_archs: dict,  # noqa: F811
                                                       in_flight: bool) -> None:
    """benchmarks/_matrix_wgmma.py's GEMM (cp.async stages, ``wait_for`` of run-time counts,
    work-group matrices): its PTX has no branch that ptxas answers by waiting for the
    products (``C7517 warpgroup.wait is injected``: a switch's unreachable default became
    a branch to the kernel's exit, and each K step waited for all its mads), the mads' own
    fences leave ptxas nothing to inject (``C7519``), and it calls no function (the
    asserts' publishing inlined: with a call the driver's JIT serialises every mad, C7509)."""
    import sys
    from pathlib import Path

    from tests.conftest import ptxas_report

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import _matrix_wgmma as wgm

    n, bn, stages = 512, 256, 4
    mem = [sycl.malloc_device(n * n, kq, dtype=t) for t in (np.float16, np.float16, np.float32)]
    try:
        def cg(h):  # type: ignore[no-untyped-def]
            la = sycl.local_accessor(np.float16, sycl.range(stages * 128 * 64), h)
            lb = sycl.local_accessor(np.float16, sycl.range(stages * bn * 64), h)
            h.parallel_for(sycl.nd_range((n // 128, n // bn * 256), (1, 256)),
                           wgm.gemm_kernel_wgmma("fp16", stages, *mem, n, la, lb, bn, in_flight))

        if kq.get_device().has(sycl.aspect.ext_pysycl_spirv):
            with pytest.raises(sycl.exception):  # 256 work-items of 128 x 256 tiles: no CPU
                kq.submit(cg).wait()
        else:  # a GPU runs it (zeros: the packed operands are not written here)
            kq.submit(cg).wait()
    finally:
        for m in mem:
            sycl.free(m, kq)
    (ptx,) = ptx_archs["sm_90"]
    assert isinstance(ptx, str), ptx
    assert "brx.idx" not in ptx
    assert len(re.findall(r"wgmma\.mma_async", ptx)) == 4  # a K step's mads, unrolled
    assert "call.uni" not in ptx  # no function calls: the driver's JIT would serialise (C7509)
    report = ptxas_report(ptx.encode(), "sm_90a")
    if report is not None:
        assert "C7517" not in report and "C7519" not in report, report
    cuda = [dv for dv in sycl.device.get_devices()
            if dv.get_backend() is sycl.backend.ext_oneapi_cuda
            and dv.get_info(sycl.info.device.ext_pysycl_work_group_matrix_combinations)]
    if cuda:  # the driver's JIT linker, which the CUDA backend builds with, says the same
        from pysycl._backends.cuda import build
        from pysycl._backends.cuda.objects import make_current, primary_context

        sycl.queue(cuda[0])
        make_current(primary_context(cuda[0].ordinal))  # type: ignore[attr-defined]
        log: list[str] = []
        build.jit_link(build.for_driver(ptx.encode()), "gemm", (), log)
        assert "serialized" not in " ".join(log), log

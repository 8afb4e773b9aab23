"""Work-group joint_matrix (pysycl's, docs/matrix.md "Work-group matrices"): a tile of the
whole work-group, its A and B read from local memory in layout.ext_pysycl_swizzle128 --
wgmma on an sm_90 GPU, loops on the CPU device, numpy on the host_debuggable device --
compared with numpy on every device (hypothesis over shapes and offsets)."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pysycl as sycl
from pysycl._core import bfloat16 as bf16
from pysycl._kernels.matrix import swizzled
from pysycl.ext.oneapi import bfloat16
from pysycl.ext.oneapi.experimental import matrix as jm

KINDS = {  # name -> (T, memory dtype)
    "fp16": (np.float16, np.float16),
    "bf16": (bfloat16, np.uint16),
    "tf32": (jm.precision.tf32, np.float32),
}
SWZ = jm.layout.ext_pysycl_swizzle128


def _wgmma_device(q):
    d = q.get_device()
    return d.has(sycl.aspect.ext_pysycl_ptx) and bool(
        d.get_info(sycl.info.device.ext_pysycl_work_group_matrix_combinations))


def _operands(kind, rng, m, n, k):
    a = rng.integers(-8, 9, (m, k))
    b = rng.integers(-8, 9, (k, n))
    want = (a @ b).astype(np.float32)
    if kind == "bf16":
        return bf16.from_float(a.astype(np.float32)), bf16.from_float(b.astype(np.float32)), want
    mt = KINDS[kind][1]
    return a.astype(mt), b.astype(mt), want


def _gemm(q, kind, a, b, bn, wgs=1, c0=None, acc_col=False, skew=0, items=0):
    """C = A*B (+ C0) by work-groups of ``wgs`` warpgroups (128 work-items each) computing
    (64*wgs) x bn tiles: each K step stages A's rows and B's columns into local memory in
    the swizzled layout (``skew``: the tiles ``skew`` rows (8 bytes: 16-byte chunks) apart from
    the accessor's start), then one mad per 32 bytes of K."""
    T, mt = KINDS[kind]
    isz = np.dtype(mt).itemsize
    ks, kt = 32 // isz, 128 // isz  # K of a mad, K of a staged (128-byte) row
    m, k = a.shape
    n = b.shape[1]
    bm, nt = 64 * wgs, items or 128 * wgs  # (items: another work-group size)
    c = np.zeros((m, n), np.float32) if c0 is None else c0.copy()
    sk = skew * kt  # elements before A's tile (whole rows: the swizzle stays aligned)
    sbn, swgs = str(bn), str(wgs)  # strings: constants of the kernel, whose shapes are
    with sycl.buffer(a.ravel()) as A, sycl.buffer(b.ravel()) as B, sycl.buffer(c.ravel()) as C:
        def cg(h):
            ra = A.get_access(h, sycl.access_mode.read)
            rb = B.get_access(h, sycl.access_mode.read)
            wc = C.get_access(h, sycl.access_mode.read_write)
            la = sycl.local_accessor(mt, sycl.range(sk + bm * kt), h)
            lb = sycl.local_accessor(mt, sycl.range(bn * kt), h)

            def kernel(it):
                # the matrices' shapes: integer constants (chosen at compile time)
                if sbn == "8":
                    BN = 8
                elif sbn == "16":
                    BN = 16
                elif sbn == "32":
                    BN = 32
                else:
                    BN = 64
                BM = 128 if swgs == "2" else 64
                KS = 8 if kind == "tf32" else 16
                g = it.get_group()
                lid = it.get_local_linear_id()
                ti, tj = it.get_group(0), it.get_group(1)
                acc = jm.joint_matrix(g, np.float32, jm.use.accumulator, BM, BN)
                if acc_col:
                    jm.joint_matrix_load(g, acc, (wc, tj * bn * m + ti * bm), m,
                                         jm.layout.col_major)
                else:
                    jm.joint_matrix_load(g, acc, (wc, ti * bm * n + tj * bn), n,
                                         jm.layout.row_major)
                for k0 in range(0, k, kt):
                    for i in range(lid, bm * kt, nt):  # A's rows, K-major
                        x = (sk + i) * isz
                        la[(x ^ (((x >> 7) & 7) << 4)) // isz] = \
                            ra[(ti * bm + i // kt) * k + k0 + i % kt]
                    for i in range(lid, bn * kt, nt):  # B's columns, K-major
                        x = i * isz
                        lb[(x ^ (((x >> 7) & 7) << 4)) // isz] = \
                            rb[(k0 + i % kt) * n + tj * bn + i // kt]
                    it.barrier(sycl.access.fence_space.local_space)
                    for kk in range(0, kt, ks):
                        ta = jm.joint_matrix(g, T, jm.use.a, BM, KS, SWZ)
                        tb = jm.joint_matrix(g, T, jm.use.b, KS, BN, SWZ)
                        jm.joint_matrix_load(g, ta, (la, sk + kk), kt)
                        jm.joint_matrix_load(g, tb, (lb, kk), kt)
                        jm.joint_matrix_mad(g, acc, ta, tb, acc)
                    it.barrier(sycl.access.fence_space.local_space)
                if acc_col:
                    jm.joint_matrix_store(g, acc, (wc, tj * bn * m + ti * bm), m,
                                          jm.layout.col_major)
                else:
                    jm.joint_matrix_store(g, acc, (wc, ti * bm * n + tj * bn), n,
                                          jm.layout.row_major)

            h.parallel_for(sycl.nd_range((m // bm, n // bn * nt), (1, nt)), kernel)

        q.submit(cg)
    return c


@pytest.mark.parametrize("kind", list(KINDS))
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(nt=st.integers(1, 2), bn8=st.sampled_from([1, 2, 4]), kt=st.integers(1, 2),
       skew=st.sampled_from([0, 8]), seed=st.integers(0, 2**16))
def test_gemm_matches_numpy(any_kernel_queue, kind, nt, bn8, kt, skew, seed):
    bn = 8 * bn8
    isz = np.dtype(KINDS[kind][1]).itemsize
    m, n, k = 64, bn * nt, (128 // isz) * kt
    a, b, want = _operands(kind, np.random.default_rng(seed), m, n, k)
    got = _gemm(any_kernel_queue, kind, a, b, bn, skew=skew)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("acc_col", [False, True])
def test_two_warpgroups_wide_tiles_and_an_initial_c(any_kernel_queue, acc_col):
    """128 x 16 tiles over work-groups of 256 (two warpgroups, one per 64 rows); C starts
    from memory (row- or column-major)."""
    rng = np.random.default_rng(5)
    m, n, k = 128, 64, 128
    a, b, want = _operands("fp16", rng, m, n, k)
    c0 = rng.integers(-4, 5, (m, n)).astype(np.float32)
    if acc_col:  # C column-major: the same numbers, the transpose's memory
        got = _gemm(any_kernel_queue, "fp16", a, b, 16, wgs=2, c0=c0.T.copy().reshape(m, n),
                    acc_col=True)
        np.testing.assert_array_equal(got.reshape(n, m).T, want + c0)
    else:
        np.testing.assert_array_equal(_gemm(any_kernel_queue, "fp16", a, b, 16, wgs=2, c0=c0),
                                      want + c0)


def test_the_swizzle():
    """Byte x of the memory lies at x ^ (((x >> 7) & 7) << 4): 16-byte chunks of each 128-byte
    row permuted by the row's place among 8."""
    assert [swizzled(i, 2) for i in range(8)] == list(range(8))
    assert swizzled(64 + 0, 2) == 64 + 8  # row 1, chunk 0 -> chunk 1
    assert swizzled(7 * 64 + 8, 2) == 7 * 64 + 48  # row 7, chunk 1 -> chunk 6
    assert swizzled(8 * 64 + 8, 2) == 8 * 64 + 8  # row 8: as row 0
    assert sorted(swizzled(i, 4) for i in range(256)) == list(range(256))


def test_apply_sees_rows_and_columns(any_kernel_queue):
    q = any_kernel_queue
    out = np.zeros((64, 16), np.float32)
    with sycl.buffer(out.ravel()) as O:
        def cg(h):
            w = O.get_access(h, sycl.access_mode.write)

            def kernel(it):
                g = it.get_group()
                acc = jm.joint_matrix(g, np.float32, jm.use.accumulator, 64, 16)
                jm.joint_matrix_fill(g, acc, 1.5)
                jm.joint_matrix_apply(g, acc, lambda x, r, c: x + r * 100 + c)
                jm.joint_matrix_store(g, acc, (w, 0), 16, jm.layout.row_major)

            h.parallel_for(sycl.nd_range((128,), (128,)), kernel)
        q.submit(cg)
    r, c = np.indices((64, 16))
    np.testing.assert_array_equal(out, 1.5 + r * 100 + c)


def _line(fn, mark):
    """The line of ``fn``'s source that holds ``mark``."""
    import inspect

    src, first = inspect.getsourcelines(fn)
    return first + next(i for i, t in enumerate(src) if mark in t)


def _other_group(it):
    sg = it.get_sub_group()
    g = it.get_group()
    acc = jm.joint_matrix(g, np.float32, jm.use.accumulator, 64, 16)
    jm.joint_matrix_fill(sg, acc, 0.0)  # OTHER


def test_a_matrix_of_another_group_is_an_error(any_kernel_queue):
    """A work-group matrix passed with the sub-group: errc.invalid at the call's line (a
    compile error; on the host device at the call), on every device."""
    with pytest.raises(sycl.exception, match="belongs to a work-group, not to the sub-group") as e:
        any_kernel_queue.parallel_for(sycl.nd_range((128,), (128,)), _other_group).wait()
    assert e.value.code() is sycl.errc.invalid
    assert f"test_work_group_matrix.py:{_line(_other_group, '# OTHER')}" in str(e.value)


def _swizzled_accumulator(it):
    g = it.get_group()
    jm.joint_matrix(g, np.float32, jm.use.accumulator, 64, 16, SWZ)  # SWZ-ACC


def test_swizzled_layout_is_for_a_and_b(any_kernel_queue):
    with pytest.raises(sycl.exception, match=r"is a layout of use\.a and use\.b tiles") as e:
        any_kernel_queue.parallel_for(sycl.nd_range((128,), (128,)),
                                      _swizzled_accumulator).wait()
    assert e.value.code() is sycl.errc.invalid
    assert f"test_work_group_matrix.py:{_line(_swizzled_accumulator, '# SWZ-ACC')}" \
        in str(e.value)


def test_a_bad_swizzled_stride(kq):
    """A swizzled tile's rows are 128 bytes: another constant stride is a compile error at
    the call."""
    lam = np.zeros(64 * 64, np.float16)

    with sycl.buffer(lam) as L:
        def cg(h):
            src = L.get_access(h, sycl.access_mode.read)
            la = sycl.local_accessor(np.float16, sycl.range(64 * 64), h)

            def kernel(it):
                g = it.get_group()
                la[it.get_local_linear_id()] = src[0]
                ta = jm.joint_matrix(g, np.float16, jm.use.a, 64, 16, SWZ)
                jm.joint_matrix_load(g, ta, (la, 0), 32)

            h.parallel_for(sycl.nd_range((128,), (128,)), kernel)

        with pytest.raises(sycl.exception, match="128-byte rows") as e:
            kq.submit(cg).wait()
        assert e.value.code() is sycl.errc.invalid and "joint_matrix_load" in str(e.value)
    assert (lam == 0).all()  # the host data is as it was


def test_wgmma_on_sm90(kq):
    """On an sm_90 GPU the product runs on wgmma (the PTX has it); everywhere the results
    agree with numpy (the other tests); a work-group of the wrong size is an assert at the
    mad on wgmma devices."""
    if not _wgmma_device(kq):
        pytest.skip("no sm_90 GPU (wgmma)")
    rng = np.random.default_rng(1)
    a, b, want = _operands("fp16", rng, 64, 16, 64)
    np.testing.assert_array_equal(_gemm(kq, "fp16", a, b, 16), want)


def test_combinations_query(kernel_device, host_device):
    """Every device answers the work-group query: loops (any shape up to 128 x 256) on the
    CPU and host devices, wgmma's kinds on sm_90 GPUs."""
    q = sycl.info.device.ext_pysycl_work_group_matrix_combinations
    host = host_device.get_info(q)
    assert {c.atype for c in host} == {jm.matrix_type.fp16, jm.matrix_type.bf16,
                                       jm.matrix_type.tf32, jm.matrix_type.sint8,
                                       jm.matrix_type.uint8}
    assert all((c.max_msize, c.max_nsize) == (128, 256) for c in host)
    got = kernel_device.get_info(q)
    if _wgmma_device(sycl.queue(kernel_device)):
        assert {(c.atype, c.max_ksize) for c in got} == {
            (jm.matrix_type.fp16, 16), (jm.matrix_type.bf16, 16), (jm.matrix_type.tf32, 8)}
        assert all(c.ctype is jm.matrix_type.fp32 for c in got)
    elif kernel_device.has(sycl.aspect.ext_pysycl_spirv):
        assert got == host


def test_a_work_group_of_the_wrong_size(any_kernel_queue):
    """A 64-row matrix in work-groups of 256: by loops (any work-group size) the product is
    right; on wgmma (one warpgroup of 128 per 64 rows) the mad is a failed assert at its
    line, never a wrong result or a hang."""
    q = any_kernel_queue
    a, b, want = _operands("fp16", np.random.default_rng(9), 64, 16, 64)
    if not _wgmma_device(q):
        np.testing.assert_array_equal(_gemm(q, "fp16", a, b, 16, items=256), want)
        return
    with pytest.raises(AssertionError, match="needs a work-group of 128 work-items"):
        _gemm(q, "fp16", a, b, 16, items=256)

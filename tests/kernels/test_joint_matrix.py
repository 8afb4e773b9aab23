"""sycl_ext_oneapi_matrix: joint_matrix GEMM tiles and each operation, compiled (SPIR-V
loops; on an NVIDIA GPU PTX ``mma.sync`` fragments) and on the host_debuggable device
(the numpy reference), compared with numpy.

Every test uses the tile shapes NVIDIA's tensor cores have (``matrix_ptx.SHAPES``:
m16n16k16 for fp16/bf16, m16n16k8 for tf32, m16n16k32 for int8), which the loop
devices offer too, and work-groups of whole 32-wide sub-groups."""

import inspect

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pysycl as sycl
from pysycl._core import bfloat16 as bf16
from pysycl._kernels.matrix_ptx import PTX_COMBINATIONS, SHAPES, arch_cc
from pysycl.ext.oneapi import bfloat16
from pysycl.ext.oneapi.experimental import matrix as jm

KINDS = {  # name -> (T, A/B memory dtype, accumulator dtype)
    "fp16": (np.float16, np.float16, np.float32),
    "bf16": (bfloat16, np.uint16, np.float32),
    "tf32": (jm.precision.tf32, np.float32, np.float32),
    "int8": (np.int8, np.int8, np.int32),
    "uint8": (np.uint8, np.uint8, np.int32),
}
FAMILY = {"fp16": "b16", "bf16": "b16", "tf32": "tf32", "int8": "b8", "uint8": "b8"}
TILE = {kind: SHAPES[fam] for kind, fam in FAMILY.items()}
WARP = 32  # work-items of a work-group: one whole sub-group on every device


def _is_ptx(q):
    return q.get_device().has(sycl.aspect.ext_pysycl_ptx)


def _gemm(q, kind, a, b, lda, ldb, ldc, operands="tuple"):
    """C (m x n, row stride ldc) = A (row stride lda) * B (row stride ldb), in the kind's
    tiles (``TILE``) read from global memory; a work-group (one sub-group) per C tile.
    ``operands``: memory operands as ``(acc, offset)`` or ``acc.get_multi_ptr() + offset``."""
    T, _, ct = KINDS[kind]
    tm, tn = TILE[kind][:2]
    fam = FAMILY[kind]  # the kernel's K step (a constant string: chosen at compile time)
    m, n, k = a.shape[0], b.shape[1], a.shape[1]
    pa = np.zeros((m, lda), a.dtype)
    pa[:, :k] = a
    pb = np.zeros((k, ldb), b.dtype)
    pb[:, :n] = b
    c = np.full((m, ldc), 7, ct)
    with sycl.buffer(pa.ravel()) as A, sycl.buffer(pb.ravel()) as B, sycl.buffer(c.ravel()) as C:
        def cg(h):
            ra = A.get_access(h, sycl.access_mode.read)
            rb = B.get_access(h, sycl.access_mode.read)
            wc = C.get_access(h, sycl.access_mode.read_write)

            def kernel(it):
                sg = it.get_sub_group()
                if fam == "tf32":  # a constant string: the branch is chosen at compile time
                    tk = 8
                elif fam == "b8":
                    tk = 32
                else:
                    tk = 16
                ti, tj = it.get_group(0), it.get_group(1)
                acc = jm.joint_matrix(sg, ct, jm.use.accumulator, 16, 16)
                jm.joint_matrix_fill(sg, acc, 0)
                for kk in range(0, k, tk):
                    ta = jm.joint_matrix(sg, T, jm.use.a, 16, tk, jm.layout.row_major)
                    tb = jm.joint_matrix(sg, T, jm.use.b, tk, 16, jm.layout.row_major)
                    if operands == "tuple":  # a constant string: chosen at compile time
                        jm.joint_matrix_load(sg, ta, (ra, ti * tm * lda + kk), lda)
                        jm.joint_matrix_load(sg, tb, (rb, kk * ldb + tj * tn), ldb)
                    else:
                        jm.joint_matrix_load(sg, ta, ra.get_multi_ptr() + ti * tm * lda + kk, lda)
                        jm.joint_matrix_load(sg, tb, rb.get_multi_ptr() + kk * ldb + tj * tn, ldb)
                    jm.joint_matrix_mad(sg, acc, ta, tb, acc)
                if operands == "tuple":
                    jm.joint_matrix_store(sg, acc, (wc, ti * tm * ldc + tj * tn), ldc,
                                          jm.layout.row_major)
                else:
                    jm.joint_matrix_store(sg, acc, wc.get_multi_ptr() + ti * tm * ldc + tj * tn,
                                          ldc, jm.layout.row_major)

            h.parallel_for(sycl.nd_range((m // tm, n // tn * WARP), (1, WARP)), kernel)

        q.submit(cg)
    assert (c[:, n:] == 7).all()  # the padding is untouched
    return c[:, :n]


def _operands(kind, rng, m, n, k):
    low = 0 if kind == "uint8" else -8
    a = rng.integers(low, 9, (m, k))
    b = rng.integers(low, 9, (k, n))
    want = (a @ b).astype(KINDS[kind][2])
    if kind == "bf16":
        return bf16.from_float(a.astype(np.float32)), bf16.from_float(b.astype(np.float32)), want
    mt = KINDS[kind][1]
    return a.astype(mt), b.astype(mt), want


@pytest.mark.parametrize("kind", list(KINDS))
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tiles=st.tuples(*[st.integers(1, 2)] * 3), pads=st.tuples(*[st.integers(0, 9)] * 3),
       seed=st.integers(0, 2**16))
def test_gemm_matches_numpy(any_kernel_queue, kind, tiles, pads, seed):
    m, n, k = (s * t for s, t in zip(TILE[kind], tiles, strict=True))
    a, b, want = _operands(kind, np.random.default_rng(seed), m, n, k)
    got = _gemm(any_kernel_queue, kind, a, b, k + pads[0], n + pads[1], n + pads[2])
    assert np.array_equal(got, want)


def _gemm_usm(q, a, b):
    """C = A * B (fp16, one 16x16x16 step per K tile) through USM pointers with offsets
    (``p + k``), C stored column-major."""
    m, k = a.shape
    n = b.shape[1]
    pa, pb = sycl.malloc_device(m * k, q, dtype=np.float16), sycl.malloc_device(k * n, q, dtype=np.float16)
    pc = sycl.malloc_device(m * n, q, dtype=np.float32)
    try:
        q.memcpy(pa, a.ravel(), a.nbytes).wait()
        q.memcpy(pb, b.ravel(), b.nbytes).wait()

        def kernel(it):
            sg = it.get_sub_group()
            ti, tj = it.get_group(0), it.get_group(1)
            acc = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
            jm.joint_matrix_fill(sg, acc, 0)
            for kk in range(0, k, 16):
                ta = jm.joint_matrix(sg, np.float16, jm.use.a, 16, 16, jm.layout.row_major)
                tb = jm.joint_matrix(sg, np.float16, jm.use.b, 16, 16, jm.layout.row_major)
                jm.joint_matrix_load(sg, ta, pa + (ti * 16 * k + kk), k)
                jm.joint_matrix_load(sg, tb, pb + (kk * n + tj * 16), n)
                jm.joint_matrix_mad(sg, acc, ta, tb, acc)
            jm.joint_matrix_store(sg, acc, pc + (tj * 16 * m + ti * 16), m, jm.layout.col_major)

        q.parallel_for(sycl.nd_range((m // 16, n // 16 * WARP), (1, WARP)), kernel).wait()
        out = np.empty(m * n, np.float32)
        q.memcpy(out, pc, out.nbytes).wait()
        return out.reshape(n, m).T
    finally:
        for p in (pa, pb, pc):
            sycl.free(p, q)


def test_gemm_through_usm_pointers(any_kernel_queue):
    a, b, want = _operands("fp16", np.random.default_rng(5), 32, 48, 32)
    assert np.array_equal(_gemm_usm(any_kernel_queue, a, b), want)


def _gemm_local(q, kind, a, b, b_layout, ld_pad, whole_warps=False):
    """C = A * B with A and B tiles staged in local memory (PTX: ``ldmatrix`` when their
    rows are 16-byte aligned, element loads else), B row- or column-major there; the
    local tiles' strides are ``tk + ld_pad`` (A) and ``tn + ld_pad`` / ``tk + ld_pad`` (B).
    ``whole_warps``: the kernel requires its work-group size (``reqd_work_group_size``),
    so that PTX needs no run-time whole-warp tests."""
    T, _, ct = KINDS[kind]
    tm, tn, tk = TILE[kind]
    fam = FAMILY[kind]  # the kernel's K step (a constant string: chosen at compile time)
    m, n, k = a.shape[0], b.shape[1], a.shape[1]
    col = b_layout is jm.layout.col_major
    sa, sb = tk + ld_pad, (tk if col else tn) + ld_pad
    c = np.zeros((m, n), ct)
    with sycl.buffer(a.ravel()) as A, sycl.buffer(b.ravel()) as B, sycl.buffer(c.ravel()) as C:
        def cg(h):
            ra = A.get_access(h, sycl.access_mode.read)
            rb = B.get_access(h, sycl.access_mode.read)
            wc = C.get_access(h, sycl.access_mode.write)
            la = sycl.local_accessor(a.dtype, sycl.range(tm * sa), h)
            lb = sycl.local_accessor(b.dtype, sycl.range((tn if col else tk) * sb), h)

            def kernel(it):
                sg = it.get_sub_group()
                if fam == "tf32":  # a constant string: the branch is chosen at compile time
                    tk = 8
                elif fam == "b8":
                    tk = 32
                else:
                    tk = 16
                ti, tj = it.get_group(0), it.get_group(1)
                lid = it.get_local_linear_id()
                acc = jm.joint_matrix(sg, ct, jm.use.accumulator, 16, 16)
                jm.joint_matrix_fill(sg, acc, 0)
                for kk in range(0, k, tk):
                    for e in range(lid, tm * tk, WARP):
                        la[(e // tk) * sa + e % tk] = ra[(ti * tm + e // tk) * k + kk + e % tk]
                    for e in range(lid, tk * tn, WARP):
                        r, cc = e // tn, e % tn  # B[kk + r, tj*tn + cc]
                        v = rb[(kk + r) * n + tj * tn + cc]
                        if col:
                            lb[cc * sb + r] = v
                        else:
                            lb[r * sb + cc] = v
                    sycl.group_barrier(it.get_group())
                    ta = jm.joint_matrix(sg, T, jm.use.a, 16, tk, jm.layout.row_major)
                    tb = jm.joint_matrix(sg, T, jm.use.b, tk, 16, b_layout)
                    jm.joint_matrix_load(sg, ta, la, sa)
                    jm.joint_matrix_load(sg, tb, lb, sb)
                    jm.joint_matrix_mad(sg, acc, ta, tb, acc)
                    sycl.group_barrier(it.get_group())
                jm.joint_matrix_store(sg, acc, (wc, ti * tm * n + tj * tn), n, jm.layout.row_major)

            if whole_warps:
                kernel = sycl.reqd_work_group_size(1, WARP)(kernel)
            h.parallel_for(sycl.nd_range((m // tm, n // tn * WARP), (1, WARP)), kernel)

        q.submit(cg)
    return c


@pytest.mark.parametrize("kind", ["fp16", "tf32", "int8"])
def test_gemm_with_a_required_work_group_size(any_kernel_queue, kind):
    tm, tn, tk = TILE[kind]
    a, b, want = _operands(kind, np.random.default_rng(5), 2 * tm, 2 * tn, 3 * tk)
    for b_layout in (jm.layout.row_major, jm.layout.col_major):
        got = _gemm_local(any_kernel_queue, kind, a, b, b_layout, 8, whole_warps=True)
        assert np.array_equal(got, want), b_layout


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("b_col", [False, True])
@pytest.mark.parametrize("ld_pad", [0, 8, 3])  # 3: rows not 16-byte aligned (element loads)
def test_gemm_from_local_memory(any_kernel_queue, kind, b_col, ld_pad):
    tm, tn, tk = TILE[kind]
    a, b, want = _operands(kind, np.random.default_rng(ld_pad), 2 * tm, 2 * tn, 2 * tk)
    got = _gemm_local(any_kernel_queue, kind, a, b,
                      jm.layout.col_major if b_col else jm.layout.row_major, ld_pad)
    assert np.array_equal(got, want)


def _apply_map(q, kind, which):
    """D = A * B where ``which`` (A or B) is ``3*row + col`` by joint_matrix_apply and the
    other is the identity (ones where row == col): D shows where apply put each value."""
    T, _, ct = KINDS[kind]
    tm, tn = TILE[kind][:2]
    fam = FAMILY[kind]
    out = np.full((tm, tn), -1, ct)
    with sycl.buffer(out.ravel()) as O:
        def cg(h):
            wo = O.get_access(h, sycl.access_mode.write)

            def numbered_a(it):
                sg = it.get_sub_group()
                if fam == "tf32":  # a constant string: the branch is chosen at compile time
                    tk = 8
                elif fam == "b8":
                    tk = 32
                else:
                    tk = 16
                ta = jm.joint_matrix(sg, T, jm.use.a, 16, tk, jm.layout.row_major)
                tb = jm.joint_matrix(sg, T, jm.use.b, tk, 16, jm.layout.row_major)
                jm.joint_matrix_apply(sg, ta, lambda x, r, c: 3 * r + c)
                jm.joint_matrix_apply(sg, tb, lambda x, r, c: 1 if r == c else 0)
                acc = jm.joint_matrix(sg, ct, jm.use.accumulator, 16, 16)
                jm.joint_matrix_fill(sg, acc, 0)
                jm.joint_matrix_mad(sg, acc, ta, tb, acc)
                jm.joint_matrix_store(sg, acc, wo, tn, jm.layout.row_major)

            def numbered_b(it):
                sg = it.get_sub_group()
                if fam == "tf32":  # a constant string: the branch is chosen at compile time
                    tk = 8
                elif fam == "b8":
                    tk = 32
                else:
                    tk = 16
                ta = jm.joint_matrix(sg, T, jm.use.a, 16, tk, jm.layout.row_major)
                tb = jm.joint_matrix(sg, T, jm.use.b, tk, 16, jm.layout.row_major)
                jm.joint_matrix_apply(sg, ta, lambda x, r, c: 1 if r == c else 0)
                jm.joint_matrix_apply(sg, tb, lambda x, r, c: 3 * r + c)
                acc = jm.joint_matrix(sg, ct, jm.use.accumulator, 16, 16)
                jm.joint_matrix_fill(sg, acc, 0)
                jm.joint_matrix_mad(sg, acc, ta, tb, acc)
                jm.joint_matrix_store(sg, acc, wo, tn, jm.layout.row_major)

            h.parallel_for(sycl.nd_range(WARP, WARP), numbered_a if which == "a" else numbered_b)

        q.submit(cg)
    return out


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("which", ["a", "b"])
def test_apply_sees_rows_and_columns_of_a_and_b(any_kernel_queue, kind, which):
    tm, tn, tk = TILE[kind]
    r, c = np.indices((tm, tk) if which == "a" else (tk, tn))
    values = (3 * r + c).astype(np.int64)
    eye = np.eye(tk, tn) if which == "a" else np.eye(tm, tk)
    want = values @ eye if which == "a" else eye @ values
    assert np.array_equal(_apply_map(any_kernel_queue, kind, which), want.astype(KINDS[kind][2]))


def _ops(q, layout_c):
    """fill, load (col-major, local memory), apply with row/col, copy, store: 16x16."""
    src = np.arange(256, dtype=np.float32)
    out = np.zeros((4, 256), np.float32)
    with sycl.buffer(src) as S, sycl.buffer(out.ravel()) as O:
        def cg(h):
            rs = S.get_access(h, sycl.access_mode.read)
            wo = O.get_access(h, sycl.access_mode.write)
            tile = sycl.local_accessor(np.float32, sycl.range(256), h)

            def kernel(it):
                sg = it.get_sub_group()
                lid = it.get_local_linear_id()
                for i in range(lid, 256, WARP):
                    tile[i] = rs[i]
                sycl.group_barrier(it.get_group())
                c = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
                jm.joint_matrix_fill(sg, c, 2.5)
                jm.joint_matrix_store(sg, c, (wo, 0), 16, jm.layout.row_major)
                jm.joint_matrix_load(sg, c, tile, 16, layout_c)
                jm.joint_matrix_store(sg, c, (wo, 256), 16, jm.layout.row_major)
                jm.joint_matrix_apply(sg, c, lambda x, r, col: x * 2 + r * 1000 + col * 100000)
                jm.joint_matrix_store(sg, c, (wo, 512), 16, jm.layout.row_major)
                h16 = jm.joint_matrix(sg, np.int32, jm.use.accumulator, 16, 16)
                jm.joint_matrix_copy(sg, c, h16)
                jm.joint_matrix_apply(sg, h16, lambda x: x - 1)
                jm.joint_matrix_copy(sg, h16, c)
                jm.joint_matrix_store(sg, c, (wo, 768), 16, jm.layout.row_major)

            h.parallel_for(sycl.nd_range(WARP, WARP), kernel)

        q.submit(cg)
    return out


@pytest.mark.parametrize("col", [False, True])
def test_each_operation(any_kernel_queue, col):
    got = _ops(any_kernel_queue, jm.layout.col_major if col else jm.layout.row_major)
    src = np.arange(256, dtype=np.float32).reshape(16, 16)
    tile = src.T if col else src
    r, c = np.indices((16, 16))
    applied = tile * 2 + r * 1000 + c * 100000
    assert np.array_equal(got[0].reshape(16, 16), np.full((16, 16), 2.5, np.float32))
    assert np.array_equal(got[1].reshape(16, 16), tile)
    assert np.array_equal(got[2].reshape(16, 16), applied)
    assert np.array_equal(got[3].reshape(16, 16), applied - 1)


def test_combinations_query(kernel_device, host_device):
    for d in (kernel_device, host_device):
        combos = d.get_info(sycl.info.device.ext_oneapi_matrix_combinations)
        ptx = [arch for fmt, arch in d.image_targets if fmt == "ptx"] if d is not host_device else []
        if ptx:  # NVIDIA GPUs: the mma.sync shapes on sm_80 and later, nothing before
            assert combos == (list(PTX_COMBINATIONS) if arch_cc(ptx[0]) >= 80 else []), combos
            continue
        kinds = {(c.atype, c.ctype) for c in combos}
        assert (jm.matrix_type.fp16, jm.matrix_type.fp32) in kinds
        assert (jm.matrix_type.tf32, jm.matrix_type.fp32) in kinds
        assert (jm.matrix_type.sint8, jm.matrix_type.sint32) in kinds
        assert all(c.max_msize >= 16 for c in combos)


def test_round_to_tf32():
    assert jm.round_to_tf32(np.float32(1 + 2**-11)) == np.float32(1)
    assert jm.round_to_tf32(np.float32(1 + 3 * 2**-11)) == np.float32(1 + 2**-9)


# ---------------------------------------------------------------------------- bad input
def _submit(q, kernel, nd=True, local=WARP):
    out = np.zeros(256, np.float32)
    with sycl.buffer(out) as O:
        def cg(h):
            wo = O.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.nd_range(local, local) if nd else sycl.range(8), kernel(wo))

        q.submit(cg)
    return out


def _line(fn, text):
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, ln in enumerate(lines) if text in ln)


def _mixed(wo):
    def kernel(it):
        sg = it.get_sub_group()
        c = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        a = jm.joint_matrix(sg, np.float16, jm.use.a, 16, 16, jm.layout.row_major)
        b = jm.joint_matrix(sg, bfloat16, jm.use.b, 16, 16, jm.layout.row_major)
        jm.joint_matrix_mad(sg, c, a, b, c)  # MAD
        jm.joint_matrix_store(sg, c, (wo, 0), 16, jm.layout.row_major)
    return kernel


def test_unsupported_combination(any_kernel_queue):
    with pytest.raises(sycl.exception) as e:
        _submit(any_kernel_queue, _mixed)
    assert e.value.code() == sycl.errc.kernel_not_supported
    msg = str(e.value)
    assert "fp16 x bf16 + fp32 -> fp32" in msg and "fp16 x fp16 + fp32 -> fp32" in msg
    assert f":{_line(_mixed, '# MAD')}" in msg


def _too_big(wo):
    def kernel(it):
        sg = it.get_sub_group()
        c = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 64, 8)  # BIG
        jm.joint_matrix_store(sg, c, (wo, 0), 8, jm.layout.row_major)
    return kernel


def test_unsupported_shape(any_kernel_queue):
    with pytest.raises(sycl.exception) as e:
        _submit(any_kernel_queue, _too_big)
    assert e.value.code() == sycl.errc.kernel_not_supported
    assert "64x8" in str(e.value) and f":{_line(_too_big, '# BIG')}" in str(e.value)


def _loop_shape(wo):
    def kernel(it):
        sg = it.get_sub_group()
        c = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 8, 8)  # SMALL
        jm.joint_matrix_fill(sg, c, 1.0)
        jm.joint_matrix_store(sg, c, (wo, 0), 8, jm.layout.row_major)
    return kernel


def test_shapes_tensor_cores_lack(any_kernel_queue):
    """An 8x8 tile: any size up to 32 on the loop devices, not an mma.sync shape."""
    if not _is_ptx(any_kernel_queue):
        assert (_submit(any_kernel_queue, _loop_shape)[:64] == 1).all()
        return
    with pytest.raises(sycl.exception) as e:
        _submit(any_kernel_queue, _loop_shape)
    assert e.value.code() == sycl.errc.kernel_not_supported
    msg = str(e.value)
    assert "8x8" in msg and "m16n16k16" in msg and f":{_line(_loop_shape, '# SMALL')}" in msg


def _bad_stride(wo):
    def kernel(it):
        sg = it.get_sub_group()
        c = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        jm.joint_matrix_store(sg, c, (wo, 0), 12, jm.layout.row_major)  # STRIDE
    return kernel


def test_bad_stride(any_kernel_queue):
    with pytest.raises(sycl.exception) as e:
        _submit(any_kernel_queue, _bad_stride)
    msg = str(e.value)
    assert "joint_matrix_store" in msg and "stride 12" in msg
    assert f":{_line(_bad_stride, '# STRIDE')}" in msg


def _half_warp(wo):
    def kernel(it):
        sg = it.get_sub_group()
        a = jm.joint_matrix(sg, np.float16, jm.use.a, 16, 16, jm.layout.row_major)
        b = jm.joint_matrix(sg, np.float16, jm.use.b, 16, 16, jm.layout.row_major)
        c = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        jm.joint_matrix_apply(sg, a, lambda x, r, col: 1)
        jm.joint_matrix_apply(sg, b, lambda x, r, col: 1)
        jm.joint_matrix_fill(sg, c, 0.0)
        jm.joint_matrix_mad(sg, c, a, b, c)  # HALF
        jm.joint_matrix_store(sg, c, wo, 16, jm.layout.row_major)
    return kernel


def test_part_of_a_sub_group(any_kernel_queue):
    """Work-groups of 16: the loop devices are correct at any sub-group size; tensor cores
    need the whole warp, and a mad reached by 16 lanes is a failed assert at its line
    (never a hang)."""
    if not _is_ptx(any_kernel_queue):
        assert (_submit(any_kernel_queue, _half_warp, local=16) == 16).all()
        return
    with pytest.raises(AssertionError) as e:
        _submit(any_kernel_queue, _half_warp, local=16)
    msg = str(e.value)
    assert "needs all 32 work-items" in msg and f":{_line(_half_warp, '# HALF')}" in msg


def _copy_across_uses(wo):
    def kernel(it):
        sg = it.get_sub_group()
        a = jm.joint_matrix(sg, np.float16, jm.use.a, 16, 16, jm.layout.row_major)
        c = jm.joint_matrix(sg, np.float32, jm.use.accumulator, 16, 16)
        jm.joint_matrix_apply(sg, a, lambda x, r, col: r + col)
        jm.joint_matrix_copy(sg, a, c)  # COPY
        jm.joint_matrix_store(sg, c, wo, 16, jm.layout.row_major)
    return kernel


def test_copy_across_uses(any_kernel_queue):
    """use.a -> use.accumulator: element by element on the loop devices; PTX fragments of
    the two uses lie differently, so it is not offered there."""
    if not _is_ptx(any_kernel_queue):
        r, c = np.indices((16, 16))
        assert np.array_equal(_submit(any_kernel_queue, _copy_across_uses), (r + c).ravel())
        return
    with pytest.raises(sycl.exception) as e:
        _submit(any_kernel_queue, _copy_across_uses)
    assert e.value.code() == sycl.errc.kernel_not_supported
    assert f":{_line(_copy_across_uses, '# COPY')}" in str(e.value)


def _in_range_kernel(wo):
    def kernel(i):
        c = jm.joint_matrix(i, np.float32, jm.use.accumulator, 16, 16)  # RANGE
        jm.joint_matrix_fill(i, c, 1.0)
    return kernel


def test_range_kernel_is_a_compile_error(kq):
    with pytest.raises(sycl.kernel_compile_error) as e:
        _submit(kq, _in_range_kernel, nd=False)
    msg = str(e.value)
    assert "sub-group" in msg and f":{_line(_in_range_kernel, '# RANGE')}" in msg

"""joint_matrix on PTX without a GPU: the ``mma.sync`` fragment maps against a model of the
PTX ISA's tables, ``ldmatrix`` against the fragments it must fill, and every kernel of
tests/kernels/test_joint_matrix.py compiled for sm_80 and sm_90 (NVIDIA's assembler
accepts them) and refused for sm_70. The same kernels run on NVIDIA GPUs in the GPU suite.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import pysycl as sycl
from pysycl._kernels import matrix_ptx as P  # noqa: N812
from pysycl.ext.oneapi.experimental import matrix as jm
from tests.conftest import ptxas_check
from tests.kernels import test_joint_matrix as tjm


# --------------------------------------------------------------- the PTX ISA's tables
def _isa(shape: str, use: str, lane: int) -> list[tuple[int, int]]:
    """(row, col) of each element lane ``lane`` holds, in register order, as the PTX ISA
    writes them ("Matrix Fragments for mma.m16n8k16 / m16n8k8 / m16n8k32"), for one
    m16n8 instruction; a 16-wide B or C is two of them (columns +8)."""
    g, t = lane >> 2, lane % 4
    out = []
    if shape == "k16":  # .f16/.bf16
        if use == "a":  # a0..a7
            for i in range(8):
                row = g if (i < 2 or 4 <= i < 6) else g + 8
                col = t * 2 + (i & 1) + (8 if i >= 4 else 0)
                out.append((row, col))
        elif use == "b":  # b0..b3
            out = [(t * 2 + (i & 1) + (8 if i >= 2 else 0), g) for i in range(4)]
    elif shape == "k8":  # .tf32
        if use == "a":  # a0..a3
            out = [(g if i in (0, 2) else g + 8, t if i < 2 else t + 4) for i in range(4)]
        elif use == "b":  # b0, b1
            out = [(t if i == 0 else t + 4, g) for i in range(2)]
    elif shape == "k32":  # .s8/.u8
        if use == "a":  # a0..a15
            for i in range(16):
                row = g if (i < 4 or 8 <= i < 12) else g + 8
                out.append((row, t * 4 + (i & 3) + (16 if i >= 8 else 0)))
        elif use == "b":  # b0..b7
            out = [(t * 4 + (i & 3) + (16 if i >= 4 else 0), g) for i in range(8)]
    if use == "c":  # c0..c3 (f32 and s32 accumulators alike)
        out = [(g if i < 2 else g + 8, t * 2 + (i & 1)) for i in range(4)]
    return out


_SHAPE = {"b16": "k16", "tf32": "k8", "b8": "k32"}


@pytest.mark.parametrize("fam", ["b16", "tf32", "b8"])
@pytest.mark.parametrize("use", ["a", "b", "accumulator"])
def test_fragment_maps_are_the_isa_tables(fam: str, use: str) -> None:
    m, n, k = P.SHAPES[fam]
    rows, cols = {"a": (m, k), "b": (k, n), "accumulator": (m, n)}[use]
    key = "acc" if use == "accumulator" else fam
    fmap = P.fragment_map(key, use)
    seen = np.zeros((rows, cols), int)
    for lane in range(P.WARP):
        got = [P.place(p, lane) for p in fmap]
        isa = _isa(_SHAPE[fam], "c" if use == "accumulator" else use, lane)
        want = isa if use == "a" else isa + [(r, c + 8) for r, c in isa]
        assert got == want, (lane, got, want)
        for r, c in got:
            seen[r, c] += 1
    assert (seen == 1).all()  # the warp holds every element of the tile once


def _ldmatrix_receives(lane: int, trans: bool, rows_of: list[tuple[int, int]],
                       contiguous_cols: bool) -> list[tuple[int, int]]:
    """The tile elements lane ``lane`` receives from ``ldmatrix.x4`` (PTX ISA "ldmatrix":
    lane ``8j + i`` addresses row ``i`` of matrix ``j``; without ``.trans`` lane ``l``
    gets elements ``2(l%4), 2(l%4)+1`` of row ``l/4`` of each matrix, with it the
    transposed places), where ``rows_of[l]`` is the tile element starting lane ``l``'s
    memory row and memory runs along columns (``contiguous_cols``) or rows."""
    out = []
    for j in range(4):
        for half in range(2):
            row, pos = ((2 * (lane % 4) + half, lane // 4) if trans else
                        (lane // 4, 2 * (lane % 4) + half))
            r0, c0 = rows_of[8 * j + row]
            out.append((r0, c0 + pos) if contiguous_cols else (r0 + pos, c0))
    return out


@pytest.mark.parametrize("use", ["a", "b"])
@pytest.mark.parametrize("colmajor", [False, True])
def test_ldmatrix_fills_the_fragments(use: str, colmajor: bool) -> None:
    rows_of = [P.ldmatrix_row(colmajor, lane) for lane in range(P.WARP)]
    trans = P.ldmatrix_trans(use, colmajor)
    assert trans == ((use == "a") == colmajor)
    fmap = P.fragment_map("b16", use)
    for lane in range(P.WARP):
        got = _ldmatrix_receives(lane, trans, rows_of, not colmajor)
        assert got == [P.place(p, lane) for p in fmap], lane


def _ldmatrix_b32_receives(lane: int, rows_of: list[tuple[int, int]],
                           contiguous_cols: bool) -> list[tuple[int, int]]:
    """The 32-bit elements lane ``lane`` receives from ``ldmatrix.x4`` without ``.trans``
    (PTX ISA: the halves ``2(l%4), 2(l%4)+1`` of row ``l/4`` of each 8x8 b16 matrix, so the
    32-bit element ``l%4`` of that 16-byte row)."""
    out = []
    for j in range(4):
        r0, c0 = rows_of[8 * j + lane // 4]
        pos = lane % 4
        out.append((r0, c0 + pos) if contiguous_cols else (r0 + pos, c0))
    return out


@pytest.mark.parametrize(("use", "colmajor"), [("a", False), ("b", True)])
def test_ldmatrix_fills_tf32_fragments(use: str, colmajor: bool) -> None:
    width = P.LDMATRIX_WIDTH["tf32"]
    assert P.ldmatrix_family("tf32", use, colmajor)
    assert not P.ldmatrix_trans(use, colmajor)
    rows_of = [P.ldmatrix_row(colmajor, lane, width=width) for lane in range(P.WARP)]
    fmap = P.fragment_map("tf32", use)
    seen = set()
    for lane in range(P.WARP):
        got = _ldmatrix_b32_receives(lane, rows_of, not colmajor)
        assert got == [P.place(p, lane) for p in fmap], lane
        seen.update(got)
    assert len(seen) == 16 * 8  # the warp reads the whole 16x8 (8x16) tile once


def test_tf32_tiles_that_need_a_transpose_are_read_element_by_element() -> None:
    assert not P.ldmatrix_family("tf32", "a", True)  # A column-major
    assert not P.ldmatrix_family("tf32", "b", False)  # B row-major
    assert not P.ldmatrix_family("b8", "a", False)
    assert not P.ldmatrix_family("acc", "accumulator", False)
    assert P.ldmatrix_family("b16", "b", False) and P.ldmatrix_family("b16", "a", True)


def test_combinations_by_compute_capability() -> None:
    assert P.ptx_combinations(70) == () and P.ptx_combinations(75) == ()
    combos = P.ptx_combinations(90)
    assert combos == P.ptx_combinations(80) and len(combos) == 5
    shapes = {(c.atype, c.msize, c.nsize, c.ksize) for c in combos}
    T = jm.matrix_type
    assert shapes == {(T.fp16, 16, 16, 16), (T.bf16, 16, 16, 16), (T.tf32, 16, 16, 8),
                      (T.sint8, 16, 16, 32), (T.uint8, 16, 16, 32)}
    assert P.arch_cc("sm_90a") == 90 and P.arch_cc("sm_80") == 80


# --------------------------------------------------------------- kernels as PTX
@pytest.fixture
def ptx_archs(monkeypatch: pytest.MonkeyPatch) -> dict:
    """Each kernel the test runs (on the SPIR-V device) also compiled for sm_70, sm_80 and
    sm_90: ``{arch: [PTX text or the sycl.exception]}``."""
    import os
    import tempfile

    import pysycl_numba
    from pysycl._kernels.cache import kernels

    real = pysycl_numba.compile_kernel
    out: dict = {"sm_70": [], "sm_80": [], "sm_90": []}

    def all_archs(*args, **kw):  # type: ignore[no-untyped-def]
        ptx_kw = {k: v for k, v in kw.items() if k != "target"}  # the format and arch below
        for arch, got in out.items():
            try:
                got.append(real(*args, **dict(ptx_kw, image_format="ptx", arch=arch))
                           .binary.decode())
            except sycl.exception as e:
                got.append(e)
        return real(*args, **kw)

    monkeypatch.setattr(pysycl_numba, "compile_kernel", all_archs)
    monkeypatch.setenv("PYSYCL_CACHE_DIR", tempfile.mkdtemp(prefix="pysycl-ptx-mma-"))
    kernels.clear_memory()
    assert os.environ["PYSYCL_CACHE_DIR"]
    return out


_MMA = {"fp16": "m16n8k16.row.col.f32.f16.f16.f32", "bf16": "m16n8k16.row.col.f32.bf16.bf16.f32",
        "tf32": "m16n8k8.row.col.f32.tf32.tf32.f32", "int8": "m16n8k32.row.col.s32.s8.s8.s32",
        "uint8": "m16n8k32.row.col.s32.u8.u8.s32"}


def _check(ptx_archs: dict, kind: str, ldmatrix: bool) -> None:
    for arch in ("sm_80", "sm_90"):
        (ptx,) = ptx_archs[arch]
        assert isinstance(ptx, str), ptx
        assert f"mma.sync.aligned.{_MMA[kind]}" in ptx
        assert ("ldmatrix.sync.aligned.m8n8.x4" in ptx) == ldmatrix
        assert not re.search(r"\b(ld|st)\.local\b", ptx)  # fragments live in registers
        ptxas_check(ptx.encode(), arch)
    (e,) = ptx_archs["sm_70"]
    assert isinstance(e, sycl.exception) and e.code() == sycl.errc.kernel_not_supported
    assert "no joint_matrix combinations" in str(e)


@pytest.mark.parametrize("kind", list(tjm.KINDS))
def test_global_memory_gemm_as_ptx(kq: sycl.queue, ptx_archs: dict, kind: str) -> None:
    tm, tn, tk = tjm.TILE[kind]
    a, b, want = tjm._operands(kind, np.random.default_rng(1), tm, 2 * tn, 2 * tk)
    assert np.array_equal(tjm._gemm(kq, kind, a, b, 2 * tk + 3, 2 * tn, 2 * tn + 1), want)
    _check(ptx_archs, kind, ldmatrix=False)


@pytest.mark.parametrize("kind", list(tjm.KINDS))
def test_local_memory_gemm_as_ptx(kq: sycl.queue, ptx_archs: dict, kind: str) -> None:
    tm, tn, tk = tjm.TILE[kind]
    a, b, want = tjm._operands(kind, np.random.default_rng(2), tm, tn, 2 * tk)
    assert np.array_equal(tjm._gemm_local(kq, kind, a, b, jm.layout.col_major, 8), want)
    _check(ptx_archs, kind, ldmatrix=kind in ("fp16", "bf16", "tf32"))
    for arch in ("sm_80", "sm_90"):  # the run-time whole-warp test: the partial-warp assert
        assert "assert" in ptx_archs[arch][0]


@pytest.mark.parametrize("kind", ["fp16", "tf32"])
def test_a_required_work_group_size_drops_the_whole_warp_tests(kq: sycl.queue, ptx_archs: dict,
                                                               kind: str) -> None:
    tm, tn, tk = tjm.TILE[kind]
    a, b, want = tjm._operands(kind, np.random.default_rng(4), tm, tn, 2 * tk)
    got = tjm._gemm_local(kq, kind, a, b, jm.layout.col_major, 8, whole_warps=True)
    assert np.array_equal(got, want)
    _check(ptx_archs, kind, ldmatrix=True)
    for arch in ("sm_80", "sm_90"):
        ptx = ptx_archs[arch][0]
        assert ".reqntid 32, 1" in ptx
        assert "assert" not in ptx  # no partial-warp branch: every warp is whole
        assert len(re.findall(r"ldmatrix\.sync", ptx)) == 2  # A and B (captured strides:
        # their alignment is tested at run time, the element loads stay beside them)


def test_tf32_ldmatrix_only_where_no_transpose_is_needed(kq: sycl.queue, ptx_archs: dict) -> None:
    tm, tn, tk = tjm.TILE["tf32"]
    a, b, want = tjm._operands("tf32", np.random.default_rng(6), tm, tn, 2 * tk)
    got = tjm._gemm_local(kq, "tf32", a, b, jm.layout.row_major, 8, whole_warps=True)
    assert np.array_equal(got, want)
    for arch in ("sm_80", "sm_90"):
        ptx = ptx_archs[arch][0]
        assert len(re.findall(r"ldmatrix\.sync\.aligned\.m8n8\.x4\.shared", ptx)) == 1  # A
        assert ".trans" not in ptx and "ld.shared.b32" in ptx  # B row-major: element loads
        ptxas_check(ptx.encode(), arch)


@pytest.mark.parametrize("kind", list(tjm.KINDS))
def test_apply_as_ptx(kq: sycl.queue, ptx_archs: dict, kind: str) -> None:
    tjm._apply_map(kq, kind, "a")
    _check(ptx_archs, kind, ldmatrix=False)


def test_each_operation_as_ptx(kq: sycl.queue, ptx_archs: dict) -> None:
    tjm._ops(kq, jm.layout.col_major)
    for arch in ("sm_80", "sm_90"):
        (ptx,) = ptx_archs[arch]
        assert isinstance(ptx, str), ptx
        ptxas_check(ptx.encode(), arch)


def test_usm_gemm_as_ptx(kq: sycl.queue, ptx_archs: dict) -> None:
    a, b, want = tjm._operands("fp16", np.random.default_rng(3), 32, 32, 32)
    assert np.array_equal(tjm._gemm_usm(kq, a, b), want)
    _check(ptx_archs, "fp16", ldmatrix=False)

"""joint_matrix on NVIDIA tensor cores: what PTX devices offer, and the ``mma.sync``
fragment maps (which element of a tile each lane of the warp holds).

A joint_matrix on a PTX device is the warp's share of a ``mma.sync`` tile: lane ``l``
(``g = l // 4``, ``t = l % 4``) holds ``E`` elements, element ``e`` at row
``rg*g + rt*t + r0`` and column ``cg*g + ct*t + c0`` of the tile (:func:`fragment_map`,
the PTX ISA's "Matrix Fragments for mma.m16n8k*" tables; every one is affine in ``g``
and ``t``). A 16-column tile (B, C, D) is two ``n8`` tiles side by side: its elements
``0 .. E/2-1`` are the left one's, ``E/2 ..`` the right one's (the two ``mma.sync`` of
one ``joint_matrix_mad``). The compiler (``pysycl_numba/overloads/matrix_ptx.py``) and
the device info tables (``info.device.ext_oneapi_matrix_combinations``) read this module.
"""

from __future__ import annotations

from typing import Any

from pysycl._kernels.matrix import combination
from pysycl._kernels.matrix import matrix_type as T  # noqa: N812 - short, as _T in matrix.py

#: The lanes of a warp (a PTX device's sub-group).
WARP = 32
#: ``mma.sync`` shapes by A's element family: (m, n, k) of one ``joint_matrix_mad``
#: (two ``m16n8kK`` instructions side by side).
SHAPES = {"b16": (16, 16, 16), "tf32": (16, 16, 8), "b8": (16, 16, 32)}
_FAMILY = {T.fp16: "b16", T.bf16: "b16", T.tf32: "tf32", T.sint8: "b8", T.uint8: "b8"}
#: The lowest compute capability (major*10 + minor) with these ``mma.sync`` shapes.
MIN_CC = 80


def _combo(a: T, c: T) -> combination:
    m, n, k = SHAPES[_FAMILY[a]]
    return combination(m, n, k, m, n, k, a, a, c, c)


PTX_COMBINATIONS: tuple[combination, ...] = tuple(
    _combo(a, c) for a, c in ((T.fp16, T.fp32), (T.bf16, T.fp32), (T.tf32, T.fp32),
                              (T.sint8, T.sint32), (T.uint8, T.sint32)))


def ptx_combinations(cc: int) -> tuple[combination, ...]:
    """What a GPU of compute capability ``cc`` (``major*10 + minor``) offers: the
    ``mma.sync`` shapes on sm_80 and later, nothing before (sm_70's ``wmma`` is not
    implemented)."""
    return PTX_COMBINATIONS if cc >= MIN_CC else ()


#: Work-group matrices on sm_90 (``wgmma``, pysycl_numba/overloads/matrix_wgmma.py): fp16
#: and bf16 (K 16), tf32 (K 8) with float32 accumulators; rows any multiple of 64 up to 256
#: (one warpgroup of 128 work-items each), n any multiple of 8 up to 256.
WG_PTX_COMBINATIONS: tuple[combination, ...] = tuple(
    combination(256, 256, k, 0, 0, k, a, a, T.fp32, T.fp32)
    for a, k in ((T.fp16, 16), (T.bf16, 16), (T.tf32, 8)))


def wg_ptx_combinations(cc: int) -> tuple[combination, ...]:
    """The work-group matrices a GPU of compute capability ``cc`` offers (sm_90 only:
    ``wgmma`` is on the architecture-specific ``sm_90a`` target)."""
    return WG_PTX_COMBINATIONS if cc == 90 else ()


def arch_cc(arch: str) -> int:
    """``"sm_90"`` (or ``"sm_90a"``) -> 90."""
    return int("".join(ch for ch in arch[3:] if ch.isdigit()) or 0)


def family(kind: T, use: str, rows: int, cols: int) -> str:
    """The fragment family of a tile: A's element family, or ``"acc"``."""
    return "acc" if use == "accumulator" else _FAMILY[kind]


#: One element's place: (rg, rt, r0, cg, ct, c0): row = rg*g + rt*t + r0, col = cg*g + ct*t + c0.
Place = tuple[int, int, int, int, int, int]


def _a_place(fam: str, e: int) -> Place:
    if fam == "b16":  # a0..a7: rows g, g+8; columns 2t, 2t+1 (+8 for a4..a7)
        return (1, 0, 8 * ((e >> 1) & 1), 0, 2, (e & 1) + 8 * (e >> 2))
    if fam == "tf32":  # a0..a3: rows g (a0, a2), g+8; columns t, t+4 (a2, a3)
        return (1, 0, 8 * (e & 1), 0, 1, 4 * (e >> 1))
    # b8, a0..a15: rows g, g+8 (a4..a7, a12..a15); columns 4t..4t+3 (+16 for a8..)
    return (1, 0, 8 * ((e >> 2) & 1), 0, 4, (e & 3) + 16 * (e >> 3))


def _b_place(fam: str, i: int) -> Place:
    """Element ``i`` of one ``kK x n8`` B tile (column g)."""
    if fam == "b16":  # b0..b3: rows 2t, 2t+1 (+8 for b2, b3)
        return (0, 2, (i & 1) + 8 * (i >> 1), 1, 0, 0)
    if fam == "tf32":  # b0, b1: rows t, t+4
        return (0, 1, 4 * i, 1, 0, 0)
    return (0, 4, (i & 3) + 16 * (i >> 2), 1, 0, 0)  # b8, b0..b7: rows 4t.., +16 for b4..


def fragment_size(fam: str, use: str) -> int:
    """Elements a lane holds of a 16x16 accumulator, or of an A/B tile of ``fam``."""
    m, n, k = SHAPES["b16" if fam == "acc" else fam]
    return {"a": m * k, "b": k * n, "accumulator": m * n}[use] // WARP


def fragment_map(fam: str, use: str) -> tuple[Place, ...]:
    """Where each element of a lane's fragment lies in the tile (see the module's text)."""
    n = fragment_size(fam, use)
    if use == "a":
        return tuple(_a_place(fam, e) for e in range(n))
    half = n // 2
    out = []
    for e in range(n):
        blk, i = divmod(e, half)
        if use == "b":
            rg, rt, r0, cg, ct, c0 = _b_place(fam, i)
        else:  # C/D n8 tile: c0..c3 rows g, g+8 (c2, c3); columns 2t, 2t+1
            rg, rt, r0, cg, ct, c0 = (1, 0, 8 * (i >> 1), 0, 2, i & 1)
        out.append((rg, rt, r0, cg, ct, c0 + 8 * blk))
    return tuple(out)


def place(p: Place, lane: int) -> tuple[int, int]:
    """(row, col) of an element of lane ``lane``."""
    g, t = divmod(lane, 4)
    return p[0] * g + p[1] * t + p[2], p[3] * g + p[4] * t + p[5]


class IntOps:
    """Integer arithmetic for :func:`ldmatrix_row` (the compiler passes IR builders' own)."""

    @staticmethod
    def const(v: int) -> int:
        return v

    and_ = staticmethod(int.__and__)
    lshr = staticmethod(int.__rshift__)
    mul = staticmethod(int.__mul__)
    add = staticmethod(int.__add__)


def ldmatrix_trans(use: str, colmajor: bool) -> bool:
    """Whether ``ldmatrix`` of a 16x16 b16 A or B tile needs ``.trans``: A's register pairs
    run along columns, B's along rows; ``.trans`` where memory's contiguous direction is
    the other one."""
    return (use == "a") == colmajor


#: Elements of one 16-byte ``ldmatrix`` row, by fragment family.
LDMATRIX_WIDTH = {"b16": 8, "tf32": 4}


def ldmatrix_family(fam: str, use: str, colmajor: bool) -> bool:
    """Whether an A or B tile of ``fam`` in this layout is read with ``ldmatrix.x4``: every
    b16 tile (``.trans`` where needed); a tf32 tile where no transpose is needed (A
    row-major, B column-major: a lane's 32-bit element of an 8x8 b16 matrix is then its
    fragment element; ``.trans`` moves 16-bit halves and cannot transpose 32-bit ones)."""
    if use == "accumulator":
        return False
    return fam == "b16" or (fam == "tf32" and not ldmatrix_trans(use, colmajor))


def ldmatrix_row(colmajor: bool, lane: Any, ops: Any = IntOps, width: int = 8
                 ) -> tuple[Any, Any]:
    """``ldmatrix.x4`` of a 16x16 b16 A or B tile, or a 16x8 tf32 A (8x16 B) tile: the
    (row, col) of the tile whose 16-byte memory row lane ``lane`` addresses (``ops``: the
    arithmetic, ints or IR; ``width``: elements of a memory row, :data:`LDMATRIX_WIDTH`).

    The four 8x8 b16 matrices are the quarters at (0,0), (8,0), (0,w), (8,w) of a row-major
    tile, (0,0), (w,0), (0,8), (w,8) of a column-major one, in that order (``w`` =
    ``width``: 8, or 4 tf32 elements; registers 0..3: b16 A's a0a1 .. a6a7, B's left
    b0b1, b2b3, right b0b1, b2b3; tf32 A's a0 .. a3, B's left b0, b1, right b0, b1); lane
    ``8j + i`` addresses row ``i`` of quarter ``j``, a row along memory's contiguous
    direction.
    """
    i, j = ops.and_(lane, ops.const(7)), ops.lshr(lane, ops.const(3))
    r0 = ops.mul(ops.and_(j, ops.const(1)), ops.const(width if colmajor else 8))
    c0 = ops.mul(ops.and_(ops.lshr(j, ops.const(1)), ops.const(1)),
                 ops.const(8 if colmajor else width))
    return (r0, ops.add(c0, i)) if colmajor else (ops.add(r0, i), c0)

"""The launch of a ``range`` kernel on an NVIDIA GPU (``pysycl._kernels.rangesize.gpu_sizes``):
pure arithmetic, checked here for any range; the items each launch runs are checked on the
CPU device (tests/kernels/test_range_items.py, ``gpu_shaped``) and on GPUs
(tests/cuda_backend/test_cuda_range_items.py)."""

from __future__ import annotations

from math import prod

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from pysycl._core import abi
from pysycl._kernels import rangesize
from pysycl._kernels.rangesize import (
    COARSEN,
    GPU_GROUP,
    GPU_ROW,
    GROUPS_PER_UNIT_GPU,
    gpu_sizes,
)

_dims = st.one_of(st.integers(1, 70), st.integers(1, 1 << 40))
_spaces = st.lists(_dims, min_size=1, max_size=3).map(tuple)
_limits = st.sampled_from([1, 7, 32, 64, 200, 256, 1024])
_units = st.sampled_from([1, 2, 108, 132])
_columns = st.sampled_from([1, 2, 4, 8])
_GRID = (2**31 - 1, 65535, 65535)  # CUDA's grid: blocks along x, y, z


@given(_spaces, _limits, _units, st.booleans(), _columns)
@example((2, 2**31), 1, 1, False, 1)  # tiles of 2 rows past CUDA's 2^31 - 1 blocks along x
def test_full_work_groups_within_the_kernels_and_cudas_limits(
        space: tuple[int, ...], max_group: int, units: int, prints: bool, columns: int) -> None:
    """Global sizes are whole work-groups, a work-group at most GPU_GROUP and the kernel's
    limit; n-D only where the range is n-D and prints not, then within CUDA's grid
    (2^31 - 1 blocks along x, 65535 along y and z), a 1-D grid at most
    GROUPS_PER_UNIT_GPU per unit. A kernel that prints runs a work-item per item (its
    output is collected by work-item): its grid is the range's, the same rule as before."""
    old = abi.RANGE_COLUMNS
    abi.RANGE_COLUMNS = columns
    try:
        g, local = gpu_sizes(space, max_group, units, prints)
    finally:
        abi.RANGE_COLUMNS = old
    assert len(g) == len(local) == (1 if prints or len(space) == 1 else len(space))
    assert all(n % b == 0 and n >= b >= 1 for n, b in zip(g, local, strict=True))
    assert prod(local) <= min(GPU_GROUP, max_group)
    grid = [n // b for n, b in zip(g, local, strict=True)]
    if prints:
        assert g[0] >= prod(space)
        return
    if len(space) == 1:
        assert grid[0] <= GROUPS_PER_UNIT_GPU * units
    assert all(n <= lim for n, lim in zip(grid, _GRID, strict=False))


@pytest.mark.parametrize("columns", [1, 4])
@given(space=st.lists(st.one_of(st.integers(1, 5000), st.integers(1, 1 << 24)),
                      min_size=2, max_size=3).map(tuple), units=_units)
def test_an_nd_range_gets_an_nd_launch_that_covers_it_where_cudas_grid_does(
        space: tuple[int, ...], units: int, columns: int) -> None:
    """A 2-D/3-D range: columns along x (a warp's items consecutive in memory where the
    range is that wide), in blocks of ``abi.RANGE_COLUMNS`` a work-item, rows along y,
    planes along z. Where CUDA's grid can, the launch covers the range (every work-item
    runs at most one block of items: no loop); else it stops at CUDA's limit."""
    old = abi.RANGE_COLUMNS, rangesize.TILE_WAVES
    abi.RANGE_COLUMNS, rangesize.TILE_WAVES = columns, 1 << 60  # no tiles: an item a work-item
    try:
        g, local = gpu_sizes(space, 256, units)
    finally:
        abi.RANGE_COLUMNS, rangesize.TILE_WAVES = old
    cols, rows = -(-space[-1] // columns), space[-2]
    if cols >= GPU_ROW and rows >= GPU_GROUP // GPU_ROW:
        assert local[:2] == (GPU_ROW, GPU_GROUP // GPU_ROW)
    assert prod(local) == GPU_GROUP or local[0] >= cols or local[1] >= rows
    need = [-(-cols // local[0]), -(-rows // local[1]), *space[:-2]]
    grid = [n // b for n, b in zip(g, local, strict=True)]
    for d, (got, want) in enumerate(zip(grid, need, strict=True)):
        assert got == min(want, _GRID[d]), (d, grid, need)


@given(space=st.lists(st.one_of(st.integers(1, 5000), st.integers(1, 1 << 24)),
                      min_size=2, max_size=3).map(tuple), units=_units,
       tile=st.sampled_from([(2, 1), (4, 1), (1, 4), (3, 2)]), waves=st.sampled_from([0, 2]))
def test_a_large_range_is_launched_in_tiles_that_cover_it(
        space: tuple[int, ...], units: int, tile: tuple[int, int], waves: int) -> None:
    """Tiles (``abi.RANGE_BLOCK``: R rows x S columns a work-item) where they still fill
    the device ``TILE_WAVES`` times over: the launch covers the range in tiles and is no
    launch of an item a work-item (the entry point tells them apart by that), work-groups of
    32 x 8 within CUDA's grid; else the launch of an item a work-item, as before."""
    old = abi.RANGE_BLOCK, rangesize.TILE_WAVES
    abi.RANGE_BLOCK, rangesize.TILE_WAVES = tile, waves
    try:
        g, local = gpu_sizes(space, 256, units)
        rangesize.TILE_WAVES = 1 << 60
        plain = gpu_sizes(space, 256, units)  # an item a work-item
    finally:
        abi.RANGE_BLOCK, rangesize.TILE_WAVES = old
    cols, rows = space[-1], space[-2]
    r, c = tile
    grid = [n // b for n, b in zip(g, local, strict=True)]
    assert all(n % b == 0 for n, b in zip(g, local, strict=True))
    assert all(n <= lim for n, lim in zip(grid, _GRID, strict=False))
    if (g, local) != plain:  # tiles
        assert local[:2] == (GPU_ROW, GPU_GROUP // GPU_ROW)
        assert g[0] * c >= cols and g[1] * r >= rows and (len(space) == 2 or g[2] == space[0])
        assert not (g[0] >= cols and g[1] >= rows)  # not a launch of an item a work-item
        assert g[0] < cols + GPU_ROW * c and g[1] < rows + local[1] * r  # no idle tiles
        assert prod(g) >= waves * units * 2048
        return
    gy = -(-rows // (8 * r))
    planes = space[0] if len(space) == 3 else 1
    if cols >= GPU_ROW * c and rows >= 8 * r and gy <= _GRID[1] and planes <= _GRID[2]:
        # tiles would fit, yet an item a work-item: too few tiles, or they would be that
        tx = -(-cols // (GPU_ROW * c)) * GPU_ROW
        assert tx * gy * 8 * planes < waves * units * 2048 or (tx >= cols and gy * 8 >= rows)


def test_a_jacobi_grid_on_an_h100() -> None:
    """8192^2 (its interior, 8190^2): tiles of 2 rows (``abi.RANGE_BLOCK``), work-groups of
    32 x 8 covering it (256 x 512 of them); an item a work-item (no tiles) 256 x 1024; in
    blocks of 4 columns (``RANGE_COLUMNS`` 4) 64 x 1024. One row: work-groups of 256
    along it; one column: 256 along the rows; a 3-D range of rows of 5: 8 x 32 x 1. Past
    CUDA's grid (65535 work-groups along y, along z) the launch stops there. A 1-D range:
    a block of 4 items a work-item, at most ``GROUPS_PER_UNIT_GPU`` (32) work-groups an SM."""
    assert abi.RANGE_BLOCK == (2, 1)
    assert gpu_sizes((8190, 8190), 256, 132) == ((8192, 4096), (32, 8))
    assert gpu_sizes((1000, 1000), 256, 132) == ((1024, 1000), (32, 8))  # too few tiles
    assert gpu_sizes((1, 1 << 20), 256, 132) == ((1 << 20, 1), (256, 1))  # one row: wide
    assert gpu_sizes((1 << 20, 1), 256, 132) == ((1, 1 << 20), (1, 256))  # one column
    assert gpu_sizes((3, 1000, 5), 256, 132) == ((8, 1024, 3), (8, 32, 1))
    assert gpu_sizes((1 << 25, 1), 256, 132) == ((1, 65535 * 256), (1, 256))
    assert gpu_sizes((70000, 2, 3), 256, 132) == ((4, 2, 65535), (4, 2, 1))
    assert gpu_sizes((1 << 22,), 256, 132) == ((1 << 20,), (256,))  # 2^20 blocks of 4, one each
    assert gpu_sizes((1 << 26,), 256, 132) == ((256 * 32 * 132,), (256,))  # 32 groups an SM
    assert gpu_sizes((1000,), 256, 132) == ((1000 // COARSEN,), (1000 // COARSEN,))
    old = abi.RANGE_COLUMNS
    abi.RANGE_COLUMNS = 4
    try:
        assert gpu_sizes((8190, 8190), 256, 132) == ((2048, 8192), (32, 8))
        assert gpu_sizes((8190, 3), 256, 132) == ((1, 8192), (1, 256))
    finally:
        abi.RANGE_COLUMNS = old

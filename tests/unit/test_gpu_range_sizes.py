"""The launch of a ``range`` kernel on an NVIDIA GPU (``pysycl._kernels.rangesize.gpu_sizes``):
pure arithmetic, checked here for any range; the items each launch runs are checked on the
CPU device (tests/kernels/test_range_items.py, ``gpu_shaped``) and on GPUs
(tests/cuda_backend/test_cuda_range_items.py)."""

from __future__ import annotations

from math import prod

from hypothesis import given
from hypothesis import strategies as st

from pysycl._kernels.rangesize import (
    COARSEN,
    GPU_GROUP,
    GPU_ROW,
    GROUPS_PER_UNIT_GPU,
    ROWS,
    gpu_sizes,
)

_dims = st.one_of(st.integers(1, 70), st.integers(1, 1 << 40))
_spaces = st.lists(_dims, min_size=1, max_size=3).map(tuple)
_limits = st.sampled_from([1, 7, 32, 64, 200, 256, 1024])
_units = st.sampled_from([1, 2, 108, 132])


@given(_spaces, _limits, _units, st.booleans())
def test_full_work_groups_within_the_kernels_and_cudas_limits(
        space: tuple[int, ...], max_group: int, units: int, prints: bool) -> None:
    """Global sizes are whole work-groups, a work-group at most GPU_GROUP and the kernel's
    limit, the grid at most GROUPS_PER_UNIT_GPU per unit and within CUDA's grid (2^31 - 1
    blocks along x, 65535 along y and z); n-D only where the range is n-D and prints not.
    A kernel that prints runs a work-item per item (its output is collected by work-item):
    its grid is the range's, the same rule as before."""
    g, local = gpu_sizes(space, max_group, units, prints)
    assert len(g) == len(local) == (1 if prints or len(space) == 1 else len(space))
    assert all(n % b == 0 and n >= b >= 1 for n, b in zip(g, local, strict=True))
    assert prod(local) <= min(GPU_GROUP, max_group)
    grid = [n // b for n, b in zip(g, local, strict=True)]
    if prints:
        assert g[0] >= prod(space)
    else:
        assert prod(grid) <= GROUPS_PER_UNIT_GPU * units
        assert grid[0] <= 2**31 - 1 and all(n <= 65535 for n in grid[1:])


@given(st.lists(st.integers(1, 5000), min_size=2, max_size=3).map(tuple), _units)
def test_an_nd_range_gets_an_nd_launch_that_covers_it_where_one_wave_does(
        space: tuple[int, ...], units: int) -> None:
    """A 2-D/3-D range: columns along x (a warp's items consecutive in memory where the
    range is that wide), blocks of ROWS rows along y, planes along z. Where one wave of
    work-groups covers the range, every work-item runs at most one block of rows."""
    g, local = gpu_sizes(space, 256, units)
    cols, blocks = space[-1], -(-space[-2] // ROWS)
    if cols >= GPU_ROW and blocks >= GPU_GROUP // GPU_ROW:
        assert local[:2] == (GPU_ROW, GPU_GROUP // GPU_ROW)
    assert prod(local) == GPU_GROUP or local[0] >= cols or local[1] >= blocks
    whole = [-(-cols // local[0]), -(-blocks // local[1]), *space[:-2]]
    if prod(whole) <= GROUPS_PER_UNIT_GPU * units:
        assert g[0] >= cols and g[1] >= blocks and (len(space) == 2 or g[2] >= space[0])


def test_a_jacobi_grid_on_an_h100() -> None:
    """8192^2 (its interior, 8190^2) on 132 SMs: work-groups of 32 x 8 covering the columns,
    4 rows of work-groups (one wave: 8 per SM), each work-item then 64 blocks of 4 rows.
    One row: work-groups of 256 along it; one column: 256 along the rows (2^18 blocks of 4
    rows, 1024 work-groups)."""
    assert gpu_sizes((8190, 8190), 256, 132) == ((8192, 32), (32, 8))
    assert gpu_sizes((1, 1 << 20), 256, 132) == ((256 * 1056, 1), (256, 1))  # one row: wide
    assert gpu_sizes((1 << 20, 1), 256, 132) == ((1, 256 * 1024), (1, 256))  # one column
    assert gpu_sizes((1 << 22,), 256, 132) == ((256 * 1056,), (256,))  # 2^20 blocks of 4
    assert gpu_sizes((1000,), 256, 132) == ((1000 // COARSEN,), (1000 // COARSEN,))
    assert gpu_sizes((3, 1000, 5), 256, 132) == ((8, 256, 3), (8, 32, 1))

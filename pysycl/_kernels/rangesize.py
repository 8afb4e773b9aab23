"""How a ``range`` kernel is launched: how many work-items, in work-groups of how many.

A ``range`` kernel compiled by pysycl takes the user's range as arguments, so the
launch is the runtime's choice, made here per device for every backend (the backend's
``Launch`` asks once, when it is made for a kernel, range and queue). The kernel's
entry point (:mod:`pysycl_numba.wrapper`) matches its image's format:

* PTX (NVIDIA GPUs, through CUDA or NVIDIA's OpenCL), a 1-D range: a 1-D launch whose
  work-items loop over the items (:mod:`pysycl_numba.range_items`), in work-groups of
  :data:`GPU_GROUP` work-items (the kernel's limit if lower), as many as the range needs up
  to :data:`GROUPS_PER_UNIT_GPU` per compute unit -- a grid that fills the device a few times,
  each work-item running blocks of :data:`COARSEN` consecutive items with 128-bit accesses
  where its pointers are aligned (``coarsened``);
* PTX, a 2-D or 3-D range: a launch of as many dimensions that covers the range
  (:func:`gpu_sizes`): work-groups of :data:`GPU_ROW` x 8 (``GPU_GROUP`` work-items; wider
  where the range has few rows, narrower where it has few columns), a work-item per item --
  per ``abi.RANGE_COLUMNS`` consecutive items of a row -- along the fastest dimension, a row per
  work-item along the next, a plane along the third (``nd_items``: no loop, no division;
  a warp's items consecutive in memory). A range large enough that tiles of
  ``abi.RANGE_BLOCK`` (2 rows) a work-item still fill the device :data:`TILE_WAVES` times
  launches work-groups of 32 x 8 that cover it in tiles (:func:`_tiled`; ``_tiles`` in the
  entry point: a whole tile's items share their loads). Only where CUDA's grid cannot cover the range
  (more than 65535 work-groups along y or z) does the launch stop at that limit and its
  work-items loop over the rest. Any range size launches full work-groups (before, a prime
  range ran CUDA blocks of one work-item, whose blocks had to divide the range). A kernel
  that prints: a 1-D launch of a work-item per item (``grid_stride``);
* SPIR-V (the Intel OpenCL CPU runtime): the n-D range itself, one work-item per item
  (``native_items``), the work-group size the driver's choice -- except where the fastest
  dimension is not a multiple of :data:`CPU_GROUP` and the device runs non-uniform
  work-groups (OpenCL 2.0; Intel's CPU runtime does, PoCL does not): work-groups of
  :data:`CPU_GROUP` along it and a smaller last one. The driver's own choice for a prime
  range was work-groups of one work-item (17x slower). A loop over items did not pay
  there (docs/performance.md, "Range kernels");
* a kernel that prints (``print``, ``sycl.stream``): one work-item per item on every
  device, so that a work-item's output -- collected by work-item id -- is one item's.
"""

from __future__ import annotations

from math import prod
from typing import TYPE_CHECKING

from pysycl._core import abi
from pysycl._core.launch_types import native_order
from pysycl._kernels.cache import target_of
from pysycl._objects.info import _device_info

if TYPE_CHECKING:
    from pysycl._objects.device import device

#: Work-items per work-group of a 1-D (PTX) ``range`` launch.
GPU_GROUP = 256
#: Work-groups per compute unit of a 1-D PTX ``range`` launch: several waves (an SM holds
#: 2048 work-items, 8 work-groups), each work-item looping less; a triad over 2^28 float32
#: ran 1-2% faster at 16-64 than at 8 (H100, ``benchmarks/bench_bandwidth.py``'s sweep).
GROUPS_PER_UNIT_GPU = 32
#: Consecutive items a work-item of a 1-D PTX ``range`` kernel runs as one block
#: (``pysycl_numba.range_items.COARSEN``: 128-bit accesses of 4-byte elements).
COARSEN = 4
#: Work-items along the fastest dimension of a 2-D/3-D PTX ``range`` launch's work-group
#: (a warp: its items are consecutive in memory) where the range is that wide.
GPU_ROW = 32
#: Full devices' worth of work-items (an SM: :data:`_UNIT_ITEMS`) a 2-D/3-D PTX ``range``
#: launch of tiles (``abi.RANGE_BLOCK``) must keep; a smaller range runs an item a work-item.
TILE_WAVES = 2
_UNIT_ITEMS = 2048
#: CUDA's largest grid (blocks per dimension, x then y and z).
_GRID = (2**31 - 1, 65535, 65535)
#: The work-group size (fastest dimension) of a SPIR-V ``range`` launch whose fastest
#: dimension it does not divide, on a device with non-uniform work-groups.
CPU_GROUP = 64


def range_sizes(dev: device, space: tuple[int, ...], max_group: int,
                one_per_item: bool = False, uneven: bool = False,
                ) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
    """The (global size, local size or None: the driver's choice), native order, of a
    ``range`` launch over ``space`` (the user's range, SYCL order) on ``dev``;
    ``max_group``: the built kernel's largest work-group; ``one_per_item``: launch a
    work-item per item (a kernel that prints); ``uneven``: the device runs a last
    work-group smaller than the others (OpenCL 2.0's non-uniform work-groups)."""
    if target_of(dev)[0] != "ptx":
        native = native_order(space)
        fast = native[0]
        if uneven and fast % CPU_GROUP and fast > CPU_GROUP:
            return native, (min(CPU_GROUP, max_group), *(1,) * (len(native) - 1))
        return native, None
    units = max(1, int(dev.get_info(_device_info.max_compute_units)))
    return gpu_sizes(space, max_group, units, one_per_item)


def gpu_sizes(space: tuple[int, ...], max_group: int, units: int, one_per_item: bool = False,
              ) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The (global size, local size), native order, of a PTX ``range`` launch over ``space``
    (SYCL order) on a GPU of ``units`` compute units (see the module's docstring)."""
    if one_per_item or len(space) == 1:
        total = prod(space)
        per_item = 1 if one_per_item else COARSEN  # items per work-item
        wg = max(1, min(GPU_GROUP, max_group, -(-total // per_item)))
        groups = -(-total // (wg * per_item))
        if not one_per_item:
            groups = min(groups, GROUPS_PER_UNIT_GPU * units)
        return (groups * wg,), (wg,)
    cols, rows = -(-space[-1] // abi.RANGE_COLUMNS), space[-2]  # work-items along x, y
    wg = max(1, min(GPU_GROUP, max_group))
    tiled = _tiled(space, cols, rows, wg, units)
    if tiled is not None:
        return tiled
    bx = min(GPU_ROW, _pow2_at_least(cols), _pow2_at_most(wg))
    by = max(1, min(wg // bx, _pow2_at_least(rows)))
    bx = min(_pow2_at_most(wg // by), _pow2_at_least(cols))  # few rows: wider work-groups
    # the whole range (an empty one: one idle work-group), within CUDA's grid
    gx = max(1, min(-(-cols // bx), _GRID[0]))
    gy = max(1, min(-(-rows // by), _GRID[1]))
    if len(space) == 2:
        return (gx * bx, gy * by), (bx, by)
    gz = max(1, min(space[0], _GRID[2]))
    return (gx * bx, gy * by, gz), (bx, by, 1)


def _tiled(space: tuple[int, ...], cols: int, rows: int, wg: int, units: int,
           ) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """A launch of tiles (``abi.RANGE_BLOCK``: rows x columns a work-item) that covers the
    range and not a work-item an item (the entry point tells the two apart by that), where
    the tiles still fill the device :data:`TILE_WAVES` times over; else None."""
    per_rows, per_cols = abi.RANGE_BLOCK
    if abi.RANGE_COLUMNS != 1 or per_rows * per_cols == 1:
        return None
    bx = min(GPU_ROW, _pow2_at_most(wg))
    by = max(1, wg // bx)
    if cols < bx * per_cols or rows < by * per_rows:  # narrow: idle lanes in every tile
        return None
    gx, gy = -(-cols // (bx * per_cols)), -(-rows // (by * per_rows))
    planes = space[0] if len(space) == 3 else 1
    if (gx * bx >= cols and gy * by >= rows) or gx > _GRID[0] or gy > _GRID[1] \
            or planes > _GRID[2]:  # (past CUDA's grid: the plain launch, which loops)
        return None
    if gx * gy * planes * bx * by < TILE_WAVES * units * _UNIT_ITEMS:
        return None
    if len(space) == 2:
        return (gx * bx, gy * by), (bx, by)
    return (gx * bx, gy * by, planes), (bx, by, 1)


def _pow2_at_least(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


def _pow2_at_most(n: int) -> int:
    return 1 << (max(1, n).bit_length() - 1)

"""Hierarchical kernels (``handler.parallel_for_work_group``): the launch's work-group size.

The kernel itself runs as an nd_range of ``groups * size`` work-items in groups of
``size`` on compiled devices (:mod:`pysycl_numba.hierarchical`), and once per group with
loops for ``parallel_for_work_item`` on the host device
(:mod:`pysycl._objects.hierarchical`).
"""

from __future__ import annotations

from typing import Any

from pysycl._objects.range import range as _range

#: The default work-group size's work-items at most (the device's limit may be lower).
DEFAULT_WORK_ITEMS = 64
#: Its shape by dimensions: 64, 8 x 8, 4 x 4 x 4.
_SHAPES = {1: (64,), 2: (8, 8), 3: (4, 4, 4)}


def default_group_size(device: Any, ndim: int) -> _range:
    """The work-group size of ``parallel_for_work_group`` without one (SYCL 2020 leaves it to
    the implementation): 64 work-items shaped 64, 8 x 8 or 4 x 4 x 4, each dimension
    clamped to the device's ``max_work_item_sizes`` and the largest halved until the
    group fits ``max_work_group_size``."""
    from pysycl._objects.info import _device_info as info

    shape = list(_SHAPES[ndim])
    items = device.get_info(getattr(info, f"max_work_item_sizes_{ndim}d"))
    limit = int(device.get_info(info.max_work_group_size))
    for d in range(ndim):
        shape[d] = max(1, min(shape[d], int(items[d])))
    while _prod(shape) > limit:
        d = shape.index(max(shape))
        shape[d] = max(1, shape[d] // 2)
    return _range(*shape)


def _prod(xs: list[int]) -> int:
    p = 1
    for x in xs:
        p *= x
    return p

"""The launch checks of an ``nd_range`` (SYCL 2020 §4.9.4.2.2), for every device.

:func:`check_nd_range` is shared by the OpenCL launcher (limits from the device
and the built kernel, :func:`ndrange_sizes`) and the host_debuggable device
(its own limits).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from math import prod
from typing import TYPE_CHECKING, Any

from pysycl._core.exceptions import errc, exception
from pysycl._core.launch_types import native_order
from pysycl._kernels import argplan as _args
from pysycl._objects.info import _device_info

if TYPE_CHECKING:
    from pysycl._kernels.cache import Kernel
    from pysycl._objects.device import device
    from pysycl._objects.range import nd_range


#: No device launches fewer work-items than this (a 32-bit device's size_t): a global
#: range up to it needs no check of the device's own limit.
SMALL = (1 << 32) - 1
#: Compiled kernels index with int64: no launch of more work-items than this (and why).
COMPILED = ((1 << 63) - 1, "pysycl's kernels index work-items with int64")


def check_global_size(where: str, g: tuple[int, ...], dev: device,
                      runs: tuple[int, str] | None = COMPILED) -> None:
    """``errc.nd_range`` unless ``dev`` can launch the global range ``g`` (SYCL order).

    Each dimension and the whole must fit the device's ``size_t``
    (``info.device.address_bits``) and what runs the kernel, ``runs``: (the most
    work-items, why); None for an OpenCL C kernel (the device's ``size_t`` only).
    """
    bits = dev.get_info(_device_info.address_bits)
    limit = (1 << bits) - 1
    why = f"its size_t has {bits} bits (info.device.address_bits)"
    if runs is not None and limit > runs[0]:
        limit, why = runs
    big = [d for d in builtins.range(len(g)) if g[d] > limit]
    total = prod(g)
    what = (f"{g[big[0]]} work-items in dimension {big[0]}" if big
            else f"{total} work-items in all" if total > limit else "")
    if what:
        raise exception(errc.nd_range, f"{where}: the global range {g} has {what}, more than "
                        f"device {dev.display_name!r} can launch ({limit}: {why}); split the "
                        "work into several launches")


def ndrange_sizes(k: Kernel, dev: device, lim: tuple[int, tuple[int, ...], int], nd: nd_range,
                  values: list[Any]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """OpenCL global and local sizes of an nd_range launch of kernel ``k``, validated;
    ``lim``: the built kernel's limits on ``dev`` (the executor's ``kernel_limits``)."""
    if prod(nd.get_global_range().values) > SMALL:
        check_global_size(k.where, nd.get_global_range().values, dev)
    name = dev.display_name

    def describe(what: str) -> str:  # built only when a check fails
        if what == "where":
            return k.where
        if what == "wg":
            return (f"the {lim[0]} this kernel can have on {name!r} "
                    "(info.device.max_work_group_size and the kernel's own limit); use a "
                    "smaller local range")
        return (f"the {lim[2]} bytes device {name!r} has (info.device.local_mem_size, "
                "less what the kernel itself uses); use smaller local accessors or work-groups")

    check_nd_range(nd, lim[0], lim[1], _args.local_bytes(values, k.arg_kinds), lim[2], describe)
    return native_order(nd.get_global_range().values), native_order(nd.get_local_range().values)


def check_nd_range(nd: nd_range, max_wg: int, item_caps: tuple[int, ...] | None, local_bytes: int,
                   local_limit: int, describe: Callable[[str], str]) -> None:
    """The launch checks of an nd_range (§4.9.4.2.2), for any device.

    Args:
        nd: the ``sycl.nd_range``.
        max_wg: the largest work-group (the device's, and the kernel's own limit).
        item_caps: max work-item sizes in OpenCL order, or None when unlimited.
        local_bytes: local memory the kernel's local accessors need per work-group.
        local_limit: local memory available per work-group.
        describe: texts for the messages, asked for only on failure: ``"where"``
            (the kernel), ``"wg"`` (the work-group limit), ``"mem"`` (the memory limit).

    Raises:
        exception: ``errc.nd_range`` (``errc.feature_not_supported`` for offsets).
    """
    g, loc = nd.get_global_range().values, nd.get_local_range().values
    if any(nd.get_offset()):
        raise exception(errc.feature_not_supported, f"{describe('where')}: nd_range offsets "
                        "(deprecated in SYCL 2020) are not supported by pysycl; add the offset "
                        "to the ids")
    if 0 in loc:
        raise exception(errc.nd_range, f"{describe('where')}: the local range {loc} has a zero "
                        "extent; every work-group needs at least one work-item")
    bad = [d for d in builtins.range(len(g)) if g[d] % loc[d]]
    if bad:
        d = bad[0]
        raise exception(errc.nd_range, f"{describe('where')}: global range {g} is not a multiple "
                        f"of the local range {loc} in dimension {d} ({g[d]} % {loc[d]} != 0); "
                        "round the global range up to a multiple and skip the extra work-items "
                        "in the kernel")
    size = 1
    for e in loc:
        size *= e
    if size > max_wg:
        raise exception(errc.nd_range, f"{describe('where')}: a work-group of {loc} = {size} "
                        f"work-items exceeds {describe('wg')}")
    if item_caps is not None:
        n = len(loc)
        for d in builtins.range(n):
            cap = item_caps[n - 1 - d]  # SYCL dimension d is OpenCL dimension n-1-d
            if loc[d] > cap:
                raise exception(errc.nd_range, f"{describe('where')}: local range {loc} exceeds "
                                f"the device's max_work_item_sizes in dimension {d} "
                                f"({loc[d]} > {cap})")
    if local_bytes > local_limit:
        raise exception(errc.nd_range, f"{describe('where')}: its local accessors need "
                        f"{local_bytes} bytes of local memory per work-group, more than "
                        f"{describe('mem')}")

"""Hypothesis strategies for SYCL index spaces: ranges, ids, nd_ranges valid on a device.

The only part of :mod:`pysycl.testing` that needs hypothesis (``pip install
hypothesis``); importing it without hypothesis raises :class:`ImportError`
saying so.

* :func:`ranges` -- ``sycl.range`` of 1 to 3 dimensions, every extent at least 1,
  at most ``max_size`` work-items;
* :func:`ids` -- ``sycl.id`` inside a range;
* :func:`work_group_sizes` -- local ranges (``sycl.range``) a device accepts;
* :func:`nd_ranges` -- ``sycl.nd_range`` a device accepts, at most ``max_global``
  work-items.

**What counts as valid.** An nd_range that the device launches (SYCL 2020
§4.9.4.2.2, the checks pysycl makes before a launch): every local extent at
least 1 and at most the device's ``info.device.max_work_item_sizes_<N>d[d]``
(SYCL order: dimension 0 is the slowest), the local range's size at most
``info.device.max_work_group_size`` and at most the ``max_work_group_size``
given (a kernel's own limit, its
``info.kernel_device_specific.work_group_size``: on an NVIDIA GPU a kernel
that uses many registers has a limit below the device's), the local range
dividing the global range in every dimension. With ``sub_group_size`` (one of the device's
``info.device.sub_group_sizes``) the local range's size is a multiple of it:
every work-group is made of whole sub-groups. Offsets are never drawn: pysycl
does not support nd_range offsets (deprecated in SYCL 2020; docs/mapping.md).
Every nd_range these rules allow can be drawn, not only powers of two.

**Devices.** Only devices that run kernels written in Python
(:func:`pysycl.testing.devices`): those that load SPIR-V or PTX, and the
host_debuggable device. For any other device (PoCL from PyPI: no SPIR-V)
:func:`nd_ranges` and :func:`work_group_sizes` raise
``sycl.exception(errc.kernel_not_supported)`` when the strategy is created, not
when a test first draws from it.

**Sizes.** A range is drawn as its size (log-uniform: 3 work-items are about as
likely as 200), then a split of that size over the dimensions, in a drawn order
(no dimension favoured); an nd_range as its work-group size, its number of
work-groups (both log-uniform), then their splits. Every draw makes the same number of choices whatever
the values: hypothesis prefers fewer choices when it shrinks. The default bound is 256 work-items: the
host_debuggable device interprets kernels (about 0.1 ms a work-item) and
hypothesis's deadline is 200 ms an example.

**Shrink targets.** The smallest valid case: one dimension (when ``dims`` is
None), one work-item -- ``sycl.range(1)``, ``sycl.id(0)``,
``sycl.nd_range(sycl.range(1), sycl.range(1))`` (ones in every dimension when
``dims`` is given) -- or, with ``sub_group_size`` ``s``, one work-group of one
sub-group, ``sycl.nd_range(sycl.range(s), sycl.range(s))``. A failure that needs
more shrinks towards, in this order, the fewest dimensions, the smallest
work-groups, the fewest work-groups, the extents beyond 1 in the last (fastest)
dimension: a test failing from 10 work-items on reports ``sycl.range(10)``, one
failing for work-groups of 6 or more in 3 dimensions
``sycl.nd_range(sycl.range(1, 1, 6), sycl.range(1, 1, 6))``, one failing from
5 work-groups on in 2 dimensions ``sycl.nd_range(sycl.range(1, 5),
sycl.range(1, 1))``. Hypothesis's
shrinker is a search: these are the cases it reaches, not a promise for every
failing condition.

Bad arguments raise ``hypothesis.errors.InvalidArgument`` (a ``TypeError``)
naming the argument and the caller's ``file:line``.
"""

from __future__ import annotations

import functools
import numbers
from collections.abc import Sequence
from typing import Any

try:
    from hypothesis import strategies as st
    from hypothesis.errors import InvalidArgument
except ImportError as e:  # pragma: no cover - tested in a subprocess without hypothesis
    raise ImportError("pysycl.testing.strategies needs hypothesis: pip install hypothesis "
                      "(the rest of pysycl.testing works without it)") from e

import pysycl as sycl
from pysycl.testing._where import caller

__all__ = ["DEFAULT_MAX_SIZE", "ids", "nd_ranges", "ranges", "work_group_sizes"]

#: Work-items at most in what :func:`ranges` and :func:`nd_ranges` draw, by default.
DEFAULT_MAX_SIZE = 256

_SIZES = (sycl.info.device.max_work_item_sizes_1d, sycl.info.device.max_work_item_sizes_2d,
          sycl.info.device.max_work_item_sizes_3d)


def ranges(dims: int | None = None, max_size: int = DEFAULT_MAX_SIZE
           ) -> st.SearchStrategy[sycl.range]:
    """``sycl.range`` values: every extent at least 1, at most ``max_size`` work-items.

    Args:
        dims: 1, 2 or 3; None: any of them (shrinking to 1).
        max_size: the most work-items (the product of the extents), at least 1.

    Shrinks to ``sycl.range(1)`` (``dims`` ones when ``dims`` is given).
    """
    where = f"pysycl.testing.strategies.ranges (called at {caller()})"
    dim_choice = _dims_arg(dims, 3, where)
    _positive("max_size", max_size, where)

    @st.composite
    def draw_range(draw: Any) -> sycl.range:
        n = draw(dim_choice)
        size = _size(draw, max_size)
        return sycl.range(*_split(draw, size, (size,) * n))

    return draw_range()


def ids(rng: sycl.range | Sequence[int]) -> st.SearchStrategy[sycl.id]:
    """``sycl.id`` values inside ``rng`` (a ``sycl.range`` or a tuple of extents):
    ``0 <= id[d] < rng[d]`` in every dimension. Shrinks to ``sycl.id(0, ...)``."""
    where = f"pysycl.testing.strategies.ids (called at {caller()})"
    if not isinstance(rng, (sycl.range, tuple, list)) or not all(
            isinstance(e, numbers.Integral) and not isinstance(e, bool) for e in rng):
        raise InvalidArgument(f"{where}: rng must be a sycl.range or a tuple of int extents, "
                              f"not {rng!r}")
    extents = tuple(int(e) for e in rng)
    if not 1 <= len(extents) <= 3:
        raise InvalidArgument(f"{where}: rng must have 1 to 3 dimensions, not {len(extents)}")
    if any(e < 1 for e in extents):
        d = next(d for d, e in enumerate(extents) if e < 1)
        raise InvalidArgument(f"{where}: the range {extents} is empty (extent {extents[d]} in "
                              f"dimension {d}): no id lies inside it")
    return st.tuples(*(st.integers(0, e - 1) for e in extents)).map(lambda t: sycl.id(*t))


def work_group_sizes(device: sycl.device, dims: int | None = None, *,
                     max_work_group_size: int | None = None,
                     sub_group_size: int | None = None) -> st.SearchStrategy[sycl.range]:
    """Local ranges (``sycl.range``) that ``device`` launches work-groups of.

    Args:
        device: a device that runs Python kernels (:func:`pysycl.testing.devices`).
        dims: 1, 2 or 3; None: any of them (shrinking to 1).
        max_work_group_size: a lower limit than the device's (a kernel's own).
        sub_group_size: one of the device's ``info.device.sub_group_sizes``: the
            local range's size is a multiple of it.

    Raises:
        sycl.exception: ``errc.kernel_not_supported``: the device cannot run Python kernels.

    Shrinks to ``sycl.range(1)`` (ones in every dimension), or with a sub-group
    size ``s`` to ``s`` work-items in the last (fastest) dimension.
    """
    where = f"pysycl.testing.strategies.work_group_sizes (called at {caller()})"
    lim = _Limits(device, dims, max_work_group_size, sub_group_size, where)

    @st.composite
    def draw_local(draw: Any) -> sycl.range:
        n = draw(lim.dims)
        size = lim.local_size(draw, n, lim.wg)
        return sycl.range(*_split(draw, size, lim.caps[n]))

    return draw_local()


def nd_ranges(device: sycl.device, dims: int | None = None, max_global: int = DEFAULT_MAX_SIZE,
              max_work_group_size: int | None = None, sub_group_size: int | None = None
              ) -> st.SearchStrategy[sycl.nd_range]:
    """``sycl.nd_range`` values that ``device`` launches (the module's docstring says
    what counts as valid).

    Args:
        device: a device that runs Python kernels (:func:`pysycl.testing.devices`).
        dims: 1, 2 or 3; None: any of them (shrinking to 1).
        max_global: the most work-items in all (the global range's size).
        max_work_group_size: a lower work-group limit than the device's, e.g. the
            kernel's ``kernel.get_info(sycl.info.kernel_device_specific.work_group_size,
            device)``.
        sub_group_size: one of the device's ``info.device.sub_group_sizes``: every
            work-group's size is a multiple of it.

    Raises:
        sycl.exception: ``errc.kernel_not_supported``: the device cannot run Python kernels.

    Shrinks to ``sycl.nd_range(sycl.range(1), sycl.range(1))`` (ones in every
    dimension when ``dims`` is given), or with a sub-group size ``s`` to one
    work-group of ``s`` work-items.
    """
    where = f"pysycl.testing.strategies.nd_ranges (called at {caller()})"
    lim = _Limits(device, dims, max_work_group_size, sub_group_size, where)
    _positive("max_global", max_global, where)
    if max_global < lim.sg:
        raise InvalidArgument(f"{where}: max_global={max_global} is smaller than "
                              f"sub_group_size={lim.sg}: no work-group fits")

    @st.composite
    def draw_nd(draw: Any) -> sycl.nd_range:
        n = draw(lim.dims)
        local_size = lim.local_size(draw, n, min(lim.wg, max_global))
        groups = _size(draw, max_global // local_size)
        loc = _split(draw, local_size, lim.caps[n])
        grid = _split(draw, groups, (groups,) * n)
        glob = tuple(g * e for g, e in zip(grid, loc, strict=True))
        return sycl.nd_range(sycl.range(*glob), sycl.range(*loc))

    return draw_nd()


class _Limits:
    """A device's work-group limits, checked when a strategy is created."""

    def __init__(self, device: sycl.device, dims: int | None, max_wg: int | None,
                 sg: int | None, where: str) -> None:
        _python_device(device, where)
        most = min(int(device.get_info(sycl.info.device.max_work_item_dimensions)) or 3, 3)
        self.dims = _dims_arg(dims, most, where)
        self.wg = int(device.get_info(sycl.info.device.max_work_group_size))
        if max_wg is not None:
            _positive("max_work_group_size", max_wg, where)
            self.wg = min(self.wg, max_wg)
        #: max work-item sizes in SYCL order, by number of dimensions
        self.caps = {n: tuple(int(c) for c in device.get_info(_SIZES[n - 1]))
                     for n in range(1, most + 1)}
        self.sg = 1
        self._splittable: dict[tuple[int, int], list[int]] = {}
        if sg is not None:
            self.sg = _sub_group_arg(device, sg, where)
            if sg > self.wg:
                raise InvalidArgument(f"{where}: sub_group_size={sg} is larger than the "
                                      f"work-group limit {self.wg}: no work-group fits")
            bad = [n for n in self.caps if (dims is None or n == dims)
                   and not _fits(sg, self.caps[n])]
            if bad:
                raise InvalidArgument(
                    f"{where}: no {bad[0]}-dimensional work-group of sub_group_size={sg} "
                    f"work-items fits device {device.display_name!r}'s "
                    f"max_work_item_sizes_{bad[0]}d {self.caps[bad[0]]}")

    def local_size(self, draw: Any, n: int, budget: int) -> int:
        """A work-group size of at most ``budget``, a multiple of the sub-group size,
        that ``n``-dimensional local ranges within the device's caps can have."""
        if max(self.caps[n]) >= budget:  # all in one dimension fits: any size does
            return self.sg * _size(draw, budget // self.sg)
        key = (n, budget // self.sg)
        if key not in self._splittable:  # small caps: the sizes they allow, once
            self._splittable[key] = [m for m in range(1, key[1] + 1)
                                     if _fits(self.sg * m, self.caps[n])]
        sizes = self._splittable[key]
        return self.sg * sizes[draw(st.integers(0, len(sizes) - 1))]


def _size(draw: Any, top: int) -> int:
    """An int from 1 to ``top``, log-uniform: a bit length ``k``, then a value below
    ``2**(k+1)``. Shrinks to 1; the value shrinks without waiting for ``k`` to."""
    k = draw(st.integers(0, top.bit_length() - 1))
    return draw(st.integers(1, min(top, (2 << k) - 1)))


def _split(draw: Any, total: int, caps: tuple[int, ...]) -> tuple[int, ...]:
    """Extents ``e[d] <= caps[d]`` whose product is ``total`` (``_fits(total, caps)``).

    The dimensions take their factor in a drawn order; each choice leaves a rest the
    later ones can take. Shrinks to the identity order, each factor to the smallest
    that leaves a fitting rest: ``(1, ..., 1, total)`` when the caps allow.
    """
    n = len(caps)
    out = [1] * n
    order = draw(st.permutations(range(n)))
    rest = total
    for i, d in enumerate(order[:-1]):
        later = tuple(caps[e] for e in order[i + 1:])
        choices = [x for x in _divisors(rest) if x <= caps[d] and _fits(rest // x, later)]
        out[d] = choices[draw(st.integers(0, len(choices) - 1))]  # a draw even for one
        rest //= out[d]
    out[order[-1]] = rest
    return tuple(out)


@functools.lru_cache(maxsize=4096)
def _fits(total: int, caps: tuple[int, ...]) -> bool:
    """Whether ``total`` is a product of ``len(caps)`` factors, each within its cap."""
    if len(caps) == 1:
        return total <= caps[0]
    if total <= max(caps):
        return True
    return any(_fits(total // x, caps[1:]) for x in _divisors(total) if x <= caps[0])


@functools.lru_cache(maxsize=4096)
def _divisors(n: int) -> tuple[int, ...]:
    """The divisors of ``n``, ascending."""
    small = [d for d in range(1, int(n ** 0.5) + 1) if n % d == 0]
    return tuple(sorted({*small, *(n // d for d in small)}))


def _dims_arg(dims: int | None, most: int, where: str) -> st.SearchStrategy[int]:
    if dims is None:
        return st.integers(1, most)
    if isinstance(dims, bool) or not isinstance(dims, int) or not 1 <= dims <= most:
        raise InvalidArgument(f"{where}: dims must be None or an int from 1 to {most}, not {dims!r}")
    return st.just(dims)


def _positive(name: str, value: int, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgument(f"{where}: {name} must be an int of at least 1, not {value!r}")


def _sub_group_arg(device: sycl.device, sg: int, where: str) -> int:
    _positive("sub_group_size", sg, where)
    sizes = [int(s) for s in device.get_info(sycl.info.device.sub_group_sizes)]
    if sg not in sizes:
        raise InvalidArgument(f"{where}: sub_group_size={sg} is not one of device "
                              f"{device.display_name!r}'s sub-group sizes {sizes} "
                              "(info.device.sub_group_sizes)")
    return sg


def _python_device(device: sycl.device, where: str) -> None:
    if not isinstance(device, sycl.device):
        raise InvalidArgument(f"{where}: device must be a sycl.device, not {type(device).__name__}")
    if device.image_targets or device.has(sycl.aspect.host_debuggable):
        return
    raise sycl.exception(
        sycl.errc.kernel_not_supported,
        f"{where}: device {device.display_name!r} cannot run kernels written in Python: it "
        "loads neither SPIR-V (no OpenCL IL support; PoCL from PyPI is such a device) nor "
        "PTX (an NVIDIA GPU), and it is not the host_debuggable device. Draw for one of "
        "pysycl.testing.devices().")

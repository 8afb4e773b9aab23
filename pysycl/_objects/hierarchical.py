"""Hierarchical parallelism (SYCL 2020 §4.9.4.2.3, §4.9.1.6 ``h_item``, §4.10.7.3
``private_memory``): the reference model the host_debuggable device runs.

``h.parallel_for_work_group(groups, [local,] k)`` calls ``k(g)`` once per work-group with a
:class:`hierarchical_group`; each ``g.parallel_for_work_item([logical_range,] fn)`` is a loop
over the physical work-items of the group, each of which runs the logical local ids
``phys, phys + P, phys + 2P, ...`` (per dimension, ``P`` the physical local range) below the
logical range; a logical range smaller than the physical one leaves work-items idle.
Compiled devices launch the kernel as an nd_range (:mod:`pysycl_numba.hierarchical`).
"""

from __future__ import annotations

import builtins
import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

from pysycl._core.exceptions import errc, exception
from pysycl._objects.range import group, item, linear_index, nd_range
from pysycl._objects.range import id as _id
from pysycl._objects.range import range as _range


class h_item:  # noqa: N801 - the spec's spelling
    """``sycl::h_item`` (§4.9.1.6): a work-item of ``group.parallel_for_work_item``.

    Its global item is the physical work-item's place in the launch (group id times the
    physical local range plus the physical local id); its local item is the logical one
    (the range given to ``parallel_for_work_item``, else the physical one).
    """

    __slots__ = ("_global", "_logical", "_physical")

    def __init__(self, global_item: item, logical: item, physical: item) -> None:
        self._global = global_item
        self._logical = logical
        self._physical = physical

    @property
    def dimensions(self) -> int:
        """Number of dimensions."""
        return self._global.dimensions

    def get_global(self) -> item:
        """The global item: the physical work-item in the launch's global range."""
        return self._global

    def get_local(self) -> item:
        """The logical local item (as :meth:`get_logical_local`)."""
        return self._logical

    def get_logical_local(self) -> item:
        """The logical local item: the id in ``parallel_for_work_item``'s range."""
        return self._logical

    def get_physical_local(self) -> item:
        """The physical local item: the work-item in the work-group."""
        return self._physical

    def get_global_range(self, dimension: int | None = None) -> _range | int:
        """The global range (groups times the physical local range)."""
        return self._global.get_range(dimension)

    def get_global_id(self, dimension: int | None = None) -> _id | int:
        """The global id of the physical work-item."""
        return self._global.get_id(dimension)

    def get_local_range(self, dimension: int | None = None) -> _range | int:
        """The logical local range."""
        return self._logical.get_range(dimension)

    def get_local_id(self, dimension: int | None = None) -> _id | int:
        """The logical local id."""
        return self._logical.get_id(dimension)

    def get_logical_local_range(self, dimension: int | None = None) -> _range | int:
        """The logical local range."""
        return self._logical.get_range(dimension)

    def get_logical_local_id(self, dimension: int | None = None) -> _id | int:
        """The logical local id."""
        return self._logical.get_id(dimension)

    def get_physical_local_range(self, dimension: int | None = None) -> _range | int:
        """The physical local range (the work-group size)."""
        return self._physical.get_range(dimension)

    def get_physical_local_id(self, dimension: int | None = None) -> _id | int:
        """The physical local id."""
        return self._physical.get_id(dimension)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, h_item):
            return (self._global, self._logical, self._physical) == (
                other._global, other._logical, other._physical)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self._global, self._logical, self._physical))

    def __repr__(self) -> str:
        return (f"sycl.h_item(global={tuple(self._global.get_id())}, "
                f"logical_local={tuple(self._logical.get_id())}, "
                f"physical_local={tuple(self._physical.get_id())})")


def _not_hierarchical(what: str) -> exception:
    return exception(errc.invalid, f"{what} is for hierarchical kernels: call it on the "
                     "sycl.group that h.parallel_for_work_group(num_groups, [group_size,] "
                     "kernel) passes to its kernel, at group scope")


class hierarchical_group(group):  # noqa: N801 - the spec's group, in a hierarchical kernel
    """The ``sycl.group`` a hierarchical kernel receives on the host device: group-scope
    code runs once per work-group, ``parallel_for_work_item`` loops over the work-items."""

    __slots__ = ("_busy",)

    def __init__(self, group_id: tuple[int, ...], nd: nd_range) -> None:
        super().__init__(group_id, (0,) * len(group_id), nd)
        self._busy = False

    def parallel_for_work_item(self, *args: Any) -> None:
        """``g.parallel_for_work_item(fn)`` or ``g.parallel_for_work_item(logical_range, fn)``:
        ``fn(h_item)`` for every work-item of the group (or every logical local id)."""
        fn, logical = check_work_item_args(self.dimensions, args)
        if self._busy:
            raise exception(errc.invalid, "parallel_for_work_item inside parallel_for_work_item: "
                            "it is called at group scope only (SYCL 2020 §4.9.4.2.3)")
        phys = self._nd.get_local_range()
        rng = phys if logical is None else logical
        gid = tuple(self.get_group_id())
        self._busy = True
        try:
            for p in itertools.product(*(builtins.range(e) for e in phys)):
                pitem = item(p, phys)
                gitem = item([g * e + i for g, e, i in zip(gid, phys, p, strict=True)],
                             self._nd.get_global_range())
                for lid in itertools.product(*(builtins.range(i, r, e) for i, r, e
                                               in zip(p, rng, phys, strict=True))):
                    fn(h_item(gitem, item(lid, rng), pitem))
        finally:
            self._busy = False

    def get_linear_id(self) -> int:
        """The group's linear id (SYCL 2020's deprecated name of get_group_linear_id)."""
        return self.get_group_linear_id()

    def get_global_range(self, dimension: int | None = None) -> _range | int:
        """The launch's global range (deprecated in SYCL 2020)."""
        r = self._nd.get_global_range()
        return r if dimension is None else r[dimension]

    def get_local_id(self, dimension: int | None = None) -> _id | int:
        raise _not_hierarchical_local("get_local_id")

    def get_local_linear_id(self) -> int:
        raise _not_hierarchical_local("get_local_linear_id")

    def leader(self) -> bool:
        raise _not_hierarchical_local("leader")

    def _host_barrier(self) -> None:
        raise exception(errc.invalid, NO_GROUP_FUNCTIONS)

    def _host_collective(self, x: Any) -> list[Any]:
        raise exception(errc.invalid, NO_GROUP_FUNCTIONS)

    def __repr__(self) -> str:
        return f"sycl.group(id={tuple(self.get_group_id())}, nd_range={self._nd!r}, hierarchical)"


#: Why a hierarchical kernel may not call barriers and group functions.
NO_GROUP_FUNCTIONS = (
    "barriers and group functions (group_barrier, group_broadcast, reduce_over_group, ...) "
    "are not available in a hierarchical kernel: each parallel_for_work_item call already "
    "synchronizes the work-group before and after it, and inside one their behaviour is "
    "undefined (SYCL 2020 §4.9.4.2.3). Use an nd_range kernel for them")


def _not_hierarchical_local(what: str) -> exception:
    return exception(errc.invalid, f"group.{what}() asks for the calling work-item, which group "
                     "scope of a hierarchical kernel has none of: use the sycl.h_item that "
                     "parallel_for_work_item passes (h.get_physical_local_id(), ...)")


def check_work_item_args(ndim: int, args: tuple[Any, ...]) -> tuple[Callable[..., Any],
                                                                   _range | None]:
    """``(fn, logical range or None)`` of ``parallel_for_work_item(*args)``."""
    if len(args) == 1:
        fn, logical = args[0], None
    elif len(args) == 2:
        logical, fn = args
        if isinstance(logical, int) and not isinstance(logical, bool) and ndim == 1:
            logical = _range(logical)
        if not isinstance(logical, _range):
            raise TypeError("parallel_for_work_item(logical_range, fn): the logical range must "
                            f"be a sycl.range, not {type(logical).__name__}")
        if logical.dimensions != ndim:
            raise exception(errc.invalid, f"parallel_for_work_item: a {logical.dimensions}-D "
                            f"logical range in a {ndim}-D hierarchical kernel (the dimensions "
                            "must be the work-group's)")
    else:
        raise TypeError("parallel_for_work_item takes (fn) or (logical_range, fn), got "
                        f"{len(args)} arguments")
    if not callable(fn):
        raise TypeError(f"parallel_for_work_item: {type(fn).__name__} is not callable")
    return fn, logical


class private_memory:  # noqa: N801 - the spec's spelling
    """``sycl::private_memory<T, D>`` (§4.10.7.3): one ``dtype`` value per work-item of the
    group, kept across ``parallel_for_work_item`` calls; made at group scope.

    ``pm[h]`` (or ``pm(h)``) reads the value of ``h``'s physical work-item, ``pm[h] = v``
    writes it (C++'s ``pm(h) = v``: Python cannot assign through a call).
    """

    __slots__ = ("_data", "_n")

    def __init__(self, g: Any, dtype: Any) -> None:
        if not isinstance(g, hierarchical_group):
            raise _not_hierarchical("sycl.private_memory(g, dtype)")
        phys = g.get_local_range()
        self._n = phys
        self._data = np.zeros(phys.size(), dtype=np.dtype(dtype))

    def _slot(self, h: Any) -> int:
        if not isinstance(h, h_item):
            raise TypeError(f"private_memory is indexed with the sycl.h_item of "
                            f"parallel_for_work_item, not {type(h).__name__}")
        return linear_index(h.get_physical_local_id(), self._n)

    def __call__(self, h: h_item) -> Any:
        return self._data[self._slot(h)]

    def __getitem__(self, h: h_item) -> Any:
        return self._data[self._slot(h)]

    def __setitem__(self, h: h_item, value: Any) -> None:
        self._data[self._slot(h)] = value

    def __repr__(self) -> str:
        return f"sycl.private_memory(dtype={self._data.dtype}, range={tuple(self._n)})"

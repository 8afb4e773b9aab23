"""Kernel properties: required work-group size, its hint, required sub-group size, and
pysycl's ``ext_pysycl_mads_in_flight`` (work-group joint_matrix products left in flight at
barriers: docs/matrix.md).

SYCL 2020 §5.8.1's kernel attributes and ``sycl_ext_oneapi_kernel_properties``
belong to the kernel, so pysycl attaches them to the kernel function::

    @sycl.reqd_sub_group_size(16)             # [[sycl::reqd_sub_group_size(16)]]
    @sycl.reqd_work_group_size(8, 8)          # [[sycl::reqd_work_group_size(8, 8)]]
    def kernel(it): ...

    props = syclex.properties(syclex.work_group_size(8, 8), syclex.sub_group_size(16))
    h.parallel_for(nd, props(lambda it: ...))   # the extension's spelling

The values are stored on the function (:data:`pysycl._core.abi.PROPS_ATTR`) as
``(reqd_work_group_size, work_group_size_hint, reqd_sub_group_size, mads_in_flight)`` in
SYCL's dimension order, ``()``/0 where not given. They are part of the kernel's compile
key; the compiler writes them into the image (SPIR-V ``LocalSize``,
``LocalSizeHint``, ``SubgroupSize`` execution modes; PTX ``.reqntid``) and
:func:`check_launch` checks a launch against them and the device.
"""

from __future__ import annotations

from collections.abc import Callable
from math import prod
from typing import TYPE_CHECKING, Any, TypeVar

from pysycl._core.abi import PROPS_ATTR
from pysycl._core.exceptions import errc, exception
from pysycl._objects.info import _device_info

if TYPE_CHECKING:
    from pysycl._objects.device import device

F = TypeVar("F", bound=Callable[..., Any])
Props = tuple[tuple[int, ...], tuple[int, ...], int, int]
NONE: Props = ((), (), 0, 0)
#: the most work-group joint_matrix products a barrier may leave in flight (wgmma's groups)
MAX_MADS_IN_FLIGHT = 7


def _dims(what: str, dims: tuple[Any, ...]) -> tuple[int, ...]:
    if not 1 <= len(dims) <= 3 or any(
            isinstance(d, bool) or not isinstance(d, int) or d < 1 for d in dims):
        raise TypeError(f"{what} takes 1 to 3 positive int sizes, got {dims!r}")
    return tuple(dims)


class _KernelProperty:
    """One kernel property value (``work_group_size(8, 8)``): slot 0 to 3 of the props."""

    __slots__ = ("slot", "value", "what")

    def __init__(self, slot: int, value: tuple[int, ...] | int, what: str) -> None:
        self.slot, self.value, self.what = slot, value, what

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, _KernelProperty)
                and (self.slot, self.value) == (other.slot, other.value))

    def __hash__(self) -> int:
        return hash((self.slot, self.value))

    def __repr__(self) -> str:
        return self.what

    def __call__(self, fn: F) -> F:
        """Decorate kernel ``fn`` with this property (``@sycl.reqd_sub_group_size(16)``)."""
        return properties(self)(fn)


def reqd_work_group_size(*dims: int) -> _KernelProperty:
    """``[[sycl::reqd_work_group_size(dims...)]]``: the kernel runs only with this local range."""
    d = _dims("reqd_work_group_size", dims)
    return _KernelProperty(0, d, f"reqd_work_group_size{d}")


def work_group_size_hint(*dims: int) -> _KernelProperty:
    """``[[sycl::work_group_size_hint(dims...)]]``: the local range it will most likely get."""
    d = _dims("work_group_size_hint", dims)
    return _KernelProperty(1, d, f"work_group_size_hint{d}")


def reqd_sub_group_size(n: int) -> _KernelProperty:
    """``[[sycl::reqd_sub_group_size(n)]]``: the kernel's sub-groups are ``n`` wide."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise TypeError(f"reqd_sub_group_size takes a positive int, got {n!r}")
    return _KernelProperty(2, n, f"reqd_sub_group_size({n})")


def ext_pysycl_mads_in_flight(n: int) -> _KernelProperty:
    """pysycl's: a group barrier of the kernel waits only until at most the last ``n``
    work-group ``joint_matrix_mad`` calls of each work-item are still in flight (reading
    their A and B tiles); the kernel must not overwrite those tiles before a later barrier
    at which they are no longer among the last ``n``. Default 0: every barrier waits for
    every product (docs/matrix.md, "Products in flight")."""
    if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= MAX_MADS_IN_FLIGHT:
        raise TypeError(f"ext_pysycl_mads_in_flight takes an int from 0 to "
                        f"{MAX_MADS_IN_FLIGHT}, got {n!r}")
    return _KernelProperty(3, n, f"ext_pysycl_mads_in_flight({n})")


class properties:  # noqa: N801 - the extension's name
    """``sycl::ext::oneapi::experimental::properties``: kernel properties, applied to a
    kernel function by calling the object with it (or as a decorator)."""

    __slots__ = ("_props",)

    def __init__(self, *props: _KernelProperty) -> None:
        got: list[Any] = [(), (), 0, 0]
        seen: set[int] = set()
        for p in props:
            if not isinstance(p, _KernelProperty):
                raise TypeError(f"properties takes kernel properties (work_group_size, "
                                f"work_group_size_hint, sub_group_size, "
                                f"ext_pysycl_mads_in_flight), not {type(p).__name__}")
            if p.slot in seen:
                raise TypeError(f"properties: {p!r} given twice")
            seen.add(p.slot)
            got[p.slot] = p.value
        self._props: Props = (got[0], got[1], got[2], got[3])

    def __call__(self, fn: F) -> F:
        if not callable(fn):
            raise TypeError(f"kernel properties apply to a kernel function, not "
                            f"{type(fn).__name__}")
        old = getattr(fn, PROPS_ATTR, NONE)
        new = tuple(n or o for n, o in zip(self._props, old, strict=True))
        setattr(fn, PROPS_ATTR, new)
        return fn


def props_of(fn: Any) -> Props:
    """The properties of kernel function ``fn`` (:data:`NONE` when it has none)."""
    return getattr(fn, PROPS_ATTR, NONE)


def check_launch(props: Props, where: str, kind: str, local: tuple[int, ...] | None,
                 dev: device, image_format: str) -> None:
    """Raise unless a launch over ``kind`` with local range ``local`` (SYCL order; None for
    ``range``/``single_task``) on ``dev`` honours kernel properties ``props``.

    Raises:
        exception: ``errc.nd_range`` for an nd_range whose local range is not the
            required one, or a ``range``/``single_task`` launch of a kernel with a
            required work-group size (its work-groups need an nd_range);
            ``errc.kernel_not_supported`` for a size the device cannot give.
    """
    reqd, _, sg, _ = props
    if reqd:
        if kind not in ("nd_range", "hierarchical"):
            raise exception(errc.nd_range, f"{where}: the kernel requires work-groups of "
                            f"{reqd} (reqd_work_group_size); launch it over a "
                            f"sycl.nd_range(global_range, sycl.range{reqd})")
        if local != reqd:
            raise exception(errc.nd_range, f"{where}: the nd_range's local range {local} is "
                            f"not the kernel's reqd_work_group_size {reqd}")
        limit = int(dev.get_info(_device_info.max_work_group_size))
        if prod(reqd) > limit:
            raise exception(errc.kernel_not_supported, f"{where}: reqd_work_group_size {reqd} "
                            f"has {prod(reqd)} work-items; device {dev.display_name!r} "
                            f"allows at most {limit} a work-group")
    if sg:
        sizes = [int(s) for s in dev.get_info(_device_info.sub_group_sizes)]
        if image_format == "ptx":
            sizes = [32]
        if sg not in sizes:
            raise exception(errc.kernel_not_supported, f"{where}: reqd_sub_group_size({sg}) "
                            f"is not a sub-group size of device {dev.display_name!r} "
                            f"(info.device.sub_group_sizes: {sizes})")

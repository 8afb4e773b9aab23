"""Group algorithms of SYCL 2020 §4.17 beyond the votes, broadcast and reduction.

Sub-group shuffles (§4.17.3.3-6), scans over groups (§4.17.4.9) and the
``joint_*`` algorithms over a range of memory (§4.17.4). Like the rest of
:mod:`pysycl._kernels.kernel_api`, they are device-side functions: the compiler
(``pysycl_numba``) implements them inside kernels; on the host they run only while
the host_debuggable device runs a kernel, where these definitions are the oracle.

Python spellings of the C++ forms:

* **Types** are those of compiled kernels (:func:`~pysycl._kernels.kernel_api.group_value`):
  numbers and bools, ``int8``/``int16`` widened to 64 bits; the result has ``x``'s type
  (``init`` is converted to it; C++ returns ``init``'s type).
* **Out-of-range shuffles** (a source lane outside the sub-group) are unspecified in
  the spec; pysycl returns the caller's own ``x`` on every device.
* **Argument order** is the spec's (``exclusive_scan_over_group(g, x, init, op)``,
  ``inclusive_scan_over_group(g, x, op, init)``); the function object may also come
  before or after ``init`` in either (it is told apart by its type).
* **Joint algorithms** take the memory and an index range instead of C++'s pointer
  pair: ``joint_reduce(g, data, first, last, op)`` reduces ``data[first:last]``,
  where ``data`` is a 1-D accessor, local accessor or USM pointer;
  ``joint_inclusive_scan(g, data, first, last, out, out_first, op)`` writes the scan
  of ``data[first:last]`` to ``out[out_first:]``. ``pred`` of ``joint_any_of`` is a
  plain Python function (compiled as a device function).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, SupportsIndex

import numpy as np

from pysycl._core.exceptions import errc, exception
from pysycl._kernels.kernel_api import (
    _functor,
    _host_collective,
    as_type_of,
    group_broadcast,
    group_value,
)
from pysycl._objects.range import group as _group

if TYPE_CHECKING:
    from pysycl._kernels.kernel_api_host import HostGroupLike
    from pysycl._objects.range import group


def known_identity(op: str, dtype: np.dtype) -> np.generic | None:
    """``sycl::known_identity<op, T>`` (§4.10.2.1) as a numpy scalar, or None."""
    dt = np.dtype(dtype)
    if op in ("plus", "bit_or", "bit_xor", "logical_or"):
        return dt.type(0)
    if op in ("multiplies", "logical_and"):
        return dt.type(1)
    if op == "bit_and":
        return dt.type(np.iinfo(dt).max if dt.kind == "u" else -1) if dt.kind in "iu" else None
    if op in ("minimum", "maximum"):
        lo = op == "maximum"
        if dt.kind == "f":
            return dt.type(-np.inf if lo else np.inf)
        info = np.iinfo(dt)
        return dt.type(info.min if lo else info.max)
    return None


# ------------------------------------------------------------------ shuffles
def _shuffle(g: HostGroupLike, x: Any, src: int, name: str) -> Any:
    if isinstance(g, _group):
        raise TypeError(f"sycl.{name} takes a sub_group (it.get_sub_group()), not a work-group")
    x = group_value(x, name)
    values = _host_collective(g, x, name)
    return values[src] if 0 <= src < len(values) else x


def shift_group_left(g: HostGroupLike, x: Any, delta: SupportsIndex = 1) -> Any:
    """``x`` of the work-item ``delta`` places up the sub-group (own ``x`` past the end)."""
    return _shuffle(g, x, int(g.get_local_linear_id()) + operator.index(delta), "shift_group_left")


def shift_group_right(g: HostGroupLike, x: Any, delta: SupportsIndex = 1) -> Any:
    """``x`` of the work-item ``delta`` places down the sub-group (own ``x`` before lane 0)."""
    return _shuffle(g, x, int(g.get_local_linear_id()) - operator.index(delta), "shift_group_right")


def permute_group_by_xor(g: HostGroupLike, x: Any, mask: SupportsIndex) -> Any:
    """``x`` of the work-item whose sub-group local id is ``own id ^ mask``."""
    return _shuffle(g, x, int(g.get_local_linear_id()) ^ operator.index(mask), "permute_group_by_xor")


def select_from_group(g: HostGroupLike, x: Any, remote_local_id: SupportsIndex) -> Any:
    """``x`` of the sub-group's work-item ``remote_local_id``."""
    return _shuffle(g, x, operator.index(remote_local_id), "select_from_group")


# --------------------------------------------------------------------- scans
def _op_and_init(name: str, args: tuple[Any, ...]) -> tuple[_functor, Any]:
    ops = [a for a in args if isinstance(a, _functor)]
    if len(args) not in (1, 2) or len(ops) != 1:
        raise TypeError(f"sycl.{name}: expected a SYCL function object such as sycl.plus() "
                        "and an optional init value")
    rest = [a for a in args if not isinstance(a, _functor)]
    return ops[0], (rest[0] if rest else None)


def _identity(op: _functor, x: Any) -> Any:
    ident = known_identity(op.op, np.asarray(x).dtype)
    if ident is None:
        raise exception(errc.invalid, f"{op!r} has no identity for {type(x).__name__}")
    return ident.item() if not isinstance(x, np.generic) else ident


def _scan(values: list[Any], me: int, op: _functor, init: Any, inclusive: bool) -> Any:
    x = values[me]
    acc = _identity(op, x) if init is None else as_type_of(x, init)
    for v in values[:me + 1] if inclusive else values[:me]:
        acc = op(acc, v)
    return as_type_of(x, acc)


def inclusive_scan_over_group(g: group | HostGroupLike, x: Any, *args: Any) -> Any:
    """``op``-combination of ``x`` over work-items ``0..own id`` (after ``init``)."""
    op, init = _op_and_init("inclusive_scan_over_group", args)
    x = group_value(x, "inclusive_scan_over_group", op)
    values = _host_collective(g, x, "inclusive_scan_over_group")
    return _scan(values, int(g.get_local_linear_id()), op, init, True)


def exclusive_scan_over_group(g: group | HostGroupLike, x: Any, *args: Any) -> Any:
    """``op``-combination of ``x`` over work-items ``0..own id - 1``, from ``init`` or the identity."""
    op, init = _op_and_init("exclusive_scan_over_group", args)
    x = group_value(x, "exclusive_scan_over_group", op)
    values = _host_collective(g, x, "exclusive_scan_over_group")
    return _scan(values, int(g.get_local_linear_id()), op, init, False)


# --------------------------------------------------------------- joint algorithms
def _joint_values(data: Any, first: SupportsIndex, last: SupportsIndex, name: str,
                  op: _functor) -> tuple[list[Any], Any]:
    """The values of ``data[first:last]`` as group functions take them, and a zero of their type."""
    if getattr(data, "dimensions", 1) != 1:
        raise TypeError(f"sycl.{name} reads a 1-D accessor, local accessor or USM pointer, "
                        f"not {data!r}")
    zero = group_value(data.dtype.type(0), name, op)
    values = [as_type_of(zero, data[i]) for i in range(operator.index(first),
                                                      operator.index(last))]
    return values, zero


def joint_reduce(g: group | HostGroupLike, data: Any, first: SupportsIndex, last: SupportsIndex,
                 *args: Any) -> Any:
    """``op``-combination of ``data[first:last]`` (after ``init``), returned to all of ``g``."""
    op, init = _op_and_init("joint_reduce", args)
    values, zero = _joint_values(data, first, last, "joint_reduce", op)
    group_broadcast(g, 0)  # a group function: every work-item meets here
    acc = _identity(op, zero) if init is None else as_type_of(zero, init)
    for v in values:
        acc = op(acc, v)
    return as_type_of(zero, acc)


def _joint_scan(g: group | HostGroupLike, data: Any, first: SupportsIndex, last: SupportsIndex,
                out: Any, out_first: SupportsIndex, args: tuple[Any, ...], inclusive: bool) -> None:
    name = "joint_inclusive_scan" if inclusive else "joint_exclusive_scan"
    op, init = _op_and_init(name, args)
    values, zero = _joint_values(data, first, last, name, op)
    o = operator.index(out_first)
    group_broadcast(g, 0)  # everyone has read its input before anyone writes
    me, n = int(g.get_local_linear_id()), int(g.get_local_linear_range())
    acc = _identity(op, zero) if init is None else as_type_of(zero, init)
    for k, v in enumerate(values):
        if inclusive:
            acc = op(acc, v)
        if k % n == me:
            out[o + k] = as_type_of(zero, acc)
        if not inclusive:
            acc = op(acc, v)
    group_broadcast(g, 0)  # the results are visible to the whole group afterwards


def joint_inclusive_scan(g: group | HostGroupLike, data: Any, first: SupportsIndex,
                         last: SupportsIndex, out: Any, out_first: SupportsIndex,
                         *args: Any) -> None:
    """Write the inclusive ``op``-scan of ``data[first:last]`` to ``out[out_first:]``."""
    _joint_scan(g, data, first, last, out, out_first, args, True)


def joint_exclusive_scan(g: group | HostGroupLike, data: Any, first: SupportsIndex,
                         last: SupportsIndex, out: Any, out_first: SupportsIndex,
                         *args: Any) -> None:
    """Write the exclusive ``op``-scan of ``data[first:last]`` to ``out[out_first:]``."""
    _joint_scan(g, data, first, last, out, out_first, args, False)


def _joint_vote(g: group | HostGroupLike, data: Any, first: SupportsIndex, last: SupportsIndex,
                pred: Callable[[Any], Any]) -> list[bool]:
    flags = [bool(pred(data[i])) for i in range(int(first), int(last))]
    group_broadcast(g, 0)
    return flags


def joint_any_of(g: group | HostGroupLike, data: Any, first: SupportsIndex, last: SupportsIndex,
                 pred: Callable[[Any], Any]) -> bool:
    """Whether ``pred(data[i])`` holds for some ``i`` in ``first..last-1``."""
    return any(_joint_vote(g, data, first, last, pred))


def joint_all_of(g: group | HostGroupLike, data: Any, first: SupportsIndex, last: SupportsIndex,
                 pred: Callable[[Any], Any]) -> bool:
    """Whether ``pred(data[i])`` holds for every ``i`` in ``first..last-1``."""
    return all(_joint_vote(g, data, first, last, pred))


def joint_none_of(g: group | HostGroupLike, data: Any, first: SupportsIndex, last: SupportsIndex,
                  pred: Callable[[Any], Any]) -> bool:
    """Whether ``pred(data[i])`` holds for no ``i`` in ``first..last-1``."""
    return not any(_joint_vote(g, data, first, last, pred))

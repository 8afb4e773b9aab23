"""The device-side SYCL API in the interpreter: what kernels on the host device call.

:mod:`pysycl._kernels.kernel_api` defines the names kernels use (``sycl.atomic_ref``,
``sycl.private_array``, ...); inside a compiled kernel the compiler gives them their
device implementation. While the host_debuggable device runs a kernel in this thread
(:func:`set_active`, called by :mod:`pysycl._backends.host.executor` around each
kernel), ``kernel_api`` hands the calls to this module: atomics under one lock,
private arrays and bound accessors as :class:`KernelView` numpy views (SYCL's
indexing: no negative wrap-around). Barriers and group collectives go through the
group object a host work-item gets (:class:`HostGroupLike`), which carries its
work-group's scheduler. Nothing here imports a backend: this module is the host
semantics of the kernel API itself (numba-dpex's ``kernel_api`` model).
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from pysycl._core.exceptions import errc, exception
from pysycl._core.vec_layout import FIELD
from pysycl._memory import usm as _usm
from pysycl._memory.accessor import accessor
from pysycl._memory.usm import usm_pointer
from pysycl._objects.range import np_index as _np_index
from pysycl._objects.vec import vec

if TYPE_CHECKING:
    from numpy.typing import DTypeLike


class HostGroupLike(Protocol):
    """A work-group or sub-group as a host work-item sees it (its scheduler behind it)."""

    def get_local_linear_id(self) -> int: ...

    def get_local_linear_range(self) -> int: ...

    def _host_barrier(self) -> None: ...

    def _host_collective(self, x: Any) -> list[Any]: ...


class HostViewed(Protocol):
    """A local accessor: bound to a numpy view of its work-group's memory while a kernel runs."""

    @property
    def host_view(self) -> np.ndarray | None: ...


# ------------------------------------------------------------ the running kernel
#: ``_state.active`` is true in a thread running a kernel on the host_debuggable device.
_state = threading.local()


def active() -> bool:
    """Whether this thread runs a kernel on the host device."""
    return getattr(_state, "active", False)


def set_active(on: bool) -> bool:
    """Mark this thread as running a kernel on the host device (or not); the previous state.

    The host backend's executor sets it around the kernels it runs in the interpreter
    (device allocations are then accessible: the host device's memory is host memory).
    """
    prev = getattr(_state, "active", False)
    _state.active = on
    _usm.set_host_kernel_active(on)
    return prev


# ------------------------------------------------------------------- indexing
class KernelView(np.ndarray):
    """A numpy array indexed with SYCL's rules: a negative index is out of bounds.

    Accessors, local accessors and private arrays are bound to such views while
    a kernel runs, so ``acc[-1]`` raises ``IndexError`` (reported as ``errc.kernel``)
    like ``acc[n]`` does, instead of wrapping around as numpy would.
    """

    def __getitem__(self, idx: Any) -> Any:
        check_index(idx, self.shape)
        return super().__getitem__(idx)

    def __setitem__(self, idx: Any, value: Any) -> None:
        check_index(idx, self.shape)
        super().__setitem__(idx, value)


class VecKernelView(KernelView):
    """A :class:`KernelView` of ``sycl::vec`` records (:mod:`pysycl._core.vec_layout`): an
    element reads as a ``sycl.vec`` (a copy, as a device loads it) and is written whole."""

    def __getitem__(self, idx: Any) -> Any:
        check_index(idx, self.shape)
        lanes = np.ndarray.__getitem__(self.view(np.ndarray), FIELD)
        return vec._wrap(np.array(lanes[idx]))

    def __setitem__(self, idx: Any, value: Any) -> None:
        check_index(idx, self.shape)
        lanes = np.ndarray.__getitem__(self.view(np.ndarray), FIELD)
        lanes[idx] = np.asarray(value, dtype=lanes.dtype)


def check_index(idx: Any, shape: tuple[int, ...], past_end: bool = False) -> None:
    """Raise ``IndexError`` for a negative index component (and one past the end if asked)."""
    for d, i in enumerate(idx if type(idx) is tuple else (idx,)):
        try:
            v = operator.index(i)
        except TypeError:
            continue  # a slice or Ellipsis: numpy's own rules (host code only)
        if v < 0 or (past_end and d < len(shape) and v >= shape[d]):
            size = shape[d] if d < len(shape) else 0
            why = " (SYCL indices do not wrap around)" if v < 0 else ""
            raise IndexError(f"index {v} is out of bounds for axis {d} with size {size}{why}")


def private_array(dtype: DTypeLike, n: int | tuple[int, ...]) -> np.ndarray:
    """``sycl.private_array`` on the host: zeros (a device's are uninitialized), SYCL indexing."""
    shape = tuple(int(k) for k in n) if isinstance(n, tuple) else int(n)
    return np.zeros(shape, dtype=np.dtype(dtype)).view(KernelView)


# -------------------------------------------------------------------- atomics
_atomic_lock = threading.Lock()

_ATOMIC_KINDS = "iuf"


class AtomicRef:
    """``sycl.atomic_ref`` on the host device: each operation under one lock."""

    __slots__ = ("_arr", "_idx")

    def __init__(self, arr: np.ndarray, idx: Any) -> None:
        self._arr = arr
        self._idx = idx

    def load(self) -> Any:
        with _atomic_lock:
            return self._arr[self._idx]

    def store(self, v: Any) -> None:
        with _atomic_lock:
            self._arr[self._idx] = v

    def exchange(self, v: Any) -> Any:
        with _atomic_lock:
            old = self._arr[self._idx]
            self._arr[self._idx] = v
            return old

    def compare_exchange_strong(self, expected: Any, desired: Any) -> tuple[bool, Any]:
        a = self._arr
        with _atomic_lock:
            old = a[self._idx]
            # Compare bit patterns, as C++ does (and the device's compare-exchange).
            exp = np.asarray(expected, dtype=a.dtype)
            same = np.asarray(old).tobytes() == exp.tobytes()
            if same:
                a[self._idx] = desired
            return bool(same), old

    compare_exchange_weak = compare_exchange_strong

    def _fetch(self, op: Callable[[Any, Any], Any], v: Any) -> Any:
        a = self._arr
        with _atomic_lock:
            old = a[self._idx]
            a[self._idx] = op(old, a.dtype.type(v))
            return old

    def fetch_add(self, v: Any) -> Any:
        return self._fetch(operator.add, v)

    def fetch_sub(self, v: Any) -> Any:
        return self._fetch(operator.sub, v)

    def fetch_min(self, v: Any) -> Any:
        return self._fetch(lambda a, b: b if b < a else a, v)

    def fetch_max(self, v: Any) -> Any:
        return self._fetch(lambda a, b: b if b > a else a, v)

    def fetch_and(self, v: Any) -> Any:
        return self._int_fetch(operator.and_, v, "fetch_and")

    def fetch_or(self, v: Any) -> Any:
        return self._int_fetch(operator.or_, v, "fetch_or")

    def fetch_xor(self, v: Any) -> Any:
        return self._int_fetch(operator.xor, v, "fetch_xor")

    def _int_fetch(self, op: Callable[[Any, Any], Any], v: Any, name: str) -> Any:
        if self._arr.dtype.kind not in "iu":
            raise TypeError(f"atomic_ref.{name} needs an integer element type, not "
                            f"{self._arr.dtype}")
        return self._fetch(op, v)


def _check_atomic_type(dt: np.dtype) -> None:
    if dt.kind not in _ATOMIC_KINDS or dt.itemsize not in (4, 8):
        raise TypeError(f"sycl.atomic_ref: element type {dt} is not supported "
                        "(int32, uint32, int64, uint64, float32, float64)")


_READ_ONLY_POINTER = ("sycl.atomic_ref on a read-only pointer (the memory of a read-only "
                      "array): atomics write")


def atomic_ref(acc: accessor | HostViewed | usm_pointer | np.ndarray, index: Any) -> AtomicRef:
    """An ``atomic_ref`` to ``acc[index]`` of a bound accessor or local accessor, of a
    USM pointer, or of a captured 1-D numpy array (a pointer to its memory in kernels)."""
    if isinstance(acc, np.ndarray):
        if not acc.flags.writeable:
            raise exception(errc.kernel, _READ_ONLY_POINTER)
        _check_atomic_type(acc.dtype)
        i = operator.index(index)
        if not 0 <= i < acc.size:  # as a pointer's p[i]: no negative wrap-around
            raise IndexError(f"sycl.atomic_ref: index {i} is outside the array "
                             f"({acc.size} elements)")
        return AtomicRef(acc, (i,))
    if isinstance(acc, usm_pointer):
        if acc.readonly:
            raise exception(errc.kernel, _READ_ONLY_POINTER)
        view = acc._typed("sycl.atomic_ref")
        _check_atomic_type(view.dtype)
        return AtomicRef(view, (acc._index(index),))
    if isinstance(acc, accessor) and not acc.writes:
        raise exception(errc.kernel, "sycl.atomic_ref on an accessor with access_mode.read: "
                        "atomics write; use access_mode.read_write")
    arr = acc.host_view
    assert arr is not None  # kernel_api checked it is bound
    _check_atomic_type(arr.dtype)
    idx = _np_index(index)
    check_index(idx, arr.shape, past_end=True)
    return AtomicRef(arr, idx)

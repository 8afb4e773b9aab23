"""Atomics and reducers on the host device: each operation under a lock."""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from pysycl._backends.host.views import check_index
from pysycl._core.exceptions import errc, exception
from pysycl._memory.accessor import accessor
from pysycl._memory.usm import usm_pointer
from pysycl._objects.range import np_index as _np_index

if TYPE_CHECKING:
    from pysycl._kernels.kernel_api import local_accessor
    from pysycl._kernels.reduction import reduction

_atomic_lock = threading.Lock()

_ATOMIC_KINDS = "iuf"


class _HostAtomicRef:
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


def host_atomic_ref(acc: accessor | local_accessor | usm_pointer | np.ndarray,
                    index: Any) -> _HostAtomicRef:
    """An ``atomic_ref`` to ``acc[index]`` of a bound accessor or local accessor, of a
    USM pointer, or of a captured 1-D numpy array (a pointer to its memory in kernels)."""
    if isinstance(acc, np.ndarray):
        if not acc.flags.writeable:
            raise exception(errc.kernel, "sycl.atomic_ref on a read-only pointer (the memory "
                            "of a read-only array): atomics write")
        if acc.dtype.kind not in _ATOMIC_KINDS or acc.dtype.itemsize not in (4, 8):
            raise TypeError(f"sycl.atomic_ref: element type {acc.dtype} is not supported "
                            "(int32, uint32, int64, uint64, float32, float64)")
        i = operator.index(index)
        if not 0 <= i < acc.size:  # as a pointer's p[i]: no negative wrap-around
            raise IndexError(f"sycl.atomic_ref: index {i} is outside the array "
                             f"({acc.size} elements)")
        return _HostAtomicRef(acc, (i,))
    if isinstance(acc, usm_pointer):
        if acc.readonly:
            raise exception(errc.kernel, "sycl.atomic_ref on a read-only pointer (the memory "
                            "of a read-only array): atomics write")
        view = acc._typed("sycl.atomic_ref")
        if view.dtype.kind not in _ATOMIC_KINDS or view.dtype.itemsize not in (4, 8):
            raise TypeError(f"sycl.atomic_ref: element type {view.dtype} is not supported "
                            "(int32, uint32, int64, uint64, float32, float64)")
        return _HostAtomicRef(view, (acc._index(index),))
    if isinstance(acc, accessor) and not acc.writes:
        raise exception(errc.kernel, "sycl.atomic_ref on an accessor with access_mode.read: "
                        "atomics write; use access_mode.read_write")
    arr = acc.host_view
    if arr.dtype.kind not in _ATOMIC_KINDS or arr.dtype.itemsize not in (4, 8):
        raise TypeError(f"sycl.atomic_ref: element type {arr.dtype} is not supported (int32, "
                        "uint32, int64, uint64, float32, float64)")
    idx = _np_index(index)
    check_index(idx, arr.shape, past_end=True)
    return _HostAtomicRef(arr, idx)


# --------------------------------------------------------------- reductions
class _HostReducer:
    """A reducer for one ``sycl.reduction``: one host accumulator, combined under a lock.

    The result is ``combine(old value, every combined value)``, or the combination
    starting at the identity with ``initialize_to_identity`` (§4.10.2).
    """

    __slots__ = ("_acc", "_dt", "_fn", "_lock", "_op", "_r")

    def __init__(self, r: reduction) -> None:
        self._r = r
        self._dt = r.dtype.type
        self._fn = r.combiner
        self._op = r.op
        self._acc = r.identity
        self._lock = threading.Lock()

    def combine(self, x: Any) -> _HostReducer:
        with self._lock:
            self._acc = self._dt(self._fn(self._acc, self._dt(x)))
        return self

    def _only(self, op: str, symbol: str, x: Any) -> _HostReducer:
        if self._op != op:
            raise exception(errc.kernel, f"reducer {symbol} x: a reducer of "
                            f"{'sycl.' + self._op + '()' if self._op != 'custom' else 'a custom combiner'}"
                            f" has no operator {symbol} (no operator op=; it is for "
                            f"sycl.{op}()); use r.combine(x)")
        return self.combine(x)

    def __iadd__(self, x: Any) -> _HostReducer:
        return self._only("plus", "+=", x)

    def __imul__(self, x: Any) -> _HostReducer:
        return self._only("multiplies", "*=", x)

    def __iand__(self, x: Any) -> _HostReducer:
        return self._only("bit_and", "&=", x)

    def __ior__(self, x: Any) -> _HostReducer:
        return self._only("bit_or", "|=", x)

    def __ixor__(self, x: Any) -> _HostReducer:
        return self._only("bit_xor", "^=", x)

    def write_back(self) -> None:
        out = self._r.accessor.host_view
        flat = out.reshape(-1)
        with np.errstate(all="ignore"):
            flat[0] = self._acc if self._r.initialize_to_identity else self._dt(self._fn(flat[0], self._acc))

    def __repr__(self) -> str:
        return f"<sycl reducer {self._r!r} on the host device>"

"""Reducers on the host device: one accumulator per reduction, combined under a lock.

(The host device's ``atomic_ref`` is :mod:`pysycl._kernels.kernel_api_host`'s.)
"""

from __future__ import annotations

import operator
import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from pysycl._core.exceptions import errc, exception
from pysycl._memory.usm import bytes_at

if TYPE_CHECKING:
    from pysycl._kernels.reduction import reduction

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
        r = self._r
        flat = (r.accessor.host_view.reshape(-1) if r.variable_kind == "accessor"
                else _usm_elements(r))
        self.store(flat, 0)

    def store(self, flat: np.ndarray, i: int) -> None:
        """Put the result into ``flat[i]`` (combined with its old value unless
        ``initialize_to_identity``)."""
        with np.errstate(all="ignore"):
            flat[i] = self._acc if self._r.initialize_to_identity else self._dt(self._fn(flat[i], self._acc))

    def __repr__(self) -> str:
        return f"<sycl reducer {self._r!r} on the host device>"


def _usm_elements(r: reduction) -> np.ndarray:
    """The ``r.count`` elements at a USM reduction's pointer (the host device's memory is
    host memory)."""
    p = r.pointer
    return bytes_at(p.address, r.count * r.dtype.itemsize, p).view(r.dtype)


class _HostSpanReducer:
    """The reducer of a span reduction: ``r[i]`` is the reducer of element ``i``."""

    __slots__ = ("_elems", "_r")

    def __init__(self, r: reduction) -> None:
        self._r = r
        self._elems = [_HostReducer(r) for _ in range(r.count)]

    def __getitem__(self, i: Any) -> _HostReducer:
        j = operator.index(i)
        if not 0 <= j < len(self._elems):
            raise exception(errc.kernel, f"span reducer[{j}]: the span reduction of "
                            f"{self._r.where} has {len(self._elems)} element(s)")
        return self._elems[j]

    def __setitem__(self, i: Any, value: Any) -> None:
        # ``r[i] += x`` stores the element reducer back: it must be that one
        if value is not self[i]:
            raise exception(errc.kernel, f"span reducer[{operator.index(i)}] = ...: a span "
                            "reducer's elements are reducers; combine with r[i].combine(x) "
                            "or r[i] += x")

    def __len__(self) -> int:
        return len(self._elems)

    def combine(self, x: Any) -> None:
        raise exception(errc.kernel, "r.combine of a span reducer: a span reduction's kernel "
                        "parameter holds one reducer per element of the span: "
                        "r[i].combine(x) or r[i] += x")

    def write_back(self) -> None:
        flat = _usm_elements(self._r)
        for i, e in enumerate(self._elems):
            e.store(flat, i)

    def __repr__(self) -> str:
        return f"<sycl span reducer {self._r!r} on the host device>"


#: A host device reducer of either kind.
AnyHostReducer = _HostReducer | _HostSpanReducer


def host_reducer(r: reduction) -> AnyHostReducer:
    """The host device's reducer of reduction ``r``."""
    return _HostSpanReducer(r) if r.variable_kind == "span" else _HostReducer(r)

"""Reducers on the host device: one accumulator per reduction, combined under a lock.

(The host device's ``atomic_ref`` is :mod:`pysycl._kernels.kernel_api_host`'s.)
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from pysycl._core.exceptions import errc, exception

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
        out = self._r.accessor.host_view
        flat = out.reshape(-1)
        with np.errstate(all="ignore"):
            flat[0] = self._acc if self._r.initialize_to_identity else self._dt(self._fn(flat[0], self._acc))

    def __repr__(self) -> str:
        return f"<sycl reducer {self._r!r} on the host device>"

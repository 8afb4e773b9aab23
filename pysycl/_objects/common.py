"""What platform, device and context share: common reference semantics (SYCL 2020 §4.5.2).

Each object carries a backend handle (``native``) and a process-unique integer
(``key``); two objects of one SYCL class are equal when their keys are, so
equality and hashing are O(1) and agree with identity for the canonical
platform and device objects backends hand out.
"""

from __future__ import annotations

from operator import attrgetter
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from typing_extensions import Self


class common_reference:  # noqa: N801 - named after the spec's concept
    """Base of ``platform``, ``device`` and ``context``: equality by ``key``, copies are the object.

    Subclasses store the backend handle in ``_native`` and the key in ``_handle``.
    Equality holds within the SYCL class that derives from this one directly
    (a backend's ``device`` subclass compares equal to other ``device`` objects).
    """

    __slots__ = ()

    _kind: ClassVar[type]
    _native: Any
    _handle: int

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if common_reference in cls.__bases__:
            cls._kind = cls

    native = property(attrgetter("_native"), doc=(
        "The backend's own object (a pyopencl object; None on the host device)."))
    key = property(attrgetter("_handle"), doc=(
        "A process-unique integer naming this object: what caches and residency are keyed by."))
    # The former name of ``native``, kept for callers not yet moved to it.
    _cl = property(attrgetter("_native"))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, self._kind) and other._handle == self._handle

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(self._handle)

    def __copy__(self) -> Self:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        return self

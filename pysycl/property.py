"""``sycl::property``: the properties passed as ``properties=[...]`` (mapping rules).

``sycl.queue(properties=[sycl.property.queue.enable_profiling()])``,
``sycl.buffer(a, properties=[sycl.property.buffer.use_host_ptr()])``,
``buf.get_access(h, sycl.access_mode.write, properties=[sycl.no_init])``.

Each class takes its own properties (:func:`checked`); a property of another class
(``no_init`` on a queue, ``queue.in_order()`` on a buffer) is ``errc.invalid``
naming the property, the class and the user's line, as DPC++ throws.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from pysycl._core.exceptions import errc, exception
from pysycl._core.sites import user_site

if TYPE_CHECKING:  # a sycl.context, as the low layers see it (the class lies above)
    from pysycl._core.launch_types import ContextRef

#: The user's names (``sycl.property.queue.in_order()``, ...); the rest serves pysycl's
#: constructors (which class takes which property).
__all__ = ["buffer", "no_init", "no_init_property", "property_list", "queue", "reduction"]


class _Property:
    """Base of all properties: equal when of the same class and arguments."""

    __slots__ = ()
    #: the classes that take this property, for messages (set on each namespace's classes)
    _of = "?"

    def _key(self) -> tuple[Hashable, ...]:
        return ()

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._key() == self._key()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__qualname__, self._key()))

    def __repr__(self) -> str:
        return f"sycl.property.{type(self).__qualname__}()"


class queue:  # noqa: N801 - namespace, the spec's spelling
    """Queue properties (SYCL 2020 Table 31)."""

    class enable_profiling(_Property):  # noqa: N801
        """Capture profiling information for every command (``event.get_profiling_info``)."""

        __slots__ = ()
        _of = "sycl.queue"

    class in_order(_Property):  # noqa: N801
        """Commands execute in submission order."""

        __slots__ = ()
        _of = "sycl.queue"


class buffer:  # noqa: N801 - namespace, the spec's spelling
    """Buffer properties (SYCL 2020 §4.7.2.2)."""

    class use_host_ptr(_Property):  # noqa: N801
        """Use the host array itself as the buffer's host storage (pysycl always does
        for C-contiguous writable arrays; accepted for portability)."""

        __slots__ = ()
        _of = "sycl.buffer"

    class use_mutex(_Property):  # noqa: N801
        """Accepted for portability; pysycl's host accesses are synchronous anyway."""

        __slots__ = ("mutex",)
        _of = "sycl.buffer"

        def __init__(self, mutex: Any = None) -> None:
            self.mutex = mutex

        def _key(self) -> tuple[Hashable, ...]:
            return (id(self.mutex),)

        def get_mutex_ptr(self) -> Any:
            """The mutex given at construction."""
            return self.mutex

    class context_bound(_Property):  # noqa: N801
        """The buffer may only be used in ``context``."""

        __slots__ = ("context",)
        _of = "sycl.buffer"

        def __init__(self, context: ContextRef) -> None:
            self.context = context

        def _key(self) -> tuple[Hashable, ...]:
            return (self.context,)

        def get_context(self) -> ContextRef:
            """The bound context."""
            return self.context


class reduction:  # noqa: N801 - namespace, the spec's spelling
    """``sycl::property::reduction``."""

    class initialize_to_identity(_Property):  # noqa: N801
        """Discard the reduction variable's old value instead of combining with it."""

        __slots__ = ()
        _of = "sycl.reduction"


class no_init_property(_Property):  # noqa: N801
    """``property::no_init``: the accessor's previous contents need not be preserved."""

    __slots__ = ()
    _of = "sycl.accessor and sycl.host_accessor"

    def __repr__(self) -> str:
        return "sycl.no_init"


no_init = no_init_property()

P = TypeVar("P", bound=_Property)


class property_list:  # noqa: N801 - the spec's spelling
    """A set of properties; ``has_property``/``get_property`` as in the spec."""

    __slots__ = ("_props",)

    def __init__(self, props: Iterable[_Property] | _Property = ()) -> None:
        # one property where a list is meant (properties=sycl.property.no_init): as [it]
        self._props = (props,) if isinstance(props, _Property) else tuple(props)
        for p in self._props:
            if not isinstance(p, _Property):
                raise TypeError(f"not a sycl property: {p!r}")

    def has_property(self, kind: type[P]) -> bool:
        """Whether a property of class ``kind`` is present."""
        return any(isinstance(p, kind) for p in self._props)

    def get_property(self, kind: type[P]) -> P:
        """The property of class ``kind``.

        Raises:
            pysycl.exception: ``errc.invalid`` when absent (as the spec says).
        """
        for p in self._props:
            if isinstance(p, kind):
                return p  # type: ignore[return-value]
        raise exception(errc.invalid, f"property {kind.__qualname__} is not in this property list")

    def __iter__(self) -> Iterator[_Property]:
        return iter(self._props)

    def __repr__(self) -> str:
        return f"sycl.property_list({list(self._props)!r})"


#: The properties each class takes (SYCL 2020 Table 31 queue, §4.7.2.2 buffer,
#: §4.7.6.x no_init for accessors, §4.10.2 reduction); the others take none.
QUEUE = (queue.enable_profiling, queue.in_order)
BUFFER = (buffer.use_host_ptr, buffer.use_mutex, buffer.context_bound)
ACCESSOR = (no_init_property,)
REDUCTION = (reduction.initialize_to_identity,)


def owner_of(p: object) -> str | None:
    """The classes that take property ``p`` (for messages); None when ``p`` is no SYCL property."""
    return p._of if isinstance(p, _Property) else None


def checked(props: Iterable[_Property], takes: tuple[type[_Property], ...],
            owner: str) -> property_list:
    """``props`` as the property list of an ``owner`` object, which takes ``takes``.

    Raises:
        TypeError: an entry is not a SYCL property.
        pysycl.exception: ``errc.invalid`` for a property of another class (as
            DPC++ does), naming the property, ``owner`` and what it takes.
    """
    pl = property_list(props)
    for p in pl:
        if not isinstance(p, takes):
            allowed = ", ".join(f"sycl.property.{t.__qualname__}" if t is not no_init_property
                                else "sycl.no_init" for t in takes) or "no property"
            raise exception(errc.invalid, f"{user_site()}: {owner} does not take {p!r}, a "
                            f"property of {p._of}; {owner} takes {allowed}")
    return pl

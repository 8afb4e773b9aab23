"""``sycl::device_event`` (§4.9.1.5): what ``async_work_group_copy`` returns."""

from __future__ import annotations

from collections.abc import Callable


class device_event:  # noqa: N801 - the spec's spelling
    """``sycl::device_event`` (§4.9.1.5): an ``async_work_group_copy`` in flight.

    Inside a kernel, ``ev.wait()`` is ``it.wait_for(ev)``: every work-item of the group
    reaches it, and then the copy is complete and visible to the whole group."""

    __slots__ = ("_waiter",)

    def __init__(self, waiter: Callable[[device_event], None] | None = None) -> None:
        self._waiter = waiter

    def wait(self) -> None:
        """Wait until the copy is complete (the group's work-items all wait)."""
        if self._waiter is not None:
            self._waiter(self)

    def __repr__(self) -> str:
        return "sycl.device_event()"

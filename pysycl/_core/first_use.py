"""First-time work: the wall time pysycl spends once per process, kernel or device, told to listeners.

Importing the compiler, compiling a kernel, reading it from the disk cache and
building it for a device happen on a kernel's first launch and never again for
it: the caller of that launch waits for work that is not its own. A test
framework that times each call (hypothesis's deadline) is told about it here and
may leave it out (``pysycl.testing`` does: docs/testing.md).

The sites wrap that work in :func:`first_use`. Work nested in other first-time
work (the compiler's import inside a compile inside a build) is reported once,
by the outermost site, as one span. With no listener a site costs one list test.
Listeners run in the thread that did the work, after it, with what it was and
how long it took; an exception in a listener is logged, never raised into the
launch.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator

__all__ = ["add_listener", "first_use", "remove_listener"]

_log = logging.getLogger("pysycl.first_use")

#: The listeners, called as ``listener(what, seconds)``.
_listeners: list[Callable[[str, float], None]] = []
#: Per thread: how many first-time sites are open (only the outermost one reports).
_depth = threading.local()


def add_listener(listener: Callable[[str, float], None]) -> None:
    """Call ``listener(what, seconds)`` after each outermost span of first-time work
    (once, however often it is added)."""
    if listener not in _listeners:
        _listeners.append(listener)


def remove_listener(listener: Callable[[str, float], None]) -> None:
    """Stop calling ``listener`` (nothing happens if it was not added)."""
    with contextlib.suppress(ValueError):
        _listeners.remove(listener)


@contextlib.contextmanager
def first_use(what: str) -> Iterator[None]:
    """Time the block as first-time work ``what`` (e.g. ``"compile kernel f"``) for the listeners."""
    if not _listeners:
        yield
        return
    depth = getattr(_depth, "n", 0)
    _depth.n = depth + 1
    t0 = time.perf_counter()
    try:
        yield
    finally:
        _depth.n = depth
        if depth == 0:
            _tell(what, time.perf_counter() - t0)


def _tell(what: str, seconds: float) -> None:
    for listener in list(_listeners):
        try:
            listener(what, seconds)
        except Exception:  # a listener's bug must not fail the user's launch
            _log.exception("first-time work listener %r failed", listener)

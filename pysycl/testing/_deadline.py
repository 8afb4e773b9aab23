"""Hypothesis deadlines leave out pysycl's first-time work (docs/testing.md, "Deadlines").

Hypothesis times each example and fails one slower than ``settings.deadline``
(200 ms by default) -- as flaky, when its rerun is fast. A kernel's first launch
in a process imports the compiler and compiles and builds the kernel (about a
second): on a machine with an empty cache (CI) the first example of a property
test would fail for work that is not the test's.

pysycl reports that work to listeners (:mod:`pysycl._core.first_use`); the one
installed here credits it, inside a hypothesis example, to the example's
*draw time*, which hypothesis subtracts from the run time it compares with the
deadline (``hypothesis/core.py``: ``runtime = finish - start - in_drawtime ...``;
``ConjectureData.draw_times`` is a dict from 6.100 on, a list before). When the
example ends (``hypothesis.control.cleanup``) the credit is taken back out, so
that hypothesis's input-generation health check (``HealthCheck.too_slow``) and
its statistics never count compiles as input generation. Everything else in the
example -- the launches, the copies, a kernel's run -- stays under the deadline.

Nothing here imports hypothesis: the listener looks for it in ``sys.modules``
(a test that runs under hypothesis has imported it). A hypothesis whose example
data has no draw times (none known) cannot be told: the listener then logs one
warning (logger ``pysycl.testing``) and touches nothing, and first compiles
count against the deadline, as without pysycl.testing.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from pysycl._core import first_use

_log = logging.getLogger("pysycl.testing")

#: The key of the credit in ``ConjectureData.draw_times`` (shown in hypothesis's timing
#: reports while the example runs).
KEY = "pysycl: first-time work (compiler import, kernel compiles and builds)"

_warned: list[bool] = []


def install() -> None:
    """Credit first-time work inside hypothesis examples to their draw time (idempotent)."""
    first_use.add_listener(credit)


def uninstall() -> None:
    """Stop crediting it (first compiles then count against hypothesis deadlines)."""
    first_use.remove_listener(credit)


def credit(what: str, seconds: float) -> None:
    """The listener: add ``seconds`` of first-time work ``what`` to the current hypothesis
    example's draw time (nothing outside an example)."""
    control = sys.modules.get("hypothesis.control")
    context = None if control is None else _build_context(control)
    if context is None:
        return
    times = getattr(getattr(context, "data", None), "draw_times", None)
    if isinstance(times, dict):
        if KEY not in times:
            control.cleanup(lambda: times.pop(KEY, None))  # type: ignore[union-attr]
            times[KEY] = 0.0
        times[KEY] += seconds
    elif isinstance(times, list):
        times.append(seconds)
        control.cleanup(lambda: _take_back(times, seconds))  # type: ignore[union-attr]
    elif not _warned:
        _warned.append(True)
        _log.warning("pysycl.testing: this hypothesis has no per-example draw times; %s "
                     "(%.0f ms) counts against the deadline of this example", what, 1e3 * seconds)


def _build_context(control: Any) -> Any:
    """hypothesis's current build context (the running example), or None."""
    errors = sys.modules["hypothesis.errors"]  # hypothesis.control imports it
    try:
        return control.current_build_context()
    except errors.InvalidArgument:  # not inside an example
        return None


def _take_back(times: list[float], seconds: float) -> None:
    try:
        times.remove(seconds)
    except ValueError:
        pass

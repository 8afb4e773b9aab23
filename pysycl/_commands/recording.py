"""A queue recording into a command graph (``sycl_ext_oneapi_graph``): its stand-in executor.

``g.begin_recording(q)`` swaps ``q.executor`` for a :class:`RecordingExecutor`, so the
submit path pays nothing for graphs: ``q.submit``, the shortcuts and the handler-less
``q.parallel_for`` reach :meth:`RecordingExecutor.submit`/``launch``, which add a node to
the graph instead of running anything; the "native event" of the ``sycl.event`` they
return is that node. ``q.wait()`` and waiting on those events raise ``errc.invalid`` (the
extension forbids both while recording; an event of a recorded command never completes).
``g.end_recording()`` puts the queue's own executor back. The graph itself is
:mod:`pysycl._backends.graph`'s (a higher layer: reached through ``graph.record``).
"""

from __future__ import annotations

import enum
from typing import Any

from pysycl._commands.handler import handler
from pysycl._core.exceptions import errc, exception


class queue_state(enum.Enum):  # noqa: N801 - the extension's spelling
    """``ext::oneapi::experimental::queue_state``: what ``q.ext_oneapi_get_state()`` says."""

    executing = 0
    recording = 1


class graph_state(enum.Enum):  # noqa: N801 - the extension's spelling
    """``ext::oneapi::experimental::graph_state``: a ``command_graph``'s state."""

    modifiable = 0
    executable = 1


class node_type(enum.Enum):  # noqa: N801 - the extension's spelling
    """``ext::oneapi::experimental::node_type``: what a graph node runs."""

    empty = 0
    subgraph = 1
    kernel = 2
    memcpy = 3
    memset = 4
    memfill = 5
    prefetch = 6
    memadvise = 7
    ext_oneapi_barrier = 8
    host_task = 9


class RecordingExecutor:
    """``q.executor`` while ``q`` records into ``graph``: command groups become nodes.

    Everything that is not a command (USM allocation, device queries, the key of its
    memory) is the queue's own executor's (``real``).
    """

    def __init__(self, graph: Any, q: Any, real: Any) -> None:
        self.graph, self.queue, self.real = graph, q, real

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def submit(self, sub: Any) -> Any:
        """A command group of the recording queue: the node it becomes (its "event")."""
        return self.graph.record(self.queue, sub)

    def launch(self, q: Any, kind: str, index_space: Any, fn: Any, name: str | None) -> Any:
        """``q.parallel_for(r, k)`` / ``q.single_task(k)`` without a command group: a node."""
        h = handler(q)
        try:
            if kind == "single_task":
                h.single_task(fn, kernel_name=name)
            else:
                h.parallel_for(index_space, fn, kernel_name=name)
            return self.submit(h.submission())
        finally:
            h.release()

    def launch_reductions(self, q: Any, kind: str, index_space: Any, reductions: Any,
                          fn: Any, name: str | None) -> Any:
        """``q.parallel_for(r, *reductions, k)`` without a command group: a node."""
        h = handler(q)
        try:
            h.parallel_for(index_space, *reductions, fn, kernel_name=name)
            return self.submit(h.submission())
        finally:
            h.release()

    def wait(self) -> None:
        raise exception(errc.invalid, f"{self.queue!r} is recording a command graph: "
                        "q.wait() is not allowed until g.end_recording() "
                        "(sycl_ext_oneapi_graph)")

    def wait_events(self, natives: Any) -> None:
        self.wait_event(natives)

    def wait_event(self, native: Any) -> None:
        raise exception(errc.invalid, "this event is a node of a command graph (returned by "
                        "a queue in recording mode): it cannot be waited on; submit the "
                        "finalized graph with q.ext_oneapi_graph(exec_graph) and wait on "
                        "that event (sycl_ext_oneapi_graph)")

    def status(self, native: Any) -> str:
        return "submitted"  # a node never runs as such

    def profile(self, native: Any, which: str) -> int:
        raise exception(errc.invalid, "this event is a node of a command graph: it has no "
                        "profiling information (sycl_ext_oneapi_graph)")

    def __repr__(self) -> str:
        return f"RecordingExecutor({self.queue!r})"

"""``handler.host_task``: the user's function runs on the host, on any backend."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pysycl._commands.commands import HostTaskCommand
from pysycl._commands.event import event
from pysycl._memory.buffer import host_view

if TYPE_CHECKING:
    from pysycl._commands.handler import handler
    from pysycl._commands.queue import queue


def run_host_task(q: queue, h: handler, cmd: HostTaskCommand) -> event:
    """Run ``cmd`` once the queue's earlier commands are done (the caller waited for the rest).

    Its accessors see the host copies; an exception is an asynchronous error of ``q``.
    """
    q.wait()  # in-order semantics for the queue's earlier commands
    reqs = h.requirements
    for acc in reqs:
        acc.coherence.acquire_host(writes=acc.writes, no_init=acc.no_init)
        acc.host_view = host_view(acc.buffer)
    try:
        cmd.fn(*cmd.args)
    except Exception as e:
        q.add_async_error(e)
    finally:
        for acc in reqs:
            acc.host_view = None
    return event._make(q, None, deps=h.dependencies)

"""Command graphs on a CUDA stream: a replay of pre-bound kernels is one CUDA graph.

``sycl_ext_oneapi_graph`` on the CUDA backend (issue 27): :mod:`pysycl._backends.graph_exec`
replays a graph made only of pre-bound kernel nodes (no accessors, no launch steps) with
the ``replayer`` of the queue's launch class. Here that replayer records the nodes' launches
once into a CUDA graph by stream capture (``cuStreamBeginCapture`` .. ``cuStreamEndCapture``;
each launch's parameters are copied into its graph node at capture), instantiates it
(``cuGraphInstantiate``) and replays it with one ``cuGraphLaunch`` and one event: the
driver, not Python, walks the nodes.

The capture happens at the first replay on a queue (its stream is the one captured:
thread-local capture mode, so other threads' work is not caught in it). Where capture or
instantiation fails the replayer falls back, for good, to enqueuing the nodes one by one
as other backends do. A graph's nodes keep their arguments (the pointers they capture
are checked live before every replay by graph_exec); an updated graph (``exec_g.update``)
makes a new plan, hence a new capture.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from pysycl._backends.cuda import driver as d
from pysycl._backends.cuda import objects as _obj
from pysycl._backends.launching import Launch

_log = logging.getLogger("pysycl.cuda")
#: graphs of fewer nodes gain nothing from capture: their launches run one by one
MIN_NODES = 2


class Node:
    """A pre-bound kernel node (``CUDALaunch.prebound``): the launch and its native
    arguments; calling it enqueues the kernel as a launch does."""

    __slots__ = ("args", "ln")

    def __init__(self, ln: Any, args: list[Any]) -> None:
        self.ln, self.args = ln, args

    def __call__(self) -> Any:
        ln = self.ln
        return ln.enqueue(self.args, None, None, ln.bound)

    def capture(self) -> None:
        """Launch without an event, on a stream being captured: the graph's node."""
        self.ln.launch_bare(self.args)


class GraphReplay:
    """The replayer of pre-bound nodes: their CUDA graph, captured at the first call."""

    __slots__ = ("each", "exec", "graph", "nodes", "refused")

    def __init__(self, nodes: Sequence[Node]) -> None:
        self.nodes = tuple(nodes)
        self.each = Launch.replayer(self.nodes)  # the nodes one by one: the fallback
        self.graph: Any = None
        self.exec: Any = None
        self.refused = False

    def __call__(self) -> tuple[Any, Any]:
        if self.exec is None:
            if self.refused or not self._capture():
                return self.each()
        ex = self.nodes[0].ln.ex  # (every node's: replayer() checks)
        cu = d.cu
        _obj.make_current(ex.cuctx)
        with ex.lock:
            ex.begin()  # a profiling queue: the command's start
            r = cu.cuGraphLaunch(self.exec, ex.native)
            if r[0]:
                raise ex.failed(int(r[0]), "launching a command graph's CUDA graph")
            ev = ex.record()
        ex.shape = None
        return ev, ev

    def _capture(self) -> bool:
        """Capture the nodes into a CUDA graph on their queue's stream; False (and the
        replays enqueue the nodes from now on) where the driver refuses it."""
        ex = self.nodes[0].ln.ex
        cu = d.cu
        _obj.make_current(ex.cuctx)
        mode = cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
        with ex.lock:
            r = cu.cuStreamBeginCapture(ex.native, mode)
            if r[0]:
                return self._refuse(f"cuStreamBeginCapture: {d.error_name(int(r[0]))}")
            try:
                for n in self.nodes:
                    n.capture()
            finally:
                r = cu.cuStreamEndCapture(ex.native)
            if r[0]:
                return self._refuse(f"cuStreamEndCapture: {d.error_name(int(r[0]))}")
            graph = r[1]
            r = cu.cuGraphInstantiate(graph, 0)
            if r[0]:
                cu.cuGraphDestroy(graph)
                return self._refuse(f"cuGraphInstantiate: {d.error_name(int(r[0]))}")
        self.graph, self.exec = graph, r[1]
        return True

    def _refuse(self, why: str) -> bool:
        _log.debug("pysycl: a command graph replays its kernels one by one: %s", why)
        self.refused = True
        return False

    def __del__(self) -> None:
        cu = d.cu
        if cu is None or self.exec is None:
            return
        try:
            cu.cuGraphExecDestroy(self.exec)
            cu.cuGraphDestroy(self.graph)
        except Exception:  # interpreter shutdown: the driver may be gone
            pass


def replayer(nodes: Sequence[Any]) -> Any:
    """``CUDALaunch.replayer``: a :class:`GraphReplay` of the nodes (two or more), else
    the nodes one by one."""
    nodes = tuple(nodes)
    if len(nodes) >= MIN_NODES and all(type(n) is Node for n in nodes) \
            and len({id(n.ln.ex) for n in nodes}) == 1:
        return GraphReplay(nodes)
    return Launch.replayer(nodes)

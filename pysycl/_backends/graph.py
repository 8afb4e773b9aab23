"""``sycl_ext_oneapi_graph``: command graphs in the modifiable state, and their nodes.

A graph is built two ways, as the extension spells them (``pysycl.ext.oneapi.experimental``)::

    g = syclex.command_graph(q.get_context(), q.get_device())
    g.begin_recording(q)            # record and replay: q's command groups become nodes
    e1 = q.submit(cgf1)
    q.parallel_for(sycl.range(n), k, depends_on=e1)
    g.end_recording()
    n3 = g.add(cgf3, depends_on=[n1])    # explicit: nodes and edges
    g.make_edge(n1, n2)
    exec_g = g.finalize()
    q.ext_oneapi_graph(exec_g).wait()

A node keeps its command group as recorded (the handler: :meth:`handler.keep`); edges come
from ``depends_on`` (events of the recording queue, nodes in ``add``), an in-order
recording queue's order, and the accessors of buffers (a node after the last one that
writes a buffer it uses, a writer after the readers since). ``finalize`` orders the nodes
(:mod:`pysycl._backends.graph_exec` runs them).
"""

from __future__ import annotations

import heapq
import types
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from pysycl._backends.graph_exec import executable_command_graph
from pysycl._commands.commands import (
    CopyCommand,
    FillCommand,
    GraphCommand,
    HostTaskCommand,
    KernelCommand,
    PrefetchCommand,
    UpdateHostCommand,
    USMCopyCommand,
    USMFillCommand,
)
from pysycl._commands.event import event
from pysycl._commands.handler import handler
from pysycl._commands.queue import queue
from pysycl._commands.recording import RecordingExecutor, graph_state, node_type
from pysycl._core.exceptions import COMPILE_ERRORS, errc, exception, user_frames
from pysycl._memory.accessor import recording_graphs
from pysycl._objects.context import context
from pysycl._objects.device import device

_EXT = "(sycl_ext_oneapi_graph)"


class _GraphProperty:
    """A property of ``command_graph``/``finalize``/``add`` (``property::graph::*``)."""

    def __repr__(self) -> str:
        return f"property.graph.{type(self).__name__}()"


class no_cycle_check(_GraphProperty):  # noqa: N801 - the extension's spelling
    """``make_edge`` does not look for cycles (``finalize`` still refuses one)."""


class assume_buffer_outlives_graph(_GraphProperty):  # noqa: N801 - the extension's spelling
    """The user's promise that the buffers the graph uses outlive it: required to use
    buffer accessors in a graph."""


class updatable(_GraphProperty):  # noqa: N801 - the extension's spelling
    """``finalize(properties=[updatable()])``: the executable graph takes ``update``."""


class depends_on:  # noqa: N801 - the extension's spelling
    """``property::node::depends_on(nodes...)``: the edges of a node ``add`` makes."""

    def __init__(self, *nodes: node) -> None:
        self.nodes = nodes


class dynamic_parameter:  # noqa: N801 - the extension's spelling
    """``dynamic_parameter(graph, value)``: a kernel argument of ``graph``'s nodes that an
    executable graph's ``update(node)`` changes without a new finalize.

    Given to ``h.set_arg(i, dp)`` of a ``sycl.kernel`` object (a kernel of a bundle from
    source) in a command group of the graph; ``dp.update(value)`` sets the value (a numpy
    scalar, a USM pointer) and ``exec_g.update(node)`` (or a list of nodes) makes the
    executable graph's node take it. (A Python kernel's arguments are its captures: a new
    value is a whole-graph ``update``.)
    """

    def __init__(self, graph: command_graph, value: Any) -> None:
        if not isinstance(graph, command_graph):
            raise TypeError(f"dynamic_parameter(graph, value): {graph!r} is not a "
                            "command_graph")
        self._graph, self._value = graph, value

    def update(self, value: Any) -> None:
        """The new value: nodes of executable graphs take it at their ``update(node)``."""
        self._value = value

    def __repr__(self) -> str:
        return f"dynamic_parameter({self._value!r})"


class property:  # noqa: N801 - the extension's namespace ``property``
    """``property::graph`` and ``property::node`` of the extension."""

    class graph:  # noqa: N801
        no_cycle_check = no_cycle_check
        assume_buffer_outlives_graph = assume_buffer_outlives_graph
        updatable = updatable

    class node:  # noqa: N801
        depends_on = depends_on


def _props(properties: Iterable[Any], allowed: tuple[type, ...], where: str) -> list[Any]:
    out = list(properties)
    for p in out:
        if not isinstance(p, allowed):
            raise exception(errc.invalid, f"{where}: {p!r} is not one of its properties "
                            f"({', '.join(t.__name__ for t in allowed)})")
    return out


def _type_of(cmd: Any) -> node_type:
    """The node type of a recorded command (``errc.invalid`` for what a graph cannot hold)."""
    t = type(cmd)
    if cmd is None:
        return node_type.empty
    if t is KernelCommand:
        return node_type.kernel
    if t is USMCopyCommand or t is CopyCommand:
        return node_type.memcpy
    if t is USMFillCommand:
        return node_type.memset if cmd.pattern.nbytes == 1 else node_type.memfill
    if t is FillCommand:
        return node_type.memfill
    if t is PrefetchCommand:
        return node_type.prefetch if cmd.advice is None else node_type.memadvise
    if t is HostTaskCommand:
        return node_type.host_task
    if t is GraphCommand:
        raise exception(errc.feature_not_supported, "an executable graph as a node of another "
                        f"(a subgraph) is not supported {_EXT}")
    assert t is UpdateHostCommand
    raise exception(errc.invalid, f"handler.update_host cannot be a command graph node {_EXT}")


def _frozen(fn: types.FunctionType) -> types.FunctionType:
    """``fn`` with its captured variables' values of now (cells of its own): a recorded
    kernel captures by value, as a C++ lambda's ``[=]`` -- rebinding a variable after the
    command group was recorded changes no node."""
    cells = fn.__closure__
    if not cells:
        return fn
    own = []
    for c in cells:
        try:
            own.append(types.CellType(c.cell_contents))
        except ValueError:  # an empty cell: the kernel's resolve says so
            own.append(c)
    out = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__,
                             tuple(own))
    out.__kwdefaults__, out.__qualname__ = fn.__kwdefaults__, fn.__qualname__
    out.__dict__.update(fn.__dict__)
    out.__module__ = fn.__module__
    return out


class node:  # noqa: N801 - the extension's spelling
    """``ext::oneapi::experimental::node``: one command group of a graph."""

    __slots__ = ("_graph", "_index", "_preds", "_succs", "_type", "dynamic", "static_args",
                 "sub")

    def __init__(self, graph: command_graph, index: int, kind: node_type, sub: Any) -> None:
        self._graph, self._index, self._type, self.sub = graph, index, kind, sub
        self._preds: list[node] = []
        self._succs: list[node] = []
        #: ``set_arg`` arguments that are dynamic parameters, by index; the others
        self.dynamic: dict[int, dynamic_parameter] = {}
        self.static_args: dict[int, Any] | None = sub.kernel_args

    def get_type(self) -> node_type:
        """What the node runs."""
        return self._type

    def get_predecessors(self) -> list[node]:
        """The nodes this one runs after."""
        return list(self._preds)

    def get_successors(self) -> list[node]:
        """The nodes that run after this one."""
        return list(self._succs)

    @staticmethod
    def get_node_from_event(e: event) -> node:
        """The node an event of a recording queue stands for (``errc.invalid`` otherwise)."""
        n = e._cl
        if type(n) is not node:
            raise exception(errc.invalid, f"{e!r} was not returned by a queue recording a "
                            f"command graph {_EXT}")
        return n

    def __repr__(self) -> str:
        return f"node({self._type.name}, #{self._index})"


class command_graph:  # noqa: N801 - the extension's spelling
    """``command_graph<graph_state::modifiable>``: nodes and edges, not run yet.

    ``command_graph(context, device, properties=[...])`` or ``command_graph(queue,
    properties=[...])`` (the queue's context and device).
    """

    def __init__(self, ctx: context | queue, dev: device | None = None,
                 properties: Iterable[Any] = ()) -> None:
        if isinstance(ctx, queue):
            if dev is not None:
                raise TypeError("command_graph(queue) takes no device")
            ctx, dev = ctx.get_context(), ctx.get_device()
        if not isinstance(ctx, context) or not isinstance(dev, device):
            raise TypeError("command_graph(context, device[, properties]) or "
                            "command_graph(queue[, properties])")
        if dev not in ctx.get_devices():
            raise exception(errc.invalid, f"command_graph: {dev!r} is not a device of {ctx!r}")
        props = _props(properties, (no_cycle_check, assume_buffer_outlives_graph),
                       "command_graph")
        self._ctx, self._dev = ctx, dev
        self._cycle_check = not any(isinstance(p, no_cycle_check) for p in props)
        self._buffers_ok = any(isinstance(p, assume_buffer_outlives_graph) for p in props)
        self._queue = queue(ctx, dev)  # the queue of the explicit API's command groups
        self._nodes: list[node] = []
        self._recording: dict[queue, RecordingExecutor] = {}
        self._last_of: dict[queue, node] = {}       # in-order recording queues' newest node
        self._users: dict[int, tuple[node | None, list[node]]] = {}  # buffer -> writer, readers

    state = graph_state.modifiable

    def get_context(self) -> context:
        return self._ctx

    def get_device(self) -> device:
        return self._dev

    def get_nodes(self) -> list[node]:
        """The nodes, in the order they were added."""
        return list(self._nodes)

    def get_root_nodes(self) -> list[node]:
        """The nodes with no predecessor."""
        return [n for n in self._nodes if not n._preds]

    # ------------------------------------------------------------ the explicit API
    def add(self, cgf: Callable[[handler], Any] | None = None, *,
            depends_on: Sequence[node] | node | None = None,
            properties: Iterable[Any] = ()) -> node:
        """A node running command-group function ``cgf`` (None: an empty node) after the
        nodes of ``depends_on`` (or ``properties=[property.node.depends_on(...)]``)."""
        deps = [depends_on] if isinstance(depends_on, node) else list(depends_on or ())
        for p in _props(properties, (globals()["depends_on"],), "command_graph.add"):
            deps += p.nodes
        h = handler(self._queue)
        try:
            if cgf is not None:
                cgf(h)
            deps += self._event_deps(h, "command_graph.add: the command group")
            return self._add(h, deps, "command_graph.add")
        finally:
            h.release()  # nothing, once the node keeps it

    def make_edge(self, src: node, dest: node) -> None:
        """``dest`` runs after ``src`` (``errc.invalid``: not nodes of this graph, the same
        node, or an edge that would close a cycle)."""
        for n in (src, dest):
            if not isinstance(n, node) or n._graph is not self:
                raise exception(errc.invalid, f"make_edge: {n!r} is not a node of this graph")
        if src is dest:
            raise exception(errc.invalid, "make_edge: an edge from a node to itself")
        if dest in src._succs:
            return
        if self._cycle_check and self._reaches(dest, src):
            raise exception(errc.invalid, f"make_edge({src!r}, {dest!r}) would close a cycle "
                            f"{_EXT}; the graph is unchanged")
        src._succs.append(dest)
        dest._preds.append(src)

    @staticmethod
    def _reaches(a: node, b: node) -> bool:
        todo, seen = [a], {id(a)}
        while todo:
            n = todo.pop()
            if n is b:
                return True
            for s in n._succs:
                if id(s) not in seen:
                    seen.add(id(s))
                    todo.append(s)
        return False

    # ------------------------------------------------------------ record and replay
    def begin_recording(self, queues: queue | Sequence[queue]) -> None:
        """The command groups submitted to ``queues`` become nodes of this graph."""
        qs = [queues] if isinstance(queues, queue) else list(queues)
        for q in qs:
            if not isinstance(q, queue):
                raise TypeError(f"begin_recording takes sycl.queue objects, got "
                                f"{type(q).__name__}")
            if q.get_context() != self._ctx or q.get_device() != self._dev:
                raise exception(errc.invalid, f"begin_recording: {q!r} is not of the graph's "
                                f"context and device {_EXT}")
            ex = q.executor
            if type(ex) is RecordingExecutor and ex.graph is not self:
                raise exception(errc.invalid, f"begin_recording: {q!r} is already recording "
                                f"another graph {_EXT}")
        for q in qs:
            if type(q.executor) is not RecordingExecutor:
                rex = self._recording[q] = RecordingExecutor(self, q, q.executor)
                q.executor = rex  # type: ignore[assignment]
        if self._recording and self._check_host_access not in recording_graphs:
            recording_graphs.append(self._check_host_access)

    def end_recording(self, queues: queue | Sequence[queue] | None = None) -> None:
        """Stop recording ``queues`` (None: every queue recording into this graph)."""
        qs = list(self._recording) if queues is None else (
            [queues] if isinstance(queues, queue) else list(queues))
        for q in qs:
            rex = self._recording.pop(q, None)
            if rex is not None:
                q.executor = rex.real
                self._last_of.pop(q, None)
        if not self._recording and self._check_host_access in recording_graphs:
            recording_graphs.remove(self._check_host_access)

    def _check_host_access(self, buf: Any) -> None:
        if id(buf.coherence) in self._users:
            raise exception(errc.invalid, f"a host accessor of {buf!r}, which a command graph "
                            f"being recorded uses: end the recording first {_EXT}")

    def record(self, q: queue, sub: handler) -> node:
        """A command group of recording queue ``q`` (its handler): the node it becomes."""
        deps = self._event_deps(sub, f"{q!r} records a command group that")
        last = self._last_of.get(q)
        if last is not None:
            deps.append(last)
        n = self._add(sub, deps, "q.submit while recording")
        if q.is_in_order():
            self._last_of[q] = n
        return n

    def _event_deps(self, h: handler, who: str) -> list[node]:
        """The nodes of the events command group ``h`` depends on (``errc.invalid`` for an
        event from outside the graph)."""
        deps: list[node] = []
        for e in h.dependencies:
            n = e._cl
            if n is None and e._queue is None:
                continue  # sycl.event(): complete, of no queue
            if type(n) is not node or n._graph is not self:
                raise exception(errc.invalid, f"{who} depends on an event from outside the "
                                f"graph {_EXT}")
            deps.append(n)
        return deps

    # long: the checks come first (nothing changes when one fails), then the edges.
    def _add(self, h: handler, deps: list[node], where: str) -> node:
        """Node of command group ``h`` after ``deps`` and the users of its buffers."""
        kind = _type_of(h.command)
        for d in deps:
            if not isinstance(d, node) or d._graph is not self:
                raise exception(errc.invalid, f"{where}: {d!r} is not a node of this graph")
        if h.requirements and not self._buffers_ok:
            raise exception(errc.invalid, f"{where}: a command group with buffer accessors in "
                            "a graph made without property.graph.assume_buffer_outlives_graph() "
                            f"{_EXT}")
        for acc in h.requirements:
            if acc.coherence.closed or acc.buffer.closed:
                raise exception(errc.invalid, acc.buffer.closed_message())
        dynamic = {i: a for i, a in (h.kernel_args or {}).items()
                   if isinstance(a, dynamic_parameter)}
        for dp in dynamic.values():
            if dp._graph is not self:
                raise exception(errc.invalid, f"{where}: {dp!r} is a dynamic_parameter of "
                                f"another graph {_EXT}")
        if dynamic and (type(h.command) is not KernelCommand
                        or type(h.command.fn) is types.FunctionType):
            raise exception(errc.invalid, f"{where}: dynamic parameters are arguments of "
                            f"sycl.kernel objects (h.set_arg) {_EXT}")
        # the buffers: after their last writer; a writer also after the readers since
        for acc in h.requirements:
            writer, readers = self._users.get(id(acc.coherence), (None, []))
            if writer is not None:
                deps.append(writer)
            if acc.writes:
                deps += readers
        cmd = h.command
        if type(cmd) is KernelCommand and type(cmd.fn) is types.FunctionType:
            h.command = KernelCommand.record(cmd.kind, cmd.ndim, cmd.index_space,
                                             _frozen(cmd.fn), cmd.reductions, cmd.name)
        h.keep()
        n = node(self, len(self._nodes), kind, h)
        if dynamic:
            n.dynamic = dynamic
            n.static_args = {i: a for i, a in h.kernel_args.items() if i not in dynamic}
        self._nodes.append(n)
        for d in dict.fromkeys(deps):
            if d is not n and n not in d._succs:
                d._succs.append(n)
                n._preds.append(d)
        for acc in h.requirements:
            key = id(acc.coherence)
            writer, readers = self._users.get(key, (None, []))
            self._users[key] = (n, []) if acc.writes else (writer, [*readers, n])
        return n

    # ------------------------------------------------------------ finalize
    def finalize(self, properties: Iterable[Any] = ()) -> executable_command_graph:
        """The executable graph: the nodes in an order that keeps every edge, each kernel
        resolved and prepared for the graph's device (errors raise here)."""
        props = _props(properties, (updatable,), "command_graph.finalize")
        order = self.topological_order()
        try:
            return executable_command_graph(self, order, any(isinstance(p, updatable)
                                                             for p in props))
        except COMPILE_ERRORS as e:
            raise user_frames(e) from e.__cause__  # the kernel's error: see the message

    def topological_order(self) -> list[node]:
        """The nodes in an order that keeps every edge (the earliest added first)."""
        indeg = {id(n): len(n._preds) for n in self._nodes}
        ready = [n._index for n in self._nodes if not n._preds]
        heapq.heapify(ready)
        order: list[node] = []
        while ready:
            n = self._nodes[heapq.heappop(ready)]
            order.append(n)
            for s in n._succs:
                indeg[id(s)] -= 1
                if indeg[id(s)] == 0:
                    heapq.heappush(ready, s._index)
        if len(order) != len(self._nodes):
            raise exception(errc.invalid, f"command_graph.finalize: the graph has a cycle {_EXT}")
        return order

    def __repr__(self) -> str:
        return (f"command_graph(modifiable, {len(self._nodes)} nodes, "
                f"device={self._dev.display_name!r})")

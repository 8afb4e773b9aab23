"""``command_graph<graph_state::executable>`` (``sycl_ext_oneapi_graph``): replay.

``g.finalize()`` fixes the nodes' order (one that keeps every edge) and, for the graph's
device, prepares each kernel node once: resolve (captures, compile), checks, and the
backend's :class:`~pysycl._backends.launching.Launch` with its values -- for a kernel
with no accessor and no launch steps, the native arguments too. ``q.ext_oneapi_graph``
then replays the *plan* of ``q``'s executor (made once per executor). Where the executor
records a graph as one native command (``ex.record_graph``: OpenCL's command buffer,
:mod:`pysycl._backends.opencl.cmdbuf`), the plan is that command -- its buffers made
current first, one enqueue -- with the per-node plan below kept should the driver refuse
to record it; otherwise:

* a prepared kernel with no accessors and no launch steps: :meth:`Launch.prebound`, bound
  once to its native arguments (OpenCL: a ``cl_kernel`` of the node's own, its arguments
  set at finalize), so a replay is one ``clEnqueueNDRangeKernel`` per node;
* a prepared kernel with accessors: its buffers are made current on the device (as a
  submit does, :mod:`pysycl._memory.coherence`), the launch runs -- pre-bound too from
  the first replay on (the buffers' device copies stay until the buffers close), unless
  it must wait for another queue -- and the buffers note it;
* a ``sycl.kernel`` object's node with no accessor among its arguments and no dynamic
  parameter, where the backend pre-binds one (``ex.prebind_object``; OpenCL: a clone of
  its ``cl_kernel`` with the node's arguments): as a pre-bound Python kernel;
* any other node (USM copies and fills, buffer copies, host tasks, reductions, other
  ``sycl.kernel`` nodes, empty nodes): the normal submit of its recorded command group.

The native queues of OpenCL and CUDA executors run in order, so nodes enqueued in that
order need no wait lists among themselves; a host task waits for its predecessors. On the
host_debuggable device each node is a submit of its executor, in order.

Before anything is enqueued a replay checks every buffer the graph uses and every USM
pointer its nodes use (captures, ``set_arg`` arguments, USM copy and fill ends): a buffer
closed (the end of its ``with`` block, its destruction) or memory freed is
``errc.invalid``, and nothing runs.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from pysycl._backends import launching as _launching
from pysycl._commands.commands import KernelCommand, USMCopyCommand, USMFillCommand
from pysycl._commands.event import event, waits_of
from pysycl._commands.recording import RecordingExecutor, graph_state
from pysycl._core.exceptions import errc, exception
from pysycl._core.launch_types import Submission
from pysycl._memory.usm import usm_pointer
from pysycl._memory.usm_api import PRUNE_AT, prune

_now = time.perf_counter

_EXT = "(sycl_ext_oneapi_graph)"
#: replay steps: a pre-bound kernel, a prepared kernel with accessors, a command group's
#: submit; a plan of pre-bound kernels only is one step, ``_ALL``; a plan the backend
#: records as one native command (OpenCL's command buffer) is one step, ``_NATIVE``
_FAST, _KERNEL, _OTHER, _ALL, _NATIVE = 0, 1, 2, 3, 4


class executable_command_graph:  # noqa: N801 - command_graph<graph_state::executable>
    """A finalized graph: ``q.ext_oneapi_graph(exec_g)`` runs it; ``exec_g.update(g)`` (made
    with ``property.graph.updatable()``) takes the command groups of a graph of the same
    topology."""

    state = graph_state.executable

    def __init__(self, g: Any, order: list[Any], is_updatable: bool) -> None:
        self._ctx, self._dev, self._queue = g._ctx, g._dev, g._queue
        self._updatable = is_updatable
        self._set(order)
        self._last: tuple[Any, Any] | None = None  # (executor, native event) of the last replay
        self._plan_for(self._queue.executor)  # every kernel resolved and prepared now

    def _set(self, order: list[Any]) -> None:
        """Take the nodes of ``order``: their command groups and predecessors by position."""
        pos = {id(n): i for i, n in enumerate(order)}
        self._subs = [n.sub for n in order]
        self._types = [n._type for n in order]
        self._preds = [sorted(pos[id(p)] for p in n._preds) for n in order]
        self._reqs = [acc for s in self._subs for acc in s.requirements]
        self._plans: dict[int, tuple[Any, list[tuple[Any, ...]]]] = {}
        #: nodes with dynamic parameters: position -> (node, the arguments they run with)
        self._dynamic = {i: (n, _arguments(n)) for i, n in enumerate(order) if n.dynamic}
        self._set_dynamic()
        self._pointers = _pointers(self._subs)  # each replay checks them first

    def _set_dynamic(self) -> None:
        """The command groups of nodes with dynamic parameters take this graph's values
        (a node's command group may be shared with another executable graph)."""
        for i, (_, args) in self._dynamic.items():
            self._subs[i].kernel_args = args

    def get_context(self) -> Any:
        return self._ctx

    def get_device(self) -> Any:
        return self._dev

    # ------------------------------------------------------------ the plan of an executor
    def _plan_for(self, ex: Any) -> list[tuple[Any, ...]]:
        """The steps of a replay on executor ``ex`` (made once per executor)."""
        got = self._plans.get(id(ex))
        if got is not None and got[0] is ex:
            return got[1]
        steps = self._make_plan(ex)
        native = _native_plan(ex, self._subs, steps, self._preds)
        if native is not None:
            self._plans[id(ex)] = (ex, native)
            return native
        if steps and all(s[0] == _FAST for s in steps):
            # only pre-bound kernels: the replay is a loop of enqueues
            steps = [(_ALL, ex.launch_class.replayer([s[1] for s in steps]),
                      [s[2] for s in steps])]
        elif any(s[0] == _FAST for s in steps):
            replayer = ex.launch_class.replayer
            steps = [(_FAST, replayer((s[1],)), s[2]) if s[0] == _FAST else s for s in steps]
        self._plans[id(ex)] = (ex, steps)
        return steps

    def _make_plan(self, ex: Any) -> list[tuple[Any, ...]]:
        """One step per node for executor ``ex``, in order (kernels prepared now)."""
        compiled = getattr(ex, "launch_class", None) is not None
        return [_step(ex, sub, i in self._dynamic) if compiled else (_OTHER, sub)
                for i, sub in enumerate(self._subs)]

    # ------------------------------------------------------------ replay
    def _submit(self, q: Any, deps: Sequence[event]) -> event:
        """``q.ext_oneapi_graph(self)``: replay on ``q`` after ``deps``; its event."""
        first, ev = self.run(q, waits_of(deps, q) if deps else [])
        return event._make(q, ev, first, tuple(deps))

    def run(self, q: Any, waits: list[tuple[Any, Any]]) -> tuple[Any, Any]:
        """Replay on ``q`` after ``waits`` (``(native event, executor)`` pairs): the first
        and last native events (``h.ext_oneapi_graph``'s command runs it too)."""
        ex = q.executor
        if type(ex) is RecordingExecutor:
            raise exception(errc.feature_not_supported, f"{q!r} is recording a graph: an "
                            f"executable graph as a node (a subgraph) is not supported {_EXT}")
        if q.get_context() != self._ctx or q.get_device() != self._dev:
            raise exception(errc.invalid, f"q.ext_oneapi_graph: {q!r} is not of the graph's "
                            f"context and device {_EXT}")
        for acc in self._reqs:  # before anything runs: nothing lost
            if acc.coherence.closed or acc.buffer.closed:
                raise exception(errc.invalid, "q.ext_oneapi_graph: the graph uses a buffer "
                                f"that is gone ({acc.buffer.closed_message()}) {_EXT}")
        if self._dynamic:
            self._set_dynamic()
        steps = self._plan_for(ex)
        for p in self._pointers:  # a pointer freed since: its memory is gone
            if not p.live:
                raise exception(errc.invalid, f"q.ext_oneapi_graph: a kernel of the graph "
                                f"captures {p!r}, freed with sycl.free {_EXT}")
        last = self._last
        if last is not None and last[0] is not ex and last[1] is not None:
            waits.append((last[1], last[0]))  # the previous replay, on another queue
        if waits:
            ex.submit(Submission(waits=waits, context_key=self._ctx.key, queue=q))
        if steps and steps[0][0] == _ALL:
            first, ev = _replay_fast(ex, steps)
        elif steps and steps[0][0] == _NATIVE:
            first, ev = self._replay_native(ex, q, steps)
        else:
            first, ev = _replay(ex, q, steps, self._preds)
        self._last = (ex, ev)
        return first, ev

    def _replay_native(self, ex: Any, q: Any, steps: list[tuple[Any, ...]]) -> tuple[Any, Any]:
        """Replay the backend's native command (a command buffer): the buffers made current
        on the device first (the whole graph is one command), recorded at the first replay
        where it uses buffers; a command the driver refuses: node by node from then on."""
        _, cb, fallback = steps[0]
        key = ex.key
        wait_for: list[Any] = []
        for acc in self._reqs:
            st, writes, needs = acc.coherence, acc.writes, not acc.no_init
            if not st.is_ready(key, ex, writes, needs):
                st.prepare_device(key, ex, writes, needs, wait_for)
        if not cb.recorded and not cb.record():
            self._plans[id(ex)] = (ex, fallback)
            if wait_for:  # what the buffers' copies wait for: before the nodes
                ex.marker(wait_for)
            return _replay(ex, q, fallback, self._preds)
        ev = cb.enqueue(wait_for or None)
        for acc in self._reqs:
            acc.coherence.record(key, ex, ev, acc.writes)
        _hold(ex, ev, steps)
        return ev, ev

    def ext_pysycl_replay_kind(self, q: Any) -> str:
        """How a replay on ``q`` runs: ``"native"`` (one command of the backend: OpenCL's
        command buffer), ``"prebound"`` (pre-bound kernels only, enqueued one by one) or
        ``"nodes"`` (node by node)."""
        steps = self._plan_for(q.executor)
        kind = steps[0][0] if steps else _OTHER
        return {_NATIVE: "native", _ALL: "prebound"}.get(kind, "nodes")

    # ------------------------------------------------------------ update
    def update(self, what: Any) -> None:
        """``update(g)``: take the command groups of modifiable graph ``g`` (whole-graph
        update): the same nodes (types, kernels' code, order added) and edges, new
        arguments and sizes. ``update(node)`` / ``update([nodes])``: those nodes take the
        current values of their dynamic parameters. ``errc.invalid`` when not made
        updatable, the topology differs or a node is not of this graph; then nothing
        changes."""
        if getattr(what, "state", None) is graph_state.modifiable:
            return self._update_from(what)
        nodes = list(what) if isinstance(what, (list, tuple)) else [what]
        if not self._updatable:
            raise exception(errc.invalid, "update: the graph was finalized without "
                            f"property.graph.updatable() {_EXT}")
        at = {id(n): i for i, (n, _) in self._dynamic.items()}
        mine = {id(s) for s in self._subs}
        for n in nodes:
            if getattr(n, "sub", None) is None or id(n.sub) not in mine:
                raise exception(errc.invalid, f"update: {n!r} is not a node of this "
                                f"executable graph (a modifiable graph, or a node) {_EXT}")
        for n in nodes:
            if id(n) in at:
                self._dynamic[at[id(n)]] = (n, _arguments(n))
        self._set_dynamic()
        self._pointers = _pointers(self._subs)
        # a native command holds the arguments of its recording: recorded again
        self._plans = {k: v for k, v in self._plans.items()
                       if not (v[1] and v[1][0][0] == _NATIVE)}

    def _update_from(self, g: Any) -> None:
        if not self._updatable:
            raise exception(errc.invalid, "update: the graph was finalized without "
                            f"property.graph.updatable() {_EXT}")
        order = g.topological_order()
        pos = {id(n): i for i, n in enumerate(order)}
        if (len(order) != len(self._subs) or [n._type for n in order] != self._types
                or [sorted(pos[id(p)] for p in n._preds) for n in order] != self._preds):
            raise exception(errc.invalid, f"update: {g!r} does not have the topology of the "
                            f"executable graph (its nodes, their types, their edges) {_EXT}")
        for n, sub in zip(order, self._subs, strict=True):
            a, b = n.sub.command, sub.command
            if type(a) is KernelCommand and (getattr(a.fn, "__code__", a.fn)
                                             != getattr(b.fn, "__code__", b.fn)
                                             or a.kind != b.kind or a.ndim != b.ndim):
                raise exception(errc.invalid, f"update: node {n!r} runs another kernel (or "
                                f"another kind of index space) than the one it updates {_EXT}")
        old = (self._subs, self._types, self._preds, self._reqs, self._plans, self._pointers)
        self._set(order)
        try:
            self._plan_for(self._queue.executor)
        except BaseException:
            (self._subs, self._types, self._preds, self._reqs, self._plans,
             self._pointers) = old
            raise

    def __repr__(self) -> str:
        return (f"command_graph(executable, {len(self._subs)} nodes, "
                f"device={self._dev.display_name!r})")


def _pointers(subs: list[Any]) -> list[usm_pointer]:
    """The USM pointers the command groups ``subs`` use, one per allocation."""
    return list({id(p.allocation): p for sub in subs
                 for p in _captured_pointers(sub)}.values())


def _captured_pointers(sub: Any) -> list[usm_pointer]:
    """The USM pointers a command group uses: its Python kernel's captures (in tuples and
    lists too), its ``set_arg`` arguments, the ends of its USM copy or fill."""
    cmd = sub.command
    todo: list[Any] = list((sub.kernel_args or {}).values())
    if type(cmd) in (USMCopyCommand, USMFillCommand):
        todo.extend(cmd.keep)
    elif type(cmd) is KernelCommand and getattr(cmd.fn, "__closure__", None):
        for c in cmd.fn.__closure__:
            try:
                todo.append(c.cell_contents)
            except ValueError:  # an empty cell: the kernel's resolve says so
                pass
    out: list[usm_pointer] = []
    while todo:
        v = todo.pop()
        if type(v) is usm_pointer:
            out.append(v)
        elif isinstance(v, (tuple, list)):
            todo.extend(v)
    return out


def _arguments(n: Any) -> dict[int, Any]:
    """The ``set_arg`` arguments of node ``n`` with its dynamic parameters' values of now."""
    return {**(n.static_args or {}), **{i: dp._value for i, dp in n.dynamic.items()}}


def _step(ex: Any, sub: Any, dynamic: bool) -> tuple[Any, ...]:
    """The replay step of command group ``sub`` on compiled executor ``ex`` (``dynamic``:
    the node has dynamic parameters, whose values the submit reads at each replay)."""
    cmd = sub.command
    if type(cmd) is not KernelCommand or cmd.reductions:
        return (_OTHER, sub)
    launch, values, watch = _launching.prepare(ex, sub, cmd)
    if type(launch) is not ex.launch_class:  # a sycl.kernel object, an empty range
        prebind = getattr(ex, "prebind_object", None)
        bound = None if (dynamic or sub.requirements or prebind is None) \
            else prebind(ex, sub, cmd)
        return (_OTHER, sub) if bound is None else (_FAST, bound, sub)
    if not sub.requirements and launch.printer is None and watch is None:
        return (_FAST, launch.prebound(launch.args(values)), values)
    # the last item: its pre-bound launch, made at the first replay (the buffers' device
    # copies exist then: they stay until the buffer is closed)
    return [_KERNEL, launch, values, watch, sub.requirements, None]


def _native_plan(ex: Any, subs: list[Any], steps: list[Any], preds: list[list[int]]
                 ) -> list[tuple[Any, ...]] | None:
    """The one-step plan of a backend that records the graph as one native command
    (``ex.record_graph``: OpenCL's command buffer), or None: the per-node ``steps``
    (kept as the fallback, should the driver refuse a command at the first replay)."""
    record = getattr(ex, "record_graph", None)
    if record is None or not steps:
        return None
    nodes = []
    for sub, s in zip(subs, steps, strict=True):
        if s[0] == _FAST:
            nodes.append((sub, s[1], None, None))
        elif s[0] == _KERNEL:
            if s[1].printer is not None or s[3] is not None:
                return None  # launch steps around it (print, assert, bounds check)
            nodes.append((sub, None, s[1], s[2]))
        else:
            nodes.append((sub, None, None, None))
    cb = record(nodes, preds)
    if cb is None:
        return None
    fallback = [(_FAST, ex.launch_class.replayer((s[1],)), s[2]) if s[0] == _FAST else s
                for s in steps]
    return [(_NATIVE, cb, fallback)]


def _replay_fast(ex: Any, steps: list[tuple[Any, ...]]) -> tuple[Any, Any]:
    """Replay a plan of pre-bound kernels only: the backend's loop of enqueues."""
    first, ev = steps[0][1]()
    _hold(ex, ev, steps)
    return first, ev


def _hold(ex: Any, ev: Any, steps: list[tuple[Any, ...]]) -> None:
    """A replay ending in native event ``ev`` was enqueued: the queue's newest command, and
    what its ``steps`` use held until it completes."""
    ex.last, ex.since, ex.shape = ev, _now(), None
    ex.inflight.append((ev, steps))
    if len(ex.inflight) > PRUNE_AT:
        prune(ex)


# long: the replay loop, one frame (helper calls cost per node).
def _replay(ex: Any, q: Any, steps: list[tuple[Any, ...]], preds: list[list[int]]
            ) -> tuple[Any, Any]:
    """Run ``steps`` on ``ex`` in order: (first native event, last native event)."""
    events: list[Any] = [None] * len(steps)
    first = last = None
    key = ex.key
    for i, step in enumerate(steps):
        kind = step[0]
        if kind == _FAST:
            ev = step[1]()[1]
        elif kind == _KERNEL:
            _, ln, values, watch, reqs, run = step
            wait_for: list[Any] = []
            for acc in reqs:
                st, writes, needs = acc.coherence, acc.writes, not acc.no_init
                if not st.is_ready(key, ex, writes, needs):
                    st.prepare_device(key, ex, writes, needs, wait_for)
            if run is None and ln.printer is None and watch is None:
                run = step[5] = ex.launch_class.replayer(
                    (ln.prebound(ln.args(values)),))
            if run is not None and not wait_for:  # nothing of another queue to wait for
                ev = run()[1]
            else:
                ev = ln.run(values, wait_for or None, watch)
            for acc in reqs:
                acc.coherence.record(key, ex, ev, acc.writes)
        else:
            sub = step[1]
            sub.queue = q
            sub.waits = [(events[p], ex) for p in preds[i] if events[p] is not None]
            ev = ex.submit(sub)
            sub.waits = ()
        events[i] = ev
        if ev is not None:
            last = ev
            if first is None:
                first = ev
    if last is not None:
        _hold(ex, last, steps)
    return first, last

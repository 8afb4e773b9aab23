"""Command graphs (``sycl_ext_oneapi_graph``) on every device: replays equal eager execution,
dependencies hold, updates apply, what the extension forbids is ``errc.invalid``."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pysycl as sycl
import pysycl.ext.oneapi.experimental as syclex
from tests.conftest import malloc_shared_or_skip

N = 64
BUFS = [syclex.property.graph.assume_buffer_outlives_graph()]


def _graph(q: sycl.queue, props=BUFS) -> syclex.command_graph:
    return syclex.command_graph(q.get_context(), q.get_device(), properties=props)


def _axpy(q: sycl.queue, x, y, a: float, n: int = N):
    """USM: y = a * x + y."""
    return lambda h: h.parallel_for(sycl.range(n), lambda i: y.__setitem__(i, a * x[i] + y[i]))


def _usm(q: sycl.queue, values: np.ndarray):
    p = malloc_shared_or_skip(values.size, q, dtype=values.dtype)
    np.asarray(p)[...] = values
    return p


# ------------------------------------------------------------------ record and replay
def test_recorded_usm_kernels_replay_like_eager(any_kernel_queue: sycl.queue) -> None:
    q = any_kernel_queue
    x0 = np.arange(N, dtype=np.float32)
    x, y = _usm(q, x0), _usm(q, np.ones(N, np.float32))
    g = _graph(q)
    g.begin_recording(q)
    assert q.ext_oneapi_get_state() is syclex.queue_state.recording
    e1 = q.submit(_axpy(q, x, y, 2.0))
    e2 = q.parallel_for(sycl.range(N), lambda i: x.__setitem__(i, y[i] * 3.0), depends_on=e1)
    q.submit(lambda h: (h.depends_on(e2), h.parallel_for(
        sycl.range(N), lambda i: y.__setitem__(i, x[i] - y[i]))))
    g.end_recording()
    assert q.ext_oneapi_get_state() is syclex.queue_state.executing
    assert np.array_equal(np.asarray(y), np.ones(N))  # recording ran nothing
    assert [n.get_type() for n in g.get_nodes()] == [syclex.node_type.kernel] * 3
    assert g.get_nodes()[1].get_predecessors() == [g.get_nodes()[0]]
    ex = g.finalize()
    xe, ye = x0.copy(), np.ones(N, np.float32)
    for _ in range(3):
        q.ext_oneapi_graph(ex).wait()
        ye = 2 * xe + ye
        xe = ye * 3
        ye = xe - ye
    np.testing.assert_array_equal(np.asarray(y), ye)
    np.testing.assert_array_equal(np.asarray(x), xe)
    sycl.free(x, q)
    sycl.free(y, q)


def test_recorded_buffers_keep_coherence(any_kernel_queue: sycl.queue) -> None:
    q = any_kernel_queue
    a = np.arange(N, dtype=np.float64)
    b = np.zeros(N)
    with sycl.buffer(a) as A, sycl.buffer(b) as B:
        g = _graph(q)
        g.begin_recording(q)

        def double(h):
            acc = A.get_access(h)
            h.parallel_for(sycl.range(N), lambda i: acc.__setitem__(i, acc[i] * 2))

        def add(h):
            ra, wb = A.get_access(h, sycl.access_mode.read), B.get_access(h)
            h.parallel_for(sycl.range(N), lambda i: wb.__setitem__(i, wb[i] + ra[i]))

        q.submit(double)
        q.submit(add)   # after double: it reads A
        g.end_recording()
        n1, n2 = g.get_nodes()
        assert n2.get_predecessors() == [n1]   # the buffer made the edge
        ex = g.finalize()
        q.ext_oneapi_graph(ex)
        q.ext_oneapi_graph(ex)
        with sycl.host_accessor(B) as hb:   # the host sees the replays' results
            np.testing.assert_array_equal(np.asarray(hb), 2 * np.arange(N) + 4 * np.arange(N))
        q.ext_oneapi_graph(ex)  # after a host accessor: the data goes back to the device
    np.testing.assert_array_equal(a, 8 * np.arange(N))
    np.testing.assert_array_equal(b, 14 * np.arange(N))


# ------------------------------------------------------------------ the explicit API
def test_explicit_add_and_make_edge(any_kernel_queue: sycl.queue) -> None:
    q = any_kernel_queue
    x, y = _usm(q, np.arange(N, dtype=np.int32)), _usm(q, np.zeros(N, np.int32))
    g = _graph(q)
    # n_set must run before n_use: declared with make_edge after both are added
    n_use = g.add(lambda h: h.parallel_for(sycl.range(N), lambda i: y.__setitem__(i, x[i] + 1)))
    n_set = g.add(lambda h: h.parallel_for(sycl.range(N), lambda i: x.__setitem__(i, x[i] * 10)))
    g.make_edge(n_set, n_use)
    n_end = g.add(depends_on=[n_use])  # an empty node
    assert n_end.get_type() is syclex.node_type.empty
    n_cp = g.add(lambda h: h.memcpy(x, y, N * 4), properties=[
        syclex.property.node.depends_on(n_end)])
    assert n_cp.get_type() is syclex.node_type.memcpy
    assert g.get_root_nodes() == [n_set]
    q.ext_oneapi_graph(g.finalize()).wait()
    np.testing.assert_array_equal(np.asarray(y), np.arange(N) * 10 + 1)
    np.testing.assert_array_equal(np.asarray(x), np.arange(N) * 10 + 1)
    with pytest.raises(sycl.exception) as ei:
        g.make_edge(n_cp, n_set)  # a cycle
    assert ei.value.code() == sycl.errc.invalid
    assert n_set.get_predecessors() == []  # unchanged
    sycl.free(x, q)
    sycl.free(y, q)


def test_usm_fill_memset_and_host_task_nodes(any_kernel_queue: sycl.queue) -> None:
    q = any_kernel_queue
    p = malloc_shared_or_skip(N, q, dtype=np.int32)
    seen = []
    g = _graph(q)
    n1 = g.add(lambda h: h.memset(p, 0, N * 4))
    n2 = g.add(lambda h: h.fill(p, np.int32(7), N // 2), depends_on=n1)
    n3 = g.add(lambda h: h.parallel_for(sycl.range(N), lambda i: p.__setitem__(i, p[i] + 1)),
               depends_on=[n2])
    n4 = g.add(lambda h: h.host_task(lambda: seen.append(np.asarray(p).copy())), depends_on=[n3])
    assert [n.get_type() for n in (n1, n2, n3, n4)] == [
        syclex.node_type.memset, syclex.node_type.memfill, syclex.node_type.kernel,
        syclex.node_type.host_task]
    ex = g.finalize()
    q.ext_oneapi_graph(ex).wait()
    q.ext_oneapi_graph(ex).wait()
    want = np.r_[np.full(N // 2, 8), np.ones(N - N // 2)]
    assert len(seen) == 2
    for s in seen:
        np.testing.assert_array_equal(s, want)
    sycl.free(p, q)


# ------------------------------------------------------------------ random DAGs
@st.composite
def dags(draw):
    n = draw(st.integers(1, 6))
    ops = [(draw(st.integers(0, 2)), draw(st.integers(0, 2)), draw(st.integers(1, 3)))
           for _ in range(n)]  # (destination slot, source slot, factor)
    return ops


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=dags(), explicit=st.booleans())
def test_random_dags_equal_eager(any_kernel_queue: sycl.queue, ops, explicit: bool) -> None:
    """Nodes on three buffers: a[d] = a[d] + f * a[s]; edges from the buffers only."""
    q = any_kernel_queue
    n = 16
    init = [np.arange(n, dtype=np.int64) + 100 * k for k in range(3)]
    eager = [a.copy() for a in init]
    for d, s, f in ops:
        eager[d] = eager[d] + f * eager[s]
    arrays = [a.copy() for a in init]
    stack = contextlib.ExitStack()
    bufs = [stack.enter_context(sycl.buffer(a)) for a in arrays]

    def cgf(d, s, f):
        def run(h):
            if d == s:
                acc = bufs[d].get_access(h)
                h.parallel_for(sycl.range(n), lambda i: acc.__setitem__(i, acc[i] + f * acc[i]))
            else:
                w = bufs[d].get_access(h)
                r = bufs[s].get_access(h, sycl.access_mode.read)
                h.parallel_for(sycl.range(n), lambda i: w.__setitem__(i, w[i] + f * r[i]))
        return run

    g = _graph(q)
    if explicit:
        for op in ops:
            g.add(cgf(*op))
    else:
        g.begin_recording(q)
        for op in ops:
            q.submit(cgf(*op))
        g.end_recording()
    q.ext_oneapi_graph(g.finalize()).wait()
    stack.close()  # the buffers write back
    for got, want in zip(arrays, eager, strict=True):
        np.testing.assert_array_equal(got, want)


# ------------------------------------------------------------------ update
def test_whole_graph_update(any_kernel_queue: sycl.queue) -> None:
    q = any_kernel_queue
    x = _usm(q, np.zeros(N, np.float32))

    def build(value: float, n: int) -> syclex.command_graph:
        g = _graph(q)
        g.add(lambda h: h.parallel_for(sycl.range(n), lambda i: x.__setitem__(i, value)))
        return g

    ex = build(1.0, N).finalize(properties=[syclex.property.graph.updatable()])
    q.ext_oneapi_graph(ex).wait()
    assert np.all(np.asarray(x) == 1)
    ex.update(build(5.0, N // 2))
    q.ext_oneapi_graph(ex).wait()
    np.testing.assert_array_equal(np.asarray(x), np.r_[np.full(N // 2, 5), np.ones(N // 2)])
    other = _graph(q)
    other.add(lambda h: h.parallel_for(sycl.range(N), lambda i: x.__setitem__(i, 9.0)))
    other.add()
    with pytest.raises(sycl.exception) as ei:
        ex.update(other)  # another topology
    assert ei.value.code() == sycl.errc.invalid
    fixed = build(2.0, N).finalize()
    with pytest.raises(sycl.exception) as ei:
        fixed.update(build(3.0, N))  # not updatable
    assert ei.value.code() == sycl.errc.invalid
    q.ext_oneapi_graph(ex).wait()   # the failed updates changed nothing
    np.testing.assert_array_equal(np.asarray(x), np.r_[np.full(N // 2, 5), np.ones(N // 2)])
    sycl.free(x, q)


# ------------------------------------------------------------------ errors
def _code(fn) -> sycl.errc:
    with pytest.raises(sycl.exception) as ei:
        fn()
    return ei.value.code()


def test_what_recording_forbids(any_kernel_queue: sycl.queue) -> None:
    q = any_kernel_queue
    a = np.zeros(N)
    with sycl.buffer(a) as A:
        g = _graph(q)
        g.begin_recording(q)

        def write(h):
            acc = A.get_access(h)
            h.parallel_for(sycl.range(N), lambda i: acc.__setitem__(i, acc[i] + 1))

        e = q.submit(write)
        assert _code(q.wait) == sycl.errc.invalid
        assert _code(e.wait) == sycl.errc.invalid
        assert _code(lambda: sycl.host_accessor(A)) == sycl.errc.invalid
        other = syclex.command_graph(q.get_context(), q.get_device())
        assert _code(lambda: other.begin_recording(q)) == sycl.errc.invalid
        g.end_recording()
        with sycl.host_accessor(A) as ha:   # allowed again; nothing ran
            assert np.all(np.asarray(ha) == 0)
        ex = g.finalize()
        q.ext_oneapi_graph(ex).wait()
    assert np.all(a == 1)
    # the buffer is gone: the graph's replay is refused and nothing runs
    assert _code(lambda: q.ext_oneapi_graph(ex)) == sycl.errc.invalid
    assert np.all(a == 1)


def test_buffers_need_the_property(any_kernel_queue: sycl.queue) -> None:
    q = any_kernel_queue
    with sycl.buffer(np.zeros(4)) as A:
        g = _graph(q, props=[])
        assert _code(lambda: g.add(lambda h: h.parallel_for(
            sycl.range(4), (lambda acc: lambda i: acc.__setitem__(i, 1.0))(A.get_access(h))))
        ) == sycl.errc.invalid
        assert g.get_nodes() == []


def test_queue_of_another_context_or_device(any_kernel_queue: sycl.queue,
                                            host_device: sycl.device,
                                            kernel_device: sycl.device) -> None:
    q = any_kernel_queue
    other_dev = kernel_device if q.get_device() == host_device else host_device
    q2 = sycl.queue(other_dev)
    g = _graph(q)
    assert _code(lambda: g.begin_recording(q2)) == sycl.errc.invalid
    assert q2.ext_oneapi_get_state() is syclex.queue_state.executing
    g.add()
    ex = g.finalize()
    assert _code(lambda: q2.ext_oneapi_graph(ex)) == sycl.errc.invalid
    q3 = sycl.queue(sycl.context(q.get_device()), q.get_device())  # another context
    assert _code(lambda: g.begin_recording(q3)) == sycl.errc.invalid


def test_event_from_outside_the_graph(any_kernel_queue: sycl.queue) -> None:
    q = any_kernel_queue
    p = malloc_shared_or_skip(4, q, dtype=np.int32)
    outside = q.memset(p, 0, 16)
    g = _graph(q)
    g.begin_recording(q)
    try:
        assert _code(lambda: q.memset(p, 1, 16, outside)) == sycl.errc.invalid
    finally:
        g.end_recording()
    assert g.get_nodes() == []
    q.wait()
    sycl.free(p, q)


def test_captures_are_values_of_record_time(any_kernel_queue: sycl.queue) -> None:
    """A recorded kernel captures by value (as C++'s ``[=]``): a variable rebound later
    changes no node; captured memory (shared USM; a host array where the device uses host
    memory directly) is the kernel's memory at every replay."""
    q = any_kernel_queue
    host = q.get_device().has(sycl.aspect.usm_system_allocations)
    out = np.zeros(N, np.float32) if host else malloc_shared_or_skip(N, q, dtype=np.float32)
    if not host:
        np.asarray(out)[...] = 0
    scale = np.float32(2)
    g = _graph(q)
    g.begin_recording(q)
    q.parallel_for(sycl.range(N), lambda i: out.__setitem__(i, out[i] + scale))
    g.end_recording()
    scale = np.float32(100)  # rebound after recording: no effect
    ex = g.finalize()
    q.ext_oneapi_graph(ex).wait()
    q.ext_oneapi_graph(ex).wait()
    np.testing.assert_array_equal(np.asarray(out), np.full(N, 4, np.float32))
    if not host:
        sycl.free(out, q)


def test_reduction_copy_fill_nodes_and_other_queues(any_kernel_queue: sycl.queue) -> None:
    """A reduction, a buffer fill and a copy to a host array as nodes; the executable graph
    on a second queue of the same device, after an event of the first."""
    q = any_kernel_queue
    q2 = sycl.queue(q.get_context(), q.get_device())
    data = np.arange(N, dtype=np.int32)
    total = np.zeros(1, np.int32)
    seen = np.zeros(N, np.int32)
    with sycl.buffer(data) as D, sycl.buffer(total) as T:
        g = _graph(q)

        def fill(h):
            h.fill(D.get_access(h, sycl.access_mode.write), np.int32(3))

        def summed(h):
            d = D.get_access(h, sycl.access_mode.read)
            red = sycl.reduction(T, h, sycl.plus())
            h.parallel_for(sycl.range(N), red, lambda i, s: s.combine(d[i]))

        def copied(h):
            h.copy(D.get_access(h, sycl.access_mode.read), seen)

        n1 = g.add(fill)
        n2 = g.add(summed)
        n3 = g.add(copied)
        assert n2.get_predecessors() == [n1] and n3.get_predecessors() == [n1]
        assert n3.get_type() is syclex.node_type.memcpy
        ex = g.finalize()
        e1 = q.ext_oneapi_graph(ex)
        q2.ext_oneapi_graph(ex, depends_on=e1).wait()
    assert total[0] == 2 * 3 * N  # the reduction adds to the buffer's value each replay
    np.testing.assert_array_equal(seen, np.full(N, 3))


ADD_SRC = "__kernel void add(__global float *y, float a) { y[get_global_id(0)] += a; }"


def test_dynamic_parameter_of_a_kernel_object(kernel_device: sycl.device) -> None:
    """``h.set_arg(i, dynamic_parameter)`` of a kernel from source: ``dp.update(v)`` then
    ``exec_g.update(node)`` changes the argument without a new finalize (OpenCL C source:
    OpenCL devices only)."""
    q = sycl.queue(kernel_device)
    if not kernel_device.ext_oneapi_can_compile(syclex.source_language.opencl):
        pytest.skip("no OpenCL C online compiler on this device")
    k = syclex.build(syclex.create_kernel_bundle_from_source(
        q.get_context(), syclex.source_language.opencl, ADD_SRC)).ext_oneapi_get_kernel("add")
    y = malloc_shared_or_skip(N, q, dtype=np.float32)
    np.asarray(y)[...] = 0
    g = _graph(q)
    a = syclex.dynamic_parameter(g, np.float32(1))
    n = g.add(lambda h: (h.set_args(y, a), h.parallel_for(sycl.range(N), k)))
    ex = g.finalize(properties=[syclex.property.graph.updatable()])
    q.ext_oneapi_graph(ex).wait()
    a.update(np.float32(10))
    q.ext_oneapi_graph(ex).wait()   # not updated yet: still 1
    assert np.all(np.asarray(y) == 2)
    ex.update(n)
    q.ext_oneapi_graph(ex).wait()
    assert np.all(np.asarray(y) == 12)
    other = _graph(q)
    assert _code(lambda: ex.update(other.add())) == sycl.errc.invalid
    with pytest.raises(sycl.exception):  # a parameter of another graph
        other.add(lambda h: (h.set_args(y, a), h.parallel_for(sycl.range(N), k)))
    sycl.free(y, q)


def test_nodes_from_events_cycles_and_asserts(any_kernel_queue: sycl.queue) -> None:
    q = any_kernel_queue
    p = malloc_shared_or_skip(4, q, dtype=np.float32)
    np.asarray(p)[...] = 0
    g = syclex.command_graph(q.get_context(), q.get_device(),
                             properties=[syclex.property.graph.no_cycle_check()])
    g.begin_recording([q])
    assert q.ext_oneapi_get_graph() is g

    def k(i):
        assert p[i] < 1.5, "too big"
        p[i] += 1

    e = q.parallel_for(sycl.range(4), k)
    g.end_recording(q)
    assert _code(q.ext_oneapi_get_graph) == sycl.errc.invalid
    n = syclex.node.get_node_from_event(e)
    assert n.get_type() is syclex.node_type.kernel and g.get_nodes() == [n]
    assert _code(lambda: syclex.node.get_node_from_event(sycl.event())) == sycl.errc.invalid
    ex = g.finalize()
    q.ext_oneapi_graph(ex).wait()
    q.ext_oneapi_graph(ex).wait()
    with pytest.raises(AssertionError, match="too big"):  # the third replay fails the assert
        q.ext_oneapi_graph(ex).wait()
    # without the cycle check, make_edge accepts a cycle and finalize refuses it
    m = g.add(depends_on=[n])
    g.make_edge(m, n)
    assert _code(g.finalize) == sycl.errc.invalid
    sycl.free(p, q)


def test_compile_error_at_finalize_loses_nothing(any_kernel_queue: sycl.queue) -> None:
    q = any_kernel_queue
    p = malloc_shared_or_skip(4, q, dtype=np.float32)
    g = _graph(q)
    g.add(lambda h: h.parallel_for(sycl.range(4), lambda i: p.__setitem__(i, "text")))
    if q.get_device().has(sycl.aspect.host_debuggable):
        ex = g.finalize()  # kernels run in Python: the replay fails
        with pytest.raises(sycl.exception, match="could not convert string"):
            q.ext_oneapi_graph(ex).wait()
    else:
        with pytest.raises(sycl.exception, match="strings cannot be used in kernels"):
            g.finalize()
    assert len(g.get_nodes()) == 1
    sycl.free(p, q)


@st.composite
def usm_dags(draw):
    """Ops on three USM arrays, the order they are added in (a permutation) and extra edges:
    op j runs after op i < j when they touch an array one of them writes, or by an extra
    edge; the result is then that of running the ops in index order."""
    ops = draw(dags())
    n = len(ops)
    order = draw(st.permutations(range(n)))
    extra = draw(st.sets(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=4))
    return ops, order, {(i, j) for i, j in extra if i < j}


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=usm_dags())
def test_random_usm_dags_with_make_edge(any_kernel_queue: sycl.queue, case) -> None:
    ops, order, extra = case
    q = any_kernel_queue
    n = 16
    init = [np.arange(n, dtype=np.int64) + 100 * k for k in range(3)]
    eager = [a.copy() for a in init]
    for d, s, f in ops:
        eager[d] = eager[d] + f * eager[s]
    ptrs = [_usm(q, a) for a in init]

    def cgf(d, s, f):
        pd, ps = ptrs[d], ptrs[s]
        return lambda h: h.parallel_for(sycl.range(n), lambda i: pd.__setitem__(
            i, pd[i] + f * ps[i]))

    g = _graph(q)
    nodes: dict[int, syclex.node] = {}
    for j in order:
        nodes[j] = g.add(cgf(*ops[j]))
    for j, (dj, sj, _) in enumerate(ops):
        for i in range(j):
            di, si, _ = ops[i]
            if di in (dj, sj) or dj in (di, si) or (i, j) in extra:
                g.make_edge(nodes[i], nodes[j])
    q.ext_oneapi_graph(g.finalize()).wait()
    for p, want in zip(ptrs, eager, strict=True):
        np.testing.assert_array_equal(np.asarray(p), want)
        sycl.free(p, q)


def test_recording_twice_and_graph_into_recording_queue(any_kernel_queue: sycl.queue) -> None:
    q = any_kernel_queue
    g = _graph(q)
    g.add()
    ex = g.finalize()
    g2 = _graph(q)
    g2.begin_recording(q)
    g2.begin_recording(q)  # already recording into this graph: nothing changes
    try:
        assert _code(lambda: q.ext_oneapi_graph(ex)) == sycl.errc.feature_not_supported
        assert _code(lambda: q.ext_oneapi_graph(g2)) == sycl.errc.invalid  # not executable
    finally:
        g2.end_recording()
    assert q.ext_oneapi_get_state() is syclex.queue_state.executing
    q.ext_oneapi_graph(ex).wait()
    assert g2.get_nodes() == []


def test_replay_after_free_is_refused(any_kernel_queue: sycl.queue) -> None:
    """A pointer a node captures, freed: the replay is ``errc.invalid`` before any node
    runs (the nodes before it included)."""
    q = any_kernel_queue
    keep = _usm(q, np.zeros(N, np.float32))
    gone = sycl.malloc_device(N, q, dtype=np.float32)
    g = _graph(q)
    n1 = g.add(lambda h: h.parallel_for(sycl.range(N), lambda i: keep.__setitem__(i, keep[i] + 1)))
    g.add(lambda h: h.parallel_for(sycl.range(N), lambda i: gone.__setitem__(i, 1.0)),
          depends_on=[n1])
    ex = g.finalize()
    q.ext_oneapi_graph(ex).wait()
    sycl.free(gone, q)
    assert _code(lambda: q.ext_oneapi_graph(ex)) == sycl.errc.invalid
    q.wait()
    assert np.all(np.asarray(keep) == 1)  # nothing of the refused replay ran
    sycl.free(keep, q)


def test_buffers_shared_with_eager_work_on_other_queues(any_kernel_queue: sycl.queue) -> None:
    """Replays and eager command groups of another queue on the same buffer, interleaved:
    each sees the other's writes."""
    q = any_kernel_queue
    q2 = sycl.queue(q.get_context(), q.get_device())
    a = np.zeros(N, np.int64)
    with sycl.buffer(a) as A:
        g = _graph(q)

        def inc(h):
            acc = A.get_access(h)
            h.parallel_for(sycl.range(N), lambda i: acc.__setitem__(i, acc[i] + 1))

        def dbl(h):
            acc = A.get_access(h)
            h.parallel_for(sycl.range(N), lambda i: acc.__setitem__(i, acc[i] * 2))

        g.add(inc)
        ex = g.finalize()
        want = np.zeros(N, np.int64)
        for _ in range(3):
            q.ext_oneapi_graph(ex)
            q2.submit(dbl)
            want = (want + 1) * 2
        q.ext_oneapi_graph(ex)
        want = want + 1
        with sycl.host_accessor(A) as ha:
            np.testing.assert_array_equal(np.asarray(ha), want)


def test_handler_ext_oneapi_graph(any_kernel_queue: sycl.queue) -> None:
    """``q.submit(lambda h: h.ext_oneapi_graph(exec_g))``, after an event of the group."""
    q = any_kernel_queue
    x = _usm(q, np.zeros(N, np.float32))
    g = _graph(q)
    g.add(lambda h: h.parallel_for(sycl.range(N), lambda i: x.__setitem__(i, x[i] * 2)))
    ex = g.finalize()
    e0 = q.fill(x, np.float32(3), N)
    e1 = q.submit(lambda h: (h.depends_on(e0), h.ext_oneapi_graph(ex)))
    q.submit(lambda h: (h.depends_on(e1), h.ext_oneapi_graph(ex))).wait()
    np.testing.assert_array_equal(np.asarray(x), np.full(N, 12, np.float32))
    with pytest.raises(sycl.exception) as ei:
        q.submit(lambda h: h.ext_oneapi_graph(g))  # not executable
    assert ei.value.code() == sycl.errc.invalid
    g2 = _graph(q)
    g2.begin_recording(q)
    try:
        assert _code(lambda: q.submit(lambda h: h.ext_oneapi_graph(ex))) == \
            sycl.errc.feature_not_supported
    finally:
        g2.end_recording()
    assert g2.get_nodes() == []
    sycl.free(x, q)


def test_printing_node_prints_at_each_replay(any_kernel_queue: sycl.queue, capfd) -> None:
    q = any_kernel_queue
    g = _graph(q)
    g.add(lambda h: h.single_task(lambda: print("hello from a node")))
    ex = g.finalize()
    q.ext_oneapi_graph(ex).wait()
    q.ext_oneapi_graph(ex).wait()
    assert capfd.readouterr().out.count("hello from a node") == 2


@pytest.mark.parametrize("path", ["launch", "no_clone"])
def test_prebound_fallbacks(kernel_device: sycl.device, monkeypatch, path: str) -> None:
    """The pre-bound node of a backend without a kernel of its own per node (the generic
    ``Launch.prebound``, CUDA's) and OpenCL's without ``clCloneKernel``: the same results,
    nodes of one kernel with different arguments included."""
    from pysycl._backends import launching

    q = sycl.queue(kernel_device)
    launch_class = q.executor.launch_class
    if path == "launch":
        monkeypatch.setattr(launch_class, "prebound", launching.Launch.prebound)
        monkeypatch.setattr(launch_class, "replayer", launching.Launch.replayer)
    else:
        import pyopencl as cl

        def no_clone(self):
            raise AttributeError("clone")

        monkeypatch.setattr(cl.Kernel, "clone", no_clone)
    x = _usm(q, np.zeros(N, np.float32))
    g = _graph(q)
    for c in np.array([1, 2, 3], np.float32):
        g.add(lambda h, c=c: h.parallel_for(
            sycl.range(N), lambda i: x.__setitem__(i, x[i] * 2 + c)))
    ex = g.finalize()
    q.ext_oneapi_graph(ex)
    q.parallel_for(sycl.range(N), lambda i: x.__setitem__(i, x[i] + 100)).wait()  # eager
    q.ext_oneapi_graph(ex).wait()
    want = np.zeros(N, np.float32)
    for k in range(2):
        for c in (1, 2, 3):
            want = want * 2 + c
        want += 100 if k == 0 else 0
    np.testing.assert_array_equal(np.asarray(x), want)
    sycl.free(x, q)


def test_replay_event_profiles_the_whole_replay(kernel_device: sycl.device) -> None:
    """A replay's event on a profiling queue: from its first node's start to its last's end."""
    q = sycl.queue(kernel_device, properties=[sycl.property.queue.enable_profiling()])
    x = _usm(q, np.zeros(N, np.float32))
    g = _graph(q)
    for _ in range(3):
        g.add(lambda h: h.parallel_for(sycl.range(N), lambda i: x.__setitem__(i, x[i] + 1)))
    e = q.ext_oneapi_graph(g.finalize())
    e.wait()
    P = sycl.info.event_profiling
    start, end = e.get_profiling_info(P.command_start), e.get_profiling_info(P.command_end)
    assert 0 < start <= end
    assert e.get_info(sycl.info.event.command_execution_status) is \
        sycl.info.event_command_status.complete
    assert np.all(np.asarray(x) == 3)
    sycl.free(x, q)


def test_explicit_add_with_handler_events(any_kernel_queue: sycl.queue) -> None:
    """``h.depends_on`` in an added command group: an event of a node recorded into the
    same graph makes an edge; an eager event is ``errc.invalid`` and adds nothing."""
    q = any_kernel_queue
    p = malloc_shared_or_skip(4, q, dtype=np.int32)
    g = _graph(q)
    g.begin_recording(q)
    e = q.memset(p, 0, 16)
    g.end_recording()
    n = g.add(lambda h: (h.depends_on(e), h.fill(p, np.int32(5), 4)))
    assert n.get_predecessors() == [syclex.node.get_node_from_event(e)]
    eager = q.memset(p, 0, 16)
    assert _code(lambda: g.add(lambda h: h.depends_on(eager))) == sycl.errc.invalid
    assert len(g.get_nodes()) == 2
    q.wait()
    q.ext_oneapi_graph(g.finalize()).wait()
    assert np.all(np.asarray(p) == 5)
    sycl.free(p, q)

"""Command graphs as OpenCL command buffers (``cl_khr_command_buffer``): on every OpenCL
device that has the extension (Intel's CPU runtime 2026: 1.0; PoCL 5.0: 0.9.4, which runs
no Python kernel -- its graphs hold OpenCL C kernels and memory commands) a replay is one
``clEnqueueCommandBufferKHR``, and its results equal eager execution's; elsewhere these tests
skip with the reason. The entry-point lookup and the switch are tested on every machine."""

from __future__ import annotations

import dataclasses
import gc
import weakref

import numpy as np
import pytest

import pysycl as sycl
import pysycl.ext.oneapi.experimental as syclex
from pysycl._backends.opencl import cmdbuf_api
from tests.conftest import ALL_DEVICES, malloc_shared_or_skip

N = 256
R = 5
BUFS = [syclex.property.graph.assume_buffer_outlives_graph()]
SRC = """
__kernel void axpy(__global float *y, __global const float *x, float a) {
    size_t i = get_global_id(0); y[i] += a * x[i]; }
__kernel void scale(__global float *y, float a) { y[get_global_id(0)] *= a; }
__kernel void addto(__global float *y, __global const float *x) {
    size_t i = get_global_id(0); y[i] += x[i]; }
__kernel void wgsum(__global const float *in, __global float *out, __local float *tmp) {
    size_t l = get_local_id(0);
    tmp[l] = in[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (l == 0) { float s = 0; for (size_t i = 0; i < get_local_size(0); ++i) s += tmp[i];
                  out[get_group_id(0)] = s; } }
"""


def _reason(d: sycl.device) -> str | None:
    """Why ``d``'s command buffers are not used (None: they are)."""
    got = cmdbuf_api.api_for(d.native, 0)
    return got if isinstance(got, str) else None


@pytest.fixture(params=ALL_DEVICES, ids=lambda d: d.get_info(sycl.info.device.name)[:24])
def cbq(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> sycl.queue:
    """A queue on each OpenCL device with command buffers that compiles OpenCL C; command
    buffers wherever the device has them (``PYSYCL_OPENCL_COMMAND_BUFFER=1``: a CPU
    device's kernels-only graphs too, which replay in one C call by default:
    tests/graphs/test_native_replay.py)."""
    monkeypatch.setenv(cmdbuf_api.ENV, "1")
    d = request.param
    why = _reason(d)
    if why is not None:
        pytest.skip(f"{d.get_info(sycl.info.device.name)}: {why}")
    if not d.ext_oneapi_can_compile(syclex.source_language.opencl):
        pytest.skip("no OpenCL C online compiler on this device")
    return sycl.queue(d)


def _kernels(q: sycl.queue) -> dict[str, sycl.kernel]:
    kb = syclex.build(syclex.create_kernel_bundle_from_source(
        q.get_context(), syclex.source_language.opencl, SRC))
    return {n: kb.ext_oneapi_get_kernel(n) for n in ("axpy", "scale", "addto", "wgsum")}


def _device(q: sycl.queue, values: np.ndarray) -> sycl.usm_pointer:
    p = sycl.malloc_device(values.size, q, dtype=values.dtype)
    q.memcpy(p, values, values.nbytes).wait()
    return p


def _host(q: sycl.queue, p: sycl.usm_pointer, n: int = N) -> np.ndarray:
    out = np.empty(n, np.float32)
    q.memcpy(out, p, out.nbytes).wait()
    return out


def _usm_groups(k: dict, y, x, xs, w, c, sums) -> list:
    """Command groups over USM: ``(cgf, predecessors by position)``."""
    def run(name, *args):
        return lambda h: (h.set_args(*args), h.parallel_for(sycl.range(N), k[name]))

    def wgsum(h):
        h.set_args(y, sums, sycl.local_accessor(np.float32, sycl.range(16), h))
        h.parallel_for(sycl.nd_range(sycl.range(N), sycl.range(16)), k["wgsum"])
    return [
        (lambda h: h.fill(y, np.float32(1), N), []),            # 0 USM fill
        (lambda h: h.memcpy(x, xs, N * 4), []),                 # 1 USM copy
        (run("axpy", y, x, np.float32(2)), [0, 1]),             # 2
        (run("scale", y, np.float32(0.5)), [2]),                # 3
        (lambda h: h.memset(w, 0, N * 4), []),                  # 4 memset
        (run("addto", w, y), [3, 4]),                           # 5
        (None, [3, 5]),                                         # 6 an empty node
        (lambda h: h.prefetch(w, N * 4), [6]),                  # 7 a hint
        (run("scale", c, np.float32(2)), []),                   # 8 not reset: counts replays
        (wgsum, [3]),                                           # 9 nd_range, local memory
    ]


def test_kernel_objects_and_usm_nodes_replay_like_eager(cbq: sycl.queue) -> None:
    q, k = cbq, _kernels(cbq)
    xs0 = np.arange(N, dtype=np.float32)
    arrays = []
    for _ in range(2):  # one set for the graph, one for eager submits
        arrays.append([_device(q, v) for v in (
            np.zeros(N, np.float32), np.zeros(N, np.float32), xs0,
            np.full(N, 7, np.float32), np.ones(N, np.float32), np.zeros(N, np.float32))])
    g = syclex.command_graph(q.get_context(), q.get_device())
    nodes = []
    for cgf, preds in _usm_groups(k, *arrays[0]):
        nodes.append(g.add(cgf, depends_on=[nodes[p] for p in preds]))
    ex = g.finalize()
    assert ex.ext_pysycl_replay_kind(q) == "native"
    for _ in range(R):  # back to back: the queue keeps their order
        e = q.ext_oneapi_graph(ex)
    e.wait()
    for _ in range(R):
        for cgf, _preds in _usm_groups(k, *arrays[1]):
            if cgf is not None:
                q.submit(cgf)
    q.wait()
    for got, want in zip(arrays[0], arrays[1], strict=True):
        np.testing.assert_array_equal(_host(q, got), _host(q, want))
    y = (1 + 2 * xs0) * np.float32(0.5)
    np.testing.assert_array_equal(_host(q, arrays[0][0]), y)
    np.testing.assert_array_equal(_host(q, arrays[0][3]), y)            # w = 0 + y
    np.testing.assert_array_equal(_host(q, arrays[0][4]), np.full(N, 2.0 ** R))
    np.testing.assert_array_equal(_host(q, arrays[0][5])[:N // 16],
                                  y.reshape(-1, 16).sum(axis=1))
    for a in arrays[0] + arrays[1]:
        sycl.free(a, q)


def test_buffer_nodes_keep_coherence(cbq: sycl.queue) -> None:
    """A buffer fill, an accessor-to-accessor copy and kernel objects with accessors: the
    command buffer is recorded at the first replay; host writes between replays are seen,
    a host accessor after a replay sees its results."""
    q, k = cbq, _kernels(cbq)
    a = np.arange(N, dtype=np.float32)
    b = np.zeros(N, np.float32)
    c_host = np.zeros(N, np.float32)
    with sycl.buffer(a) as A, sycl.buffer(b) as B, sycl.buffer(c_host) as C:
        g = syclex.command_graph(q.get_context(), q.get_device(), properties=BUFS)
        g.add(lambda h: h.fill(B.get_access(h, sycl.access_mode.write), np.float32(5)))
        g.add(lambda h: h.copy(A.get_access(h, sycl.access_mode.read),
                               B.get_access(h, sycl.access_mode.write)))
        g.add(lambda h: (h.set_args(B.get_access(h), np.float32(3)),
                         h.parallel_for(sycl.range(N), k["scale"])))
        g.add(lambda h: (h.set_args(C.get_access(h), B.get_access(h, sycl.access_mode.read)),
                         h.parallel_for(sycl.range(N), k["addto"])))
        ex = g.finalize()
        assert ex.ext_pysycl_replay_kind(q) == "native"
        want_c = np.zeros(N, np.float32)
        for r in range(R):
            with A.get_host_access() as ha:  # the host changes A between replays
                ha[...] = np.arange(N, dtype=np.float32) + r
            q.ext_oneapi_graph(ex)
            want_c += (np.arange(N, dtype=np.float32) + r) * 3
            with B.get_host_access(sycl.access_mode.read) as hb:
                np.testing.assert_array_equal(np.asarray(hb), (np.arange(N) + r) * 3)
        assert ex.ext_pysycl_replay_kind(q) == "native"  # recorded, not refused
    np.testing.assert_array_equal(c_host, want_c)


def test_whole_graph_and_dynamic_updates_record_again(cbq: sycl.queue) -> None:
    q, k = cbq, _kernels(cbq)
    y1, y2 = _device(q, np.zeros(N, np.float32)), _device(q, np.zeros(N, np.float32))
    x = _device(q, np.ones(N, np.float32))

    def graph(y, a):
        g = syclex.command_graph(q.get_context(), q.get_device())
        n0 = g.add(lambda h: (h.set_args(y, x, a), h.parallel_for(sycl.range(N), k["axpy"])))
        return g, g.add(lambda h: (h.set_args(y, np.float32(2)),
                                   h.parallel_for(sycl.range(N), k["scale"])), depends_on=[n0])

    g1, _ = graph(y1, np.float32(1))
    ex = g1.finalize(properties=[syclex.property.graph.updatable()])
    q.ext_oneapi_graph(ex).wait()                          # y1 = (0 + 1) * 2
    g2, _ = graph(y2, np.float32(3))
    ex.update(g2)
    q.ext_oneapi_graph(ex).wait()                          # y2 = (0 + 3) * 2
    assert ex.ext_pysycl_replay_kind(q) == "native"
    np.testing.assert_array_equal(_host(q, y1), np.full(N, 2, np.float32))
    np.testing.assert_array_equal(_host(q, y2), np.full(N, 6, np.float32))
    g3 = syclex.command_graph(q.get_context(), q.get_device())
    a = syclex.dynamic_parameter(g3, np.float32(1))
    n = g3.add(lambda h: (h.set_args(y1, x, a), h.parallel_for(sycl.range(N), k["axpy"])))
    ex3 = g3.finalize(properties=[syclex.property.graph.updatable()])
    q.ext_oneapi_graph(ex3)
    a.update(np.float32(10))
    q.ext_oneapi_graph(ex3)                                # the recorded value: 1
    ex3.update(n)
    q.ext_oneapi_graph(ex3).wait()                         # 10 from now on
    np.testing.assert_array_equal(_host(q, y1), np.full(N, 2 + 1 + 1 + 10, np.float32))
    for p in (y1, y2, x):
        sycl.free(p, q)


def test_order_with_eager_work_events_and_another_queue(cbq: sycl.queue) -> None:
    """Eager submits between replays, a replay on a second queue after the first's event:
    in order, each queue its own command buffer."""
    q, k = cbq, _kernels(cbq)
    q2 = sycl.queue(q.get_context(), q.get_device())
    y = _device(q, np.ones(N, np.float32))
    g = syclex.command_graph(q.get_context(), q.get_device())
    g.add(lambda h: (h.set_args(y, np.float32(2)), h.parallel_for(sycl.range(N), k["scale"])))
    ex = g.finalize()
    e1 = q.ext_oneapi_graph(ex)                                     # 2
    q.submit(lambda h: (h.set_args(y, np.float32(-1)),
                        h.parallel_for(sycl.range(N), k["scale"])))  # -2
    e2 = q.ext_oneapi_graph(ex)                                     # -4
    e3 = q2.ext_oneapi_graph(ex, depends_on=[e1, e2])               # -8
    e3.wait()
    assert ex.ext_pysycl_replay_kind(q2) == "native"
    assert e3.get_info(sycl.info.event.command_execution_status) is \
        sycl.info.event_command_status.complete
    np.testing.assert_array_equal(_host(q, y), np.full(N, -8, np.float32))
    sycl.free(y, q)


def test_replay_after_free_of_a_copied_pointer_is_refused(cbq: sycl.queue) -> None:
    q = cbq
    src, dst = _device(q, np.ones(N, np.float32)), _device(q, np.zeros(N, np.float32))
    g = syclex.command_graph(q.get_context(), q.get_device())
    g.add(lambda h: h.memcpy(dst, src, N * 4))
    ex = g.finalize()
    q.ext_oneapi_graph(ex).wait()
    np.testing.assert_array_equal(_host(q, dst), np.ones(N, np.float32))
    q.memset(dst, 0, N * 4).wait()
    sycl.free(src, q)
    with pytest.raises(sycl.exception) as err:
        q.ext_oneapi_graph(ex)
    assert err.value.code() == sycl.errc.invalid and "freed" in str(err.value)
    q.wait()
    np.testing.assert_array_equal(_host(q, dst), np.zeros(N, np.float32))  # nothing ran
    sycl.free(dst, q)


def test_sequential_use_buffers_replay_back_to_back(cbq: sycl.queue, monkeypatch) -> None:
    """Without the simultaneous-use flag (a device without the capability): replays
    enqueued back to back still all run, in order."""
    q, k = cbq, _kernels(cbq)
    real = cmdbuf_api.api_for

    def sequential(dev, props):
        got = real(dev, props)
        return got if isinstance(got, str) else dataclasses.replace(got, simultaneous=False)

    monkeypatch.setattr(cmdbuf_api, "api_for", sequential)
    y = _device(q, np.ones(N, np.float32))
    g = syclex.command_graph(q.get_context(), q.get_device())
    for _ in range(3):
        g.add(lambda h: (h.set_args(y, np.float32(2)), h.parallel_for(sycl.range(N), k["scale"])))
    ex = g.finalize()
    assert ex.ext_pysycl_replay_kind(q) == "native"
    for _ in range(4):
        q.ext_oneapi_graph(ex)
    q.wait()
    np.testing.assert_array_equal(_host(q, y), np.full(N, 2.0 ** 12, np.float32))
    sycl.free(y, q)


def test_command_buffer_released_with_the_graph(cbq: sycl.queue) -> None:
    q, k = cbq, _kernels(cbq)
    y = _device(q, np.ones(N, np.float32))
    g = syclex.command_graph(q.get_context(), q.get_device())
    g.add(lambda h: (h.set_args(y, np.float32(2)), h.parallel_for(sycl.range(N), k["scale"])))
    ex = g.finalize()
    q.ext_oneapi_graph(ex)
    q.wait()
    cbs = [weakref.ref(s[1]) for p in ex._plans.values() for s in p[1]]
    assert cbs and all(r() is not None and r().recorded for r in cbs)
    del ex, g
    gc.collect()
    assert all(r() is None for r in cbs)
    np.testing.assert_array_equal(_host(q, y), np.full(N, 2, np.float32))
    sycl.free(y, q)


def test_refused_recording_replays_node_by_node(cbq: sycl.queue, monkeypatch) -> None:
    """A graph with buffers whose command the driver cannot take (here: a pre-bound launch
    of another form) is recorded at its first replay, refused, and replays node by node
    from then on -- the same results."""
    from pysycl._backends import launching

    q = cbq
    if not q.get_device().image_targets:
        pytest.skip("the device runs no Python kernel")
    monkeypatch.setattr(q.executor.launch_class, "prebound", launching.Launch.prebound)
    monkeypatch.setattr(q.executor.launch_class, "replayer", launching.Launch.replayer)
    a = np.ones(N, np.float32)
    with sycl.buffer(a) as A:
        g = syclex.command_graph(q.get_context(), q.get_device(), properties=BUFS)

        def double(h):
            acc = A.get_access(h)
            h.parallel_for(sycl.range(N), lambda i: acc.__setitem__(i, acc[i] * 2))
        g.add(double)
        g.add(double)
        ex = g.finalize()
        assert ex.ext_pysycl_replay_kind(q) == "native"  # to be recorded at the first replay
        for _ in range(3):
            q.ext_oneapi_graph(ex)
        assert ex.ext_pysycl_replay_kind(q) == "nodes"
    np.testing.assert_array_equal(a, np.full(N, 2.0 ** 6, np.float32))


# ------------------------------------------------------------------ on every machine
def test_switch_off_replays_node_by_node(monkeypatch) -> None:
    """``PYSYCL_OPENCL_COMMAND_BUFFER=0``: no command buffer, the same results."""
    devs = [d for d in ALL_DEVICES if d.image_targets]
    if not devs:
        pytest.skip("no OpenCL device runs Python kernels")
    q = sycl.queue(devs[0])
    x = malloc_shared_or_skip(N, q, dtype=np.float32)
    np.asarray(x)[...] = 1
    kinds = []
    for flag in ("0", "1"):
        monkeypatch.setenv(cmdbuf_api.ENV, flag)
        g = syclex.command_graph(q.get_context(), q.get_device())
        for _ in range(2):
            g.add(lambda h: h.parallel_for(sycl.range(N), lambda i: x.__setitem__(i, x[i] * 3)))
        ex = g.finalize()
        kinds.append(ex.ext_pysycl_replay_kind(q))
        q.ext_oneapi_graph(ex).wait()
    assert kinds[0] == "prebound"
    assert kinds[1] == ("native" if _reason(q.get_device()) is None else "prebound")
    np.testing.assert_array_equal(np.asarray(x), np.full(N, 81, np.float32))
    sycl.free(x, q)


def test_entry_points_missing_fail_cleanly(monkeypatch) -> None:
    """An unknown entry point is None; no ICD loader through ctypes, or a device without the
    extension: a reason, and graphs replay node by node."""
    if not ALL_DEVICES:
        pytest.skip("no OpenCL device")
    dev = ALL_DEVICES[0].native
    assert cmdbuf_api.entry_point(dev.platform, "clNoSuchFunctionKHR") is None
    for d in ALL_DEVICES:
        version = cmdbuf_api.version_of(d.native)
        has = cmdbuf_api.EXTENSION in d.native.extensions.split()
        assert (version is not None) == has
        why = _reason(d)
        if not has:
            assert why is not None and cmdbuf_api.EXTENSION in why
        if why is None:
            assert isinstance(cmdbuf_api.api_for(d.native, 0).simultaneous, bool)
    monkeypatch.setattr(cmdbuf_api, "loader", lambda: None)
    cmdbuf_api._cached.cache_clear()
    try:
        for d in ALL_DEVICES:
            why = _reason(d)
            assert why is not None
            if cmdbuf_api.EXTENSION in d.native.extensions.split():
                assert "loader" in why
    finally:
        cmdbuf_api._cached.cache_clear()

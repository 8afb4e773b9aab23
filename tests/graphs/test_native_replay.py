"""A command graph's pre-bound kernels enqueued in one C call (``pysycl/_backends/opencl/
_native.c``): Python kernels and ``sycl.kernel`` objects alike get a ``cl_kernel`` of their
own at ``finalize``, and a replay of a graph made of nothing else is one call of the C
extension -- on a CPU device in place of its command buffer (issue 27's CPU replay cost).
Results equal eager execution's; a failing enqueue is a ``sycl.exception`` naming the node,
and the queue goes on."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import pysycl as sycl
import pysycl.ext.oneapi.experimental as syclex
from pysycl._backends.opencl import cmdbuf_api
from pysycl._backends.opencl import launch as cl_launch
from tests.conftest import ALL_DEVICES

native = pytest.importorskip("pysycl._backends.opencl._native",
                             reason="the C extension was not built (no C compiler)")

N = 64
SRC = """
__kernel void chain(__global float *y, float c) {
    size_t i = get_global_id(0); y[i] = y[i] * 0.5f + c; }
__kernel void addbuf(__global float *y, __global const float *x) {
    size_t i = get_global_id(0); y[i] += x[i]; }
"""
PY_DEVICES = [d for d in ALL_DEVICES if d.image_targets]
CL_DEVICES = [d for d in ALL_DEVICES if d.ext_oneapi_can_compile(syclex.source_language.opencl)]
_BUILT: dict[str, Any] = {}


def _bundle(q: sycl.queue) -> Any:
    """SRC built for ``q``'s context; a skip where the device's own OpenCL C compiler fails
    on this machine (PoCL from PyPI on an AMD EPYC host: "unknown target CPU 'generic'")."""
    try:
        return syclex.build(syclex.create_kernel_bundle_from_source(
            q.get_context(), syclex.source_language.opencl, SRC))
    except sycl.exception as e:
        if e.code() is not sycl.errc.build or "unknown target CPU" not in str(e):
            raise
        why = next(ln for ln in str(e).splitlines() if "unknown target CPU" in ln)
        pytest.skip(f"{_name(q.get_device())}: its OpenCL C compiler fails on this machine "
                    f"({why.strip()})")


def _name(d: sycl.device) -> str:
    return d.get_info(sycl.info.device.name)[:24]


def _chain(cs: list[float], rounds: int = 1, y0: float = 0.0) -> np.ndarray:
    y = np.full(N, y0, np.float32)
    for _ in range(rounds):
        for c in cs:
            y = y * np.float32(0.5) + np.float32(c)
    return y


def test_the_loader_gives_the_entry_points() -> None:
    """Where an OpenCL device exists, the C extension finds the loader's entry points."""
    if not ALL_DEVICES:
        pytest.skip("no OpenCL device")
    assert cl_launch.native_replay_available()


@pytest.mark.parametrize("dev", PY_DEVICES, ids=_name)
def test_python_kernels_replay_in_one_call(dev: sycl.device, monkeypatch) -> None:
    """40 closures of one kernel (each its own constant) recorded from ``q.parallel_for``:
    the replay is one C call -- by default on a CPU device, and wherever command buffers
    are off -- and three replays equal three eager runs of the sequence."""
    q = sycl.queue(dev)
    cs = [float(j % 5) - 1.5 for j in range(40)]
    y = sycl.malloc_device(N, q, dtype=np.float32)

    def step(c: float):  # type: ignore[no-untyped-def]
        c32 = np.float32(c)
        return lambda i: y.__setitem__(i, y[i] * np.float32(0.5) + c32)
    ks = [step(c) for c in cs]
    if not dev.get_info(sycl.info.device.device_type) == sycl.info.device_type.cpu:
        monkeypatch.setenv(cmdbuf_api.ENV, "0")
    g = syclex.command_graph(q.get_context(), q.get_device())
    g.begin_recording(q)
    for k in ks:
        q.parallel_for(sycl.range(N), k)
    g.end_recording()
    ex = g.finalize()
    assert ex.ext_pysycl_replay_kind(q) == "prebound"
    replay = ex._plan_for(q.executor)[0][1]
    assert hasattr(replay, "holds")  # the C extension's replay, not pyopencl's loop
    q.memset(y, 0, N * 4).wait()
    for _ in range(3):
        ev = q.ext_oneapi_graph(ex)
    ev.wait()
    got = np.empty(N, np.float32)
    q.memcpy(got, y, N * 4).wait()
    np.testing.assert_allclose(got, _chain(cs, 3), rtol=1e-6)
    # eager, the same sequence: the same numbers
    q.memset(y, 0, N * 4).wait()
    for _ in range(3):
        for k in ks:
            q.parallel_for(sycl.range(N), k)
    q.wait()
    eager = np.empty(N, np.float32)
    q.memcpy(eager, y, N * 4).wait()
    np.testing.assert_array_equal(got, eager)
    sycl.free(y, q)


@pytest.mark.parametrize("dev", CL_DEVICES, ids=_name)
def test_kernel_objects_are_pre_bound(dev: sycl.device, monkeypatch) -> None:
    """``sycl.kernel`` nodes (``h.set_args`` of USM pointers and scalars) replay pre-bound,
    in one call with the Python kernels' rules; an accessor argument or a dynamic
    parameter keeps its node a command-group submit (the update is applied)."""
    monkeypatch.setenv(cmdbuf_api.ENV, "0")  # node by node, whatever the device has
    q = sycl.queue(dev)
    kb = _bundle(q)
    chain, addbuf = kb.ext_oneapi_get_kernel("chain"), kb.ext_oneapi_get_kernel("addbuf")
    y = sycl.malloc_device(N, q, dtype=np.float32)
    cs = [1.0, -2.0, 0.25, 3.0]
    g = syclex.command_graph(q.get_context(), q.get_device())
    for c in cs:
        g.add(lambda h, c=c: (h.set_args(y, np.float32(c)), h.parallel_for(sycl.range(N), chain)))
    ex = g.finalize()
    assert ex.ext_pysycl_replay_kind(q) == "prebound"
    q.memset(y, 0, N * 4).wait()
    q.ext_oneapi_graph(ex)
    q.ext_oneapi_graph(ex).wait()
    got = np.empty(N, np.float32)
    q.memcpy(got, y, N * 4).wait()
    np.testing.assert_allclose(got, _chain(cs, 2), rtol=1e-6)

    # a dynamic parameter: that node is submitted at each replay, with the updated value
    g2 = syclex.command_graph(q.get_context(), q.get_device())
    dp = syclex.dynamic_parameter(g2, np.float32(1.0))
    g2.add(lambda h: (h.set_args(y, np.float32(2.0)), h.parallel_for(sycl.range(N), chain)))
    node = g2.add(lambda h: (h.set_arg(0, y), h.set_arg(1, dp),
                             h.parallel_for(sycl.range(N), chain)))
    ex2 = g2.finalize(properties=[syclex.property.graph.updatable()])
    assert ex2.ext_pysycl_replay_kind(q) == "nodes"
    q.memset(y, 0, N * 4).wait()
    q.ext_oneapi_graph(ex2).wait()
    dp.update(np.float32(-4.0))
    ex2.update(node)
    q.ext_oneapi_graph(ex2).wait()
    q.memcpy(got, y, N * 4).wait()
    want = _chain([2.0, -4.0], 1, float(_chain([2.0, 1.0])[0]))
    np.testing.assert_allclose(got, want, rtol=1e-6)

    # an accessor argument: a submit (the buffer made current on the device each replay)
    xs = np.arange(N, dtype=np.float32)
    with sycl.buffer(xs) as bx:
        def cg(h: sycl.handler) -> None:
            h.set_args(y, bx.get_access(h, sycl.access_mode.read))
            h.parallel_for(sycl.range(N), addbuf)
        g3 = syclex.command_graph(q.get_context(), q.get_device(), properties=[
            syclex.property.graph.assume_buffer_outlives_graph()])
        g3.add(cg)
        ex3 = g3.finalize()
        assert ex3.ext_pysycl_replay_kind(q) == "nodes"
        q.memset(y, 0, N * 4).wait()
        q.ext_oneapi_graph(ex3).wait()
    q.memcpy(got, y, N * 4).wait()
    np.testing.assert_array_equal(got, xs)
    sycl.free(y, q)


@pytest.mark.parametrize("dev", CL_DEVICES, ids=_name)
def test_a_failing_enqueue_names_the_node_and_the_queue_goes_on(dev: sycl.device) -> None:
    """The driver refusing the second of three enqueues (a work-group larger than the
    device's): ``errc.kernel`` naming node 1 and the status; the first kernel ran, no
    event leaks, and the queue keeps working."""
    q = sycl.queue(dev)
    kb = _bundle(q)
    clk = kb.ext_oneapi_get_kernel("chain").native_for(dev)
    y = sycl.malloc_device(N, q, dtype=np.float32)
    q.memset(y, 0, N * 4).wait()
    ks = [clk.clone() for _ in range(3)]
    for k in ks:
        k.set_arg(0, y.make_native_arg())
        k.set_arg(1, np.float32(1.0))
    too_big = dev.get_info(sycl.info.device.max_work_group_size) * 2
    native_q = q.executor.native
    nodes = [(native_q, ks[0], (N,), None, None),
             (native_q, ks[1], (too_big,), (too_big,), None),
             (native_q, ks[2], (N,), None, None)]
    replay = cl_launch.native_replayer(nodes)
    assert replay is not None
    with pytest.raises(sycl.exception) as e:
        replay()
    assert e.value.code() == sycl.errc.kernel
    assert "node 1" in str(e.value) and "INVALID_WORK_GROUP_SIZE" in str(e.value)
    _, last = cl_launch.native_replayer(nodes[:1] + nodes[2:])()
    last.wait()
    got = np.empty(N, np.float32)
    q.memcpy(got, y, N * 4).wait()
    np.testing.assert_array_equal(got, np.full(N, 1.75, np.float32))  # 0 -> 1 -> 1.5 -> 1.75
    sycl.free(y, q)

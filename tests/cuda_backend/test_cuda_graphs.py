"""Command graphs on the CUDA backend (skipped without a CUDA GPU): a graph of pre-bound
kernel nodes replays as one CUDA graph, with the results of eager execution, through
updates, on profiling queues, and alongside eager launches of the same kernels."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import pysycl as sycl
import pysycl.ext.oneapi.experimental as syclex

CUDA = [d for d in sycl.device.get_devices() if d.get_backend() is sycl.backend.ext_oneapi_cuda]
pytestmark = pytest.mark.skipif(not CUDA, reason="no CUDA device (NVIDIA driver and "
                                "cuda-bindings: pip install pysycl[cuda])")
N = 1 << 16
BUFS = [syclex.property.graph.assume_buffer_outlives_graph()]


def _chain(q: sycl.queue, y, cs: list[float]) -> syclex.command_graph:  # type: ignore[no-untyped-def]
    g = syclex.command_graph(q.get_context(), q.get_device(), properties=BUFS)
    g.begin_recording(q)
    for c in cs:
        c32 = np.float32(c)
        q.parallel_for(sycl.range(N), lambda i: y.__setitem__(i, y[i] * np.float32(0.5) + c32))
    g.end_recording()
    return g


def _expected(cs: list[float], start: float = 0.0, times: int = 1) -> np.float32:
    v = np.float32(start)
    for _ in range(times):
        for c in cs:
            v = v * np.float32(0.5) + np.float32(c)
    return v


def _replayer(exec_g, q):  # type: ignore[no-untyped-def]
    plan = exec_g._plans[id(q.executor)][1]
    return plan[0][1]


def test_a_chain_of_kernels_replays_as_one_cuda_graph() -> None:
    graphs = importlib.import_module("pysycl._backends.cuda.graphs")
    q = sycl.queue(CUDA[0])
    y = sycl.malloc_device(N, q, dtype=np.float32)
    q.memset(y, 0, N * 4).wait()
    cs = [float(j % 7) for j in range(50)]
    exec_g = _chain(q, y, cs).finalize()
    for _ in range(3):
        q.ext_oneapi_graph(exec_g)
    q.wait()
    r = _replayer(exec_g, q)
    assert type(r) is graphs.GraphReplay and r.exec is not None and not r.refused
    got = np.empty(N, np.float32)
    q.memcpy(got, y, N * 4).wait()
    assert np.all(got == _expected(cs, times=3))
    # eager launches of the same kernels between replays pack their own arguments
    q.parallel_for(sycl.range(N), lambda i: y.__setitem__(i, np.float32(1)))
    q.ext_oneapi_graph(exec_g).wait()
    q.memcpy(got, y, N * 4).wait()
    assert np.all(got == _expected(cs, start=1.0))
    sycl.free(y, q)


def test_an_updated_graph_is_captured_again() -> None:
    q = sycl.queue(CUDA[0])
    y = sycl.malloc_device(N, q, dtype=np.float32)
    q.memset(y, 0, N * 4).wait()
    prop = [syclex.property.graph.updatable()]
    exec_g = _chain(q, y, [1.0, 2.0, 3.0]).finalize(properties=prop)
    q.ext_oneapi_graph(exec_g).wait()
    first = _replayer(exec_g, q)
    exec_g.update(_chain(q, y, [4.0, 5.0, 6.0]))
    q.memset(y, 0, N * 4).wait()
    q.ext_oneapi_graph(exec_g).wait()
    assert _replayer(exec_g, q) is not first
    got = np.empty(N, np.float32)
    q.memcpy(got, y, N * 4).wait()
    assert np.all(got == _expected([4.0, 5.0, 6.0]))
    sycl.free(y, q)


def test_profiling_a_replay_and_waiting_for_it_from_another_queue() -> None:
    q = sycl.queue(CUDA[0], properties=[sycl.property.queue.enable_profiling()])
    other = sycl.queue(q.get_context(), CUDA[0])
    y = sycl.malloc_device(N, q, dtype=np.float32)
    q.memset(y, 0, N * 4).wait()
    cs = [0.25] * 20
    exec_g = _chain(q, y, cs).finalize()
    e = q.ext_oneapi_graph(exec_g)
    out = sycl.malloc_device(N, other, dtype=np.float32)
    other.memcpy(out, y, N * 4, e).wait()
    start = e.get_profiling_info(sycl.info.event_profiling.command_start)
    end = e.get_profiling_info(sycl.info.event_profiling.command_end)
    assert 0 < start <= end
    got = np.empty(N, np.float32)
    other.memcpy(got, out, N * 4).wait()
    assert np.all(got == _expected(cs))
    sycl.free(y, q)
    sycl.free(out, other)

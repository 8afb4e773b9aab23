"""The CUDA backend's remembered launch on a GPU (skipped without one): the one-call launch
of ``_native.c`` runs kernels with the arguments of each launch, and a command's event is
recorded again for the next command only when nothing but the queue refers to it. The
remembered launch in one C call (``_native.Relaunch``) gives the results of the Python way:
back to back, between changing captures, around a captured CUDA graph, from several threads;
profiling queues and freed pointers take the Python way (tests/cuda_backend/
test_cuda_relaunch.py checks the C call's rules on the CPU)."""

from __future__ import annotations

import importlib
import threading
import weakref

import numpy as np
import pytest

import pysycl as sycl

CUDA = [d for d in sycl.device.get_devices() if d.get_backend() is sycl.backend.ext_oneapi_cuda]
pytestmark = pytest.mark.skipif(not CUDA, reason="no CUDA device (NVIDIA driver and "
                                "cuda-bindings: pip install pysycl[cuda])")
N = 4096


@pytest.fixture
def cq() -> sycl.queue:
    return sycl.queue(CUDA[0])


def _counter(q: sycl.queue):  # type: ignore[no-untyped-def]
    p = sycl.malloc_device(N, q, dtype=np.int32)
    q.memset(p, 0, N * 4).wait()

    def k(i):  # type: ignore[no-untyped-def]
        p[i] = p[i] + 1
    return p, k


def _read(q: sycl.queue, p) -> np.ndarray:  # type: ignore[no-untyped-def]
    out = np.empty(N, np.int32)
    q.memcpy(out, p, N * 4).wait()
    return out


def test_the_extension_launches_when_it_was_built(cq: sycl.queue) -> None:
    launch = importlib.import_module("pysycl._backends.cuda.launch")
    p, k = _counter(cq)
    for _ in range(3):
        cq.parallel_for(sycl.range(N), k)
    ln = cq.executor.launches[k.__code__]
    assert (ln.reca != 0) == (launch._native is not None)
    assert np.array_equal(_read(cq, p), np.full(N, 3, np.int32))
    sycl.free(p, cq)


def test_kept_events_are_distinct_and_dropped_ones_are_recorded_again(cq: sycl.queue) -> None:
    p, k = _counter(cq)
    r = sycl.range(N)
    kept = [cq.parallel_for(r, k) for _ in range(4)]
    handles = {int(e._cl.h) for e in kept}
    assert len(handles) == 4  # each kept event its own CUevent
    cq.parallel_for(r, k)  # dropped at once
    newest = weakref.ref(cq.executor.last)  # (a weak reference: it refers to nothing)
    cq.parallel_for(r, k)
    assert cq.executor.last is newest()  # recorded again: nothing else referred to it
    held = cq.parallel_for(r, k)
    cq.parallel_for(r, k)
    assert cq.executor.last is not held._cl  # a held event is never recorded again
    for _ in range(200):
        cq.parallel_for(r, k)
    for e in (*kept, held):
        e.wait()
        assert e.get_info(sycl.info.event.command_execution_status) is \
            sycl.info.event_command_status.complete
    assert int(held._cl.h) not in handles
    cq.wait()
    assert np.array_equal(_read(cq, p), np.full(N, 4 + 2 + 2 + 200, np.int32))
    sycl.free(p, cq)


def test_changing_captures_and_threads_on_one_queue(cq: sycl.queue) -> None:
    """Arguments that change between launches (another pointer, another scalar) reach the
    kernel; two threads launching on one queue lose no launch."""
    a = sycl.malloc_device(N, cq, dtype=np.int32)
    b = sycl.malloc_device(N, cq, dtype=np.int32)
    cq.memset(a, 0, N * 4)
    cq.memset(b, 0, N * 4).wait()
    r = sycl.range(N)

    def add(dst, v):  # type: ignore[no-untyped-def]
        cq.parallel_for(r, lambda i: dst.__setitem__(i, dst[i] + v))

    for j in range(10):
        add(a if j % 2 else b, np.int32(j))
    cq.wait()
    assert np.array_equal(_read(cq, a), np.full(N, 1 + 3 + 5 + 7 + 9, np.int32))
    assert np.array_equal(_read(cq, b), np.full(N, 0 + 2 + 4 + 6 + 8, np.int32))

    def many(dst):  # type: ignore[no-untyped-def]
        for _ in range(300):
            add(dst, np.int32(1))

    ts = [threading.Thread(target=many, args=(x,)) for x in (a, a, b)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    cq.wait()
    assert np.array_equal(_read(cq, a), np.full(N, 25 + 600, np.int32))
    assert np.array_equal(_read(cq, b), np.full(N, 20 + 300, np.int32))
    sycl.free(a, cq)
    sycl.free(b, cq)


def test_another_library_changing_the_threads_context_breaks_nothing(cq: sycl.queue) -> None:
    """Code beside pysycl makes its own context current and destroys it (what
    ``cuCtxCreate``/``cuCtxDestroy`` do; CuPy and PyTorch switch contexts too): pysycl's
    launches, waits, copies and allocations on the thread go on."""
    from cuda.bindings import driver as cu

    p, k = _counter(cq)
    r = sycl.range(N)
    cq.parallel_for(r, k).wait()
    _, dev = cu.cuDeviceGet(CUDA[0].ordinal)  # type: ignore[attr-defined]
    got = cu.cuCtxCreate(None, 0, dev)  # current on this thread now
    if got[0]:
        pytest.skip(f"cuCtxCreate: {got[0]}")
    cq.parallel_for(r, k).wait()  # another context current
    cu.cuCtxDestroy(got[1])  # the thread's current context: destroyed
    cq.parallel_for(r, k)
    cq.parallel_for(r, k).wait()
    cq.wait()
    q2 = sycl.queue(CUDA[0])
    p2 = sycl.malloc_device(N, q2, dtype=np.int32)
    q2.memcpy(p2, p, N * 4).wait()
    assert np.array_equal(_read(q2, p2), np.full(N, 4, np.int32))
    sycl.free(p2, q2)
    sycl.free(p, cq)


# --------------------------------------------------- the remembered launch in one C call
def _c_call() -> bool:
    """Whether remembered launches take the C call here (the extension was built)."""
    launch = importlib.import_module("pysycl._backends.cuda.launch")
    return launch._ext is not None and launch.native_launch()


def test_back_to_back_launches_through_the_c_call(cq: sycl.queue) -> None:
    from pysycl._kernels.cache import kernels

    p, k = _counter(cq)
    r = sycl.range(N)
    hits = kernels.stats["memory_hits"]
    for _ in range(500):
        cq.parallel_for(r, k)
    ln = cq.executor.launches[k.__code__]
    assert (ln.primed is not None) == _c_call()
    assert kernels.stats["memory_hits"] - hits >= 499  # all but the first, whichever way
    if _c_call():  # the C call alone launches the kernel
        launch = importlib.import_module("pysycl._backends.cuda.launch")
        ev = launch._ext.try_launch(cq.executor, cq, "range", r, k, None)
        assert type(ev) is launch.Event and cq.executor.last is ev
    cq.wait()
    assert np.array_equal(_read(cq, p), np.full(N, 500 + _c_call(), np.int32))
    sycl.free(p, cq)


def test_nd_range_and_single_task_launches_through_the_c_call(cq: sycl.queue) -> None:
    p, _ = _counter(cq)

    def k(it):  # type: ignore[no-untyped-def]
        i = it.get_global_id(0)
        p[i] = p[i] + it.get_local_id(0)

    def one():  # type: ignore[no-untyped-def]
        p[0] = p[0] + 1000

    nd = sycl.nd_range(sycl.range(N), sycl.range(128))
    for _ in range(20):
        cq.parallel_for(nd, k)
    cq.parallel_for(sycl.nd_range(sycl.range(N), sycl.range(64)), k)  # another local size
    for _ in range(5):
        cq.single_task(one)
    assert (cq.executor.launches[one.__code__].primed is not None) == _c_call()
    want = 20 * (np.arange(N) % 128) + np.arange(N) % 64
    want[0] += 5000
    assert np.array_equal(_read(cq, p), want.astype(np.int32))
    sycl.free(p, cq)


def test_c_call_launches_interleaved_with_changing_captures(cq: sycl.queue) -> None:
    """Runs of identical launches (the C call) between rebound cells: another pointer,
    another number of the same type, another type (a new kernel)."""
    a = sycl.malloc_device(N, cq, dtype=np.int32)
    b = sycl.malloc_device(N, cq, dtype=np.int32)
    cq.memset(a, 0, N * 4)
    cq.memset(b, 0, N * 4).wait()
    r = sycl.range(N)
    target, v = a, np.int32(1)

    def k(i):  # type: ignore[no-untyped-def]
        target[i] = target[i] + v

    want = {id(a): 0, id(b): 0}
    for j in range(300):
        if j % 7 == 0:
            target = b if target is a else a
        if j % 11 == 0:
            v = np.int32(v + 1)
        if j == 150:
            v = 3  # a Python int: another kernel, then runs of it
        cq.parallel_for(r, k)
        want[id(target)] += int(v)
    assert np.array_equal(_read(cq, a), np.full(N, want[id(a)], np.int32))
    assert np.array_equal(_read(cq, b), np.full(N, want[id(b)], np.int32))
    sycl.free(a, cq)
    sycl.free(b, cq)


def test_c_call_launches_around_a_captured_graph(cq: sycl.queue) -> None:
    """A CUDA graph's capture packs the arguments of its nodes into the buffer of the same
    remembered launch: the eager launches after it launch their own values."""
    import pysycl.ext.oneapi.experimental as syclex

    y = sycl.malloc_device(N, cq, dtype=np.float32)
    cq.memset(y, 0, N * 4).wait()
    r = sycl.range(N)

    def step(c):  # type: ignore[no-untyped-def]
        return lambda i: y.__setitem__(i, y[i] * np.float32(0.5) + c)

    eager = step(np.float32(1))
    g = syclex.command_graph(cq.get_context(), cq.get_device())
    g.begin_recording(cq)
    for c in (2, 3, 4):
        cq.parallel_for(r, step(np.float32(c)))
    g.end_recording()
    exec_g = g.finalize()
    want = np.float32(0)
    for rnd in range(4):
        for _ in range(5):
            cq.parallel_for(r, eager)
            want = want * np.float32(0.5) + np.float32(1)
        if rnd < 3:
            cq.ext_oneapi_graph(exec_g)
            for c in (2, 3, 4):
                want = want * np.float32(0.5) + np.float32(c)
    got = np.empty(N, np.float32)
    cq.memcpy(got, y, N * 4).wait()
    assert np.all(got == want)
    sycl.free(y, cq)


def test_profiling_queues_take_the_python_way() -> None:
    pq = sycl.queue(CUDA[0], properties=[sycl.property.queue.enable_profiling()])
    p, k = _counter(pq)
    r = sycl.range(N)
    evs = [pq.parallel_for(r, k) for _ in range(20)]
    ln = pq.executor.launches[k.__code__]
    assert ln.primed is None and not ln.primes
    evs[-1].wait()
    for e in evs[-3:]:
        start = e.get_profiling_info(sycl.info.event_profiling.command_start)
        end = e.get_profiling_info(sycl.info.event_profiling.command_end)
        assert 0 < start <= end
    assert np.array_equal(_read(pq, p), np.full(N, 20, np.int32))
    sycl.free(p, pq)


def test_a_freed_pointer_raises_after_c_call_launches(cq: sycl.queue) -> None:
    p, k = _counter(cq)
    r = sycl.range(N)
    for _ in range(5):
        cq.parallel_for(r, k)
    cq.wait()
    sycl.free(p, cq)
    with pytest.raises(sycl.exception) as e:
        cq.parallel_for(r, k)
    assert e.value.code() == sycl.errc.invalid and "freed" in str(e.value)


def test_threads_launching_one_kernel_through_the_c_call(cq: sycl.queue) -> None:
    """Two threads launch the same function object (the C call, or the Python way while the
    other holds the enqueue lock), a third another kernel: no launch lost or doubled."""
    p, k = _counter(cq)
    q2 = sycl.malloc_device(N, cq, dtype=np.int32)
    cq.memset(q2, 0, N * 4).wait()

    def k2(i):  # type: ignore[no-untyped-def]
        q2[i] = q2[i] + 2

    r = sycl.range(N)

    def many(fn) -> None:  # type: ignore[no-untyped-def]
        for _ in range(400):
            cq.parallel_for(r, fn)

    ts = [threading.Thread(target=many, args=(f,)) for f in (k, k, k2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    cq.wait()
    assert np.array_equal(_read(cq, p), np.full(N, 800, np.int32))
    assert np.array_equal(_read(cq, q2), np.full(N, 800, np.int32))
    sycl.free(p, cq)
    sycl.free(q2, cq)

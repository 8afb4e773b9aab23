"""The CUDA backend's remembered launch on a GPU (skipped without one): the one-call launch
of ``_native.c`` runs kernels with the arguments of each launch, and a command's event is
recorded again for the next command only when nothing but the queue refers to it."""

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

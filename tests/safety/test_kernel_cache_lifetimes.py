"""Issue 21, items 17 and 18: what the kernel cache keeps must not outlive contexts and buffers.

* A built kernel (``cl_kernel``: its program, the OpenCL context) belongs to one
  context; when the ``sycl.context`` goes, so do its cache entries (item 17).
* A kernel remembers the arguments of its last launch (so that the same launch again
  skips ``clSetKernelArg``); that memory must not keep a buffer's device allocation
  alive after the buffer is destroyed -- the end of its ``with`` block, or its last
  reference (§4.7.2.3: destruction releases the buffer) -- (item 18).

Live objects are counted with a census of the garbage collector's objects (pyopencl's
kernels and memory objects are tracked by it), before and after.
"""

from __future__ import annotations

import gc

import numpy as np
import pyopencl as cl
import pytest

import pysycl as sycl

N = 64
BIG = 1 << 26  # float32 elements: a 256 MiB buffer


def _live(kind: type, min_size: int = 0) -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects()
               if isinstance(o, kind) and (not min_size or o.size >= min_size))


def _use_a_context(dev: sycl.device) -> None:
    """A short-lived context, as a function that makes its own does: a buffer kernel, a
    USM kernel (the launch-plan path), a reduction (its combine step is a second kernel)."""
    ctx = sycl.context(dev)
    q = sycl.queue(ctx, dev)
    a = np.zeros(N, np.float32)
    total = np.zeros(1, np.float32)
    with sycl.buffer(a) as A, sycl.buffer(total) as T:
        def cg(h: sycl.handler) -> None:
            acc = A.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.range(N), lambda i: acc.__setitem__(i, 1.0))

        def red(h: sycl.handler) -> None:
            acc = A.get_access(h, sycl.access_mode.read)
            h.parallel_for(sycl.range(N), sycl.reduction(T, h, sycl.plus()),
                           lambda i, s: s.combine(acc[i]))

        q.submit(cg)
        q.submit(red)
    p = sycl.malloc_device(N, q, dtype=np.float32)
    for _ in range(2):
        q.parallel_for(sycl.range(N), lambda i: p.__setitem__(i, 2.0)).wait()
    sycl.free(p, q)
    assert a.sum() == N and total[0] == N


@pytest.mark.slow
def test_built_kernels_of_dropped_contexts_are_released(kernel_device: sycl.device) -> None:
    # The issue: after 90 short-lived contexts, 90 cl_kernel objects (0.4-1.75 MB each)
    # stayed alive in the kernel cache.
    _use_a_context(kernel_device)  # compiled, and its first context already gone
    before = _live(cl.Kernel)
    builds = sycl.ext.kernel_cache_stats()["cl_builds"]
    for _ in range(90):
        _use_a_context(kernel_device)
    assert sycl.ext.kernel_cache_stats()["cl_builds"] > builds  # each context built its own
    assert _live(cl.Kernel) - before <= 3


def test_a_context_that_lives_keeps_its_built_kernels(kernel_device: sycl.device) -> None:
    # The other side: while its context lives, a kernel is built once.
    ctx = sycl.context(kernel_device)
    q = sycl.queue(ctx, kernel_device)
    p = sycl.malloc_device(N, q, dtype=np.float32)
    try:
        def run(q: sycl.queue) -> None:
            q.submit(lambda h: h.parallel_for(sycl.range(N), lambda i: p.__setitem__(i, 3.0)))
            q.wait()

        run(q)
        builds = sycl.ext.kernel_cache_stats()["cl_builds"]
        del q
        gc.collect()
        run(sycl.queue(ctx, kernel_device))  # another queue, the same context
        assert sycl.ext.kernel_cache_stats()["cl_builds"] == builds
    finally:
        sycl.free(p, ctx)


def _add_one(q: sycl.queue, buf: sycl.buffer, n: int) -> None:
    def cg(h: sycl.handler) -> None:
        acc = buf.get_access(h, sycl.access_mode.read_write)
        h.parallel_for(sycl.range(n), lambda i: acc.__setitem__(i, acc[i] + 1))

    q.submit(cg)


@pytest.fixture
def big_q(kernel_device: sycl.device) -> sycl.queue:
    if kernel_device.get_backend() is not sycl.backend.opencl:
        pytest.skip("counts pyopencl's memory objects (the OpenCL backend's)")
    q = sycl.queue(kernel_device)
    if kernel_device.get_info(sycl.info.device.max_mem_alloc_size) < BIG * 4:
        pytest.skip("the device cannot allocate 256 MiB at once")
    return q


def test_a_buffers_device_memory_is_freed_at_the_end_of_its_with_block(big_q: sycl.queue) -> None:
    # The issue: a 256 MiB buffer stayed allocated after its with block, until the same
    # kernel launched again (the kernel remembered its last arguments).
    a = np.zeros(BIG, np.float32)
    base = _live(cl.MemoryObjectHolder, BIG * 4)
    with sycl.buffer(a) as A:
        _add_one(big_q, A, BIG)
    assert a[0] == 1 and a[-1] == 1
    assert _live(cl.MemoryObjectHolder, BIG * 4) == base  # A is still a name: closed, not gone
    # The kernel runs again with another buffer: its arguments are set anew.
    b = np.full(N, 5, np.float32)
    with sycl.buffer(b) as B:
        _add_one(big_q, B, N)
    np.testing.assert_array_equal(b, np.full(N, 6, np.float32))
    del A, B


@pytest.mark.slow
def test_a_buffers_device_memory_is_freed_with_its_last_reference(big_q: sycl.queue) -> None:
    # Without a with block: `del` (or the end of the function holding it) destroys it.
    # Also a buffer that never writes back (no host data): its data lives on the device
    # until then.
    base = _live(cl.MemoryObjectHolder, BIG * 4)
    A = sycl.buffer(np.zeros(BIG, np.float32))
    _add_one(big_q, A, BIG)
    big_q.wait()
    assert _live(cl.MemoryObjectHolder, BIG * 4) == base + 1
    del A
    assert _live(cl.MemoryObjectHolder, BIG * 4) == base
    with sycl.buffer(sycl.range(BIG), dtype=np.float32) as S:
        _add_one(big_q, S, BIG)
    # closed, no write-back: the device holds its only current copy while S is a name
    with sycl.host_accessor(S, sycl.access_mode.read) as ha:
        assert np.asarray(ha).shape == (BIG,)
    del S, ha
    assert _live(cl.MemoryObjectHolder, BIG * 4) == base

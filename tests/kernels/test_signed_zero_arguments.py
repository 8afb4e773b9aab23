"""A kernel launched again with ``-0.0`` where it had ``0.0`` gets ``-0.0``: launches pass
their arguments again only when they changed, and ``0.0 == -0.0`` in Python and numpy, so
"changed" must compare the signs of zeros too (found by test_numpy_clip on the CUDA backend)."""

from __future__ import annotations

import numpy as np
import pytest

import pysycl as sycl


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_the_sign_of_a_zero_argument_reaches_the_kernel(any_kernel_queue: sycl.queue, dt) -> None:  # type: ignore[no-untyped-def]
    q = any_kernel_queue
    if dt is np.float64 and not q.get_device().has(sycl.aspect.fp64):
        pytest.skip(f"{q.get_device()} has no aspect.fp64")
    out = np.zeros(4, dt)
    signs = []
    for z in (dt(0.0), dt(-0.0), dt(-0.0), dt(0.0)):
        with sycl.buffer(out) as b:
            def cg(h: sycl.handler, z=z) -> None:  # type: ignore[no-untyped-def]
                a = b.get_access(h, sycl.access_mode.write)
                h.parallel_for(sycl.range(4), lambda i: a.__setitem__(i, z))
            q.submit(cg)
        signs.append(bool(np.signbit(out).all()))
    assert signs == [False, True, True, False]


def test_handler_less_launches_too(any_kernel_queue: sycl.queue) -> None:
    q = any_kernel_queue
    p = sycl.malloc_device(4, q, dtype=np.float32) if not q.get_device().has(
        sycl.aspect.host_debuggable) else sycl.malloc_shared(4, q, dtype=np.float32)
    got = []
    for z in (np.float32(0.0), np.float32(-0.0), np.float32(0.0)):
        q.parallel_for(sycl.range(4), lambda i: p.__setitem__(i, z)).wait()
        out = np.ones(4, np.float32)
        q.memcpy(out, p, out.nbytes).wait()
        got.append(bool(np.signbit(out).all()))
    sycl.free(p, q)
    assert got == [False, True, False]

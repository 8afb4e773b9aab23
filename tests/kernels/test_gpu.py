"""Python kernels on an NVIDIA GPU (PTX device images): what only a GPU can show.

Skipped on machines without a device that has ``aspect.ext_pysycl_ptx`` (CI);
the rest of the kernel suite runs on the GPU too, through the ``kq`` fixture
(docs/gpu.md records that run). Here: both kinds of device in one process with
one buffer, the warm PTX cache, errors (a faulting kernel, a missing aspect,
a PTX the driver refuses).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pysycl as sycl

# NVIDIA's OpenCL path (the CUDA backend's view of the same GPU: tests/cuda_backend)
GPUS = [d for d in sycl.device.get_devices() if d.has(sycl.aspect.ext_pysycl_ptx)
        and d.get_backend() is sycl.backend.opencl]
pytestmark = pytest.mark.skipif(not GPUS, reason="no NVIDIA GPU with PTX support")


@pytest.fixture
def gq() -> sycl.queue:
    return sycl.queue(GPUS[0])


def test_default_selector_prefers_the_gpu() -> None:
    assert sycl.device().has(sycl.aspect.ext_pysycl_ptx)
    assert sycl.device().is_gpu()


def test_one_kernel_one_buffer_on_the_gpu_and_another_device(gq: sycl.queue) -> None:
    """The same lambda on the GPU and on a second device; the buffer follows each submit."""
    others = [d for d in sycl.device.get_devices()
              if d != gq.get_device() and (d.image_targets or d.has(sycl.aspect.host_debuggable))]
    n = 4096
    a = np.arange(n, dtype=np.float32)
    buf = sycl.buffer(a)

    def twice_plus_one(q: sycl.queue) -> None:
        def cg(h: sycl.handler) -> None:
            acc = buf.get_access(h, sycl.access_mode.read_write)
            h.parallel_for(sycl.range(n), lambda i: acc.__setitem__(i, 2 * acc[i] + 1))
        q.submit(cg)

    expect = a.copy()
    for q in [gq, *(sycl.queue(d) for d in others), gq]:
        twice_plus_one(q)
        expect = 2 * expect + 1
    with buf.get_host_access() as h:
        np.testing.assert_allclose(h, expect)


def test_float16_runs_in_half_precision_on_the_gpu(gq: sycl.queue) -> None:
    """NVIDIA's OpenCL has no cl_khr_fp16, but PTX kernels have half instructions:
    the GPU reports aspect.fp16 (docs/gpu.md) and rounds each operation as numpy."""
    assert gq.get_device().has(sycl.aspect.fp16)
    rng = np.random.default_rng(7)
    x = rng.standard_normal(4096).astype(np.float16)
    y = rng.standard_normal(4096).astype(np.float16)
    out = np.zeros_like(x)
    with sycl.buffer(x) as X, sycl.buffer(y) as Y, sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            a, b = X.get_access(h, sycl.access_mode.read), Y.get_access(h, sycl.access_mode.read)
            o = O.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.range(x.size), lambda i: o.__setitem__(i, a[i] * b[i] + a[i] * 0.5 - b[i]))
        gq.submit(cg).wait()
    np.testing.assert_array_equal(out.view(np.uint16), (x * y + x * 0.5 - y).view(np.uint16))


def test_a_ptx_module_the_driver_refuses_is_a_build_error(gq: sycl.queue) -> None:
    from pysycl._backends.opencl import exec as x

    bad = b".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k() { bogus; }\n"
    ctx, dev = gq.get_context(), gq.get_device()
    with pytest.raises(sycl.exception) as ei:
        x.build_ptx(ctx.native, [dev.native], bad)
    assert ei.value.code() == sycl.errc.build
    assert "PTX" in str(ei.value)


_FAULT = textwrap.dedent("""
    import numpy as np, pysycl as sycl
    q = sycl.queue(sycl.aspect_selector(sycl.aspect.ext_pysycl_ptx))
    host = np.full(16, 7.0, np.float32)
    b = sycl.buffer(host)
    def cg(h):
        acc = b.get_access(h, sycl.access_mode.write)
        far = 1 << 40
        h.parallel_for(sycl.range(16), lambda i: acc.__setitem__(i * far + i, 1.0))
    try:
        q.submit(cg).wait_and_throw()
        print("no error")
    except sycl.exception as e:
        print("caught", e.code().name, str(e).splitlines()[0])
    print("intact" if (host == 7.0).all() else "host data changed")
    print("alive")
""")


def test_a_faulting_kernel_is_a_runtime_error_not_a_crash_or_hang() -> None:
    r = subprocess.run([sys.executable, "-c", _FAULT], capture_output=True, text=True,
                       timeout=120, env=dict(os.environ))
    assert r.returncode == 0, r.stderr
    assert "alive" in r.stdout
    assert "caught runtime" in r.stdout, r.stdout + r.stderr
    assert "intact" in r.stdout  # the host array keeps its values


_WARM = textwrap.dedent("""
    import time, numpy as np, pysycl as sycl
    t0 = time.perf_counter()
    q = sycl.queue(sycl.aspect_selector(sycl.aspect.ext_pysycl_ptx))
    b = sycl.buffer(np.arange(1024, dtype=np.float32))
    def cg(h):
        acc = b.get_access(h, sycl.access_mode.read_write)
        h.parallel_for(sycl.range(1024), lambda i: acc.__setitem__(i, acc[i] * 3.0))
    q.submit(cg).wait()
    with b.get_host_access() as h:
        assert (h == np.arange(1024, dtype=np.float32) * 3).all()
    s = sycl.ext.kernel_cache_stats()
    print(s["compiles"], s["disk_hits"])
""")


def test_a_warm_process_loads_ptx_from_the_disk_cache(tmp_path) -> None:  # type: ignore[no-untyped-def]
    env = dict(os.environ, PYSYCL_CACHE_DIR=str(tmp_path))
    first = subprocess.run([sys.executable, "-c", _WARM], capture_output=True, text=True,
                           env=env, timeout=300)
    assert first.returncode == 0, first.stderr
    assert first.stdout.split() == ["1", "0"]
    second = subprocess.run([sys.executable, "-c", _WARM], capture_output=True, text=True,
                            env=env, timeout=300)
    assert second.returncode == 0, second.stderr
    assert second.stdout.split() == ["0", "1"]  # no Numba: the PTX came from disk


def test_usm_on_nvidia_is_coarse_grained_svm(gq: sycl.queue) -> None:
    """NVIDIA's OpenCL has coarse-grained SVM only: device allocations work, host and
    shared ones are refused by aspect, and pointers reach PTX kernels."""
    dev = gq.get_device()
    caps = dev.native.svm_capabilities
    assert dev.has(sycl.aspect.usm_device_allocations) == bool(caps & 1)
    assert dev.has(sycl.aspect.usm_shared_allocations) == bool(caps & 2)
    if not dev.has(sycl.aspect.usm_shared_allocations):
        with pytest.raises(sycl.exception) as e:
            sycl.malloc_shared(16, gq, dtype=np.float32)
        assert e.value.code() == sycl.errc.feature_not_supported
        assert "usm_shared_allocations" in str(e.value)
    n = 1 << 22
    b_h, c_h = np.arange(n, dtype=np.float32), np.full(n, 0.25, np.float32)
    a, b, c = (sycl.malloc_device(n, gq, dtype=np.float32) for _ in range(3))
    gq.memset(a, 0, n * 4)
    gq.memcpy(b, b_h, n * 4)
    gq.copy(c_h, c, n)
    s = np.float32(4)

    def nstream(i: sycl.item) -> None:
        a[i] += b[i] + s * c[i]

    for _ in range(3):
        gq.parallel_for(sycl.range(n), nstream)
    hist = sycl.malloc_device(8, gq, dtype=np.int32)
    gq.memset(hist, 0, 32)

    def count(i: sycl.item) -> None:
        sycl.atomic_ref(hist, i % 8, sycl.memory_order.relaxed,
                        sycl.memory_scope.device).fetch_add(1)

    gq.parallel_for(sycl.range(1000), count)
    out = np.empty(n, np.float32)
    gq.memcpy(out, a, n * 4)
    h = np.empty(8, np.int32)
    gq.copy(hist, h, 8).wait()
    np.testing.assert_allclose(out, 3 * (b_h + 4 * c_h), rtol=1e-6)
    np.testing.assert_array_equal(h, np.bincount(np.arange(1000) % 8))
    for p in (a, b, c, hist):
        sycl.free(p, gq)


def _block_sums(q: sycl.queue, x: np.ndarray, wg: int) -> np.ndarray:
    """SYCL Academy's reduction: a tree in local memory with barriers, one sum per group."""
    out = np.zeros(x.size // wg, x.dtype)
    with sycl.buffer(x) as bx, sycl.buffer(out) as bo:
        def cg(h: sycl.handler) -> None:
            a = bx.get_access(h, sycl.access_mode.read)
            o = bo.get_access(h, sycl.access_mode.write)
            scratch = sycl.local_accessor(x.dtype, sycl.range(wg), h)

            def k(it):  # type: ignore[no-untyped-def]
                lid = it.get_local_id(0)
                scratch[lid] = a[it.get_global_id(0)]
                it.barrier(sycl.access.fence_space.local_space)
                s = it.get_local_range(0) // 2
                while s > 0:
                    if lid < s:
                        scratch[lid] += scratch[lid + s]
                    it.barrier(sycl.access.fence_space.local_space)
                    s //= 2
                if lid == 0:
                    o[it.get_group(0)] = scratch[0]

            h.parallel_for(sycl.nd_range(sycl.range(x.size), sycl.range(wg)), k)

        q.submit(cg)
    return out


def _layernorm(q: sycl.queue, x: np.ndarray) -> np.ndarray:
    """HeCBench layernorm's shape: one work-group per row, ``reduce_over_group`` twice."""
    rows, cols = x.shape
    y = np.zeros_like(x)
    with sycl.buffer(x) as bx, sycl.buffer(y) as by:
        def cg(h: sycl.handler) -> None:
            a = bx.get_access(h, sycl.access_mode.read)
            o = by.get_access(h, sycl.access_mode.write)

            def k(it):  # type: ignore[no-untyped-def]
                r, c, g = it.get_group(0), it.get_local_id(1), it.get_group()
                v = a[r, c]
                d = v - sycl.reduce_over_group(g, v, sycl.plus()) / np.float32(cols)
                var = sycl.reduce_over_group(g, d * d, sycl.plus()) / np.float32(cols)
                o[r, c] = d / np.sqrt(var + np.float32(1e-5))

            h.parallel_for(sycl.nd_range(sycl.range(rows, cols), sycl.range(1, cols)), k)

        q.submit(cg)
    return y


def test_work_groups_of_512_and_1024_run_on_the_gpu(gq: sycl.queue) -> None:
    """NVIDIA's OpenCL reports 256 work-items for every kernel; pysycl builds a kernel's
    PTX with a launch bound (``.maxntid``) for wider work-groups (issue 21, item 14)."""
    x = np.random.default_rng(1).random(1 << 20).astype(np.float32)
    for wg in (1024, 256, 512):
        np.testing.assert_allclose(_block_sums(gq, x, wg), x.reshape(-1, wg).sum(1), rtol=1e-4)
    m = np.random.default_rng(2).random((64, 1024)).astype(np.float32)
    want = (m - m.mean(1, keepdims=True)) / np.sqrt(m.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(_layernorm(gq, m), want, rtol=1e-3, atol=1e-4)
    from tests.compiler import register_heavy  # ~96 registers without a bound

    h = np.linspace(0.1, 1.0, 4096)
    for wg in (1024, 128):
        np.testing.assert_allclose(register_heavy.run(gq, h, wg), register_heavy.expected(h),
                                   rtol=1e-12)


def test_an_nd_range_reduction_runs_1024_wide(gq: sycl.queue) -> None:
    n = 1 << 20
    x = np.arange(n, dtype=np.int64)
    total = np.zeros(1, np.int64)
    with sycl.buffer(x) as bx, sycl.buffer(total) as bt:
        def cg(h: sycl.handler) -> None:
            a = bx.get_access(h, sycl.access_mode.read)
            r = sycl.reduction(bt, h, sycl.plus())
            h.parallel_for(sycl.nd_range(sycl.range(n), sycl.range(1024)), r,
                           lambda it, acc: acc.combine(a[it.get_global_id(0)]))

        gq.submit(cg)
    assert total[0] == n * (n - 1) // 2


def test_a_usm_nd_range_kernel_runs_1024_wide_from_its_launch_plan(gq: sycl.queue) -> None:
    n, wg = 1 << 16, 1024
    p = sycl.malloc_device(n, gq, dtype=np.int32)
    gq.memset(p, 0, 4 * n)

    def k(it):  # type: ignore[no-untyped-def]
        p[it.get_global_id(0)] += it.get_local_linear_id()

    for _ in range(3):  # the whole way, then the fast path's plan with the bounded kernel
        gq.parallel_for(sycl.nd_range(sycl.range(n), sycl.range(wg)), k)
    out = np.empty(n, np.int32)
    gq.memcpy(out, p, 4 * n).wait()
    sycl.free(p, gq)
    np.testing.assert_array_equal(out, 3 * (np.arange(n) % wg))


def test_a_work_group_wider_than_the_gpu_is_an_nd_range_error(gq: sycl.queue) -> None:
    x = np.ones(4096, np.float32)
    with pytest.raises(sycl.exception) as e:
        _block_sums(gq, x, 2048)
    assert e.value.code() == sycl.errc.nd_range
    assert "1024" in str(e.value) and "2048" in str(e.value)

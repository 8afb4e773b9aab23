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

GPUS = [d for d in sycl.device.get_devices() if d.has(sycl.aspect.ext_pysycl_ptx)]
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

"""The CUDA backend on an NVIDIA GPU (skipped where the driver or ``cuda-bindings`` is
absent, as in CI): discovery, kernels over buffers and every USM kind, local memory in
1024-wide work-groups and past 48 KiB, ranges that no block size divides evenly, the cubin
cache of a fresh process, and a faulting kernel the process survives."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pysycl as sycl

CUDA = [d for d in sycl.device.get_devices() if d.get_backend() is sycl.backend.ext_oneapi_cuda]
pytestmark = pytest.mark.skipif(not CUDA, reason="no CUDA device (NVIDIA driver and "
                                "cuda-bindings: pip install pysycl[cuda])")


@pytest.fixture
def cq() -> sycl.queue:
    return sycl.queue(CUDA[0])


def test_the_platform_and_its_devices() -> None:
    d = CUDA[0]
    p = d.get_platform()
    assert p.get_info(sycl.info.platform.name) == "NVIDIA CUDA"
    assert d.is_gpu() and d.get_backend() is sycl.backend.ext_oneapi_cuda
    for a in (sycl.aspect.usm_device_allocations, sycl.aspect.usm_host_allocations,
              sycl.aspect.usm_shared_allocations, sycl.aspect.fp16, sycl.aspect.fp64,
              sycl.aspect.atomic64, sycl.aspect.ext_pysycl_ptx):
        assert d.has(a), a
    assert d.get_info(sycl.info.device.max_work_group_size) == 1024
    assert d.get_info(sycl.info.device.sub_group_sizes) == [32]
    assert d.image_targets[0][0] == "ptx"
    # the same GPU's OpenCL view, where NVIDIA's OpenCL is installed, is another device
    assert sycl.device(sycl.default_selector_v).get_backend() is sycl.backend.ext_oneapi_cuda


def test_filters_choose_a_view() -> None:
    code = "import pysycl as s; print(sorted({d.get_backend().value for d in s.device.get_devices()}))"
    for filt, want in (("cuda:gpu", "['ext_oneapi_cuda']"), ("opencl:gpu", "['opencl']")):
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env={**os.environ, "PYSYCL_DEVICE_FILTER": filt}, timeout=120)
        assert r.stdout.strip() == want, (filt, r.stdout, r.stderr)


def test_a_buffer_kernel(cq: sycl.queue) -> None:
    x = np.arange(1000, dtype=np.float32)
    y = np.ones(1000, np.float32)
    with sycl.buffer(x) as bx, sycl.buffer(y) as by:
        def cg(h: sycl.handler) -> None:
            ax = bx.get_access(h, sycl.access_mode.read)
            ay = by.get_access(h, sycl.access_mode.read_write)
            h.parallel_for(sycl.range(1000), lambda i: ay.__setitem__(i, 2.5 * ax[i] + ay[i]))
        cq.submit(cg)
    np.testing.assert_allclose(y, 2.5 * np.arange(1000, dtype=np.float32) + 1)


@pytest.mark.parametrize("kind", ["device", "shared", "host"])
def test_usm_of_every_kind(cq: sycl.queue, kind: str) -> None:
    n = 1 << 16
    p = getattr(sycl, f"malloc_{kind}")(n, cq, dtype=np.int32)
    assert sycl.get_pointer_type(p, cq.get_context()) is getattr(sycl.usm.alloc, kind)
    cq.parallel_for(sycl.range(n), lambda i: p.__setitem__(i, i * 3)).wait()
    out = np.empty(n, np.int32)
    cq.memcpy(out, p, out.nbytes).wait()
    np.testing.assert_array_equal(out, np.arange(n, dtype=np.int32) * 3)
    if kind != "device":  # the host reads shared and host memory as it is
        np.testing.assert_array_equal(np.asarray(p), out)
    cq.fill(p, np.int32(7), n).wait()
    cq.memcpy(out, p, out.nbytes).wait()
    assert (out == 7).all()
    sycl.free(p, cq)


@pytest.mark.parametrize("wg", [32, 256, 1024])
def test_local_memory_in_work_groups_up_to_1024(cq: sycl.queue, wg: int) -> None:
    n = 8192
    out = sycl.malloc_device(n, cq, dtype=np.float32)

    def cg(h: sycl.handler) -> None:
        loc = sycl.local_accessor(np.float32, sycl.range(wg), h)
        idx = sycl.local_accessor(np.int32, sycl.range(wg), h)

        def k(it):  # type: ignore[no-untyped-def]
            lid = it.get_local_id(0)
            loc[lid] = it.get_global_id(0)
            idx[lid] = lid
            it.barrier()
            out[it.get_global_id(0)] = loc[(lid + 1) % wg] + idx[lid] * 0
        h.parallel_for(sycl.nd_range(sycl.range(n), sycl.range(wg)), k)

    cq.submit(cg).wait()
    got = np.empty(n, np.float32)
    cq.memcpy(got, out, got.nbytes).wait()
    g = np.arange(n)
    np.testing.assert_array_equal(got, g - g % wg + (g % wg + 1) % wg)


def _rotate_through_local_memory(cq: sycl.queue, nbytes: int) -> np.ndarray:
    """Work-groups of 256 fill a local accessor of ``nbytes`` (int32 elements), pass a
    barrier and each sums a stride of elements other work-items wrote: the result."""
    wg, groups = 256, 4
    m = nbytes // 4
    out = sycl.malloc_device(wg * groups, cq, dtype=np.int64)

    def cg(h: sycl.handler) -> None:
        loc = sycl.local_accessor(np.int32, sycl.range(m), h)

        def k(it):  # type: ignore[no-untyped-def]
            lid = it.get_local_id(0)
            g = it.get_group(0)
            for e in range(lid, m, wg):
                loc[e] = e * 3 + g
            it.barrier()
            s = 0
            for e in range((lid + 1) % wg, m, wg):  # written by the next work-item
                s += loc[e]
            out[it.get_global_id(0)] = s
        h.parallel_for(sycl.nd_range(sycl.range(wg * groups), sycl.range(wg)), k)

    try:
        cq.submit(cg).wait()
        got = np.empty(wg * groups, np.int64)
        cq.memcpy(got, out, got.nbytes).wait()
    finally:
        sycl.free(out, cq)
    return got


def _rotate_want(nbytes: int) -> np.ndarray:
    wg, groups, m = 256, 4, nbytes // 4
    want = np.empty(wg * groups, np.int64)
    for g in range(groups):
        for lid in range(wg):
            e = np.arange((lid + 1) % wg, m, wg, dtype=np.int64)
            want[g * wg + lid] = int((e * 3 + g).sum())
    return want


def test_local_memory_past_48_kib_up_to_the_opt_in_maximum(cq: sycl.queue) -> None:
    """info.device.local_mem_size is the opt-in maximum (227 KiB on H100/H200, not the 48
    KiB a kernel gets by default); a kernel's local accessors may use it all (the launch
    raises the kernel's CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES first), the same
    kernel's remembered launch follows each size (its C record carries it), and one byte
    more than the maximum is errc.nd_range naming local memory."""
    top = cq.get_device().get_info(sycl.info.device.local_mem_size)
    if top <= 100 * 1024:
        pytest.skip(f"this GPU has {top} bytes of shared memory a block")
    # the largest multiple of 1 KiB that leaves room for the kernel's static shared memory
    biggest = (top - 1024) // 1024 * 1024
    for nbytes in (100 * 1024, 8 * 1024, biggest, 100 * 1024):
        np.testing.assert_array_equal(_rotate_through_local_memory(cq, nbytes),
                                      _rotate_want(nbytes), err_msg=f"{nbytes} bytes")
    with pytest.raises(sycl.exception) as ei:
        _rotate_through_local_memory(cq, top + 4)
    assert ei.value.code() == sycl.errc.nd_range
    assert "local memory" in str(ei.value)
    # the GPU still works after the refusal
    np.testing.assert_array_equal(_rotate_through_local_memory(cq, 64 * 1024),
                                  _rotate_want(64 * 1024))


@pytest.mark.parametrize("shape", [(1009,), (1000,), (33, 17), (5, 6, 7)])
def test_ranges_no_block_divides_evenly(cq: sycl.queue, shape: tuple[int, ...]) -> None:
    n = int(np.prod(shape))
    out = sycl.malloc_shared(n, cq, dtype=np.int64)
    r = sycl.range(*shape)
    if len(shape) == 1:
        cq.parallel_for(r, lambda i: out.__setitem__(i, i + 1)).wait()
    else:
        cq.parallel_for(r, lambda it: out.__setitem__(it.get_linear_id(),
                                                      it.get_linear_id() + 1)).wait()
    np.testing.assert_array_equal(np.asarray(out), np.arange(1, n + 1))


def test_a_reduction_and_print(cq: sycl.queue, capfd: pytest.CaptureFixture[str]) -> None:
    n = 1 << 20
    x = sycl.malloc_shared(n, cq, dtype=np.float32)
    np.asarray(x)[:] = 1.0
    s = sycl.malloc_shared(1, cq, dtype=np.float32)
    np.asarray(s)[:] = 0
    cq.parallel_for(sycl.range(n), sycl.reduction(s, sycl.plus()),
                    lambda i, acc: acc.combine(x[i])).wait()
    assert np.asarray(s)[0] == n
    cq.single_task(lambda: print("hello from", 42)).wait()
    assert "hello from 42" in capfd.readouterr().out


def test_a_fresh_process_loads_the_cubin_from_the_cache(tmp_path) -> None:  # type: ignore[no-untyped-def]
    code = textwrap.dedent("""
        import numpy as np, pysycl as sycl
        q = sycl.queue(sycl.device.get_devices(sycl.info.device_type.gpu)[0])
        assert q.get_backend() is sycl.backend.ext_oneapi_cuda
        p = sycl.malloc_shared(64, q, dtype=np.float32)
        q.parallel_for(sycl.range(64), lambda i: p.__setitem__(i, i * 0.5)).wait()
        assert (np.asarray(p) == np.arange(64) * 0.5).all()
        s = sycl.ext.kernel_cache_stats()
        print(s["native_hits"], s["native_writes"])
    """)
    env = {**os.environ, "PYSYCL_CACHE_DIR": str(tmp_path), "PYSYCL_DEVICE_FILTER": "cuda:gpu"}
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=env, timeout=300)
    assert first.returncode == 0, first.stderr
    assert first.stdout.split() == ["0", "1"]
    second = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=env, timeout=300)
    assert second.returncode == 0, second.stderr
    assert second.stdout.split() == ["1", "0"]


def test_a_faulting_kernel_raises_names_itself_and_loses_no_host_data() -> None:
    """A kernel that faults raises errc.runtime at the wait, naming the kernel; host data is
    intact; the GPU then refuses new queues with the reason (CUDA keeps a fault for the
    process's life: NVIDIA's driver offers no in-process recovery, docs/gpu.md) while the
    process goes on running kernels on the other devices."""
    code = textwrap.dedent("""
        import numpy as np, pysycl as sycl
        dev = [d for d in sycl.device.get_devices() if d.get_backend() is sycl.backend.ext_oneapi_cuda][0]
        q = sycl.queue(dev)
        host = np.arange(16, dtype=np.float32)
        with sycl.buffer(host) as b:
            def cg(h):
                a = b.get_access(h, sycl.access_mode.read_write)
                h.parallel_for(sycl.range(16), lambda i: a.__setitem__(i, a[i] + 1))
            q.submit(cg).wait()
        bad = sycl.malloc_device(4, q, dtype=np.float32)
        step = 1 << 40
        def wild(i):
            bad[i * step] = 1.0
        try:
            q.parallel_for(sycl.range(64), wild).wait()
        except sycl.exception as e:
            print("raised", e.code(), "wild" in str(e))
        print("host", bool((host == np.arange(16) + 1).all()))
        try:
            sycl.queue(dev)
        except sycl.exception as e:
            print("new queue", e.code(), "restart" in str(e))
        hq = sycl.queue(sycl.aspect_selector(sycl.aspect.host_debuggable))
        out = np.zeros(4, np.int32)
        with sycl.buffer(out) as ob:
            hq.submit(lambda h: (lambda a: h.parallel_for(sycl.range(4), lambda i: a.__setitem__(i, i)))(
                ob.get_access(h, sycl.access_mode.write)))
        print("other device", out.tolist())
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=os.environ.copy(), timeout=300)
    assert r.returncode == 0, r.stderr
    assert "raised errc.runtime True" in r.stdout, r.stdout + r.stderr
    assert "host True" in r.stdout, r.stdout
    assert "new queue errc.runtime True" in r.stdout, r.stdout
    assert "other device [0, 1, 2, 3]" in r.stdout, r.stdout


def test_profiling_queues_time_commands_on_one_timeline() -> None:
    q = sycl.queue(CUDA[0], properties=[sycl.property.queue.enable_profiling()])
    n = 1 << 24
    p = sycl.malloc_device(n, q, dtype=np.float32)
    fill = q.fill(p, np.float32(1.0), n)

    def k(i):  # type: ignore[no-untyped-def]
        x = p[i]
        for _ in range(64):
            x = x * np.float32(1.0001) + np.float32(0.5)
        p[i] = x
    e = q.parallel_for(sycl.range(n), k)
    e.wait()
    P = sycl.info.event_profiling
    sub, start, end = (e.get_profiling_info(x) for x in
                       (P.command_submit, P.command_start, P.command_end))
    assert sub <= start <= end
    assert 1_000 < end - start < 10_000_000_000  # a real kernel: microseconds to seconds
    assert fill.get_profiling_info(P.command_end) <= start
    plain = sycl.queue(CUDA[0]).single_task(lambda: None)
    with pytest.raises(sycl.exception) as ei:
        plain.get_profiling_info(P.command_start)
    assert ei.value.code() is sycl.errc.invalid


def test_a_host_task_gets_the_stream_and_device_pointers(cq: sycl.queue) -> None:
    """``interop_handle`` on CUDA: the queue's ``CUstream`` and a device accessor's memory
    (a ``CUdeviceptr`` value) -- a driver call on that stream updates the buffer."""
    from cuda.bindings import driver as cu

    data = np.zeros(256, np.int32)
    with sycl.buffer(data) as b:
        def cg(h: sycl.handler) -> None:
            acc = b.get_access(h, sycl.access_mode.write)

            def task(ih: sycl.interop_handle) -> None:
                be = sycl.backend.ext_oneapi_cuda
                stream = ih.get_native_queue(be)
                (mem,) = ih.get_native_mem(acc, be)
                err, = cu.cuMemsetD32Async(int(mem), 7, 256, stream)
                assert err == cu.CUresult.CUDA_SUCCESS
            h.host_task(task)
        cq.submit(cg)
    assert (data == 7).all()


def test_pysycl_ls_shows_both_views_of_the_gpu() -> None:
    r = subprocess.run([sys.executable, "-m", "pysycl"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    name = CUDA[0].get_info(sycl.info.device.name)
    cuda = [i for i, ln in enumerate(lines) if ln.startswith("[ext_oneapi_cuda:gpu]")]
    assert cuda and name in lines[cuda[0]], r.stdout
    assert "usm_shared_allocations" in lines[cuda[0] + 1]
    assert lines[cuda[0] + 2].strip().startswith("Python kernels: ptx:sm_")
    if any(d.get_backend() is sycl.backend.opencl and d.get_info(sycl.info.device.name) == name
           for d in sycl.device.get_devices()):  # NVIDIA's OpenCL installed: its view too
        assert any(ln.startswith("[opencl:gpu]") and name in ln for ln in lines), r.stdout


def test_one_buffer_alternates_between_the_cuda_gpu_and_other_devices(cq: sycl.queue) -> None:
    """A buffer incremented in turn on the CUDA view of the GPU, the CPU device (where one
    runs Python kernels), the host_debuggable device and the GPU's OpenCL view: the data moves
    between the contexts as the scheduler requires and every increment lands."""
    others = [d for d in sycl.device.get_devices()
              if d.get_backend() is not sycl.backend.ext_oneapi_cuda
              and (d.image_targets or d.has(sycl.aspect.host_debuggable))]
    queues = [cq] + [sycl.queue(d) for d in others]
    data = np.arange(1000, dtype=np.float32)
    with sycl.buffer(data) as b:
        for rnd in range(3):
            for q in queues:
                def cg(h: sycl.handler) -> None:
                    a = b.get_access(h, sycl.access_mode.read_write)
                    h.parallel_for(sycl.range(1000), lambda i: a.__setitem__(i, a[i] + 1))
                q.submit(cg)
            with b.get_host_access() as hv:  # the host sees each round's result
                np.testing.assert_array_equal(hv, np.arange(1000) + (rnd + 1) * len(queues))
    np.testing.assert_array_equal(data, np.arange(1000) + 3 * len(queues))


def test_without_the_extra_one_info_line_names_it() -> None:
    """A machine with NVIDIA's driver but without cuda-bindings: no CUDA platform, and one
    info-level line (``PYSYCL_LOG=info``) naming ``pip install pysycl[cuda]``; nothing at the
    default level."""
    code = ("import sys; sys.modules['cuda.bindings'] = None; sys.modules['cuda'] = None\n"
            "import pysycl as s; print(sorted({p.get_backend().value "
            "for p in s.platform.get_platforms()}))")
    for level, hint in (("info", True), ("", False)):
        env = {**os.environ, "PYSYCL_LOG": level}
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=env, timeout=120)
        assert r.returncode == 0, r.stderr
        assert "ext_oneapi_cuda" not in r.stdout
        assert ("pip install pysycl[cuda]" in r.stderr) is hint, r.stderr
        assert r.stderr.count("pysycl[cuda]") <= 1

"""Interop of the CUDA backend with CuPy, PyTorch and JAX, both ways, without copies (issue
24): DLPack and ``__cuda_array_interface__`` export of pysycl's USM, their arrays as kernel
captures and memcpy ends, ordering with their streams, another GPU's memory refused, and
``get_native``/``make_*`` over CUDA handles. Skipped without a CUDA device; each library's
tests skip where it is not installed. "Zero bytes copied" is the same address on both
sides, and a write through one side seen by the other."""

from __future__ import annotations

import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # JAX: leave the GPU to others

import numpy as np
import pytest

import pysycl as sycl

CUDA_BACKEND = sycl.backend.ext_oneapi_cuda
CUDA = [d for d in sycl.device.get_devices() if d.get_backend() is CUDA_BACKEND]
pytestmark = pytest.mark.skipif(not CUDA, reason="no CUDA device (NVIDIA driver and "
                                "cuda-bindings: pip install pysycl[cuda])")


@pytest.fixture
def cq() -> sycl.queue:
    return sycl.queue(CUDA[0])


def _cupy():  # type: ignore[no-untyped-def]
    cp = pytest.importorskip("cupy")
    cp.cuda.Device(CUDA[0].ordinal).use()  # type: ignore[attr-defined]
    return cp


def _torch():  # type: ignore[no-untyped-def]
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch without CUDA")
    return torch


class DLPackOnly:
    """Another library's array seen through DLPack alone (no __cuda_array_interface__)."""

    def __init__(self, arr: object) -> None:
        self.arr = arr

    def __dlpack__(self, **kw: object) -> object:
        return self.arr.__dlpack__(**kw)  # type: ignore[attr-defined]

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.arr.__dlpack_device__()  # type: ignore[attr-defined,no-any-return]


class ReadOnlyCAI:
    """A CUDA array whose __cuda_array_interface__ says read-only."""

    def __init__(self, arr: object) -> None:
        cai = dict(arr.__cuda_array_interface__)  # type: ignore[attr-defined]
        cai["data"] = (cai["data"][0], True)
        self.__cuda_array_interface__ = cai
        self.arr = arr


# ------------------------------------------------------------------ export
@pytest.mark.parametrize(("kind", "code"), [("device", 2), ("host", 3), ("shared", 13)])
def test_dlpack_device_and_cai_of_every_kind(cq: sycl.queue, kind: str, code: int) -> None:
    p = getattr(sycl, f"malloc_{kind}")(256, cq, dtype=np.float32)
    assert p.__dlpack_device__() == (code, CUDA[0].ordinal)
    cai = p.__cuda_array_interface__
    assert cai["version"] == 3 and cai["shape"] == (256,) and cai["typestr"] == "<f4"
    assert cai["data"] == (p.address, False) and cai["strides"] is None
    cq.parallel_for(sycl.range(256), lambda i: p.__setitem__(i, i))
    s = p.__cuda_array_interface__["stream"]
    assert isinstance(s, int) and s not in (0,)  # a stream that follows the queue
    cq.wait()
    sycl.free(p, cq)


def test_a_kernel_writes_into_a_torch_tensor(cq: sycl.queue) -> None:
    torch = _torch()
    n = 4096
    direct = torch.empty(n, device=f"cuda:{CUDA[0].ordinal}", dtype=torch.float32)
    cq.parallel_for(sycl.range(n), lambda i: direct.__setitem__(i, i * 2.0)).wait()
    np.testing.assert_array_equal(direct.cpu().numpy(), np.arange(n, dtype=np.float32) * 2)
    via = torch.zeros(n, device=f"cuda:{CUDA[0].ordinal}", dtype=torch.int32)
    w = DLPackOnly(via)  # through __dlpack__ (torch.utils.dlpack's protocol)
    cq.parallel_for(sycl.range(n), lambda i: w.__setitem__(i, i + 1)).wait()
    np.testing.assert_array_equal(via.cpu().numpy(), np.arange(1, n + 1, dtype=np.int32))


def test_a_kernel_reads_what_torch_just_wrote(cq: sycl.queue) -> None:
    torch = _torch()
    n = 1 << 22
    out = sycl.malloc_shared(n, cq, dtype=np.float32)
    for _ in range(3):  # torch's kernels on its stream, pysycl's read ordered after them
        t = torch.full((n,), 3.0, device=f"cuda:{CUDA[0].ordinal}").mul_(2.0).add_(1.0)
        cq.parallel_for(sycl.range(n), lambda i: out.__setitem__(i, t[i])).wait()
        assert (np.asarray(out) == 7.0).all()
        cq.fill(out, np.float32(0), n).wait()
    sycl.free(out, cq)


def test_torch_reads_pysycl_memory_in_place(cq: sycl.queue) -> None:
    torch = _torch()
    n = 1024
    p = sycl.malloc_device(n, cq, dtype=np.float32)
    cq.parallel_for(sycl.range(n), lambda i: p.__setitem__(i, i * 0.5))
    t = torch.utils.dlpack.from_dlpack(p)  # ordered after the kernel by the stream protocol
    assert t.data_ptr() == p.address and t.device.type == "cuda"
    np.testing.assert_array_equal(t.cpu().numpy(), np.arange(n, dtype=np.float32) * 0.5)
    t.fill_(3.0)
    torch.cuda.synchronize()
    out = np.empty(n, np.float32)
    cq.memcpy(out, p, out.nbytes).wait()
    assert (out == 3.0).all()  # one memory
    del t
    sycl.free(p, cq)


def test_cupy_reads_pysycl_shared_usm(cq: sycl.queue) -> None:
    cp = _cupy()
    n = 1 << 16
    p = sycl.malloc_shared(n, cq, dtype=np.int32)
    cq.parallel_for(sycl.range(n), lambda i: p.__setitem__(i, i * 3))
    a = cp.from_dlpack(p)  # DLPack: kDLCUDAManaged
    assert a.data.ptr == p.address  # zero bytes copied
    assert int(a.sum()) == 3 * n * (n - 1) // 2
    b = cp.asarray(p)  # __cuda_array_interface__
    assert b.data.ptr == p.address
    b[7] = -1
    cp.cuda.runtime.deviceSynchronize()
    assert np.asarray(p)[7] == -1  # the host sees CuPy's write: one memory
    del a, b
    sycl.free(p, cq)


def test_cupy_reads_device_usm(cq: sycl.queue) -> None:
    cp = _cupy()
    p = sycl.malloc_device(1000, cq, dtype=np.float64)
    cq.parallel_for(sycl.range(1000), lambda i: p.__setitem__(i, i * 1.5))
    a = cp.from_dlpack(p)
    assert a.data.ptr == p.address
    np.testing.assert_array_equal(cp.asnumpy(a), np.arange(1000) * 1.5)
    del a
    sycl.free(p, cq)


def test_a_jax_array_is_a_kernel_input(cq: sycl.queue) -> None:
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    gpus = [d for d in jax.devices() if d.platform == "gpu"]
    if not gpus:
        pytest.skip("JAX without a GPU")
    n = 4096
    x = jax.device_put(jnp.arange(n, dtype=jnp.float32), gpus[CUDA[0].ordinal])
    out = sycl.malloc_shared(n, cq, dtype=np.float32)
    cq.parallel_for(sycl.range(n), lambda i: out.__setitem__(i, x[i] * 2.0)).wait()
    np.testing.assert_array_equal(np.asarray(out), np.arange(n, dtype=np.float32) * 2)
    y = DLPackOnly(x)  # through jax's __dlpack__
    cq.parallel_for(sycl.range(n), lambda i: out.__setitem__(i, y[i] + 1.0)).wait()
    np.testing.assert_array_equal(np.asarray(out), np.arange(n, dtype=np.float32) + 1)
    sycl.free(out, cq)


def test_a_numba_cuda_array_is_a_kernel_capture(cq: sycl.queue) -> None:
    ncuda = pytest.importorskip("numba.cuda")
    try:
        ok = ncuda.is_available()
    except Exception:
        ok = False
    if not ok:
        pytest.skip("numba without its CUDA target")
    d = ncuda.to_device(np.arange(64, dtype=np.float32))  # the primary context's memory
    out = sycl.malloc_shared(64, cq, dtype=np.float32)
    cq.parallel_for(sycl.range(64), lambda i: out.__setitem__(i, d[i] + 1.0)).wait()
    np.testing.assert_array_equal(np.asarray(out), np.arange(64, dtype=np.float32) + 1)
    sycl.free(out, cq)


def test_cupy_arrays_as_memcpy_ends(cq: sycl.queue) -> None:
    cp = _cupy()
    n = 5000
    src = cp.arange(n, dtype=cp.int64)
    p = sycl.malloc_shared(n, cq, dtype=np.int64)
    cq.memcpy(p, src, src.nbytes).wait()
    np.testing.assert_array_equal(np.asarray(p), np.arange(n))
    dst = cp.zeros(n, dtype=cp.int64)
    cq.parallel_for(sycl.range(n), lambda i: p.__setitem__(i, p[i] * 2))
    cq.copy(p, dst, n).wait()
    np.testing.assert_array_equal(cp.asnumpy(dst), np.arange(n) * 2)
    ro = ReadOnlyCAI(dst)
    with pytest.raises(sycl.exception, match="read-only") as e:
        cq.memcpy(ro, p, 8)
    assert e.value.code() is sycl.errc.invalid
    sycl.free(p, cq)


def test_a_read_only_import_cannot_be_written(cq: sycl.queue) -> None:
    cp = _cupy()
    ro = ReadOnlyCAI(cp.zeros(16, dtype=cp.float32))
    with pytest.raises(sycl.kernel_compile_error, match="read-only USM pointer"):
        cq.parallel_for(sycl.range(16), lambda i: ro.__setitem__(i, 1.0)).wait()
    out = sycl.malloc_shared(16, cq, dtype=np.float32)
    cq.parallel_for(sycl.range(16), lambda i: out.__setitem__(i, ro[i] + 2.0)).wait()
    assert (np.asarray(out) == 2.0).all()  # reading it is fine
    sycl.free(out, cq)


_SLOW = r"""
extern "C" __global__ void slow_fill(float* a, int n, float v) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    long long t0 = clock64();
    while (clock64() - t0 < 50000000LL) { }
    a[i] = v;
}
"""


@pytest.mark.parametrize("path", ["cai", "dlpack"])
def test_ordering_with_a_cupy_stream(cq: sycl.queue, path: str) -> None:
    cp = _cupy()
    n = 256
    slow = cp.RawKernel(_SLOW, "slow_fill")
    out = sycl.malloc_shared(n, cq, dtype=np.float32)
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        a = cp.zeros(n, dtype=cp.float32)
        s.synchronize()
        slow((1,), (n,), (a, np.int32(n), np.float32(7.0)))  # ~tens of ms on stream s
        src = a if path == "cai" else DLPackOnly(a)
        cq.parallel_for(sycl.range(n), lambda i: out.__setitem__(i, src[i]))
    cq.wait()
    assert (np.asarray(out) == 7.0).all()  # the queue waited for CuPy's stream
    sycl.free(out, cq)


def test_pointer_queries_of_cupy_memory(cq: sycl.queue) -> None:
    cp = _cupy()
    ctx = cq.get_context()
    a = cp.zeros(64, dtype=cp.float32)
    assert sycl.get_pointer_type(a.data.ptr, ctx) is sycl.usm.alloc.device
    assert sycl.get_pointer_type(a, ctx) is sycl.usm.alloc.device
    assert sycl.get_pointer_device(a.data.ptr, ctx) == CUDA[0]
    m = cp.cuda.malloc_managed(256)
    assert sycl.get_pointer_type(m.ptr, ctx) is sycl.usm.alloc.shared
    h = cp.cuda.alloc_pinned_memory(256)
    assert sycl.get_pointer_type(h.ptr, ctx) is sycl.usm.alloc.host
    assert sycl.get_pointer_type(np.zeros(4).ctypes.data, ctx) is sycl.usm.alloc.unknown


def test_another_gpus_memory_is_refused(cq: sycl.queue) -> None:
    cp = _cupy()
    if len(CUDA) < 2:
        pytest.skip("one CUDA device")
    with cp.cuda.Device(CUDA[1].ordinal):  # type: ignore[attr-defined]
        other = cp.zeros(8, dtype=cp.float32)
    with pytest.raises(sycl.exception) as e:
        cq.parallel_for(sycl.range(8), lambda i: other.__setitem__(i, 1.0)).wait()
    assert e.value.code() is sycl.errc.invalid
    msg = str(e.value)
    assert f"CUDA device {CUDA[1].ordinal}" in msg and CUDA[0].display_name in msg
    with pytest.raises(sycl.exception) as e:
        cq.memcpy(np.zeros(8, np.float32), other, 32)
    assert e.value.code() is sycl.errc.invalid


# ------------------------------------------------------------------ get_native / make_*
def test_get_native_and_make_round_trips(cq: sycl.queue) -> None:
    from cuda.bindings import driver as cu

    dev, ctx = CUDA[0], cq.get_context()
    h = sycl.get_native(dev, CUDA_BACKEND)
    assert isinstance(h, cu.CUdevice) and int(h) == dev.ordinal  # type: ignore[attr-defined]
    assert sycl.make_device(h) == dev
    assert sycl.make_device(int(h), backend=CUDA_BACKEND) == dev
    plat = sycl.get_native(dev.get_platform(), CUDA_BACKEND)
    assert [int(x) for x in plat] == [d.ordinal for d in CUDA]  # type: ignore[attr-defined]
    c = sycl.get_native(ctx, CUDA_BACKEND)
    assert isinstance(c, cu.CUcontext)
    err, prim = cu.cuDevicePrimaryCtxRetain(h)
    assert not err and int(prim) == int(c)  # the primary context
    cu.cuDevicePrimaryCtxRelease(h)
    assert sycl.make_context(c).get_devices() == [dev]
    s = sycl.get_native(cq, CUDA_BACKEND)
    assert isinstance(s, cu.CUstream)
    q2 = sycl.make_queue(s, ctx)
    assert int(sycl.get_native(q2, CUDA_BACKEND)) == int(s)
    p = sycl.malloc_shared(64, q2, dtype=np.int32)
    ev = q2.parallel_for(sycl.range(64), lambda i: p.__setitem__(i, 64 - i))
    ce = sycl.get_native(ev, CUDA_BACKEND)
    assert isinstance(ce, cu.CUevent)
    sycl.make_event(ce, ctx).wait()
    np.testing.assert_array_equal(np.asarray(p), 64 - np.arange(64))
    ptr = sycl.get_native(p, CUDA_BACKEND)
    assert int(ptr) == p.address
    with pytest.raises(sycl.exception) as e:
        sycl.get_native(dev, sycl.backend.opencl)
    assert e.value.code() is sycl.errc.backend_mismatch
    sycl.free(p, cq)


def test_make_queue_over_a_cupy_stream(cq: sycl.queue) -> None:
    cp = _cupy()
    s = cp.cuda.Stream(non_blocking=True)
    q = sycl.make_queue(s.ptr, cq.get_context(), backend=CUDA_BACKEND)
    p = sycl.malloc_shared(128, q, dtype=np.float32)
    q.parallel_for(sycl.range(128), lambda i: p.__setitem__(i, i + 0.25))
    s.synchronize()  # the kernel ran on CuPy's stream: CuPy's wait covers it
    np.testing.assert_array_equal(np.asarray(p), np.arange(128, dtype=np.float32) + 0.25)
    sycl.free(p, q)


def test_a_queue_over_a_stream_its_owner_destroyed_breaks_no_other_queue(cq: sycl.queue) -> None:
    """A queue made over CuPy's stream outlives the stream (unreachable, not yet collected,
    or kept): ``sycl.free`` -- which finishes every queue of the context -- and that queue's
    own ``wait`` go by pysycl's events, never the destroyed stream (a query of it failed with
    CUDA_ERROR_CONTEXT_IS_DESTROYED or crashed the process); DLPack exports go on."""
    cp = _cupy()
    s = cp.cuda.Stream(non_blocking=True)
    q = sycl.make_queue(s.ptr, cq.get_context(), backend=CUDA_BACKEND)
    p = sycl.malloc_device(256, cq, dtype=np.int32)
    q.parallel_for(sycl.range(256), lambda i: p.__setitem__(i, 3 * i))
    s.synchronize()
    del s  # CuPy destroys its stream; the queue over it lives on
    import gc
    gc.collect()
    cp.cuda.Stream(non_blocking=True)  # (a new stream may take the old one's place)
    q.wait()
    out = np.empty(256, np.int32)
    cq.memcpy(out, p, out.nbytes).wait()
    np.testing.assert_array_equal(out, 3 * np.arange(256))
    x = sycl.malloc_device(64, cq, dtype=np.float32)
    cq.fill(x, np.float32(1.5), 64).wait()
    np.testing.assert_array_equal(cp.asnumpy(cp.from_dlpack(x)), np.full(64, 1.5, np.float32))
    sycl.free(x, cq)
    sycl.free(p, cq)  # finishes q too, by its newest event
    assert q.get_context() == cq.get_context()


_SPIN = r"""extern "C" __global__ void spin(long long ns) {
    long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
}"""


def test_a_queue_over_an_application_stream_waits_for_its_own_commands(cq: sycl.queue) -> None:
    """``q.wait()`` on a queue over CuPy's stream waits for the queue's commands, not for
    work CuPy put on the stream after them (2 s of it here)."""
    import time

    cp = _cupy()
    s = cp.cuda.Stream(non_blocking=True)
    q = sycl.make_queue(s.ptr, cq.get_context(), backend=CUDA_BACKEND)
    p = sycl.malloc_device(256, q, dtype=np.int32)
    q.parallel_for(sycl.range(256), lambda i: p.__setitem__(i, 5 * i))
    with s:
        cp.RawKernel(_SPIN, "spin")((1,), (1,), (np.int64(2_000_000_000),))
    t = time.perf_counter()
    q.wait()
    took = time.perf_counter() - t
    out = np.empty(256, np.int32)
    cq.memcpy(out, p, out.nbytes).wait()
    np.testing.assert_array_equal(out, 5 * np.arange(256))
    assert took < 1.0, f"q.wait() took {took:.2f} s: it waited for CuPy's work too"
    s.synchronize()
    sycl.free(p, cq)


def test_make_context_refuses_a_non_primary_context() -> None:
    from cuda.bindings import driver as cu

    _, dev = cu.cuDeviceGet(CUDA[0].ordinal)  # type: ignore[attr-defined]
    r = cu.cuCtxCreate(None, 0, dev)  # cuda-bindings 13: (params, flags, device)
    if r[0]:
        pytest.skip(f"cuCtxCreate: {r[0]}")
    own = r[1]
    try:
        with pytest.raises(sycl.exception, match="primary context") as e:
            sycl.make_context(own)
        assert e.value.code() is sycl.errc.invalid
    finally:
        cu.cuCtxDestroy(own)


def _external_stream(cp, handle: int):  # type: ignore[no-untyped-def]
    """CuPy's view of a stream it did not make (``Stream.from_external`` where CuPy has it:
    ``ExternalStream`` is deprecated there)."""
    if hasattr(cp.cuda.Stream, "from_external"):
        class Handle:
            def __cuda_stream__(self) -> tuple[int, int]:
                return (0, handle)
        return cp.cuda.Stream.from_external(Handle())
    return cp.cuda.ExternalStream(handle)


def test_a_host_task_gets_cuda_handles(cq: sycl.queue) -> None:
    cp = _cupy()
    from cuda.bindings import driver as cu

    a = np.arange(16, dtype=np.float32)
    seen: list[object] = []
    with sycl.buffer(a) as B:
        def cg(h: sycl.handler) -> None:
            acc = B.get_access(h, sycl.access_mode.read_write)

            def task(ih: sycl.interop_handle) -> None:
                s = ih.get_native_queue(backend=CUDA_BACKEND)
                (mem,) = ih.get_native_mem(acc, backend=CUDA_BACKEND)
                seen.append(ih.get_native_context(backend=CUDA_BACKEND))
                seen.append(ih.get_native_device(backend=CUDA_BACKEND))
                with _external_stream(cp, int(s)):  # CuPy works on the queue's stream
                    raw = cp.cuda.UnownedMemory(int(mem), a.nbytes, None, CUDA[0].ordinal)
                    arr = cp.ndarray((16,), cp.float32, cp.cuda.MemoryPointer(raw, 0))
                    arr *= 2
            h.host_task(task)
        cq.submit(cg)
        cq.wait_and_throw()  # an error inside the task is asynchronous: surface it here
    np.testing.assert_array_equal(a, np.arange(16, dtype=np.float32) * 2)
    assert isinstance(seen[0], cu.CUcontext) and isinstance(seen[1], cu.CUdevice)

"""OpenCL interop: get_native, make_*, sycl.opencl.create_bundle/get_reference_count."""

from __future__ import annotations

import warnings

import numpy as np
import pyopencl as cl  # interop tests create native objects themselves
import pytest

import pysycl as sycl

SRC = "__kernel void inc(__global int* x) { x[get_global_id(0)] += 1; }"


def test_get_native_returns_pyopencl_objects(clq):
    dev, ctx = clq.get_device(), clq.get_context()
    assert isinstance(sycl.get_native(dev.get_platform()), cl.Platform)
    assert isinstance(sycl.get_native(dev), cl.Device)
    assert isinstance(sycl.get_native(ctx), cl.Context)
    assert isinstance(sycl.get_native(clq), cl.CommandQueue)
    x = np.zeros(4, np.int32)
    with sycl.buffer(x) as X:
        ev = clq.submit(lambda h: h.fill(X.get_access(h, sycl.access_mode.write), 3))
        natives = sycl.get_native(ev)
        assert len(natives) == 1 and isinstance(natives[0], cl.Event)
        mems = sycl.get_native(X)
        assert len(mems) == 1 and isinstance(mems[0], cl.Buffer)
    assert sycl.get_native(sycl.event()) == []
    with pytest.raises(TypeError):
        sycl.get_native(42)


def test_get_native_backend_mismatch(clq):
    for obj in (clq, clq.get_device(), clq.get_context()):
        with pytest.raises(sycl.exception) as ei:
            sycl.get_native(obj, sycl.backend.ext_pysycl_host)
        assert ei.value.code() == sycl.errc.backend_mismatch
    with sycl.buffer(np.zeros(2, np.int32)) as B:
        with pytest.raises(sycl.exception) as ei:
            sycl.get_native(B, sycl.backend.ext_pysycl_host)
        assert ei.value.code() == sycl.errc.backend_mismatch


def test_make_roundtrips(clq):
    dev, ctx = clq.get_device(), clq.get_context()
    assert sycl.make_platform(sycl.get_native(dev.get_platform())) == dev.get_platform()
    assert sycl.make_device(sycl.get_native(dev)) == dev
    ctx2 = sycl.make_context(sycl.get_native(ctx))
    assert ctx2 == ctx and ctx2.get_devices() == ctx.get_devices()
    native_q = cl.CommandQueue(sycl.get_native(ctx), sycl.get_native(dev))
    q2 = sycl.make_queue(native_q, ctx)
    assert q2.get_device() == dev and q2.get_context() == ctx
    x = np.zeros(8, np.int32)
    with sycl.buffer(x) as X:
        q2.submit(lambda h: h.fill(X.get_access(h, sycl.access_mode.write), 5)).wait()
    assert x.tolist() == [5] * 8
    ev = sycl.make_event(cl.enqueue_marker(native_q), ctx)
    ev.wait()
    with pytest.raises(TypeError):
        sycl.make_device("dev")


def test_make_queue_and_event_other_context(clq):
    other = sycl.context(clq.get_device())
    native_q = cl.CommandQueue(sycl.get_native(other), sycl.get_native(clq.get_device()))
    with pytest.raises(sycl.exception) as ei:
        sycl.make_queue(native_q, clq.get_context())
    assert ei.value.code() == sycl.errc.invalid
    with pytest.raises(sycl.exception) as ei:
        sycl.make_event(cl.enqueue_marker(native_q), clq.get_context())
    assert ei.value.code() == sycl.errc.invalid


def _program(ctx, src=SRC):
    return cl.Program(cl._cl._Program(sycl.get_native(ctx), src))


def _built(ctx):
    prg = _program(ctx)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", cl.CompilerWarning)  # the driver's chatty log
            prg.build()
    except cl.RuntimeError as e:
        if "unknown target CPU" in str(e):
            pytest.skip("PoCL cannot compile OpenCL C on this host's CPU")
        raise
    return prg


def _run_inc(q, k):
    x = np.arange(6, dtype=np.int32)
    with sycl.buffer(x) as X:
        def cg(h):
            h.set_arg(0, X.get_access(h, sycl.access_mode.read_write))
            h.parallel_for(sycl.range(6), k)
        q.submit(cg)
    return x


def test_create_bundle_from_programs_in_every_state(clq):
    ctx, devs = clq.get_context(), [clq.get_device()]
    exe = sycl.opencl.create_bundle(ctx, devs, [_built(ctx)])
    assert exe.get_state() is sycl.bundle_state.executable
    assert _run_inc(clq, exe.ext_pysycl_get_kernel_by_name("inc")).tolist() == list(range(1, 7))
    inp = sycl.opencl.create_bundle(ctx, devs, [_program(ctx)], state=sycl.bundle_state.input)
    exe2 = sycl.build(inp)
    assert _run_inc(clq, exe2.ext_pysycl_get_kernel_by_name("inc"))[0] == 1
    obj = sycl.opencl.create_bundle(ctx, devs, [_program(ctx)], state=sycl.bundle_state.object)
    assert obj.get_state() is sycl.bundle_state.object
    exe3 = sycl.opencl.create_bundle(ctx, devs, [_program(ctx)])  # compiled and linked
    assert _run_inc(clq, exe3.ext_pysycl_get_kernel_by_name("inc"))[0] == 1
    assert isinstance(sycl.get_native(exe3)[0], cl.Program)


def test_create_bundle_state_errors(clq):
    ctx, devs = clq.get_context(), [clq.get_device()]
    built = _built(ctx)
    for st in (sycl.bundle_state.input, sycl.bundle_state.object):
        with pytest.raises(sycl.exception) as ei:
            sycl.opencl.create_bundle(ctx, devs, [built], state=st)
        assert ei.value.code() == sycl.errc.invalid
    with pytest.raises(sycl.exception) as ei:
        sycl.make_kernel_bundle(built, ctx, state=sycl.bundle_state.object)
    assert ei.value.code() == sycl.errc.invalid
    bad = _program(ctx, "__kernel void f(__global int* x) { x[0] = nope; }")
    with pytest.raises(sycl.exception) as ei:
        sycl.opencl.create_bundle(ctx, devs, [bad])
    assert ei.value.code() == sycl.errc.build
    other = sycl.context(clq.get_device())
    with pytest.raises(sycl.exception) as ei:
        sycl.opencl.create_bundle(other, devs, [built])
    assert ei.value.code() == sycl.errc.invalid
    with pytest.raises(TypeError):
        sycl.opencl.create_bundle(ctx, devs, ["not a program"])


def test_kernels_interop_and_reference_count(clq):
    ctx = clq.get_context()
    prg = _built(ctx)
    clk = cl.Kernel(prg, "inc")
    before = sycl.opencl.get_reference_count(clk)
    k = sycl.make_kernel(clk, ctx)
    assert sycl.opencl.get_reference_count(clk) >= before
    assert _run_inc(clq, k)[5] == 6
    kb = sycl.opencl.create_bundle(ctx, [clq.get_device()], [cl.Kernel(prg, "inc")])
    assert _run_inc(clq, kb.ext_pysycl_get_kernel_by_name("inc"))[0] == 1
    assert isinstance(sycl.get_native(k), cl.Kernel)
    assert sycl.opencl.get_reference_count(sycl.get_native(ctx)) >= 1
    assert sycl.opencl.get_reference_count(sycl.get_native(clq)) >= 1
    with pytest.raises(TypeError):
        sycl.opencl.get_reference_count(sycl.get_native(clq.get_device().get_platform()))
    assert sycl.make_kernel_bundle(prg, ctx, state=sycl.bundle_state.executable) \
        .get_state() is sycl.bundle_state.executable


def test_has_extension(cl_device):
    exts = cl_device.get_info(sycl.info.device.extensions) if hasattr(
        sycl.info.device, "extensions") else []
    for e in exts[:3]:
        assert sycl.opencl.has_extension(cl_device, e)
    assert not sycl.opencl.has_extension(cl_device.get_platform(), "cl_no_such_ext")


def test_usm_pointers_are_set_arg_arguments_of_opencl_c_kernels(clq):
    """An OpenCL C kernel takes a USM pointer for its ``__global int *`` (an SVM argument)."""
    ctx, devs = clq.get_context(), [clq.get_device()]
    k = sycl.opencl.create_bundle(ctx, devs, [_built(ctx)]).ext_pysycl_get_kernel_by_name("inc")
    p = sycl.malloc_device(6, clq, dtype=np.int32)
    clq.memcpy(p, np.arange(6, dtype=np.int32), 24).wait()

    def cg(h):
        h.set_arg(0, p + 1)  # an offset pointer: elements 1..5
        h.parallel_for(sycl.range(5), k)

    clq.submit(cg).wait()
    out = np.zeros(6, np.int32)
    clq.memcpy(out, p, 24).wait()
    assert out.tolist() == [0, 2, 3, 4, 5, 6]
    sycl.free(p, clq)

    def freed(h):
        h.set_arg(0, p)
        h.parallel_for(sycl.range(5), k)

    with pytest.raises(sycl.exception) as ei:
        clq.submit(freed)
    assert ei.value.code() == sycl.errc.invalid and "freed" in str(ei.value)

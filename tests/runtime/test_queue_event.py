"""Queues, events, profiling, async errors and shortcuts on every real device."""

from __future__ import annotations

import numpy as np
import pytest

import pysycl as sycl


def test_queue_constructors(cl_device: sycl.device) -> None:
    ctx = sycl.context(cl_device)
    q1 = sycl.queue(cl_device)
    q2 = sycl.queue(ctx, cl_device)
    q3 = sycl.queue(ctx, lambda d: 1 if d == cl_device else -1)
    q4 = sycl.queue(lambda d: 1 if d == cl_device else -1)
    for qq in (q1, q2, q3, q4):
        assert qq.get_device() == cl_device
        assert cl_device in qq.get_context().get_devices()
    assert q2.get_context() == ctx and q3.get_context() == ctx
    assert q1.get_info(sycl.info.queue.device) == cl_device
    assert q1 == q1 and q1 != q2 and len({q1, q2, q1}) == 2


def test_default_queue_can_run_python_kernels() -> None:
    q = sycl.queue()
    assert q.get_device().image_targets  # SPIR-V or PTX


def test_queue_with_device_outside_context(cl_device: sycl.device) -> None:
    others = [d for d in sycl.device.get_devices() if d.get_platform() != cl_device.get_platform()]
    if not others:
        pytest.skip("needs devices of two platforms")
    ctx = sycl.context(others[0])
    with pytest.raises(sycl.exception) as ei:
        sycl.queue(ctx, cl_device)
    assert ei.value.code() == sycl.errc.invalid and "not in the queue's context" in str(ei.value)


def test_selector_rejecting_everything_is_runtime_error() -> None:
    with pytest.raises(sycl.exception) as ei:
        sycl.queue(lambda d: -1)
    assert ei.value.code() == sycl.errc.runtime


def test_profiling_timestamps_are_ordered(cl_device: sycl.device) -> None:
    if not cl_device.has(sycl.aspect.queue_profiling):
        pytest.skip("device has no queue_profiling")
    q = sycl.queue(cl_device, properties=[sycl.property.queue.enable_profiling()])
    A = sycl.buffer(sycl.range(1 << 20), dtype=np.float32)
    ev = q.submit(lambda h: h.fill(A.get_access(h, sycl.access_mode.write), 1.0))
    s = ev.get_profiling_info(sycl.info.event_profiling.command_submit)
    b = ev.get_profiling_info(sycl.info.event_profiling.command_start)
    e = ev.get_profiling_info(sycl.info.event_profiling.command_end)
    assert 0 < s <= b <= e
    assert q.has_property(sycl.property.queue.enable_profiling)


def test_profiling_without_property_is_invalid(clq: sycl.queue) -> None:
    A = sycl.buffer(sycl.range(16), dtype=np.float32)
    ev = clq.submit(lambda h: h.fill(A.get_access(h, sycl.access_mode.write), 1.0))
    with pytest.raises(sycl.exception) as ei:
        ev.get_profiling_info(sycl.info.event_profiling.command_start)
    assert ei.value.code() == sycl.errc.invalid and "enable_profiling" in str(ei.value)


def test_get_property_missing_is_invalid(clq: sycl.queue) -> None:
    assert not clq.is_in_order()
    with pytest.raises(sycl.exception) as ei:
        clq.get_property(sycl.property.queue.in_order)
    assert ei.value.code() == sycl.errc.invalid


def test_in_order_queue_runs_in_submission_order(cl_device: sycl.device) -> None:
    q = sycl.queue(cl_device, properties=[sycl.property.queue.in_order()])
    assert q.is_in_order()
    a = np.zeros(4096, np.int32)
    with sycl.buffer(a) as A:
        for v in range(1, 6):
            q.fill(sycl.accessor(A, None, sycl.access_mode.write), v)
    assert (a == 5).all()


def test_async_handler_receives_host_task_errors(cl_device: sycl.device) -> None:
    got: list[sycl.exception_list] = []
    q = sycl.queue(cl_device, got.append)

    def boom() -> None:
        raise ValueError("host task failed")

    q.submit(lambda h: h.host_task(boom))
    assert got == []  # asynchronous: nothing delivered until a synchronization point
    q.wait_and_throw()
    assert len(got) == 1 and len(got[0]) == 1
    err = next(iter(got[0]))
    assert isinstance(err, ValueError) and "host task failed" in str(err)
    q.wait_and_throw()
    assert len(got) == 1  # delivered once


def test_default_async_handler_raises_at_throw_asynchronous(clq: sycl.queue) -> None:
    clq.submit(lambda h: h.host_task(lambda: 1 / 0))
    with pytest.raises(sycl.exception) as ei:
        clq.throw_asynchronous()
    assert ei.value.code() == sycl.errc.runtime and "ZeroDivisionError" in str(ei.value)


def test_host_task_sees_device_results(clq: sycl.queue) -> None:
    A = sycl.buffer(sycl.range(8), dtype=np.int32)
    clq.submit(lambda h: h.fill(A.get_access(h, sycl.access_mode.write), 6))
    seen = []

    def cgf(h: sycl.handler) -> None:
        acc = A.get_access(h, sycl.access_mode.read_write)
        h.host_task(lambda: (seen.append(int(acc[3])), acc.__setitem__(3, 100)))

    clq.submit(cgf)
    with sycl.host_accessor(A, sycl.access_mode.read) as ha:
        assert seen == [6] and ha[3] == 100 and ha[2] == 6


def test_event_default_is_complete() -> None:
    ev = sycl.event()
    ev.wait()
    assert ev.get_info(sycl.info.event.command_execution_status) == \
        sycl.info.event_command_status.complete


def test_shortcut_fill_and_copy(clq: sycl.queue) -> None:
    a = np.zeros(10, np.float64)
    out = np.empty(10, np.float64)
    with sycl.buffer(a) as A:
        e = clq.fill(sycl.accessor(A, None, sycl.access_mode.write), 2.0)
        clq.copy(sycl.accessor(A, None, sycl.access_mode.read), out, depends_on=e).wait()
    assert (out == 2.0).all() and (a == 2.0).all()


def test_exception_api() -> None:
    e = sycl.exception(sycl.errc.nd_range, "bad range")
    assert e.code() == sycl.errc.nd_range and e.what() == "bad range"
    assert not e.has_context() and e.category() == "sycl"
    with pytest.raises(sycl.exception) as ei:
        e.get_context()
    assert ei.value.code() == sycl.errc.invalid
    names = {c.name for c in sycl.errc}
    assert names == {"success", "runtime", "kernel", "accessor", "nd_range", "event",
                     "kernel_argument", "build", "invalid", "memory_allocation", "platform",
                     "profiling", "feature_not_supported", "kernel_not_supported",
                     "backend_mismatch"}


def test_memory_allocation_error_keeps_cl_code(clq: sycl.queue) -> None:
    huge = clq.get_device().get_info(sycl.info.device.max_mem_alloc_size) * 4
    B = sycl.buffer(sycl.range(huge // 4 + 1024), dtype=np.float32) if huge < (1 << 40) else None
    if B is None:
        pytest.skip("device allows very large allocations")
    with pytest.raises(sycl.exception) as ei:
        clq.fill(sycl.accessor(B, None, sycl.access_mode.write), 0.0).wait()
    assert ei.value.code() in (sycl.errc.memory_allocation, sycl.errc.runtime)


def test_opencl_error_code_of_failed_allocation(clq: sycl.queue) -> None:
    dev = clq.get_device()
    # More than the device has at all: NVIDIA's OpenCL accepts buffers past
    # max_mem_alloc_size, so that alone is not an allocation failure there.
    limit = max(dev.get_info(sycl.info.device.max_mem_alloc_size),
                dev.get_info(sycl.info.device.global_mem_size))
    B = sycl.buffer(sycl.range((limit + (1 << 30)) // 4), dtype=np.float32)  # never touched on host
    with pytest.raises(sycl.exception) as ei:
        clq.fill(sycl.accessor(B, None, sycl.access_mode.write, properties=[sycl.no_init]), 0.0).wait()
    code = sycl.opencl.get_error_code(ei.value)
    assert code is not None and code < 0
    assert ei.value.code() in (sycl.errc.memory_allocation, sycl.errc.invalid, sycl.errc.runtime)


def test_opencl_has_extension(cl_device: sycl.device) -> None:
    exts = cl_device._cl.extensions.split()
    assert sycl.opencl.has_extension(cl_device, exts[0])
    assert not sycl.opencl.has_extension(cl_device, "cl_pysycl_no_such_extension")
    assert sycl.opencl.has_extension(cl_device.get_platform(), "cl_khr_icd") == (
        "cl_khr_icd" in cl_device._cl.platform.extensions.split())


def test_one_property_where_a_list_is_meant(kq: sycl.queue) -> None:
    """``properties=prop`` (one property, not a list) means ``[prop]``: a queue's, and a
    reduction's (USM and buffer forms), each checked by what it does."""
    device = kq.get_device()
    q = sycl.queue(device, properties=sycl.property.queue.enable_profiling())
    assert q.has_property(sycl.property.queue.enable_profiling)
    init = sycl.property.reduction.initialize_to_identity()
    p = sycl.malloc_device(1, q, dtype=np.float32)
    q.memcpy(p, np.full(1, 5, np.float32), 4).wait()
    q.parallel_for(sycl.range(10), sycl.reduction(p, sycl.plus(), properties=init),
                   lambda i, r: r.combine(1.0)).wait()
    got = np.zeros(1, np.float32)
    q.memcpy(got, p, 4).wait()
    assert got[0] == 10  # the old 5 discarded
    sycl.free(p, q)
    total = np.full(1, 7, np.float32)
    with sycl.buffer(total) as S:
        q.submit(lambda h: h.parallel_for(
            sycl.range(10), sycl.reduction(S, h, sycl.plus(), properties=init),
            lambda i, r: r.combine(1.0)))
    assert total[0] == 10
    with pytest.raises(TypeError, match="not a sycl property"):
        sycl.queue(device, properties=[sycl.property.queue.in_order(), 3])


def test_a_property_passed_positionally_names_the_keyword(device: sycl.device) -> None:
    """``sycl.queue(dev, prop)`` (C++'s property_list argument) says properties are a keyword."""
    with pytest.raises(TypeError, match="properties are a keyword argument"):
        sycl.queue(device, sycl.property.queue.enable_profiling())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="properties are a keyword argument"):
        sycl.queue(device, [sycl.property.queue.in_order()])  # type: ignore[arg-type]
    q = sycl.queue(device, properties=[sycl.property.queue.enable_profiling()])
    assert q.has_property(sycl.property.queue.enable_profiling)

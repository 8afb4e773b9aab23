"""``host_task`` with an ``interop_handle`` (SYCL 2020 §4.10; issue 21, item 5).

SYCL 2020 §4.10.2: ``get_native_mem(acc)`` returns the native memory object of a
device accessor's buffer "in a state where it represents the memory in its current
state within the SYCL runtime dependency model", and native work through a write
accessor is the buffer's data afterwards. In the OpenCL backend appendix
(sycl2020-opencl-backend.adoc, table "List of native types") a buffer's native type
is ``std::vector<cl_mem>``: pysycl returns ``[pyopencl.Buffer]``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyopencl as cl
import pytest

import pysycl as sycl

R, W, RW = sycl.access_mode.read, sycl.access_mode.write, sycl.access_mode.read_write


def test_native_write_after_read_only_use_is_seen(clq: sycl.queue) -> None:
    """The issue's case: after a read-only pysycl access the host copy is current too;
    native writes through a write accessor's memory must still reach the host."""
    a = np.arange(8, dtype=np.float32)
    seen = np.zeros(8, np.float32)
    with sycl.buffer(a) as A:
        clq.submit(lambda h: h.copy(A.get_access(h, R), seen)).wait()  # read-only use

        def cg(h: sycl.handler) -> None:
            w = A.get_access(h, W)

            def task(ih: sycl.interop_handle) -> None:
                [mem] = ih.get_native_mem(w)
                cl.enqueue_copy(ih.get_native_queue(), mem, np.full(8, 42, np.float32))

            h.host_task(task)

        clq.submit(cg).wait_and_throw()
        with sycl.host_accessor(A, R) as ha:
            np.testing.assert_array_equal(np.asarray(ha), np.full(8, 42, np.float32))
    np.testing.assert_array_equal(a, np.full(8, 42, np.float32))  # and written back
    np.testing.assert_array_equal(seen, np.arange(8, dtype=np.float32))


@pytest.mark.filterwarnings("ignore::pyopencl.CompilerWarning")  # the build log is not empty
def test_native_kernel_in_host_task_updates_the_buffer(kq: sycl.queue) -> None:
    if kq.get_backend() is not sycl.backend.opencl:
        pytest.skip("runs an OpenCL C kernel through pyopencl (tests/cuda_backend has CUDA's)")
    """A pyopencl kernel run on the native queue over a read_write accessor's memory."""
    a = np.arange(16, dtype=np.int32)
    with sycl.buffer(a) as A:
        def cg(h: sycl.handler) -> None:
            rw = A.get_access(h, RW)

            def task(ih: sycl.interop_handle) -> None:
                prg = cl.Program(ih.get_native_context(), """
                    __kernel void twice(__global int *x) { x[get_global_id(0)] *= 2; }
                """).build(devices=[ih.get_native_device()], cache_dir=False)
                [mem] = ih.get_native_mem(rw)
                prg.twice(ih.get_native_queue(), (16,), None, mem)

            h.host_task(task)

        q2 = sycl.queue(kq.get_context(), kq.get_device())
        q2.submit(cg).wait_and_throw()
        out = np.zeros(16, np.int32)
        kq.submit(lambda h: h.copy(A.get_access(h, R), out)).wait()  # another queue sees it
        np.testing.assert_array_equal(out, 2 * np.arange(16))
    np.testing.assert_array_equal(a, 2 * np.arange(16))


def test_native_memory_holds_the_current_data_before_the_task(clq: sycl.queue) -> None:
    """Host writes (a host_accessor) are uploaded before the task reads natively."""
    got = np.zeros(4, np.float64)
    with sycl.buffer(np.zeros(4)) as A:
        with sycl.host_accessor(A) as ha:
            ha[...] = [1.0, 2.0, 3.0, 4.0]

        def cg(h: sycl.handler) -> None:
            r = A.get_access(h, R)
            h.host_task(lambda ih: cl.enqueue_copy(ih.get_native_queue(), got,
                                                   ih.get_native_mem(r)[0]))

        clq.submit(cg).wait_and_throw()
    np.testing.assert_array_equal(got, [1.0, 2.0, 3.0, 4.0])


def test_get_native_of_a_buffer_lists_its_memory_objects(clq: sycl.queue) -> None:
    """``get_native(buffer)`` is the backend appendix's "list of active buffers": none
    before a command used the buffer, then one per context that holds a copy."""
    with sycl.buffer(np.zeros(4, np.int32)) as A:
        assert sycl.get_native(A) == []

        def cg(h: sycl.handler) -> None:
            w = A.get_access(h, W)
            h.host_task(lambda ih: mems.extend(ih.get_native_mem(w)))

        mems: list[Any] = []
        clq.submit(cg).wait_and_throw()
        assert sycl.get_native(A) == mems and isinstance(mems[0], cl.Buffer)
        assert mems[0].size == 16 and mems[0].context == clq.get_context().native


def test_get_native_mem_checks_its_accessor_and_backend(clq: sycl.queue) -> None:
    errors: list[tuple[str, sycl.errc]] = []
    kept: list[sycl.interop_handle] = []
    with sycl.buffer(np.zeros(4, np.int32)) as A, sycl.buffer(np.zeros(4, np.int32)) as B:
        other = sycl.accessor(B, R)  # a placeholder, never required by the task's group

        def cg(h: sycl.handler) -> None:
            w = A.get_access(h, W)
            ht = sycl.accessor(A, h, R, sycl.target.host_task)

            def task(ih: sycl.interop_handle) -> None:
                kept.append(ih)
                assert ih.get_backend() is sycl.backend.opencl
                assert ht[0] == 0  # a target.host_task accessor is indexed on the host
                for what, call in (("other", lambda: ih.get_native_mem(other)),
                                   ("host_task", lambda: ih.get_native_mem(ht)),
                                   ("backend", lambda: ih.get_native_queue(
                                       backend=sycl.backend.ext_pysycl_host))):
                    try:
                        call()
                    except sycl.exception as e:
                        errors.append((what, e.code()))
                ih.get_native_mem(w)

            h.host_task(task)

        clq.submit(cg).wait_and_throw()
    assert errors == [("other", sycl.errc.invalid), ("host_task", sycl.errc.invalid),
                      ("backend", sycl.errc.backend_mismatch)]
    with pytest.raises(sycl.exception, match="valid only while its host task runs") as ei:
        kept[0].get_native_queue()
    assert ei.value.code() == sycl.errc.invalid


def test_host_device_interop_handle_has_no_native_objects(hq: sycl.queue) -> None:
    a = np.zeros(3, np.int64)
    codes: list[sycl.errc] = []
    with sycl.buffer(a) as A:
        def cg(h: sycl.handler) -> None:
            w = A.get_access(h, W)

            def task(ih: sycl.interop_handle) -> None:
                assert ih.get_backend() is sycl.backend.ext_pysycl_host
                host = sycl.backend.ext_pysycl_host
                assert ih.get_native_queue(backend=host) is None  # as sycl.get_native says
                assert ih.get_native_context(backend=host) is None
                assert ih.get_native_device(backend=host) is None
                w[1] = 5  # the host device's accessors are host memory
                for call in (ih.get_native_queue, lambda: ih.get_native_mem(w),
                             lambda: ih.get_native_mem(w, backend=sycl.backend.ext_pysycl_host)):
                    try:
                        call()
                    except sycl.exception as e:
                        codes.append(e.code())

            h.host_task(task)

        hq.submit(cg).wait_and_throw()
    assert codes == [sycl.errc.backend_mismatch] * 3
    np.testing.assert_array_equal(a, [0, 5, 0])


def test_host_task_parameters_decide_whether_it_gets_an_interop_handle(clq: sycl.queue) -> None:
    got: list[Any] = []
    for k in range(2):
        clq.submit(lambda h, k=k: h.host_task(lambda k=k: got.append(k)))  # defaults: nullary
    clq.submit(lambda h: h.host_task(lambda ih: got.append(type(ih))))
    clq.wait_and_throw()
    assert got == [0, 1, sycl.interop_handle]
    with pytest.raises(TypeError, match=r"requires the parameters \['a', 'b'\]"):
        clq.submit(lambda h: h.host_task(lambda a, b: None))


def test_get_native_mem_of_a_sub_buffer_is_the_root_buffer(clq: sycl.queue) -> None:
    a = np.zeros((4, 3), np.int16)
    with sycl.buffer(a) as A:
        S = sycl.buffer(A, sycl.id(2, 0), sycl.range(2, 3))

        def cg(h: sycl.handler) -> None:
            w = S.get_access(h, W)

            def task(ih: sycl.interop_handle) -> None:
                [mem] = ih.get_native_mem(w)
                assert mem.size == a.nbytes  # the whole root buffer; rows 2..3 at 6 elements
                cl.enqueue_copy(ih.get_native_queue(), mem, np.full(6, 7, np.int16),
                                dst_offset=6 * a.itemsize)

            h.host_task(task)

        clq.submit(cg).wait_and_throw()
    np.testing.assert_array_equal(a, [[0, 0, 0], [0, 0, 0], [7, 7, 7], [7, 7, 7]])

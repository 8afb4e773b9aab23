"""``parallel_for(range, offset, kernel)``: deprecated in SYCL 2020, not supported by pysycl
(docs/mapping.md): ``errc.feature_not_supported`` naming the kernel's line and the rewrite,
on every device, by the handler and the queue shortcut alike -- never a reductions error."""

from __future__ import annotations

import numpy as np
import pytest

import pysycl as sycl


def _line(fn) -> str:
    return f"{fn.__code__.co_filename}:{fn.__code__.co_firstlineno}"


def test_a_range_offset_says_it_is_deprecated_and_how_to_add_it(
        any_kernel_queue: sycl.queue) -> None:
    x = np.zeros(8, np.float32)
    kernels = []
    with sycl.buffer(x) as X:
        def cg(h: sycl.handler) -> None:
            a = X.get_access(h, sycl.access_mode.write)

            def k(i):
                a[i] = 1.0

            kernels.append(k)
            h.parallel_for(sycl.range(4, 2), sycl.id(1, 2), k)

        with pytest.raises(sycl.exception) as info:
            any_kernel_queue.submit(cg)
    k = kernels[0]
    assert info.value.code() == sycl.errc.feature_not_supported
    assert info.value.what() == (
        f"{_line(k)}: kernel {k.__qualname__}: parallel_for(range, offset, kernel) -- a "
        "work-item offset (sycl.id(1, 2)) is deprecated in SYCL 2020 and pysycl does not "
        "support it: run the kernel over the range and add the offset in it (o0 = offset[0], "
        "o1 = offset[1] before the kernel, then i[0] + o0, i[1] + o1 where the kernel uses its "
        "id)")
    assert not x.any()  # nothing ran


def test_the_shortcut_with_an_offset_is_the_same_error(any_kernel_queue: sycl.queue) -> None:
    p = sycl.malloc_device(8, any_kernel_queue, dtype=np.float32)  # every device has it
    try:
        any_kernel_queue.memset(p, 0, 8 * 4).wait()

        def k(i):
            p[i] = 1.0

        with pytest.raises(sycl.exception) as info:
            any_kernel_queue.parallel_for(sycl.range(4), sycl.id(2), k)
        assert info.value.code() == sycl.errc.feature_not_supported
        assert info.value.what().startswith(
            f"{_line(k)}: kernel {k.__qualname__}: parallel_for(range, offset, kernel) -- a "
            "work-item offset (sycl.id(2)) is deprecated in SYCL 2020")
        assert "o0 = offset[0] before the kernel, then i[0] + o0 where" in info.value.what()
        # the rewrite the message gives runs
        o0 = 2
        any_kernel_queue.parallel_for(sycl.range(4), lambda i: p.__setitem__(i[0] + o0, 1.0))
        any_kernel_queue.wait()
        got = np.empty(8, np.float32)
        any_kernel_queue.memcpy(got, p, got.nbytes).wait()
        assert got.tolist() == [0, 0, 1, 1, 1, 1, 0, 0]
    finally:
        sycl.free(p, any_kernel_queue)


def test_a_captured_id_says_capture_its_tuple(any_kernel_queue: sycl.queue) -> None:
    x = np.zeros(10, np.float32)
    off = sycl.id(2)
    with sycl.buffer(x) as X:
        def cg(h: sycl.handler) -> None:
            a = X.get_access(h, sycl.access_mode.write)

            def k(i):
                a[i + off] = 1.0

            h.parallel_for(sycl.range(8), k)

        with pytest.raises(sycl.kernel_compile_error) as info:
            any_kernel_queue.submit(cg)
    assert info.value.what().endswith(
        "captures 'off': a sycl.id cannot be a kernel argument; kernels capture accessors, "
        "numbers, bools and tuples of numbers (and call functions); capture tuple(off) and "
        "make the sycl.id in the kernel")
    t = tuple(off)  # as the message says
    with sycl.buffer(x) as X:
        def cg2(h: sycl.handler) -> None:
            a = X.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.range(8), lambda i: a.__setitem__(i.get_id() + sycl.id(t[0]),
                                                                  1.0))

        any_kernel_queue.submit(cg2)
    assert x.tolist() == [0, 0] + [1] * 8

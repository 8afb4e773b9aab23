"""What a kernel takes and returns (issue 21, items 8 and 9).

* A kernel returns nothing: it writes its results through an accessor or a USM pointer
  (a SYCL kernel function returns ``void``). ``lambda i: ra[i] * 2`` was accepted and wrote
  nothing; it is a ``sycl.kernel_signature_error`` (``errc.invalid``) naming the line, on
  the compiled device and on the host_debuggable device. A lambda ending in a call
  (``ref.fetch_add(1)``, ``o.__setitem__(i, v)``) discards the result, as a C++ expression
  statement; ``None``, a ``sycl.stream`` (what ``out << x`` gives), reducers and tuples
  (``lambda i, x, y: (x.combine(1), y.combine(2))``) lose nothing and stay accepted.
* The work-item is one parameter however many dimensions the range has. ``def k(i, j)``
  over a 2-D range took ``j`` as a ``sycl.kernel_handler`` and failed later with
  ``mul(Literal[int](10), sycl.item<2>)``. A trailing parameter is the kernel_handler
  (SYCL 2020 §4.9.4.4) only in a kernel that reads specialization constants or annotates
  it ``kh: sycl.kernel_handler``; otherwise the launch says what the kernel takes.
"""

from __future__ import annotations

import numpy as np
import pytest

import pysycl as sycl

R, W = sycl.access_mode.read, sycl.access_mode.write


def _line(fn) -> str:  # type: ignore[no-untyped-def]
    return f"{__file__}:{fn.__code__.co_firstlineno}"


def _submit(q: sycl.queue, launch) -> np.ndarray:  # type: ignore[no-untyped-def]
    """``launch(h, ra, wc)`` in a command group over a = arange(8) and c = -1; c."""
    a = np.arange(8, dtype=np.float32)
    c = np.full(8, -1, np.float32)
    with sycl.buffer(a) as A, sycl.buffer(c) as C:
        q.submit(lambda h: launch(h, A.get_access(h, R), C.get_access(h, W)))
    return c


def _returns_in_range(h, ra, wc):  # type: ignore[no-untyped-def]
    h.parallel_for(sycl.range(8), lambda i: ra[i] * 2)


def _returns_in_single_task(h, ra, wc):  # type: ignore[no-untyped-def]
    h.single_task(lambda: 5)


def _returns_in_nd_range(h, ra, wc):  # type: ignore[no-untyped-def]
    h.parallel_for(sycl.nd_range(sycl.range(8), sycl.range(4)),
                   lambda it: ra[it.get_global_id(0)] + 1)


def _returns_on_some_paths(h, ra, wc):  # type: ignore[no-untyped-def]
    def k(i):
        if i[0] > 3:
            return 1
        wc[i] = 1

    h.parallel_for(sycl.range(8), k)


@pytest.mark.parametrize("launch", [_returns_in_range, _returns_in_single_task,
                                    _returns_in_nd_range, _returns_on_some_paths])
def test_a_kernel_that_returns_a_value_is_a_signature_error_naming_the_line(
        any_kernel_queue: sycl.queue, launch) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(sycl.kernel_signature_error) as e:
        _submit(any_kernel_queue, launch)
    msg = str(e.value)
    assert e.value.code() == sycl.errc.invalid
    assert isinstance(e.value, TypeError)
    # the compiler names the return; the interpreter the kernel (the same line for a lambda)
    host = any_kernel_queue.get_device().has(sycl.aspect.host_debuggable)
    line = launch.__code__.co_firstlineno + {_returns_on_some_paths: 1 if host else 3,
                                             _returns_in_nd_range: 2}.get(launch, 1)
    assert f"{__file__}:{line}" in msg, msg
    assert "writes its results through an accessor or a USM pointer" in msg, msg


def test_a_usm_kernel_that_returns_a_value_is_refused(kq: sycl.queue) -> None:
    p = sycl.malloc_device(4, kq, dtype=np.float32)  # device USM: every device has it
    try:
        with pytest.raises(sycl.kernel_signature_error, match="returns a float32 value"):
            kq.parallel_for(sycl.range(4), lambda i: p[i] * 2).wait()
    finally:
        sycl.free(p, kq)


def test_kernels_whose_result_loses_nothing_are_accepted(any_kernel_queue: sycl.queue,
                                                         capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    c = _submit(any_kernel_queue, lambda h, ra, wc: h.parallel_for(
        sycl.range(8), lambda i: wc.__setitem__(i, ra[i] * 2)))
    np.testing.assert_array_equal(c, np.arange(8) * 2)
    counts = np.zeros(1, np.int32)
    with sycl.buffer(counts) as N:
        def count(h: sycl.handler) -> None:
            n = N.get_access(h, sycl.access_mode.read_write)
            # fetch_add's old value is discarded, as a C++ expression statement's
            h.parallel_for(sycl.range(8), lambda i: sycl.atomic_ref(
                n, 0, sycl.memory_order.relaxed, sycl.memory_scope.device).fetch_add(1))

        any_kernel_queue.submit(count)
    assert counts[0] == 8
    total = np.zeros(2, np.int32)
    with sycl.buffer(total[:1]) as T0, sycl.buffer(total[1:]) as T1:
        def cg(h: sycl.handler) -> None:
            r0, r1 = sycl.reduction(T0, h, sycl.plus()), sycl.reduction(T1, h, sycl.plus())
            h.parallel_for(sycl.range(4), r0, r1, lambda i, x, y: (x.combine(1), y.combine(2)))

        any_kernel_queue.submit(cg)
    np.testing.assert_array_equal(total, [4, 8])

    def cg2(h: sycl.handler) -> None:
        out = sycl.stream(256, 64, h)
        h.single_task(lambda: (print("p"), out << "x" << sycl.endl))

    any_kernel_queue.submit(cg2).wait()
    assert sorted(capsys.readouterr().out.splitlines()) == ["p", "x"]


def test_two_parameters_for_a_2d_range_say_what_the_kernel_takes(
        any_kernel_queue: sycl.queue) -> None:
    """The issue's kernel: ``j`` was taken for a kernel_handler."""
    out = np.zeros((2, 5), np.float32)
    with sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            o = O.get_access(h, W)

            def k(i, j):
                o[i, j] = 10 * i + j

            h.parallel_for(sycl.range(2, 5), k)

        with pytest.raises(sycl.kernel_signature_error) as e:
            any_kernel_queue.submit(cg)
    msg = str(e.value)
    assert e.value.code() == sycl.errc.invalid
    assert f"{__file__}:" in msg and "takes 2 parameter(s) (i, j)" in msg, msg
    assert "write def k(item) and read item[0], item[1]" in msg, msg
    assert "kh.get_specialization_constant" in msg, msg
    assert not out.any()  # nothing ran


def test_an_nd_range_kernel_with_two_parameters_is_told_about_get_global_id(kq: sycl.queue) -> None:
    with pytest.raises(sycl.kernel_signature_error, match=r"def k\(it\) and read it.get_global_id"):
        kq.parallel_for(sycl.nd_range(sycl.range(4), sycl.range(2)), lambda it, x: None)


SID = sycl.specialization_id(np.int32, 3)


def times_sid(kh, x):  # reads the constant: its caller's trailing parameter is a kernel_handler
    return kh.get_specialization_constant(SID) * x


def test_a_trailing_kernel_handler_still_works_when_the_kernel_reads_constants(
        any_kernel_queue: sycl.queue) -> None:
    """Directly, through a helper, in a lambda over a 2-D range, and annotated but unused."""
    out = np.zeros((2, 3), np.int32)
    with sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            o = O.get_access(h, W)
            h.set_specialization_constant(SID, 7)
            h.parallel_for(sycl.range(2, 3), lambda it, kh: o.__setitem__(
                it, kh.get_specialization_constant(SID) + times_sid(kh, it[1])))

        any_kernel_queue.submit(cg)
    np.testing.assert_array_equal(out, 7 + 7 * np.arange(3)[None, :].repeat(2, 0))

    res = np.zeros(2, np.int32)
    with sycl.buffer(res) as O2:
        def cg2(h: sycl.handler) -> None:
            o2 = O2.get_access(h, W)

            def annotated(i, kh: sycl.kernel_handler) -> None:  # annotated, never read
                o2[i] = 1

            h.parallel_for(sycl.range(2), annotated)

        any_kernel_queue.submit(cg2)
    np.testing.assert_array_equal(res, [1, 1])


def test_an_unused_second_parameter_is_not_a_kernel_handler(kq: sycl.queue) -> None:
    with pytest.raises(sycl.kernel_signature_error) as e:
        kq.parallel_for(sycl.range(4), lambda i, kh: None)
    assert "sycl.kernel_handler only in a kernel that reads specialization constants" in str(
        e.value)
    with pytest.raises(sycl.kernel_signature_error, match="single_task passes no parameters"):
        kq.single_task(lambda i: None)  # a single task has no work-item parameter

"""``assert`` in kernels: compiled devices report the first failing work-item at the next
synchronization point as ``AssertionError``; the host_debuggable device runs Python's assert.

Both devices must give the same text: the message (or the assert's source), ``file:line``,
the work-item's global id, the kernel and how many work-items failed. This file is
rewritten by pytest (its asserts become calls of pytest's helpers), so every kernel here
also tests that a kernel in a test file compiles from its plain code.
"""

from __future__ import annotations

import inspect
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pysycl as sycl
from tests.conftest import ptxas_check

HERE = __file__
RW = sycl.access_mode.read_write
W = sycl.access_mode.write


def _line(fn: object, text: str) -> int:
    """The line of ``fn``'s source holding ``text``."""
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, ln in enumerate(lines) if text in ln)


def limited(x: int) -> int:
    """A module-level helper with an assert."""
    assert x < 10, f"x = {x}, half = {x / 2}"
    return 2 * x


def _fill(q: sycl.queue, a: np.ndarray, value: int) -> None:
    with sycl.buffer(a) as A:
        def cg(h: sycl.handler) -> None:
            o = A.get_access(h, W)
            h.parallel_for(sycl.range(a.size), lambda i: o.__setitem__(i, value))

        q.submit(cg)


def _run_limited(q: sycl.queue, n: int) -> np.ndarray:
    out = np.full(n, -1, np.int64)
    with sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            o = O.get_access(h, W)

            def k(i: sycl.item) -> None:
                o[i] = limited(i[0])

            h.parallel_for(sycl.range(n), k)

        q.submit(cg)
    return out


def test_passing_asserts_change_nothing(any_kernel_queue: sycl.queue) -> None:
    out = _run_limited(any_kernel_queue, 10)
    assert np.array_equal(out, 2 * np.arange(10))


def test_failing_assert_in_a_helper_is_reported(any_kernel_queue: sycl.queue) -> None:
    with pytest.raises(AssertionError) as ei:
        _run_limited(any_kernel_queue, 16)
    first, second = str(ei.value).splitlines()[:2]
    # the first failing work-item found: any of 10..15 (the lowest on the CPU device)
    m = re.fullmatch(rf"x = (\d+), half = (\S+) -- {re.escape(HERE)}:"
                     rf"{_line(limited, 'assert x')}, work-item \((\d+),\)", first)
    assert m is not None, first
    assert m.group(1) == m.group(3) and 10 <= int(m.group(1)) < 16
    assert float(m.group(2)) == int(m.group(1)) / 2
    assert "kernel '_run_limited.<locals>.cg.<locals>.k'" in second
    assert "6 work-items failed an assert" in second


def _both(kq: sycl.queue, hq: sycl.queue, run: object) -> list[str]:
    texts = []
    for q in (kq, hq):
        with pytest.raises(AssertionError) as ei:
            run(q)  # type: ignore[operator]
        texts.append(str(ei.value))
    return texts


def test_devices_and_host_give_the_same_first_line(kq: sycl.queue, hq: sycl.queue) -> None:
    def run(q: sycl.queue) -> None:
        a = np.arange(12, dtype=np.float32)
        with sycl.buffer(a) as A:
            def cg(h: sycl.handler) -> None:
                r = A.get_access(h, RW)

                def k(i: sycl.item) -> None:
                    x = r[i]
                    assert x < 7.5 or i[0] > 8, f"x = {x} at {i[0]}, flag {x > 2}"
                    r[i] = x + 1

                h.parallel_for(sycl.range(12), k)

            q.submit(cg)

    dev, host = _both(kq, hq, run)
    assert dev.splitlines()[0] == host.splitlines()[0]
    assert dev.splitlines()[0].startswith("x = 8.0 at 8, flag True -- ")
    assert "1 work-item failed an assert" in dev and "1 work-item failed an assert" in host


def test_assert_without_message_shows_its_source(any_kernel_queue: sycl.queue) -> None:
    a = np.arange(8, dtype=np.int32)
    a[5] = 0
    with pytest.raises(AssertionError, match=re.escape("assert r[i] == i[0] -- ")):
        with sycl.buffer(a) as A:
            def cg(h: sycl.handler) -> None:
                r = A.get_access(h, RW)

                def k(i: sycl.item) -> None:
                    assert r[i] == i[0]

                h.parallel_for(sycl.range(8), k)

            any_kernel_queue.submit(cg)


def test_the_failing_work_item_ends(any_kernel_queue: sycl.queue) -> None:
    # Python semantics: the statements after a failing assert do not run (here: the
    # index the assert guards); the other work-items run to their end.
    buf = sycl.buffer(np.zeros(8, np.int32))

    def cg(h: sycl.handler) -> None:
        o = buf.get_access(h, W)

        def k(i: sycl.item) -> None:
            j = i[0] * 3
            assert j < 8, f"j = {j}"
            o[j] = 1

        h.parallel_for(sycl.range(8), k)

    if not any_kernel_queue.get_device().has(sycl.aspect.host_debuggable):
        any_kernel_queue.submit(cg)
        with pytest.raises(AssertionError, match=r"j = (\d+) -- .*work-item \(\d,\)"):
            sycl.host_accessor(buf)                     # the host accessor reports it
    else:
        with pytest.raises(AssertionError, match=r"j = 9 -- .*work-item \(3,\)"):
            any_kernel_queue.submit(cg)                 # the host device: at submit
        return
    assert list(np.asarray(sycl.host_accessor(buf))) == [1, 0, 0, 1, 0, 0, 1, 0]


def test_two_dimensional_ids_in_sycl_order(any_kernel_queue: sycl.queue) -> None:
    out = np.zeros((4, 8), np.int32)
    with pytest.raises(AssertionError, match=r"at 2, 5 -- .*work-item \(2, 5\)"):
        with sycl.buffer(out) as O:
            def cg(h: sycl.handler) -> None:
                o = O.get_access(h, W)

                def k(it: sycl.nd_item) -> None:
                    g0, g1 = it.get_global_id(0), it.get_global_id(1)
                    assert g0 != 2 or g1 != 5, f"at {g0}, {g1}"
                    o[g0, g1] = 1

                h.parallel_for(sycl.nd_range(sycl.range(4, 8), sycl.range(2, 4)), k)

            any_kernel_queue.submit(cg)


def test_a_kernel_with_a_barrier_never_hangs(kq: sycl.queue) -> None:
    # A work-item that ended at its assert would leave its group waiting at the barrier:
    # in a kernel that synchronizes its group, a failing assert records and goes on.
    n, wg = 64, 16
    out = np.zeros(n, np.int32)
    with pytest.raises(AssertionError, match=r"(?s)g = (\d+) -- .*work-item \(\1,\).*16 work-items"):
        with sycl.buffer(out) as O:
            def cg(h: sycl.handler) -> None:
                o = O.get_access(h, W)
                tmp = sycl.local_accessor(np.int32, sycl.range(wg), h)

                def k(it: sycl.nd_item) -> None:
                    lid, g = it.get_local_id(0), it.get_global_id(0)
                    tmp[lid] = g
                    assert g % 4 != 3, f"g = {g}"
                    sycl.group_barrier(it.get_group())
                    o[g] = tmp[(lid + 1) % wg]

                h.parallel_for(sycl.nd_range(sycl.range(n), sycl.range(wg)), k)

            kq.submit(cg)
    _fill(kq, out, 7)  # the queue goes on working
    assert np.all(out == 7)


def test_usm_shortcut_launches_report_at_queue_wait(kq: sycl.queue) -> None:
    n = 32
    a = sycl.malloc_device(n, kq, dtype=np.int32)  # every USM device has device allocations
    kq.memcpy(a, np.arange(n, dtype=np.int32), 4 * n).wait()
    limit = 20

    def k(i: sycl.item) -> None:
        assert a[i] < limit, f"a[{i[0]}] = {a[i]}"
        a[i] = a[i] + 1

    def contents() -> list[int]:
        out = np.empty(n, np.int32)
        kq.memcpy(out, a, 4 * n).wait()
        return list(out)

    kq.parallel_for(n, k)
    with pytest.raises(AssertionError, match=r"(?s)a\[(\d+)\] = \1 -- .*\(\1,\).*12 work-items"):
        kq.wait()
    assert contents() == list(range(1, 21)) + list(range(20, 32))
    limit = 100  # the queue stays usable; the same kernel, passing
    for _ in range(3):
        kq.parallel_for(n, k)
    kq.wait()
    assert contents()[:20] == list(range(4, 24))
    sycl.free(a, kq)


def test_event_wait_reports_it(kq: sycl.queue) -> None:
    buf = sycl.buffer(np.zeros(4, np.float64))

    def cg(h: sycl.handler) -> None:
        o = buf.get_access(h, W)

        def k(i: sycl.item) -> None:
            o[i] = 0.5 * i[0]
            assert o[i] < 1.0, f"o = {o[i]}"

        h.parallel_for(sycl.range(4), k)

    e = kq.submit(cg)
    with pytest.raises(AssertionError, match=r"o = (1.0 -- .*\(2,\)|1.5 -- .*\(3,\))"):
        e.wait()
    e.wait()                                       # reported once
    assert list(np.asarray(sycl.host_accessor(buf))) == [0.0, 0.5, 1.0, 1.5]


def test_other_buffers_are_written_back(kq: sycl.queue) -> None:
    bad = sycl.buffer(np.zeros(4, np.int32))

    def failing(h: sycl.handler) -> None:
        w = bad.get_access(h, W)

        def k(i: sycl.item) -> None:
            assert i[0] != 1
            w[i] = 1

        h.parallel_for(sycl.range(4), k)

    kq.submit(failing)
    other = np.zeros(3, np.int32)
    _fill(kq, other, 5)
    assert list(other) == [5, 5, 5]
    with pytest.raises(AssertionError, match=re.escape("assert i[0] != 1 -- ")):
        kq.wait()
    assert list(np.asarray(sycl.host_accessor(bad))) == [1, 0, 1, 1]


def test_async_handler_gets_the_assertion_error(kernel_device: sycl.device) -> None:
    seen: list[BaseException] = []
    q = sycl.queue(kernel_device, lambda errs: seen.extend(errs))
    buf = sycl.buffer(np.zeros(4, np.int32))
    q.submit(lambda h: h.parallel_for(sycl.range(4), _assert_small(buf.get_access(h, W))))
    q.wait_and_throw()
    assert len(seen) == 1 and isinstance(seen[0], AssertionError)
    assert "v = 3" in str(seen[0])


def _assert_small(o: object) -> object:
    def k(i: sycl.item) -> None:
        v = i[0]
        assert v < 3, f"v = {v}"
        o[i] = v  # type: ignore[index]

    return k


def test_nested_function_asserts(any_kernel_queue: sycl.queue) -> None:
    out = np.zeros(6, np.int32)
    with pytest.raises(AssertionError, match=r"(?s)y = 5 -- .*work-item \(5,\)"):
        with sycl.buffer(out) as O:
            def cg(h: sycl.handler) -> None:
                o = O.get_access(h, W)

                def k(i: sycl.item) -> None:
                    def check(y):  # type: ignore[no-untyped-def]  # (no annotations: strings)
                        assert y != 5, f"y = {y}"
                        return y

                    o[i] = check(i[0])

                h.parallel_for(sycl.range(6), k)

            any_kernel_queue.submit(cg)


@pytest.mark.parametrize(("dtype", "text"), [(np.int8, "-7"), (np.uint64, "18446744073709551615"),
                                            (np.float32, "0.10000000149011612"),
                                            (np.float64, "-2.5"), (np.bool_, "True")])
def test_fstring_numbers_format_as_python_does(any_kernel_queue: sycl.queue, dtype: type,
                                              text: str) -> None:
    value = {np.int8: -7, np.uint64: (1 << 64) - 1, np.float32: 0.1, np.float64: -2.5,
             np.bool_: True}[dtype]
    a = np.full(2, value, dtype)
    with pytest.raises(AssertionError, match=f"^v={re.escape(text)}!"):
        with sycl.buffer(a) as A:
            def cg(h: sycl.handler) -> None:
                r = A.get_access(h, RW)

                def k(i: sycl.item) -> None:
                    v = r[i]
                    assert i[0] == 0, f"v={v}!"

                h.parallel_for(sycl.range(2), k)

            any_kernel_queue.submit(cg)


@pytest.mark.parametrize("kind", ["range", "nd_range"])
def test_reduction_kernel_with_an_assert(any_kernel_queue: sycl.queue, kind: str) -> None:
    n = 64
    x = np.arange(n, dtype=np.int32)
    total = np.zeros(1, np.int32)
    host_nd = kind == "nd_range" and any_kernel_queue.get_device().has(sycl.aspect.host_debuggable)
    count = "the first failing work-item stops the kernel" if host_nd else "1 work-item failed"
    with pytest.raises(AssertionError, match=rf"(?s)v = 41 -- .*work-item \(41,\).*{count}"):
        with sycl.buffer(x) as X, sycl.buffer(total) as T:
            def cg(h: sycl.handler) -> None:
                r = X.get_access(h, sycl.access_mode.read)
                red = sycl.reduction(T, h, sycl.plus())
                if kind == "range":
                    def k(i: sycl.item, s: sycl.reducer) -> None:
                        v = r[i]
                        assert v != 41, f"v = {v}"
                        s += v

                    h.parallel_for(sycl.range(n), red, k)
                else:
                    def k2(it: sycl.nd_item, s: sycl.reducer) -> None:
                        v = r[it.get_global_id(0)]
                        assert v != 41, f"v = {v}"
                        s += v

                    h.parallel_for(sycl.nd_range(sycl.range(n), sycl.range(16)), red, k2)

            any_kernel_queue.submit(cg)


def test_asserts_compile_to_ptx(kq: sycl.queue, ptx_images: list) -> None:
    out = _run_limited(kq, 10)
    assert np.array_equal(out, 2 * np.arange(10))
    (img,) = ptx_images
    assert img.asserts and img.asserts[0][1] is not None
    ptx = img.binary.decode()
    params = [ln for ln in ptx.splitlines() if f"{img.entry}_param_" in ln
              and ln.strip().startswith(".param")]
    # the captures', the range's (a range kernel loops over its items), the error buffer
    assert len(params) == sum(c.type.flat_arg_count() for c in img.captures) + 1 + 1
    # the publishing, out of line: the counter and the flag (no warp vote: a warp's
    # threads may have parted at a failing assert)
    assert "vote" not in ptx and re.search(r"atom\.[a-z.]*global\.cas", ptx)
    ptxas_check(img.binary)


# ------------------------------------------------------------------- properties
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=st.lists(st.integers(1, 9), min_size=1, max_size=3))
def test_an_assert_that_holds_never_fires(kq: sycl.queue, shape: list[int]) -> None:
    n = int(np.prod(shape))
    out = np.zeros(shape, np.int32)
    with sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            o = O.get_access(h, W)

            def k(it: sycl.item) -> None:
                lin = it.get_linear_id()
                assert lin < n, f"{lin}"
                o[it] = 1

            h.parallel_for(sycl.range(*shape), k)

        kq.submit(cg)
    assert out.all()


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(flags=st.lists(st.booleans(), min_size=1, max_size=200))
def test_the_failure_count_is_exact(kq: sycl.queue, flags: list[bool]) -> None:
    f = np.array(flags, np.int32)
    buf = sycl.buffer(f.copy())

    def cg(h: sycl.handler) -> None:
        r = buf.get_access(h, sycl.access_mode.read)

        def k(i: sycl.item) -> None:
            assert r[i] == 0, f"item {i[0]}"

        h.parallel_for(sycl.range(f.size), k)

    kq.submit(cg)
    if not f.any():
        kq.wait()
        return
    with pytest.raises(AssertionError) as ei:
        kq.wait()
    m = re.match(r"item (\d+) -- .*work-item \((\d+),\)", str(ei.value))
    assert m is not None and m.group(1) == m.group(2) and f[int(m.group(1))]
    count = int(f.sum())
    assert (f"{count} work-items failed" if count > 1 else "1 work-item failed") in str(ei.value)

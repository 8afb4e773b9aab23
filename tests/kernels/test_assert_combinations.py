"""``assert`` together with the rest: print, streams, bounds-checked mode, kernel bundles,
explicit ``raise AssertionError``, and the PTX images of kernels whose asserts cannot end a
work-item (barriers) or sit in a reduction's grid-stride loop."""

from __future__ import annotations

import re

import numpy as np
import pytest

import pysycl as sycl
from tests.conftest import ptxas_check

RW = sycl.access_mode.read_write
W = sycl.access_mode.write


def test_print_and_assert_in_one_kernel(any_kernel_queue: sycl.queue,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    buf = sycl.buffer(np.arange(4, dtype=np.int32))

    def cg(h: sycl.handler) -> None:
        r = buf.get_access(h, RW)

        def k(i: sycl.item) -> None:
            print("item", i[0])
            assert r[i] != 2, f"r = {r[i]}"
            r[i] = 10 * r[i]

        h.parallel_for(sycl.range(4), k)

    with pytest.raises(AssertionError, match=r"r = 2 -- .*work-item \(2,\)"):
        any_kernel_queue.submit(cg)
        any_kernel_queue.wait()
    assert sorted(capsys.readouterr().out.splitlines()) == [f"item {k}" for k in range(4)]


def test_stream_and_assert_in_one_kernel(kq: sycl.queue,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    buf = sycl.buffer(np.arange(4, dtype=np.int32))

    def cg(h: sycl.handler) -> None:
        r = buf.get_access(h, RW)
        out = sycl.stream(1024, 64, h)

        def k(i: sycl.item) -> None:
            out << "item " << i[0] << sycl.endl
            assert r[i] < 3

        h.parallel_for(sycl.range(4), k)

    kq.submit(cg)
    with pytest.raises(AssertionError, match=r"assert r\[i\] < 3 -- .*work-item \(3,\)"):
        kq.wait()
    assert sorted(capsys.readouterr().out.splitlines()) == [f"item {k}" for k in range(4)]


def test_bounds_checked_mode_and_assert(kq: sycl.queue) -> None:
    buf = sycl.buffer(np.zeros(4, np.int32))

    def cg(h: sycl.handler) -> None:
        w = buf.get_access(h, W)

        def k(i: sycl.item) -> None:
            w[i + 1] = 1                       # out of bounds for the last work-item
            assert i[0] != 1, "one"

        h.parallel_for(sycl.range(4), k)

    sycl.ext.set_bounds_check(True)
    try:
        kq.submit(cg)
        with pytest.raises(AssertionError, match=r"^one -- ") as ei:
            kq.wait()
    finally:
        sycl.ext.set_bounds_check(None)
    notes = "\n".join(getattr(ei.value, "__notes__", []))
    assert "out-of-bounds write of accessor 'w'" in notes


def test_raise_assertion_error_is_an_assert(any_kernel_queue: sycl.queue) -> None:
    buf = sycl.buffer(np.zeros(4, np.int32))

    def cg(h: sycl.handler) -> None:
        w = buf.get_access(h, W)

        def k(i: sycl.item) -> None:
            if i[0] == 3:
                raise AssertionError(f"three is {i[0]}")
            w[i] = 1

        h.parallel_for(sycl.range(4), k)

    with pytest.raises(AssertionError, match=r"^three is 3 -- .*work-item \(3,\)"):
        any_kernel_queue.submit(cg)
        any_kernel_queue.wait()


def _checked(r: object) -> object:
    def k(i: sycl.item) -> None:
        assert r[i] < 30, f"r = {r[i]}"  # type: ignore[index]
        r[i] = r[i] + 1  # type: ignore[index]

    return k


def test_a_kernel_from_a_bundle_reports_its_asserts(kq: sycl.queue) -> None:
    def cg_for(buf: sycl.buffer, kb: object = None) -> object:
        def cg(h: sycl.handler) -> None:
            if kb is not None:
                h.use_kernel_bundle(kb)
            h.parallel_for(sycl.range(32), _checked(buf.get_access(h, RW)),
                           kernel_name="asserting")
        return cg

    for kb in (None, "bundle"):  # submitted (which names the kernel), then from a bundle
        if kb is not None:
            kb = sycl.get_kernel_bundle(kq.get_context(), [sycl.get_kernel_id("asserting")],
                                        state=sycl.bundle_state.executable)
        buf = sycl.buffer(np.arange(32, dtype=np.int32))
        kq.submit(cg_for(buf, kb))
        with pytest.raises(AssertionError) as ei:
            kq.wait()
        m = re.match(r"r = (\d+) -- .*work-item \((\d+),\)", str(ei.value))
        assert m is not None and m.group(1) == m.group(2) in ("30", "31"), str(ei.value)
        assert "2 work-items failed" in str(ei.value)
        assert list(np.asarray(sycl.host_accessor(buf))) == [*range(1, 31), 30, 31]


def test_ptx_of_a_barrier_kernel_and_a_range_reduction(kq: sycl.queue, ptx_images: list) -> None:
    n, wg = 64, 16
    x = np.arange(n, dtype=np.int32)
    total = np.zeros(1, np.int32)
    with sycl.buffer(x) as X, sycl.buffer(total) as T:
        def barrier_cg(h: sycl.handler) -> None:
            r = X.get_access(h, RW)
            tmp = sycl.local_accessor(np.int32, sycl.range(wg), h)

            def k(it: sycl.nd_item) -> None:
                lid, g = it.get_local_id(0), it.get_global_id(0)
                tmp[lid] = r[g]
                assert tmp[lid] >= 0, f"{g}"
                sycl.group_barrier(it.get_group())
                r[g] = tmp[(lid + 1) % wg]

            h.parallel_for(sycl.nd_range(sycl.range(n), sycl.range(wg)), k)

        def reduction_cg(h: sycl.handler) -> None:
            r = X.get_access(h, sycl.access_mode.read)
            red = sycl.reduction(T, h, sycl.plus())

            def k(i: sycl.item, s: sycl.reducer) -> None:
                assert r[i] >= 0, f"{i[0]}"
                s += r[i]

            h.parallel_for(sycl.range(n), red, k)

        kq.submit(barrier_cg)
        kq.submit(reduction_cg)
    assert total[0] == sum(range(n))
    asserting = [img for img in ptx_images if img.asserts]
    assert len(asserting) == 2
    for img in asserting:
        ptx = img.binary.decode()
        assert "vote" not in ptx and "atom" in ptx
        ptxas_check(img.binary)


def test_a_work_item_that_fails_twice_counts_once(kq: sycl.queue) -> None:
    # (a kernel with a barrier: its failing work-items go on, and may fail again)
    n, wg = 32, 16
    buf = sycl.buffer(np.zeros(n, np.int32))

    def cg(h: sycl.handler) -> None:
        o = buf.get_access(h, W)

        def k(it: sycl.nd_item) -> None:
            g = it.get_global_id(0)
            assert g % 8 != 1, "first"
            it.barrier()
            assert g % 8 != 1, "second"
            o[g] = 1

        h.parallel_for(sycl.nd_range(sycl.range(n), sycl.range(wg)), k)

    kq.submit(cg)
    with pytest.raises(AssertionError, match=r"(?s)^first -- .*4 work-items failed"):
        kq.wait()
    assert np.asarray(sycl.host_accessor(buf)).all()  # they went on to the end

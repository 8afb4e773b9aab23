"""The persistent error slot of kernels with asserts (``pysycl._kernels.steps``).

Each (kernel, context) has one zeroed error slot, bound as the kernel's last argument
once: clean launches leave it set and zero; a failure is reported at the next
synchronization point and the slot is zeroed for the launches after it. Where the device
has no host-visible memory the slot is a buffer read at the synchronization point (the
second parametrization takes that path on the same device).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import pysycl as sycl
from pysycl._backends.opencl.executor import OpenCLExecutor
from pysycl._kernels import steps
from pysycl._kernels.cache import kernels

RW = sycl.access_mode.read_write


@pytest.fixture(params=["visible", "buffer"])
def slot_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
              kq: sycl.queue) -> Iterator[str]:
    if request.param == "buffer":  # the path of devices without fine-grained SVM
        monkeypatch.setattr(OpenCLExecutor, "alloc_visible", lambda self, nbytes: None)
    elif kq.executor.alloc_visible(64) is None:  # NVIDIA's OpenCL: coarse-grained SVM only
        pytest.skip(f"{kq.get_device().display_name} has no memory the host reads in place "
                    "(fine-grained SVM): its error slots are read with a copy (the 'buffer' case)")
    steps._slots.clear()
    yield request.param
    steps._slots.clear()


def _launch(q: sycl.queue, buf: sycl.buffer, limit: int) -> sycl.event:
    def cg(h: sycl.handler) -> None:
        a = buf.get_access(h, RW)

        def k(i: sycl.item) -> None:
            assert a[i] < limit, f"a[{i[0]}] = {a[i]}"
            a[i] = a[i] + 1

        h.parallel_for(sycl.range(8), k)

    return q.submit(cg)


def _slot() -> steps.ErrorSlot:
    (slot,) = [s for _, pool in steps._slots.values() for s in pool]
    return slot


def test_clean_launches_keep_the_slot_bound_and_zero(kq: sycl.queue, slot_kind: str) -> None:
    if kq.get_backend() is not sycl.backend.opencl:
        pytest.skip("a cl_kernel's bound arguments (the OpenCL backend's); CUDA packs each "
                    "launch's arguments itself")
    buf = sycl.buffer(np.zeros(8, np.int32))
    _launch(kq, buf, 100).wait()
    slot = _slot()
    assert slot.visible is (slot_kind == "visible")
    last = next(last for last in (kq.executor.last_args(k) for k in kernels.memory.values()
                                  if k.asserts)
                if slot.arg in [a for args in last.values() for a in args])
    before = {id(v) for v in last.values()}
    for _ in range(5):
        _launch(kq, buf, 100)
    kq.wait()
    assert {id(v) for v in last.values()} == before  # the arguments were not set again
    assert _slot() is slot and not slot.launches and not slot.host.any()
    assert list(np.asarray(sycl.host_accessor(buf))) == [6] * 8


def test_a_failure_is_reported_once_and_the_slot_is_zeroed(kq: sycl.queue,
                                                           slot_kind: str) -> None:
    buf = sycl.buffer(np.arange(8, dtype=np.int32))
    e = _launch(kq, buf, 5)
    with pytest.raises(AssertionError, match=r"(?s)a\[(\d)\] = \1 -- .*3 work-items failed"):
        e.wait()
    e.wait()  # reported once
    slot = _slot()
    assert not slot.host.any() or not slot.visible
    _launch(kq, buf, 100).wait()  # the same kernel, passing: nothing left over
    assert list(np.asarray(sycl.host_accessor(buf))) == [2, 3, 4, 5, 6, 6, 7, 8]


def test_launches_of_one_kernel_before_a_wait_report_the_first_failure(
        kq: sycl.queue, slot_kind: str) -> None:
    buf = sycl.buffer(np.arange(8, dtype=np.int32))
    _launch(kq, buf, 100)
    _launch(kq, buf, 100)
    _launch(kq, buf, 4)  # a[i] = i + 2: items 2..7 fail
    with pytest.raises(AssertionError, match=r"(?s)a\[([2-7])\] = .*6 work-items failed"):
        kq.wait()
    kq.wait()
    assert not _slot().launches


def test_a_host_accessor_reports_only_for_the_buffers_the_kernel_used(kq: sycl.queue,
                                                                      slot_kind: str) -> None:
    used = sycl.buffer(np.arange(8, dtype=np.int32))
    other = sycl.buffer(np.zeros(8, np.int32))
    _launch(kq, used, 0)
    kq.submit(lambda h: h.fill(other.get_access(h, sycl.access_mode.write), np.int32(3)))
    assert list(np.asarray(sycl.host_accessor(other))) == [3] * 8
    with pytest.raises(AssertionError, match="8 work-items failed"):
        sycl.host_accessor(used)


def test_a_launch_with_other_buffers_takes_a_slot_of_its_own(kq: sycl.queue,
                                                              slot_kind: str) -> None:
    """One kernel, two buffers, no synchronization between: the failure is the second
    launch's, so the second buffer's host accessor reports it (a shared slot would have
    named the first launch and its buffer), and the first buffer's results are clean."""
    first = sycl.buffer(np.zeros(8, np.int32))
    second = sycl.buffer(np.arange(8, dtype=np.int32))
    _launch(kq, first, 100)
    _launch(kq, second, 4)  # a[i] = i: items 4..7 fail
    (pool,) = [p for _, p in steps._slots.values()]
    assert len(pool) == 2 and pool[0].owner != pool[1].owner
    with pytest.raises(AssertionError, match=r"(?s)a\[[4-7]\] = [4-7] -- .*4 work-items failed"):
        sycl.host_accessor(second)
    assert list(np.asarray(sycl.host_accessor(first))) == [1] * 8
    kq.wait()  # reported once
    _launch(kq, first, 100).wait()  # a clean launch reuses a slot: no third one
    assert len([s for _, p in steps._slots.values() for s in p]) == 2

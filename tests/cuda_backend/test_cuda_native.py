"""The CUDA backend's one-call launch (``pysycl/_backends/cuda/_native.c``), on any machine:
the extension reads its record in the order ``CUDALaunch`` writes it and calls the entry
points it finds there. The entry points here are C-callable Python functions standing in
for ``cuLaunchKernel``/``cuEventRecord`` -- this checks the shim's calling convention (the
record's layout, the event's conversion, the record skipped after a failed launch); the
driver itself runs in tests/cuda_backend/test_cuda_gpu.py on a GPU."""

from __future__ import annotations

import ctypes
import threading

import numpy as np
import pytest

native = pytest.importorskip("pysycl._backends.cuda._native",
                             reason="the C extension was not built (no compiler at install)")

U, P = ctypes.c_uint, ctypes.c_void_p
LAUNCH = ctypes.CFUNCTYPE(ctypes.c_int, P, U, U, U, U, U, U, U, P, P, P)
RECORD = ctypes.CFUNCTYPE(ctypes.c_int, P, P)


class Handle:
    """An object int() takes, as cuda.bindings' CUevent is."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __int__(self) -> int:
        return self.value


def _driver(launch_code: int = 0, record_code: int = 0):
    calls: list[tuple] = []

    def launch(fn, gx, gy, gz, bx, by, bz, shm, stream, params, extra):
        calls.append(("launch", fn, (gx, gy, gz), (bx, by, bz), shm, stream, params, extra,
                      threading.current_thread() is threading.main_thread()))
        return launch_code

    def record(event, stream):
        calls.append(("record", event, stream))
        return record_code

    keep = (LAUNCH(launch), RECORD(record))
    return keep, calls


def _record(keep, params: int = 0x5000) -> np.ndarray:
    ptrs = [ctypes.cast(f, P).value for f in keep]
    return np.array([*ptrs, 0x1234, 8, 4, 2, 256, 2, 1, 48, 0x7777, params], np.uint64)


def test_launch_reads_the_record_in_cudalaunchs_order_and_records_the_event() -> None:
    keep, calls = _driver()
    rec = _record(keep)
    assert native.launch(rec.ctypes.data, Handle(0x9999)) == 0
    assert calls == [("launch", 0x1234, (8, 4, 2), (256, 2, 1), 48, 0x7777, 0x5000, None, True),
                     ("record", 0x9999, 0x7777)]


def test_no_event_and_no_parameters() -> None:
    keep, calls = _driver()
    rec = _record(keep, params=0)
    assert native.launch(rec.ctypes.data, None) == 0
    assert [c[0] for c in calls] == ["launch"] and calls[0][6] is None


def test_a_failed_launch_returns_its_code_and_records_nothing() -> None:
    keep, calls = _driver(launch_code=701)
    assert native.launch(_record(keep).ctypes.data, Handle(1)) == 701
    assert [c[0] for c in calls] == ["launch"]


def test_a_failed_record_returns_its_code() -> None:
    keep, calls = _driver(record_code=400)
    assert native.launch(_record(keep).ctypes.data, 5) == 400
    assert [c[0] for c in calls] == ["launch", "record"]


def test_bad_arguments_raise_instead_of_calling() -> None:
    keep, calls = _driver()
    with pytest.raises(TypeError):
        native.launch(_record(keep).ctypes.data)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="null record"):
        native.launch(0, None)
    with pytest.raises(TypeError):
        native.launch(_record(keep).ctypes.data, "not an event")
    empty = np.zeros(12, np.uint64)
    with pytest.raises(ValueError, match="no driver entry points"):
        native.launch(empty.ctypes.data, None)
    assert calls == []


QUERY = ctypes.CFUNCTYPE(ctypes.c_int, P)


def test_wait_polls_until_the_query_is_no_longer_not_ready() -> None:
    seen: list[int] = []

    def query(h):  # type: ignore[no-untyped-def]
        seen.append(h)
        return 600 if len(seen) < 50 else 0  # CUDA_ERROR_NOT_READY 49 times

    q = QUERY(query)
    assert native.wait(ctypes.cast(q, P).value, Handle(0x42)) == 0
    assert seen == [0x42] * 50


def test_wait_returns_the_first_other_code() -> None:
    q = QUERY(lambda h: 700)  # CUDA_ERROR_ILLEGAL_ADDRESS
    assert native.wait(ctypes.cast(q, P).value, 1) == 700


def test_wait_sleeps_after_its_spin_and_ctrl_c_interrupts_it() -> None:
    """A query that is never ready: C's ``strlen`` of a 600-character string (600 is
    CUDA_ERROR_NOT_READY) -- C, so that no Python runs inside the wait but its own signal
    check."""
    import _thread
    import time

    strlen = ctypes.CDLL(None).strlen
    never = ctypes.create_string_buffer(b"x" * 600)
    timer = threading.Timer(0.4, _thread.interrupt_main)
    timer.start()
    t0, c0 = time.perf_counter(), time.process_time()
    with pytest.raises(KeyboardInterrupt):
        native.wait(ctypes.cast(strlen, P).value, ctypes.addressof(never))
    took, cpu = time.perf_counter() - t0, time.process_time() - c0
    timer.join()
    assert 0.35 < took < 5
    assert cpu < 0.5 * took  # it slept between polls after the first 10 ms


def test_wait_keeps_the_threads_timer_slack() -> None:
    """A wait that sleeps sets the thread's timer slack to 1 us (short, exact pauses) and
    gives the old value back after, whatever the query said."""
    import sys
    import time

    if not sys.platform.startswith("linux"):
        pytest.skip("timer slack is Linux's")
    libc = ctypes.CDLL(None)
    pr_get = 30  # PR_GET_TIMERSLACK
    before = libc.prctl(pr_get, 0, 0, 0, 0)
    start = time.perf_counter()
    seen: list[int] = []

    def query(h):  # type: ignore[no-untyped-def]
        seen.append(libc.prctl(pr_get, 0, 0, 0, 0))
        return 600 if time.perf_counter() - start < 0.02 else 0

    q = QUERY(query)
    assert native.wait(ctypes.cast(q, P).value, 1) == 0
    assert libc.prctl(pr_get, 0, 0, 0, 0) == before
    assert seen[0] == before and 1000 in seen  # 1 us while it slept

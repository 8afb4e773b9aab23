"""Captured numpy arrays as read-only lookup tables, on every device (docs/kernels.md).

Where the device cannot use host memory directly (no ``aspect.usm_system_allocations``:
NVIDIA GPUs, PoCL) a captured 1-D array of at most 64 KiB is copied to the device for
each launch and passed as a read-only pointer. The ``tq`` fixture runs each test on
that path ("table": the device that compiles kernels; where it has system SVM, Intel's
CPU runtime, with ``PYSYCL_COPY_HOST_ARRAYS``'s switch on), on the direct path where
there is one ("direct": the array's own memory) and on the host_debuggable device
("host": just the array), the oracle.
"""

from __future__ import annotations

import contextlib
import gc
import weakref
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pysycl as sycl
from pysycl._memory import tables

LIMIT = 64 * 1024
TABLE = np.array([10.0, 20.0, 30.0, 40.0])
DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
          np.uint64, np.float16, np.float32, np.float64, np.complex64, np.complex128]


def from_table(i):
    return TABLE[i]


def _system(dev: sycl.device) -> bool:
    return dev.has(sycl.aspect.usm_system_allocations)


@pytest.fixture(params=["table", "direct", "host"])
def tq(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> sycl.queue:
    if request.param == "host":
        return sycl.queue(request.getfixturevalue("host_device"))
    dev = request.getfixturevalue("kernel_device")
    if request.param == "direct" and not _system(dev):
        pytest.skip("the device cannot use host memory directly")
    monkeypatch.setattr(tables, "forced", request.param == "table" and _system(dev))
    return sycl.queue(dev)


@pytest.fixture
def table_q(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> sycl.queue:
    """The compiling device, taking tables (the copying path only)."""
    dev = request.getfixturevalue("kernel_device")
    monkeypatch.setattr(tables, "forced", _system(dev))
    return sycl.queue(dev)


def _compiles() -> int:
    s = sycl.ext.kernel_cache_stats()
    return s["compiles"] + s["disk_hits"]


def _gather(q: sycl.queue, lut: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``out[i] = lut[idx[i]]``: two captured tables, the result through a buffer."""
    out = np.zeros(idx.size, lut.dtype)
    with sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            o = O.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.range(idx.size), lambda i: o.__setitem__(i, lut[idx[i]]))

        q.submit(cg)
    return out


def test_table_lookup_matches_numpy(tq: sycl.queue) -> None:
    lut = np.sin(np.arange(256) / 40.0).astype(np.float32)
    idx = (np.arange(1000) * 7919 % 256).astype(np.int64)
    np.testing.assert_array_equal(_gather(tq, lut, idx), lut[idx])


def test_tables_of_every_dtype(tq: sycl.queue) -> None:
    rng = np.random.default_rng(1)
    for dt in DTYPES:
        if dt is np.float16 and not tq.get_device().has(sycl.aspect.fp16):
            continue
        lut = (rng.standard_normal(37) * 50).astype(dt)
        if np.dtype(dt).kind == "c":
            lut = lut + 1j * rng.standard_normal(37).astype(dt)
        idx = rng.integers(0, 37, 64)
        np.testing.assert_array_equal(_gather(tq, lut, idx), lut[idx], err_msg=str(dt))


@contextlib.contextmanager
def _copying(dev: sycl.device) -> Iterator[sycl.queue]:
    """A queue on ``dev`` that takes tables (``table_q``, for hypothesis's examples)."""
    saved = tables.forced
    tables.forced = _system(dev)
    try:
        yield sycl.queue(dev)
    finally:
        tables.forced = saved


@settings(max_examples=30)
@given(data=st.data())
def test_table_contents_dtypes_and_sizes(kernel_device: sycl.device, data: st.DataObject) -> None:
    """Random contents, dtypes and sizes up to the limit: the lookup gives numpy's values."""
    dt = np.dtype(data.draw(st.sampled_from([d for d in DTYPES if d is not np.float16])))
    n = data.draw(st.one_of(st.integers(1, 64), st.integers(1, LIMIT // dt.itemsize),
                            st.just(LIMIT // dt.itemsize)))
    seed = data.draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    lut = rng.integers(0, 256, n * dt.itemsize, dtype=np.uint8).view(dt)
    if dt.kind in "fc":
        lut = np.nan_to_num(lut)  # NaN payloads need not survive a float copy bit for bit
    if dt.kind == "b":
        lut = lut.view(np.uint8) % 2 == 1
    idx = rng.integers(0, n, 256)
    with _copying(kernel_device) as q:
        np.testing.assert_array_equal(_gather(q, lut, idx), lut[idx])


def test_a_table_is_an_argument_not_a_constant(tq: sycl.queue, fresh_stats: None) -> None:
    """Other tables of one dtype (other sizes, other values) reuse the compiled kernel."""
    idx = np.arange(8) % 3
    for k, size in ((1.0, 3), (2.0, 50), (-1.0, 4096)):
        lut = np.arange(size, dtype=np.float64) * k
        np.testing.assert_array_equal(_gather(tq, lut, idx), lut[idx])
    if tq.get_device().image_targets:
        # one kernel for the float64 table (the int64 index table is another capture)
        assert _compiles() == 1, sycl.ext.kernel_cache_stats()
        _gather(tq, np.arange(5, dtype=np.int32), idx)
        assert _compiles() == 2, sycl.ext.kernel_cache_stats()  # another dtype: another kernel


def test_changes_between_launches_are_seen(tq: sycl.queue) -> None:
    lut = np.zeros(16, np.int32)
    idx = np.arange(16)
    for step in range(4):
        lut[:] = np.arange(16) * step  # in place: the same array object
        np.testing.assert_array_equal(_gather(tq, lut, idx), np.arange(16) * step)


def test_values_at_submit_are_used(table_q: sycl.queue) -> None:
    """The copy is made at submit: changing the array before the kernel ran changes nothing."""
    lut = np.full(1024, 3.0)
    out = np.zeros(1024)
    with sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            o = O.get_access(h, sycl.access_mode.write)

            def k(i):
                s = 0.0
                for j in range(64):  # some work, so that the host overtakes the kernel
                    s += lut[(i + j) % 1024]
                o[i] = s / 64

            h.parallel_for(sycl.range(1024), k)

        table_q.submit(cg)
        lut[:] = -1.0
    np.testing.assert_array_equal(out, 3.0)


def test_helpers_read_global_and_closure_tables(tq: sycl.queue, fresh_stats: None) -> None:
    global TABLE
    saved = TABLE

    def make(t):
        def at(i):
            return t[i]

        return at

    try:
        for k in (1.0, 5.0):
            TABLE = saved * k
            at = make(np.array([7, 8, 9, 10], np.int64))
            out = np.zeros(4)
            with sycl.buffer(out) as O:
                def cg(h: sycl.handler) -> None:
                    o = O.get_access(h, sycl.access_mode.write)
                    h.parallel_for(sycl.range(4),
                                   lambda i: o.__setitem__(i, from_table(3 - i) + at(i)))

                tq.submit(cg)
            np.testing.assert_array_equal(out, TABLE[::-1] + np.array([7, 8, 9, 10]))
    finally:
        TABLE = saved
    if tq.get_device().image_targets:
        assert _compiles() == 1, sycl.ext.kernel_cache_stats()


def test_handler_less_launches_take_tables(tq: sycl.queue) -> None:
    """``q.parallel_for(r, k)`` with a table and a USM pointer."""
    lut = np.array([2, 3, 5, 7, 11], np.int32)
    dst = sycl.malloc_device(5, tq, dtype=np.int32)
    try:
        for k in range(3):
            lut[k] = -k
            tq.parallel_for(sycl.range(5), lambda i: dst.__setitem__(i, lut[i] * 2)).wait()
            got = np.zeros(5, np.int32)
            tq.memcpy(got, dst, got.nbytes).wait()
            np.testing.assert_array_equal(got, lut * 2)
    finally:
        sycl.free(dst, tq)


def test_tables_in_reduction_kernels(tq: sycl.queue) -> None:
    weights = np.array([1.0, 2.0, 4.0, 8.0])
    total = np.zeros(1)
    with sycl.buffer(total) as T:
        def cg(h: sycl.handler) -> None:
            s = sycl.reduction(T, h, sycl.plus())
            h.parallel_for(sycl.range(16), s, lambda i, s: s.combine(weights[i % 4]))

        tq.submit(cg)
    assert total[0] == 4 * weights.sum()


def test_an_empty_table(tq: sycl.queue) -> None:
    lut = np.zeros(0, np.float32)
    out = np.ones(4, np.float32)
    with sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            o = O.get_access(h, sycl.access_mode.write)

            def k(i):
                if i > 100:
                    o[i] = lut[0]
                else:
                    o[i] = 2.0

            h.parallel_for(sycl.range(4), k)

        tq.submit(cg)
    np.testing.assert_array_equal(out, 2.0)


# ------------------------------------------------------------------------ errors
def _writes_table(q: sycl.queue, lut: np.ndarray, out: np.ndarray) -> None:
    with sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            o = O.get_access(h, sycl.access_mode.write)

            def k(i):
                o[i] = 1.0
                lut[i] = 2.0

            h.parallel_for(sycl.range(4), k)

        q.submit(cg)


def test_writing_a_table_is_a_compile_error(table_q: sycl.queue) -> None:
    lut = np.arange(4.0)
    out = np.zeros(4)
    with pytest.raises(sycl.kernel_compile_error) as ei:
        _writes_table(table_q, lut, out)
    msg = str(ei.value)
    assert ei.value.code() == sycl.errc.kernel
    line = _writes_table.__code__.co_firstlineno + 7
    assert f"{__file__}:{line}" in msg, msg
    assert "'lut'" in msg and "32 bytes (4 x float64)" in msg and "65536 bytes" in msg, msg
    assert "sycl.buffer" in msg and "sycl.malloc_device" in msg, msg
    assert (lut == np.arange(4.0)).all() and (out == 0).all()  # nothing ran


def test_writing_a_table_in_a_reduction_kernel_is_explained(table_q: sycl.queue) -> None:
    flags = np.zeros(8, np.int8)
    total = np.zeros(1)
    with sycl.buffer(total) as T:
        def cg(h: sycl.handler) -> None:
            s = sycl.reduction(T, h, sycl.plus())

            def k(i, s):
                flags[i] = 1
                s.combine(1.0)

            h.parallel_for(sycl.range(8), s, k)

        with pytest.raises(sycl.kernel_compile_error) as ei:
            table_q.submit(cg)
    msg = str(ei.value)
    assert "'flags'" in msg and "8 bytes (8 x int8)" in msg and "65536 bytes" in msg, msg
    assert (flags == 0).all() and total[0] == 0


def test_atomics_on_a_table_are_a_compile_error(table_q: sycl.queue) -> None:
    counts = np.zeros(4, np.int32)

    def k(i):
        sycl.atomic_ref(counts, 0, sycl.memory_order.relaxed, sycl.memory_scope.device) \
            .fetch_add(1)

    with pytest.raises(sycl.kernel_compile_error) as ei:
        table_q.parallel_for(sycl.range(4), k).wait()
    msg = str(ei.value)
    assert "'counts'" in msg and "16 bytes (4 x int32)" in msg and "sycl.buffer" in msg, msg
    assert (counts == 0).all()


def test_a_table_above_the_limit_is_a_kernel_argument_error(table_q: sycl.queue) -> None:
    ok = np.ones(LIMIT // 8)  # exactly the limit: fine
    np.testing.assert_array_equal(_gather(table_q, ok, np.arange(4)), 1.0)
    big = np.ones(LIMIT + 1, np.uint8)
    out = np.zeros(4, np.uint8)
    with pytest.raises(sycl.exception) as ei:
        _gather_into(table_q, big, out)
    msg = str(ei.value)
    assert ei.value.code() == sycl.errc.kernel_argument
    assert f"{__file__}:{_gather_into.__code__.co_firstlineno + 4}" in msg, msg
    assert "'big'" in msg and "65537 bytes (65537 x uint8)" in msg and "65536 bytes" in msg
    assert "sycl.buffer" in msg and "sycl.malloc_device" in msg
    assert (out == 0).all() and (big == 1).all()


def _gather_into(q: sycl.queue, big: np.ndarray, out: np.ndarray) -> None:
    with sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            o = O.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.range(4), lambda i: o.__setitem__(i, big[i]))

        q.submit(cg)


def test_multi_dimensional_and_strided_arrays_are_refused(tq: sycl.queue) -> None:
    for arr, what in ((np.zeros((2, 2)), "sycl.buffer"), (np.zeros(8)[::2], "contiguous copy")):
        with pytest.raises(sycl.exception) as ei:
            _gather_into(tq, arr, np.zeros(4))
        assert ei.value.code() == sycl.errc.invalid and what in str(ei.value)
        assert f"{__file__}:" in str(ei.value) and "'big'" in str(ei.value)


def test_arrays_of_other_than_native_numbers_are_refused(tq: sycl.queue) -> None:
    """A big-endian array once reached the compiler (a raw NumbaNotImplementedError), a
    datetime64 one a baffling 'numpy.bool()' error; both are errc.invalid at submit now."""
    cases = ((np.arange(4, dtype=">f8"), "non-native byte order (>f8)"),
             (np.zeros(4, "datetime64[D]"), "datetime64[D] cannot be passed"),
             (np.zeros(4, "U1"), "<U1 cannot be passed"))
    for arr, what in cases:
        with pytest.raises(sycl.exception) as ei:
            _gather_into(tq, arr, np.zeros(4))
        assert ei.value.code() == sycl.errc.invalid and what in str(ei.value), str(ei.value)
        assert f"{__file__}:" in str(ei.value) and "'big'" in str(ei.value)


def test_atomics_on_a_captured_array_where_it_is_passed_directly(any_kernel_queue: sycl.queue
                                                                 ) -> None:
    """On a device with system SVM and on the host device (which raised 'sycl.atomic_ref
    can only be called inside a kernel' before) an array is its own memory: atomics work."""
    q = any_kernel_queue
    if not _system(q.get_device()):
        pytest.skip("the device copies tables (atomics there: a compile error, tested above)")
    counts = np.zeros(4, np.int32)

    def k(i):
        sycl.atomic_ref(counts, i[0] % 2, sycl.memory_order.relaxed,
                        sycl.memory_scope.device).fetch_add(1)

    q.parallel_for(sycl.range(7), k).wait()
    assert counts.tolist() == [4, 3, 0, 0]


def test_the_limit_holds_before_anything_else_on_pocl(pocl_device: sycl.device) -> None:
    """PoCL (no system SVM) refuses an oversized table at submit, naming it; a small one
    is copied, and the kernel then fails only because PoCL loads no SPIR-V or PTX."""
    q = sycl.queue(pocl_device)
    assert not _system(pocl_device)
    with pytest.raises(sycl.exception) as ei:
        _gather_into(q, np.ones(LIMIT + 8, np.uint8), np.zeros(4, np.uint8))
    assert ei.value.code() == sycl.errc.kernel_argument and "'big'" in str(ei.value)
    with pytest.raises(sycl.exception) as ei:
        _gather_into(q, np.ones(8, np.uint8), np.zeros(4, np.uint8))
    assert ei.value.code() != sycl.errc.kernel_argument


def test_no_leak_over_many_launches(table_q: sycl.queue, monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[weakref.ref] = []
    real = tables.table

    def table(*args, **kw):  # type: ignore[no-untyped-def]
        p = real(*args, **kw)
        made.append(weakref.ref(p._alloc))
        return p

    monkeypatch.setattr(tables, "table", table)
    lut = np.arange(1024, dtype=np.float32)
    dst = sycl.malloc_device(1024, table_q, dtype=np.float32)
    try:
        for _ in range(500):
            table_q.parallel_for(sycl.range(1024), lambda i: dst.__setitem__(i, lut[i] + 1))
        table_q.wait()
        gc.collect()
        assert len(made) == 500  # one copy per launch, the first launch's included
        assert sum(r() is not None for r in made) <= 1  # at most the last launch's
        assert len(table_q.executor.inflight) == 0
        got = np.zeros(1024, np.float32)
        table_q.memcpy(got, dst, got.nbytes).wait()
        np.testing.assert_array_equal(got, lut + 1)
    finally:
        sycl.free(dst, table_q)

"""Buffers, accessors, the scheduler and write-back on every real device (no kernels)."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import pysycl as sycl


def _fill(q: sycl.queue, buf: sycl.buffer, value: object, **kw: object) -> sycl.event:
    return q.submit(lambda h: h.fill(buf.get_access(h, sycl.access_mode.write, **kw), value))


def test_fill_writes_back_on_with_exit(clq: sycl.queue) -> None:
    a = np.zeros(1000, dtype=np.int32)
    with sycl.buffer(a) as A:
        _fill(clq, A, 7)
        assert (a == 0).all()  # host array not touched before write-back (no host access yet)
    assert (a == 7).all()


def test_write_back_on_garbage_collection(clq: sycl.queue) -> None:
    a = np.zeros(64, dtype=np.float32)
    A = sycl.buffer(a)
    _fill(clq, A, 2.5)
    del A
    gc.collect()
    np.testing.assert_array_equal(a, np.full(64, 2.5, np.float32))


def test_host_accessor_sees_device_data_and_writes_are_uploaded(clq: sycl.queue) -> None:
    a = np.arange(16, dtype=np.float64)
    with sycl.buffer(a) as A:
        _fill(clq, A, 1.0, access_range=sycl.range(8))
        with sycl.host_accessor(A) as ha:
            np.testing.assert_array_equal(np.asarray(ha)[:8], np.ones(8))
            np.testing.assert_array_equal(np.asarray(ha)[8:], np.arange(8, 16))
            ha[15] = -1.0
        # The host write must reach the device before the next command reads it.
        out = np.zeros(16, dtype=np.float64)
        clq.submit(lambda h: h.copy(A.get_access(h, sycl.access_mode.read), out)).wait()
        assert out[15] == -1.0 and out[0] == 1.0
    assert a[15] == -1.0


def test_read_host_accessor_is_read_only(clq: sycl.queue) -> None:
    with sycl.buffer(np.zeros(4, np.int32)) as A:
        ha = sycl.host_accessor(A, sycl.access_mode.read)
        with pytest.raises(sycl.exception) as ei:
            ha[0] = 1
        assert ei.value.code() == sycl.errc.accessor


def test_ranged_fill_with_offset_2d(clq: sycl.queue) -> None:
    a = np.zeros((4, 6), dtype=np.int16)
    with sycl.buffer(a) as A:
        _fill(clq, A, 5, access_range=sycl.range(2, 3), access_offset=sycl.id(1, 2))
    ref = np.zeros((4, 6), np.int16)
    ref[1:3, 2:5] = 5
    np.testing.assert_array_equal(a, ref)


def test_copy_roundtrip_and_device_to_device(clq: sycl.queue) -> None:
    src = np.arange(100, dtype=np.uint32)
    dst = np.zeros_like(src)
    B = sycl.buffer(sycl.range(100), dtype=np.uint32)
    clq.submit(lambda h: h.copy(src, B.get_access(h, sycl.access_mode.write, properties=[sycl.no_init])))
    with sycl.buffer(dst) as D:
        clq.submit(lambda h: h.copy(B.get_access(h, sycl.access_mode.read),
                                  D.get_access(h, sycl.access_mode.write)))
    np.testing.assert_array_equal(dst, src)


def test_sub_buffer_fill_only_touches_its_rows(clq: sycl.queue) -> None:
    a = np.zeros((6, 4), dtype=np.float32)
    with sycl.buffer(a) as A:
        S = sycl.buffer(A, sycl.id(2, 0), sycl.range(3, 4))
        assert S.is_sub_buffer() and not A.is_sub_buffer()
        _fill(clq, S, 9.0)
    ref = np.zeros((6, 4), np.float32)
    ref[2:5] = 9.0
    np.testing.assert_array_equal(a, ref)


@pytest.mark.parametrize(
    ("base", "rng", "what"),
    [((4, 0), (3, 4), "exceeds"), ((1, 1), (2, 2), "not contiguous")],
)
def test_sub_buffer_errors(base: tuple[int, int], rng: tuple[int, int], what: str) -> None:
    A = sycl.buffer(np.zeros((6, 4), np.float32))
    with pytest.raises(sycl.exception) as ei:
        sycl.buffer(A, sycl.id(*base), sycl.range(*rng))
    assert ei.value.code() == sycl.errc.invalid
    assert what in str(ei.value)


def test_sub_buffer_of_sub_buffer_is_invalid() -> None:
    A = sycl.buffer(np.zeros(10, np.float32))
    S = sycl.buffer(A, sycl.id(2), sycl.range(4))
    with pytest.raises(sycl.exception) as ei:
        sycl.buffer(S, sycl.id(0), sycl.range(2))
    assert ei.value.code() == sycl.errc.invalid


@pytest.mark.parametrize("bad", [np.array([object()]), np.array(["a", "b"]),
                                 np.zeros(3, dtype=[("x", np.int32)])])
def test_non_numeric_dtypes_rejected(bad: np.ndarray) -> None:
    with pytest.raises(TypeError, match=r"not supported|not a numpy dtype"):
        sycl.buffer(bad)


def test_range_buffer_needs_dtype() -> None:
    with pytest.raises(TypeError, match="dtype="):
        sycl.buffer(sycl.range(4))


def test_non_contiguous_array_is_written_back_elementwise(clq: sycl.queue) -> None:
    base = np.zeros((4, 8), dtype=np.int32)
    view = base[:, ::2]  # non-contiguous
    with sycl.buffer(view) as V:
        assert V.get_range() == sycl.range(4, 4)
        _fill(clq, V, 3)
    assert (base[:, ::2] == 3).all() and (base[:, 1::2] == 0).all()


def test_read_only_array_is_never_written(clq: sycl.queue) -> None:
    a = np.arange(8, dtype=np.int32)
    a.flags.writeable = False
    with sycl.buffer(a) as A:
        _fill(clq, A, 0)
        with sycl.host_accessor(A, sycl.access_mode.read) as ha:
            assert (np.asarray(ha) == 0).all()
    np.testing.assert_array_equal(a, np.arange(8))


def test_list_container_written_back(clq: sycl.queue) -> None:
    data = [1, 2, 3, 4]
    with sycl.buffer(data, dtype=np.int64) as B:
        _fill(clq, B, 8)
    assert data == [8, 8, 8, 8]


def test_set_final_data_and_write_back_flags(clq: sycl.queue) -> None:
    a = np.zeros(5, np.float32)
    final = np.zeros(5, np.float32)
    with sycl.buffer(a) as A:
        A.set_final_data(final)
        _fill(clq, A, 4.0)
    assert (final == 4.0).all()
    b = np.zeros(5, np.float32)
    with sycl.buffer(b) as B:
        B.set_write_back(False)
        _fill(clq, B, 4.0)
    assert (b == 0).all()


def test_failed_command_group_changes_nothing(clq: sycl.queue) -> None:
    a = np.arange(10, dtype=np.float32)
    with sycl.buffer(a) as A:
        def cgf(h: sycl.handler) -> None:
            acc = A.get_access(h, sycl.access_mode.write)
            h.fill(acc, 0.0)
            raise RuntimeError("user bug")

        with pytest.raises(RuntimeError, match="user bug"):
            clq.submit(cgf)
    np.testing.assert_array_equal(a, np.arange(10, dtype=np.float32))


def test_one_command_per_group(clq: sycl.queue) -> None:
    A = sycl.buffer(np.zeros(4, np.int32))

    def cgf(h: sycl.handler) -> None:
        acc = A.get_access(h, sycl.access_mode.write)
        h.fill(acc, 1)
        h.fill(acc, 2)

    with pytest.raises(sycl.exception) as ei:
        clq.submit(cgf)
    assert ei.value.code() == sycl.errc.invalid and "only one command" in str(ei.value)


def test_accessor_range_out_of_bounds() -> None:
    A = sycl.buffer(np.zeros(8, np.int32))
    with pytest.raises(sycl.exception) as ei:
        sycl.accessor(A, None, sycl.access_mode.read, access_range=sycl.range(6),
                      access_offset=sycl.id(4))
    assert ei.value.code() == sycl.errc.invalid


def test_no_init_with_read_is_invalid() -> None:
    A = sycl.buffer(np.zeros(8, np.int32))
    with pytest.raises(sycl.exception) as ei:
        sycl.accessor(A, None, sycl.access_mode.read, properties=[sycl.no_init])
    assert ei.value.code() == sycl.errc.invalid


def test_device_accessor_on_host_is_an_error(clq: sycl.queue) -> None:
    A = sycl.buffer(np.zeros(8, np.int32))
    caught = []

    def cgf(h: sycl.handler) -> None:
        acc = A.get_access(h, sycl.access_mode.read)
        try:
            acc[0]
        except sycl.exception as e:
            caught.append(e)
        h.update_host(acc)

    clq.submit(cgf)
    assert caught and caught[0].code() == sycl.errc.accessor


def test_no_redundant_transfers_between_kernels(clq: sycl.queue) -> None:
    """A buffer already current on the device is not uploaded again."""
    a = np.zeros(32, np.int32)
    with sycl.buffer(a) as A:
        _fill(clq, A, 1)
        st = A._storage
        assert st.valid == {clq.get_context()._handle}
        # Overwrite the host copy behind the runtime's back: if the runtime
        # re-uploaded before the next (partial) fill, the 99s would appear.
        st.host[:] = 99
        _fill(clq, A, 2, access_range=sycl.range(4))
    assert list(a[:4]) == [2] * 4 and (a[4:] == 1).all()


def test_cross_queue_dependencies_order_commands(cl_device: sycl.device) -> None:
    ctx = sycl.context(cl_device)
    q1, q2 = sycl.queue(ctx, cl_device), sycl.queue(ctx, cl_device)
    a = np.zeros(1 << 16, np.float32)
    with sycl.buffer(a) as A:
        for i in range(10):
            qq = q1 if i % 2 == 0 else q2
            _fill(qq, A, float(i), access_range=sycl.range(1 << 16))
    assert (a == 9.0).all()


def test_depends_on_and_event_status(clq: sycl.queue) -> None:
    A = sycl.buffer(np.zeros(1024, np.int32))
    e1 = _fill(clq, A, 3)
    e2 = clq.submit(lambda h: (h.depends_on(e1), h.update_host(A.get_access(h, sycl.access_mode.read))))
    e2.wait()
    assert e2.get_wait_list() == [e1]
    assert e1.get_info(sycl.info.event.command_execution_status) == \
        sycl.info.event_command_status.complete

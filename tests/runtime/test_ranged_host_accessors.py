"""Ranged host accessors (SYCL 2020 §4.7.6.10) and the errc.invalid of ranged accessors whose
offset plus range leaves the buffer, for device and host accessors alike (SYCL-CTS
accessor_exceptions). Expected values are numpy slices of the same data."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import pysycl as sycl

RW, RD, WR = sycl.access_mode.read_write, sycl.access_mode.read, sycl.access_mode.write


@st.composite
def _blocks(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """(buffer shape, access offset, access range) inside the buffer, 1 to 3 dimensions."""
    n = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 6)) for _ in range(n))
    off = tuple(draw(st.integers(0, s - 1)) for s in shape)
    rng = tuple(draw(st.integers(1, s - o)) for s, o in zip(shape, off, strict=True))
    return shape, off, rng


def _block(off: tuple[int, ...], rng: tuple[int, ...]) -> tuple[slice, ...]:
    return tuple(slice(o, o + r) for o, r in zip(off, rng, strict=True))


@given(_blocks())
def test_ranged_host_accessor_sees_and_writes_its_block(blk) -> None:
    shape, off, rng = blk
    a = np.arange(np.prod(shape), dtype=np.int32).reshape(shape)
    want = a.copy()
    with sycl.buffer(a) as B:
        ha = sycl.host_accessor(B, RW, access_range=sycl.range(*rng), access_offset=sycl.id(*off))
        assert np.array_equal(np.asarray(ha), want[_block(off, rng)])
        assert tuple(ha.get_range()) == rng and tuple(ha.get_offset()) == off
        assert ha.size() == np.prod(rng) and ha.byte_size() == 4 * np.prod(rng) and len(ha) == rng[0]
        zero = sycl.id(*([0] * len(shape)))
        assert ha[zero] == want[off]                       # indices count from the offset
        assert ha[sycl.id(*(r - 1 for r in rng))] == want[tuple(o + r - 1 for o, r in
                                                                 zip(off, rng, strict=True))]
        ha[zero] = -7
        np.asarray(ha)[...] += 1000
        del ha
    want[off] = -7
    want[_block(off, rng)] += 1000
    assert np.array_equal(a, want)


def test_ranged_host_accessor_after_a_kernel(any_kernel_queue: sycl.queue) -> None:
    # The block of a buffer a kernel wrote (on the device or the host_debuggable device).
    a = np.zeros((4, 5), np.float32)
    with sycl.buffer(a) as B:
        def cg(h: sycl.handler) -> None:
            acc = B.get_access(h, WR)
            h.parallel_for(sycl.range(4, 5), lambda i: acc.__setitem__(i, i[0] * 10 + i[1]))
        any_kernel_queue.submit(cg)
        with B.get_host_access(RD, access_range=(2, 2), access_offset=(1, 3)) as ha:
            assert np.array_equal(np.asarray(ha), [[13, 14], [23, 24]])
            with pytest.raises(ValueError, match="read-only"):
                np.asarray(ha)[0, 0] = 1
            with pytest.raises(sycl.exception) as ei:
                ha[0, 0] = 1
            assert ei.value.code() == sycl.errc.accessor


def test_ranged_no_init_keeps_the_elements_outside_its_range(kq: sycl.queue) -> None:
    # no_init drops the old contents of the accessed block only: the rest must come home.
    a = np.zeros(8, np.float32)
    with sycl.buffer(a) as B:
        def cg(h: sycl.handler) -> None:
            acc = B.get_access(h, WR)
            h.parallel_for(sycl.range(8), lambda i: acc.__setitem__(i, i[0] + 1))
        kq.submit(cg)
        ha = sycl.host_accessor(B, WR, access_range=(3,), access_offset=(2,),
                                properties=[sycl.no_init])
        ha[0], ha[1], ha[2] = -1, -2, -3
        del ha
    assert a.tolist() == [1, 2, -1, -2, -3, 6, 7, 8]


_OUT = [((10,), None, 1), ((1,), (8,), 1), ((4,), (5,), 1),              # 1-D, buffer of 8
        ((4, 4), None, 2), ((1, 1), (0, 4), 2), ((2, 2), (2, 3), 2),     # 2-D, buffer (3, 4)
        ((1, 1, 1), (1, 1, 1), 3), ((2, 1, 1), (0, 0, 0), 3)]            # 3-D, buffer (1, 1, 1)
_SHAPES = {1: (8,), 2: (3, 4), 3: (1, 1, 1)}


@pytest.mark.parametrize(("rng", "off", "dims"), _OUT)
def test_out_of_range_ranged_host_accessor_is_invalid(rng, off, dims) -> None:
    a = np.arange(np.prod(_SHAPES[dims]), dtype=np.float32).reshape(_SHAPES[dims])
    with sycl.buffer(a) as B:
        for mode in (RD, WR, RW):
            kw = {"access_range": sycl.range(*rng)}
            if off is not None:
                kw["access_offset"] = sycl.id(*off)
            with pytest.raises(sycl.exception) as ei:
                sycl.host_accessor(B, mode, **kw)
            assert ei.value.code() == sycl.errc.invalid
            msg = str(ei.value)
            assert msg.startswith(f"[errc.invalid] sycl.host_accessor at {__file__}:"), msg
            assert f"access range {rng} at offset {off or (0,) * dims} exceeds the buffer range " \
                   f"{_SHAPES[dims]}" in msg
            with pytest.raises(sycl.exception) as ei:
                B.get_host_access(mode, **kw)
            assert ei.value.code() == sycl.errc.invalid


@pytest.mark.parametrize(("rng", "off", "dims"), _OUT)
def test_out_of_range_ranged_device_accessor_is_invalid(any_kernel_queue: sycl.queue, rng, off,
                                                        dims) -> None:
    a = np.zeros(_SHAPES[dims], np.float32)
    kw = {"access_range": sycl.range(*rng)}
    if off is not None:
        kw["access_offset"] = sycl.id(*off)
    with sycl.buffer(a) as B:
        with pytest.raises(sycl.exception) as ei:
            any_kernel_queue.submit(lambda h: B.get_access(h, RW, **kw))
        assert ei.value.code() == sycl.errc.invalid
        assert f"sycl.accessor at {__file__}:" in str(ei.value)
        with pytest.raises(sycl.exception) as ei:  # a placeholder: checked at construction too
            sycl.accessor(B, RW, **kw)
        assert ei.value.code() == sycl.errc.invalid
        with sycl.host_accessor(B) as ha:  # the buffer is untouched and usable
            assert np.asarray(ha).shape == _SHAPES[dims]


def test_ranged_accessor_dimensions_must_match() -> None:
    with sycl.buffer(np.zeros((3, 4), np.float32)) as B:
        with pytest.raises(sycl.exception, match=r"must have the buffer's 2 dimension") as ei:
            sycl.host_accessor(B, access_range=(2,))
        assert ei.value.code() == sycl.errc.invalid


def test_host_accessor_exports_dlpack_in_place() -> None:
    """mpi4py (docs/distributed.md) and np.from_dlpack see the accessed memory itself."""
    data = np.arange(6.0)
    with sycl.buffer(data) as B:
        with B.get_host_access() as acc:
            v = np.from_dlpack(acc)
            assert acc.__dlpack_device__() == (1, 0)
            v[2] = 42.0  # a view, not a copy
            assert acc[2] == 42.0
            assert list(np.from_dlpack(acc)) == [0.0, 1.0, 42.0, 3.0, 4.0, 5.0]
    assert data[2] == 42.0

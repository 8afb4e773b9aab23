"""The scheduler against a numpy model: random command sequences over two queues.

Each step is a fill of a random sub-range, a device-to-device copy between
buffers, a host write through a host_accessor, or a host read that is checked
against the model on the spot. Any missing read-after-write, write-after-read
or write-after-write dependency, stale copy or lost write-back shows up as a
mismatch with the model.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import pysycl as sycl

N = 64

step = st.one_of(
    st.tuples(st.just("fill"), st.integers(0, 1), st.integers(0, 1), st.integers(0, N - 1),
              st.integers(1, N), st.integers(-50, 50)),
    st.tuples(st.just("copy"), st.integers(0, 1), st.integers(0, 1), st.integers(0, N - 1),
              st.integers(1, N), st.just(0)),
    st.tuples(st.just("host_write"), st.just(0), st.integers(0, 1), st.integers(0, N - 1),
              st.just(1), st.integers(-50, 50)),
    st.tuples(st.just("host_read"), st.just(0), st.integers(0, 1), st.just(0), st.just(N),
              st.just(0)),
)

_DEV = sycl.device(sycl.default_selector_v)
_CTX = sycl.context(_DEV)
_QUEUES = (sycl.queue(_CTX, _DEV), sycl.queue(_CTX, _DEV))


@settings(max_examples=40, deadline=None)
@given(st.lists(step, min_size=1, max_size=25))
def test_random_command_sequences_match_numpy(steps: list[tuple[str, int, int, int, int, int]]) -> None:
    host = [np.zeros(N, np.int32), np.arange(N, dtype=np.int32)]
    model = [h.copy() for h in host]
    bufs = [sycl.buffer(h) for h in host]
    for kind, qi, bi, off, length, value in steps:
        q = _QUEUES[qi]
        length = min(length, N - off)
        if kind == "fill":
            q.fill(sycl.accessor(bufs[bi], None, sycl.access_mode.write,
                                 access_range=sycl.range(length), access_offset=sycl.id(off)),
                   value)
            model[bi][off:off + length] = value
        elif kind == "copy":
            src, dst = bufs[1 - bi], bufs[bi]

            def cg(h: sycl.handler, src: sycl.buffer = src, dst: sycl.buffer = dst,
                   off: int = off, length: int = length) -> None:
                h.copy(src.get_access(h, sycl.access_mode.read, access_range=sycl.range(length),
                                      access_offset=sycl.id(off)),
                       dst.get_access(h, sycl.access_mode.write, access_range=sycl.range(length),
                                      access_offset=sycl.id(off)))

            q.submit(cg)
            model[bi][off:off + length] = model[1 - bi][off:off + length]
        elif kind == "host_write":
            with sycl.host_accessor(bufs[bi], sycl.access_mode.read_write) as ha:
                ha[off] = value
            model[bi][off] = value
        else:
            with sycl.host_accessor(bufs[bi], sycl.access_mode.read) as ha:
                np.testing.assert_array_equal(np.asarray(ha), model[bi])
    for b in bufs:
        b._flush()  # write-back, as at the end of a `with` block
    np.testing.assert_array_equal(host[0], model[0])
    np.testing.assert_array_equal(host[1], model[1])

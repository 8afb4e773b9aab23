"""Property: the static bounds check rejects exactly the launches that would go out of bounds.

Random buffer shapes, ranged accessors (offset and range) and launch ranges,
with a kernel that indexes the accessor with the work-item id (directly or
transposed). The expectation comes from the shapes alone: a launch with at
least one work-item goes out of bounds iff, in some accessor dimension, the
launch dimension indexing it is longer than the accessor's range. Accepted
launches run and are compared with numpy.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pysycl as sycl
from pysycl.testing import strategies as sst

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


@st.composite
def _cases(draw: Any) -> tuple[str, tuple[int, ...], tuple[int, ...], tuple[int, ...],
                               tuple[int, ...]]:
    pattern = draw(st.sampled_from(["item", "transposed"]))
    ndim = 2 if pattern == "transposed" else draw(st.integers(1, 2))
    shape = tuple(draw(sst.ranges(dims=ndim, max_size=49)))
    # offset in [0, shape], the accessor's range in [0, shape - offset], the launch in
    # [0, 9]: ids inside those boxes (zero extents included)
    offset = tuple(draw(sst.ids(tuple(s + 1 for s in shape))))
    acc_range = tuple(draw(sst.ids(tuple(s - o + 1 for s, o in zip(shape, offset, strict=True)))))
    launch = tuple(draw(sst.ids((10,) * ndim)))
    return pattern, shape, offset, acc_range, launch


def _submit(q: sycl.queue, pattern: str, m: np.ndarray, offset: tuple[int, ...],
            acc_range: tuple[int, ...], launch: tuple[int, ...]) -> None:
    with sycl.buffer(m) as M:
        def cg(h: sycl.handler) -> None:
            w = M.get_access(h, sycl.access_mode.read_write, access_range=acc_range,
                             access_offset=offset)
            if pattern == "item":
                def k(it: sycl.item) -> None:
                    w[it] = w[it] + 1
            else:
                def k(it: sycl.item) -> None:
                    w[it[1], it[0]] = w[it[1], it[0]] + 1
            h.parallel_for(sycl.range(*launch), k)
        q.submit(cg)


@SETTINGS
@given(case=_cases())
def test_static_check_rejects_exactly_the_out_of_bounds_launches(kq: sycl.queue,
                                                                 case: Any) -> None:
    pattern, shape, offset, acc_range, launch = case
    used = launch if pattern == "item" else launch[::-1]   # launch extent per accessor dim
    goes_out = 0 not in launch and any(u > r for u, r in zip(used, acc_range, strict=True))
    m = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    expect = m.copy()
    if goes_out:
        with pytest.raises(sycl.exception) as ei:
            _submit(kq, pattern, m, offset, acc_range, launch)
        assert ei.value.code() == sycl.errc.invalid
        assert "'w'" in ei.value.what()
    else:
        _submit(kq, pattern, m, offset, acc_range, launch)
        region = tuple(slice(o, o + u) for o, u in zip(offset, used, strict=True))
        expect[region] += 1
    np.testing.assert_array_equal(m, expect)

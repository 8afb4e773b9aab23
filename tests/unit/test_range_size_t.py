"""A ``sycl.range`` component is a ``size_t`` (SYCL 2020 §4.9.1.1): one past 2**64 - 1 is
refused when the range is made (pure Python: no Numba, no OpenCL needed)."""

from __future__ import annotations

import pytest

import pysycl as sycl

SIZE_MAX = 2**64 - 1


@pytest.mark.parametrize("make", [lambda: sycl.range(2**64), lambda: sycl.range(1, 2**64),
                                  lambda: sycl.range((4, 4, 2**70)),
                                  lambda: sycl.range(2**63) * 2,
                                  lambda: sycl.nd_range(sycl.range(2**64), sycl.range(1))],
                         ids=["1d", "2d", "3d-tuple", "arithmetic", "nd_range"])
def test_range_component_past_size_t_is_invalid(make) -> None:
    with pytest.raises(sycl.exception) as ei:
        make()
    assert ei.value.code() == sycl.errc.invalid
    assert "does not fit size_t" in str(ei.value) and str(SIZE_MAX) in str(ei.value)


def test_largest_size_t_range_is_a_range() -> None:
    assert sycl.range(SIZE_MAX).values == (SIZE_MAX,)
    assert sycl.range(1, SIZE_MAX).size() == SIZE_MAX

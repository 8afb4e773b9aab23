"""Host-side index-space classes (pure Python: no Numba, no OpenCL needed)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

import pysycl as sycl
from pysycl._objects.range import delinearize, linear_index
from pysycl.testing import strategies as sst


@given(sst.ranges(max_size=343))
def test_linear_ids_are_a_bijection_onto_0_size(r: sycl.range) -> None:
    shape = tuple(r)
    lin = [sycl.item(sycl.id(*idx), r).get_linear_id()
           for idx in itertools.product(*(range(n) for n in shape))]
    # Row-major: iterating the last dimension fastest enumerates 0..size-1 in order.
    assert lin == list(range(r.size()))
    for k in lin:
        assert linear_index(delinearize(k, shape), shape) == k


@given(sst.ranges(max_size=343), st.data())
def test_id_range_arithmetic_is_elementwise(r: sycl.range, data: st.DataObject) -> None:
    shape = tuple(r)
    other = tuple(data.draw(sst.ranges(dims=len(shape), max_size=729)))
    a, b = sycl.id(*shape), sycl.id(*other)
    assert tuple(a + b) == tuple(x + y for x, y in zip(shape, other, strict=False))
    assert tuple(a * b) == tuple(x * y for x, y in zip(shape, other, strict=False))
    assert tuple(a - b) == tuple(x - y for x, y in zip(shape, other, strict=False))
    assert tuple(a // b) == tuple(x // y for x, y in zip(shape, other, strict=False))
    assert tuple(a % b) == tuple(x % y for x, y in zip(shape, other, strict=False))
    assert tuple(a + 3) == tuple(x + 3 for x in shape)
    assert tuple(3 * a) == tuple(3 * x for x in shape)
    assert sycl.range(*shape).size() == __import__("math").prod(shape)


@given(sst.ranges(max_size=216), st.data())
def test_nd_range_group_times_local_is_global(local: sycl.range, data: st.DataObject) -> None:
    groups = data.draw(sst.ranges(dims=len(local), max_size=216))
    glob = [g * loc for g, loc in zip(groups, local, strict=True)]
    nd = sycl.nd_range(sycl.range(*glob), local)
    assert tuple(nd.get_group_range() * nd.get_local_range()) == tuple(nd.get_global_range())
    assert nd.get_group_range() == groups


def test_c_division_truncates_toward_zero() -> None:
    assert tuple(sycl.id(-7, 7) // sycl.id(2, -2)) == (-3, -3)
    assert tuple(sycl.id(-7, 7) % sycl.id(2, -2)) == (-1, 1)


def test_range_validation() -> None:
    with pytest.raises(TypeError):
        sycl.range(1, 2, 3, 4)
    with pytest.raises(TypeError):
        sycl.range(1.5)
    with pytest.raises(sycl.exception) as ei:
        sycl.range(-1)
    assert ei.value.code() == sycl.errc.invalid
    with pytest.raises(TypeError):
        sycl.nd_range(sycl.range(4, 4), sycl.range(2))


def test_equality_and_hash() -> None:
    assert sycl.range(2, 3) == sycl.range((2, 3)) and hash(sycl.range(2, 3)) == hash(sycl.range(2, 3))
    assert sycl.id(2, 3) != sycl.range(2, 3)
    assert sycl.id() == sycl.id(0)
    assert int(sycl.id(5)) == 5
    it = sycl.item(sycl.id(1, 2), sycl.range(3, 4))
    assert it.get_id(1) == 2 and it[0] == 1 and it.get_range(1) == 4 and it.get_linear_id() == 6


def test_default_constructors_unary_operators_and_scalars_on_the_left() -> None:
    """SYCL 2020 §4.9.1 on the host classes: ``range()``/``id()`` are one 0; ``+x``, ``-x``;
    every binary operator takes a number on the left; ``&&``/``||`` are methods."""
    assert sycl.range() == sycl.range(0) and sycl.id() == sycl.id(0)
    x = sycl.id(3, -4, 5)
    assert -x == sycl.id(-3, 4, -5) and +x == x and -sycl.id(-3, 4, -5) == x
    assert (2 << sycl.id(1, 2), 100 >> sycl.id(1, 2)) == (sycl.id(4, 8), sycl.id(50, 25))
    assert (6 & sycl.range(3, 4), 6 | sycl.range(1, 8), 6 ^ sycl.range(3, 6)) == \
        (sycl.range(2, 4), sycl.range(7, 14), sycl.range(5, 0))
    assert (10 - x, -7 // sycl.id(2, -2), -7 % sycl.id(2, -2)) == \
        (sycl.id(7, 14, 5), sycl.id(-3, 3), sycl.id(-1, -1))
    assert sycl.id(0, 2, 0).elementwise_logical_and(sycl.id(1, 3, 0)) == sycl.id(0, 1, 0)
    assert sycl.id(0, 2, 0).elementwise_logical_or(0) == sycl.id(0, 1, 0)
    assert sycl.id(1, 5).elementwise_gt(3) == sycl.id(0, 1)  # 3 < x, mirrored
    assert sycl.id(sycl.item((1, 2), sycl.range(3, 4))) == sycl.id(1, 2)  # id(const item&)
    assert sycl.id(1) < sycl.id(2) and sycl.id(3) >= 3  # 1-D ids compare as numbers
    with pytest.raises(TypeError, match=r"'<=' of sycl.range values is elementwise in SYCL "
                       r"\(the result is a sycl.range of 0/1\): write x.elementwise_le\(y\)"):
        _ = sycl.range(1, 2) <= sycl.range(2, 2)

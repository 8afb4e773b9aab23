"""Properties of the host-side nd_item / group model (pure Python)."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

import pysycl as sycl
from pysycl.testing import strategies as sst

# (work-groups, local range): a local range and a number of work-groups per dimension.
launches = sst.ranges(max_size=125).flatmap(
    lambda loc: st.tuples(sst.ranges(dims=len(loc), max_size=64), st.just(loc)))


def _nd(launch: tuple[sycl.range, sycl.range]) -> sycl.nd_range:
    groups, loc = launch
    return sycl.nd_range(sycl.range(*(g * e for g, e in zip(groups, loc, strict=True))), loc)


def _items(nd: sycl.nd_range) -> list[sycl.nd_item]:
    return [sycl.nd_item(gid, nd)
            for gid in itertools.product(*(range(n) for n in nd.get_global_range()))]


@given(launches)
def test_group_times_local_plus_local_id_is_global_id(launch: tuple[sycl.range, sycl.range]) -> None:
    nd = _nd(launch)
    for it in _items(nd):
        for d in range(nd.dimensions):
            assert it.get_group(d) * it.get_local_range(d) + it.get_local_id(d) == \
                it.get_global_id(d)
            assert 0 <= it.get_local_id(d) < it.get_local_range(d)
            assert 0 <= it.get_group(d) < it.get_group_range(d)


@given(launches)
def test_linear_ids_are_bijections(launch: tuple[sycl.range, sycl.range]) -> None:
    nd = _nd(launch)
    items = _items(nd)
    assert sorted(it.get_global_linear_id() for it in items) == list(range(len(items)))
    by_group: dict[int, list[int]] = {}
    for it in items:
        by_group.setdefault(it.get_group_linear_id(), []).append(it.get_local_linear_id())
    assert sorted(by_group) == list(range(nd.get_group_range().size()))
    for lids in by_group.values():
        assert sorted(lids) == list(range(nd.get_local_range().size()))


@given(launches)
def test_one_leader_per_group_and_group_queries_agree(launch: tuple[sycl.range, sycl.range]) -> None:
    nd = _nd(launch)
    items = _items(nd)
    leaders = [it for it in items if it.get_group().leader()]
    assert len(leaders) == nd.get_group_range().size()
    for it in items:
        g = it.get_group()
        assert tuple(g.get_group_id()) == tuple(it.get_group(d) for d in range(nd.dimensions))
        assert g.get_local_id() == it.get_local_id()
        assert g.get_local_range() == it.get_local_range() == nd.get_local_range()
        assert g.get_group_range() == it.get_group_range() == nd.get_group_range()
        assert g.get_group_linear_id() == it.get_group_linear_id()
        assert g.get_local_linear_id() == it.get_local_linear_id()
        assert it.get_nd_range() == nd


def test_work_group_functions_are_device_only() -> None:
    import pytest

    for fn, args in ((sycl.group_barrier, (None,)), (sycl.atomic_fence, (None, None)),
                     (sycl.private_array, (int, 4))):
        with pytest.raises(sycl.exception) as ei:
            fn(*args)
        assert ei.value.code() == sycl.errc.invalid
    assert sycl.plus()(2, 3) == 5 and sycl.maximum()(2, 3) == 3 and sycl.bit_xor()(6, 3) == 5

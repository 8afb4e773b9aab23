"""The low-layer launch types (``pysycl._core.launch_types``; docs/design/launch.md §2.2)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

import pysycl as sycl
from pysycl._core.launch_types import (
    SPIRV,
    ContextRef,
    DeviceRef,
    Geometry,
    Request,
    Target,
)

_sizes = st.lists(st.integers(1, 1 << 20), min_size=1, max_size=3).map(tuple)


@given(_sizes, st.booleans())
def test_fastest_first_reverses_sycl_order_and_sycl_id_undoes_it(gsize: tuple[int, ...],
                                                                 nd: bool) -> None:
    local = tuple(1 for _ in gsize) if nd else None
    geo = Geometry("nd_range" if nd else "range", gsize, local)
    g, loc = geo.fastest_first()
    assert g == tuple(reversed(gsize))
    assert g[0] == gsize[-1]  # SYCL's last dimension is the fastest
    assert loc == (None if local is None else tuple(reversed(local)))
    assert Geometry.sycl_id(g) == gsize


def test_values_are_immutable_and_hashable() -> None:
    assert SPIRV == Target("spirv") and SPIRV.arch == ""
    assert {Target("ptx", "sm_80"): 1}[Target("ptx", "sm_80")] == 1
    r = Request(context_key=1, target=SPIRV, name="k")
    assert hash(r) == hash(Request(1, SPIRV, None, (), False, "k"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.name = "other"  # type: ignore[misc]
    assert Geometry("single_task", (1,)).fastest_first() == ((1,), None)


@pytest.mark.parametrize("proto, obj", [
    (DeviceRef, lambda: sycl.device(sycl.default_selector_v)),
    (ContextRef, lambda: sycl.context(sycl.device(sycl.default_selector_v))),
])
def test_the_protocols_describe_todays_objects(proto: type, obj: object) -> None:
    o = obj()  # type: ignore[operator]
    members = [m for m in vars(proto) if not m.startswith("_")]
    assert members, proto
    missing = [m for m in members if not hasattr(o, m)]
    assert missing == [], f"{type(o).__name__} lacks {missing} of {proto.__name__}"

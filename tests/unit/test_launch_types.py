"""The low-layer launch types (``pysycl._core.launch_types``; docs/design/launch.md §2.2)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import pysycl as sycl
from pysycl._core.launch_types import (
    SPIRV,
    ContextRef,
    DeviceRef,
    Target,
    native_order,
    sycl_order,
)

_sizes = st.lists(st.integers(1, 1 << 20), min_size=1, max_size=3).map(tuple)


@given(_sizes)
def test_native_order_reverses_sycl_order_and_sycl_order_undoes_it(sizes: tuple[int, ...]
                                                                  ) -> None:
    native = native_order(sizes)
    assert native == tuple(reversed(sizes))
    assert native[0] == sizes[-1]  # SYCL's last dimension is the fastest
    assert sycl_order(native) == sizes
    assert native_order(sycl.range(*sizes)) == native  # ranges iterate in SYCL order


def test_targets_are_immutable_and_hashable() -> None:
    assert SPIRV == Target("spirv") and SPIRV.arch == ""
    assert {Target("ptx", "sm_80"): 1}[Target("ptx", "sm_80")] == 1
    with pytest.raises(AttributeError):
        SPIRV.arch = "sm_80"  # type: ignore[misc]


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

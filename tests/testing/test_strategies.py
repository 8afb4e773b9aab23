"""pysycl.testing.strategies: only valid values, launched on real devices; minimal shrinks;
clear errors; the package imports without hypothesis.

The launches check every work-item's ids against ``sycl.nd_item``'s definition
(SYCL 2020 §4.9.1.5), computed here with numpy: global ids in row-major order,
local id = global id % local range, group id = global id // local range, linear
ids row-major over their ranges.
"""

from __future__ import annotations

import itertools
import math
import os
import random
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

import pysycl as sycl
from pysycl.testing import strategies as sst
from tests.kernels.test_ndrange_property import _check_nd  # every id against nd_item's definition

LAUNCHES = settings(max_examples=25)
PURE = settings(max_examples=200)
#: find() without the example database: what it shrinks to depends only on the strategy.
FIND = settings(database=None, max_examples=2000)


def _device(request: pytest.FixtureRequest, which: str) -> sycl.device:
    return request.getfixturevalue("kernel_device" if which == "compiled" else "host_device")


def _caps(dev: sycl.device, n: int) -> tuple[int, ...]:
    info = (sycl.info.device.max_work_item_sizes_1d, sycl.info.device.max_work_item_sizes_2d,
            sycl.info.device.max_work_item_sizes_3d)[n - 1]
    return tuple(dev.get_info(info))


# ------------------------------------------------------------------ launches
@pytest.mark.parametrize("which", ["compiled", "host"])
@LAUNCHES
@given(data=st.data())
def test_drawn_nd_ranges_launch_with_the_defined_ids(request: pytest.FixtureRequest, which: str,
                                                     data: st.DataObject) -> None:
    dev = _device(request, which)
    nd = data.draw(sst.nd_ranges(dev), label="nd_range")
    _check_nd(sycl.queue(dev), nd)


@pytest.mark.parametrize("which", ["compiled", "host"])
@LAUNCHES
@given(data=st.data())
def test_sub_group_sized_nd_ranges_launch(request: pytest.FixtureRequest, which: str,
                                          data: st.DataObject) -> None:
    dev = _device(request, which)
    sg = data.draw(st.sampled_from(dev.get_info(sycl.info.device.sub_group_sizes)), label="sg")
    nd = data.draw(sst.nd_ranges(dev, max_global=max(256, 4 * sg), sub_group_size=sg))
    assert nd.get_local_range().size() % sg == 0
    _check_nd(sycl.queue(dev), nd)


def _item_table(q: sycl.queue, r: sycl.range) -> np.ndarray:
    n = len(r)
    out = np.full((r.size(), n + 1), -1, dtype=np.int64)
    with sycl.buffer(out) as OUT:
        def cg(h: sycl.handler) -> None:
            o = OUT.get_access(h, sycl.access_mode.write)
            ndims = n

            def k(it):
                row = it.get_linear_id()
                for d in range(ndims):
                    o[row, d] = it.get_id(d)
                o[row, ndims] = it.get_range(ndims - 1)

            h.parallel_for(r, k)

        q.submit(cg)
    return out


@pytest.mark.parametrize("which", ["compiled", "host"])
@LAUNCHES
@given(data=st.data())
def test_drawn_ranges_launch_with_row_major_ids(request: pytest.FixtureRequest, which: str,
                                                data: st.DataObject) -> None:
    dev = _device(request, which)
    r = data.draw(sst.ranges(), label="range")
    shape = tuple(r)
    want = np.concatenate([np.stack(np.unravel_index(np.arange(r.size()), shape), axis=1),
                           np.full((r.size(), 1), shape[-1])], axis=1)
    np.testing.assert_array_equal(_item_table(sycl.queue(dev), r), want)


@pytest.mark.parametrize("which", ["compiled", "host"])
@settings(max_examples=15)
@given(data=st.data())
def test_drawn_work_group_sizes_launch(request: pytest.FixtureRequest, which: str,
                                       data: st.DataObject) -> None:
    dev = _device(request, which)
    # 256: a kernel's own limit on an NVIDIA GPU without a launch bound (docs/gpu.md)
    loc = data.draw(sst.work_group_sizes(dev, max_work_group_size=256), label="local")
    nd = sycl.nd_range(loc, loc)   # one work-group of that shape
    _check_nd(sycl.queue(dev), nd)


PROBE = "pysycl.testing work-group limit probe"


def _linear_ids(q: sycl.queue, nd: sycl.nd_range) -> np.ndarray:
    out = np.full(nd.get_global_range().size(), -1, np.int64)
    with sycl.buffer(out) as B:
        def cg(h: sycl.handler) -> None:
            o = B.get_access(h, sycl.access_mode.write)
            h.parallel_for(nd, lambda it: o.__setitem__(it.get_global_linear_id(),
                                                       it.get_local_linear_id()),
                           kernel_name=PROBE)

        q.submit(cg)
    return out


def test_the_kernels_own_limit_bounds_the_work_groups(kernel_device: sycl.device) -> None:
    """The documented route: the kernel's info.kernel_device_specific.work_group_size.

    The bundle is this kernel's (``kernel_name=``), got once: a bundle of every kernel
    the process has met builds all of them (hundreds in a test session), again whenever
    an example's launch adds a variant (another dimension count)."""
    q = sycl.queue(kernel_device)
    _linear_ids(q, sycl.nd_range(sycl.range(2), sycl.range(1)))   # built once
    bundle = sycl.get_kernel_bundle(q.get_context(), [kernel_device], kernel_name=PROBE,
                                    state=sycl.bundle_state.executable)
    kernel = bundle.get_kernel(sycl.get_kernel_id(PROBE))
    limit = kernel.get_info(sycl.info.kernel_device_specific.work_group_size, kernel_device)
    assert 1 <= limit <= kernel_device.get_info(sycl.info.device.max_work_group_size)

    @settings(max_examples=10)
    @given(data=st.data())
    def launches(data: st.DataObject) -> None:
        nd = data.draw(sst.nd_ranges(kernel_device, max_global=2 * limit,
                                     max_work_group_size=limit))
        assert nd.get_local_range().size() <= limit
        glob, loc = tuple(nd.get_global_range()), tuple(nd.get_local_range())
        want = [sycl.nd_item(gid, nd).get_local_linear_id() for gid in np.ndindex(*glob)]
        np.testing.assert_array_equal(_linear_ids(q, nd), want)
        assert all(g % e == 0 for g, e in zip(glob, loc, strict=True))

    launches()


# ------------------------------------------------------------------ validity, many draws
@pytest.mark.parametrize("which", ["compiled", "host"])
@PURE
@given(data=st.data())
def test_nd_ranges_keep_every_limit(request: pytest.FixtureRequest, which: str,
                                    data: st.DataObject) -> None:
    dev = _device(request, which)
    dims = data.draw(st.none() | st.integers(1, 3), label="dims")
    max_global = data.draw(st.integers(1, 5000), label="max_global")
    max_wg = data.draw(st.none() | st.integers(1, 600), label="max_work_group_size")
    sizes = [s for s in dev.get_info(sycl.info.device.sub_group_sizes)
             if s <= min(max_global, max_wg or s)]
    sg = data.draw(st.none() | st.sampled_from(sizes) if sizes else st.none(), label="sg")
    nd = data.draw(sst.nd_ranges(dev, dims, max_global, max_wg, sg), label="nd_range")
    glob, loc = tuple(nd.get_global_range()), tuple(nd.get_local_range())
    assert dims is None or len(glob) == dims
    assert 1 <= len(glob) <= 3 and nd.get_offset() == sycl.id(*[0] * len(glob))
    assert math.prod(glob) <= max_global
    assert all(e >= 1 and g % e == 0 for g, e in zip(glob, loc, strict=True))
    limit = dev.get_info(sycl.info.device.max_work_group_size)
    assert math.prod(loc) <= min(limit, max_wg or limit)
    assert all(e <= c for e, c in zip(loc, _caps(dev, len(loc)), strict=True))
    assert sg is None or math.prod(loc) % sg == 0


@PURE
@given(data=st.data())
def test_ranges_and_ids_are_valid(data: st.DataObject) -> None:
    dims = data.draw(st.none() | st.integers(1, 3), label="dims")
    max_size = data.draw(st.integers(1, 10_000), label="max_size")
    r = data.draw(sst.ranges(dims, max_size), label="range")
    assert isinstance(r, sycl.range) and (dims is None or len(r) == dims)
    assert all(e >= 1 for e in r) and r.size() <= max_size
    i = data.draw(sst.ids(r), label="id")
    assert isinstance(i, sycl.id) and len(i) == len(r)
    assert all(0 <= x < e for x, e in zip(i, r, strict=True))
    j = data.draw(sst.ids(tuple(r)), label="id from a tuple")
    assert all(0 <= x < e for x, e in zip(j, r, strict=True))


def test_every_valid_nd_range_can_be_drawn(kernel_device: sycl.device) -> None:
    """Completeness on a small space: 2-d, work-groups of one sub-group, at most two."""
    dev = kernel_device
    sg = min(dev.get_info(sycl.info.device.sub_group_sizes))
    strategy = sst.nd_ranges(dev, dims=2, max_global=2 * sg, sub_group_size=sg)
    caps = _caps(dev, 2)
    valid = {sycl.nd_range(sycl.range(a * c, (sg // a) * d), sycl.range(a, sg // a))
             for a in range(1, sg + 1) if sg % a == 0 and a <= caps[0] and sg // a <= caps[1]
             for c, d in ((1, 1), (1, 2), (2, 1))}
    assert len(valid) >= 3
    for target in valid:
        assert find(strategy, lambda nd, t=target: nd == t, settings=FIND) == target


@PURE
@given(data=st.data())
def test_splits_keep_small_work_item_caps(data: st.DataObject) -> None:
    """Devices here have caps above their work-group limit; a GPU's are not (64 in SYCL
    dimension 0 of a 3-d range): the split that honours them, with small caps."""
    caps = tuple(data.draw(st.lists(st.integers(1, 6), min_size=1, max_size=3), label="caps"))
    products = {math.prod(t) for t in itertools.product(*(range(1, c + 1) for c in caps))}
    for total in range(1, math.prod(caps) + 2):
        assert sst._fits(total, caps) == (total in products), (total, caps)
    total = data.draw(st.sampled_from(sorted(products)), label="total")
    split = data.draw(st.composite(lambda draw: sst._split(draw, total, caps))(), label="split")
    assert math.prod(split) == total and all(1 <= e <= c for e, c in zip(split, caps, strict=True))


# ------------------------------------------------------------------ shrinking
def test_shrinks_to_the_smallest_valid_case(kernel_device: sycl.device,
                                            host_device: sycl.device) -> None:
    def least(strategy, cond=lambda _: True):
        found = {find(strategy, cond, settings=FIND, random=random.Random(seed))
                 for seed in range(3)}   # from three different first failures
        assert len(found) == 1, found
        return found.pop()

    assert least(sst.ranges()) == sycl.range(1)
    assert least(sst.ranges(dims=3)) == sycl.range(1, 1, 1)
    assert least(sst.ids(sycl.range(4, 5))) == sycl.id(0, 0)
    for dev in (kernel_device, host_device):
        assert least(sst.nd_ranges(dev)) == sycl.nd_range(sycl.range(1), sycl.range(1))
        assert least(sst.nd_ranges(dev, dims=3)) == sycl.nd_range(sycl.range(1, 1, 1),
                                                                sycl.range(1, 1, 1))
        assert least(sst.work_group_sizes(dev, 2)) == sycl.range(1, 1)
        sg = dev.get_info(sycl.info.device.sub_group_sizes)[0]
        assert least(sst.nd_ranges(dev, sub_group_size=sg)) == sycl.nd_range(sycl.range(sg),
                                                                           sycl.range(sg))
    # A failure that needs more work-items: the fewest, in the fewest dimensions, the
    # extents beyond 1 last.
    assert least(sst.ranges(), lambda r: r.size() >= 100) == sycl.range(100)
    assert least(sst.ranges(dims=3), lambda r: r.size() >= 12) == sycl.range(1, 1, 12)
    assert least(sst.ranges(dims=2), lambda r: r[0] >= 3) == sycl.range(3, 1)
    assert least(sst.ids(sycl.range(4, 5)), lambda i: i[1] >= 3) == sycl.id(0, 3)
    dev = kernel_device
    assert least(sst.nd_ranges(dev, dims=3), lambda nd: nd.get_local_range().size() >= 6) == \
        sycl.nd_range(sycl.range(1, 1, 6), sycl.range(1, 1, 6))
    assert least(sst.nd_ranges(dev, dims=2), lambda nd: nd.get_group_range().size() >= 5) == \
        sycl.nd_range(sycl.range(1, 5), sycl.range(1, 1))


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("make", [sst.nd_ranges, sst.work_group_sizes])
def test_a_device_without_python_kernels_is_refused_at_creation(pocl_device: sycl.device,
                                                                make) -> None:
    with pytest.raises(sycl.exception) as ei:
        make(pocl_device)
    assert ei.value.code() == sycl.errc.kernel_not_supported
    text = str(ei.value)
    assert pocl_device.display_name in text and "SPIR-V" in text
    assert f"{os.path.basename(__file__)}:" in text and make.__name__ in text


@pytest.mark.parametrize(("call", "fragment"), [
    (lambda dev: sst.ranges(dims=4), "dims must be None or an int from 1 to 3, not 4"),
    (lambda dev: sst.ranges(dims=True), "dims must be None or an int"),
    (lambda dev: sst.ranges(max_size=0), "max_size must be an int of at least 1, not 0"),
    (lambda dev: sst.ids(sycl.range(3, 0)), "empty (extent 0 in dimension 1)"),
    (lambda dev: sst.ids("ab"), "rng must be a sycl.range or a tuple of int extents"),
    (lambda dev: sst.ids((1, 2, 3, 4)), "1 to 3 dimensions, not 4"),
    (lambda dev: sst.nd_ranges("gpu"), "device must be a sycl.device, not str"),
    (lambda dev: sst.nd_ranges(dev, max_global=0), "max_global must be an int of at least 1"),
    (lambda dev: sst.nd_ranges(dev, dims=0), "dims must be None or an int from 1 to 3, not 0"),
    (lambda dev: sst.nd_ranges(dev, sub_group_size=3), "sub_group_size=3 is not one of device"),
    (lambda dev: sst.nd_ranges(dev, max_global=4, sub_group_size=8),
     "max_global=4 is smaller than sub_group_size=8"),
    (lambda dev: sst.work_group_sizes(dev, max_work_group_size=4, sub_group_size=8),
     "sub_group_size=8 is larger than the work-group limit 4"),
    (lambda dev: sst.work_group_sizes(dev, max_work_group_size=0),
     "max_work_group_size must be an int of at least 1, not 0"),
])
def test_bad_arguments_say_what_and_where(host_device: sycl.device, call, fragment: str) -> None:
    with pytest.raises(InvalidArgument) as ei:
        call(host_device)   # the host device's sub-group size is 8
    assert fragment in str(ei.value)
    assert f"{os.path.basename(__file__)}:" in str(ei.value)


# ------------------------------------------------------------------ without hypothesis
def _python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=300, env={**environ, **env})


def test_pysycl_testing_imports_without_hypothesis() -> None:
    r = _python("""
        import sys
        sys.modules["hypothesis"] = None   # as if it were not installed
        import pysycl.testing as t
        assert "pytest" not in sys.modules, "pysycl.testing imported pytest"
        assert t.devices() and callable(t.assert_same_on_devices)
        try:
            import pysycl.testing.strategies
        except ImportError as e:
            print("ImportError:", e)
        else:
            raise SystemExit("pysycl.testing.strategies imported without hypothesis")
    """)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ImportError: pysycl.testing.strategies needs hypothesis: pip install hypothesis" \
        in r.stdout


def test_pysycl_testing_does_not_import_hypothesis_or_pytest() -> None:
    r = _python("""
        import sys
        import pysycl.testing
        print(sorted(m for m in ("hypothesis", "pytest") if m in sys.modules))
    """)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == "[]"

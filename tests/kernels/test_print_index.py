"""``print()`` and ``sycl.stream`` of ids, ranges, items, nd_items, groups and nd_ranges
(issue 25 item 9): DPC++'s text (``sycl/include/sycl/stream.hpp``: ``{1, 2}``,
``item(range: {..}, id: {..}, offset: {..})``, ...) on every device, word for word, the
same as ``str()`` of the host objects and as a stream writes them."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import pysycl as sycl
from pysycl.testing import strategies as sst
from tests.conftest import ptxas_check


def _a(*v: int) -> str:
    return "{" + ", ".join(map(str, v)) + "}"


def _lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return sorted(capsys.readouterr().out.splitlines())


def test_items_ids_and_ranges_print_as_dpcpp_streams_them(
        any_kernel_queue: sycl.queue, capsys: pytest.CaptureFixture[str]) -> None:
    def k(it: sycl.item) -> None:
        i = it.get_id()
        print(it, i, it.get_range(), f"at {i}!", -i, sycl.range(4, 1) * 2, sep=" | ")

    any_kernel_queue.parallel_for(sycl.range(2, 3), k).wait()
    want = sorted(f"item(range: {{2, 3}}, id: {_a(a, b)}, offset: {{0, 0}}) | {_a(a, b)} | "
                  f"{{2, 3}} | at {_a(a, b)}! | {_a(-a, -b)} | {{8, 2}}"
                  for a in range(2) for b in range(3))
    assert _lines(capsys) == want


def test_nd_items_groups_and_nd_ranges_print_as_a_stream_writes_them(
        any_kernel_queue: sycl.queue, capsys: pytest.CaptureFixture[str]) -> None:
    """The same objects through ``print`` and ``sycl.stream <<``: the same text."""
    def cg(h: sycl.handler) -> None:
        out = sycl.stream(4096, 512, h)

        def k(it: sycl.nd_item) -> None:
            g = it.get_group()
            nd = it.get_nd_range()
            print("print", it, g, nd, it.get_local_range())
            out << "print " << it << " " << g << " " << nd << " " << it.get_local_range() \
                << sycl.endl

        h.parallel_for(sycl.nd_range(sycl.range(4, 2), sycl.range(2, 1)), k)

    any_kernel_queue.submit(cg).wait()
    one = sorted(f"print nd_item(global_id: {_a(a, b)}, local_id: {_a(a % 2, 0)}) "
                 f"group(id: {_a(a // 2, b)}, global_range: {{4, 2}}, local_range: {{2, 1}}, "
                 f"group_range: {{2, 2}}) nd_range(global_range: {{4, 2}}, local_range: "
                 f"{{2, 1}}, offset: {{0, 0}}) {{2, 1}}" for a in range(4) for b in range(2))
    assert _lines(capsys) == sorted(one + one)


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(r=sst.ranges(max_size=12))
def test_every_dimension_prints_the_host_objects_str(
        r: sycl.range, any_kernel_queue: sycl.queue, capsys: pytest.CaptureFixture[str]) -> None:
    """1-3 dimensions: each line is ``str()`` of the host's item and id, the oracle."""
    capsys.readouterr()
    any_kernel_queue.parallel_for(r, lambda it: print(it, it.get_id(), sep=" ")).wait()
    want = sorted(f"{sycl.item(idx, r)} {sycl.id(*idx)}"
                  for idx in np.ndindex(*tuple(r)))
    assert _lines(capsys) == want


def test_str_of_the_host_objects() -> None:
    nd = sycl.nd_range(sycl.range(4, 6), sycl.range(2, 3))
    assert (str(sycl.id(1, 2)), str(sycl.range(7)), str(sycl.id(0, -1, 2))) == \
        ("{1, 2}", "{7}", "{0, -1, 2}")
    assert str(sycl.item((1, 2), sycl.range(4, 6))) == \
        "item(range: {4, 6}, id: {1, 2}, offset: {0, 0})"
    assert str(nd) == "nd_range(global_range: {4, 6}, local_range: {2, 3}, offset: {0, 0})"
    it = sycl.nd_item((3, 4), nd)
    assert str(it) == "nd_item(global_id: {3, 4}, local_id: {1, 1})"
    assert str(it.get_group()) == ("group(id: {1, 1}, global_range: {4, 6}, local_range: "
                                   "{2, 3}, group_range: {2, 2})")
    assert repr(sycl.id(1, 2)) == "sycl.id(1, 2)"  # repr stays Python's spelling


def test_printing_index_objects_compiles_to_ptx(kq: sycl.queue, ptx_images: list,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    def k(it: sycl.nd_item) -> None:
        print(it, it.get_group(), it.get_nd_range(), it.get_global_id())

    kq.parallel_for(sycl.nd_range(sycl.range(2), sycl.range(1)), k).wait()
    assert _lines(capsys) == [
        f"nd_item(global_id: {{{a}}}, local_id: {{0}}) group(id: {{{a}}}, global_range: {{2}}, "
        f"local_range: {{1}}, group_range: {{2}}) nd_range(global_range: {{2}}, local_range: "
        f"{{1}}, offset: {{0}}) {{{a}}}" for a in range(2)]
    (img,) = ptx_images
    ptxas_check(img.binary)

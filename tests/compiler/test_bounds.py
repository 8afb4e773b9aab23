"""What the compiler records for the static bounds check, and bounds-checked modules.

``CompiledKernel.direct_index`` lists the accessor dimensions every work-item
indexes with its own id, unmodified; the launcher compares them with the
launch range (tests/kernels/test_bounds.py runs them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from pysycl._core.abi import ID_GLOBAL, ID_LOCAL, AccessorType, Capture, IndexSpace
from pysycl._core.sites import code_table, site_location

from .conftest import RW, Acc, R, W, compile_for, make_captures, spirv_validate

F32 = np.float32


def _dims(ck: Any) -> set[tuple[int, int, int, int]]:
    """The recorded (capture, accessor dim, id kind, launch dim), lines left out."""
    return {e[:4] for e in ck.direct_index}


def _line(ck: Any, fn: Callable[..., Any], entry: tuple[int, ...]) -> int:
    """The line a ``direct_index`` entry's site names in ``fn``'s code."""
    where = site_location(ck.sites[entry[4]], code_table([fn]))
    assert where.startswith(fn.__code__.co_filename + ":"), where
    return int(where.rpartition(":")[2])


def _nd_compile(fn: Callable[..., Any], ndim: int, local: dict[str, tuple[Any, int]],
                bounds_check: bool = False) -> Any:
    from pysycl_numba import compile_kernel

    caps, _ = make_captures(fn)
    extra = tuple(Capture(n, "freevar", AccessorType(np.dtype(dt), nd, "read_write", "local"))
                  for n, (dt, nd) in local.items())
    return compile_kernel(fn, IndexSpace("nd_range", ndim), caps + extra,
                          entry_name="k_nd", bounds_check=bounds_check)


def test_id_indexing_is_recorded_per_accessor_dimension() -> None:
    a = R(np.zeros(8, F32))
    b = W(np.zeros(8, F32))
    k = lambda i: b.__setitem__(i, a[i] + 1)  # noqa: E731
    ck = compile_for(k, 1)
    assert _dims(ck) == {(0, 0, ID_GLOBAL, 0), (1, 0, ID_GLOBAL, 0)}
    assert {_line(ck, k, e) for e in ck.direct_index} == {k.__code__.co_firstlineno}


def test_nd_item_tuple_and_transposed_indices_map_each_dimension() -> None:
    m = RW(np.zeros((4, 6), F32))

    def whole(it: Any) -> None:
        m[it] = 1.0

    def transposed(it: Any) -> None:
        m[it[1], it[0]] = 1.0

    def one_dim(it: Any) -> None:
        m[it[0], 2] = 1.0

    def unpacked(it: Any) -> None:
        i, j = it.get_id()
        m[i, j] = 1.0

    assert _dims(compile_for(whole, 2)) == {(0, 0, ID_GLOBAL, 0), (0, 1, ID_GLOBAL, 1)}
    assert _dims(compile_for(transposed, 2)) == {(0, 0, ID_GLOBAL, 1), (0, 1, ID_GLOBAL, 0)}
    assert _dims(compile_for(one_dim, 2)) == {(0, 0, ID_GLOBAL, 0)}
    assert _dims(compile_for(unpacked, 2)) == {(0, 0, ID_GLOBAL, 0), (0, 1, ID_GLOBAL, 1)}


def test_guarded_modified_or_looped_indices_are_not_direct() -> None:
    a = RW(np.zeros(8, F32))
    n = 8

    def guarded(i: Any) -> None:
        if i < n:
            a[i] = 1.0

    def early_return(i: Any) -> None:
        if i >= n:
            return
        a[i] = 1.0

    def shifted(i: Any) -> None:
        a[i + 1] = 1.0

    def in_loop(i: Any) -> None:
        for _ in range(n):
            a[i] = 1.0

    def reassigned(i: Any) -> None:
        j = i
        j = j * 2
        a[j] = 1.0

    for fn in (guarded, early_return, shifted, in_loop, reassigned):
        assert compile_for(fn, 1).direct_index == (), fn.__name__


def test_unconditional_access_after_a_guarded_one_is_direct() -> None:
    a = RW(np.zeros(8, F32))
    n = 8

    def k(i: Any) -> None:
        if i < n:
            a[0] = 2.0
        a[i] = a[i] + 1.0   # every work-item runs this line

    ck = compile_for(k, 1)
    (entry,) = set(ck.direct_index)
    assert entry[:4] == (0, 0, ID_GLOBAL, 0)
    assert _line(ck, k, entry) == k.__code__.co_firstlineno + 3


def test_nd_range_global_and_local_ids_are_recorded() -> None:
    x = R(np.zeros(16, F32))
    out = W(np.zeros(16, F32))
    tmp: Any = None

    def k(it: Any) -> None:
        tmp[it.get_local_id(0)] = x[it.get_global_id(0)]
        out[it.get_global_linear_id()] = tmp[it.get_local_linear_id()]

    ck = _nd_compile(k, 1, {"tmp": (F32, 1)})
    assert _dims(ck) == {(0, 0, ID_GLOBAL, 0), (1, 0, ID_GLOBAL, 0), (2, 0, ID_LOCAL, 0)}


def test_atomic_ref_and_method_indexing_count() -> None:
    import pysycl as sycl

    c = RW(np.zeros(8, np.int32))
    v = R(np.zeros(8, np.int32))

    def k(i: Any) -> None:
        sycl.atomic_ref(c, i, sycl.memory_order.relaxed, sycl.memory_scope.device).fetch_add(
            v.__getitem__(i))

    assert _dims(compile_for(k, 1)) == {(0, 0, ID_GLOBAL, 0), (1, 0, ID_GLOBAL, 0)}


@pytest.mark.spirv_val
def test_bounds_checked_module_is_valid_spirv_and_differs(tmp_path: Any) -> None:
    from pysycl_numba import compile_kernel

    a = R(np.zeros((4, 4), F32))
    b = W(np.zeros((4, 4), F32))

    def k(it: Any) -> None:
        b[it[0], it[1]] = a[it[1] + 1, it[0]]

    caps, _ = make_captures(k)
    plain = compile_kernel(k, IndexSpace("range", 2), caps, entry_name="k_plain")
    checked = compile_kernel(k, IndexSpace("range", 2), caps, entry_name="k_checked",
                             bounds_check=True)
    assert checked.bounds_checked and not plain.bounds_checked
    assert checked.direct_index == plain.direct_index
    assert checked.binary != plain.binary
    spirv_validate(checked.binary, tmp_path)


@pytest.mark.spirv_val
def test_bounds_checked_local_atomics_are_valid_spirv(tmp_path: Any) -> None:
    import pysycl as sycl

    out = W(np.zeros(8, np.int32))
    tmp: Any = None

    def k(it: Any) -> None:
        lid = it.get_local_id(0)
        sycl.atomic_ref(tmp, lid + 2, sycl.memory_order.relaxed, sycl.memory_scope.work_group,
                        sycl.access.address_space.local_space).fetch_add(1)
        out[it.get_global_id(0)] = tmp[lid]

    ck = _nd_compile(k, 1, {"tmp": (np.int32, 1)}, bounds_check=True)
    spirv_validate(ck.binary, tmp_path)


def test_acc_helper_is_not_looked_into() -> None:
    a = RW(np.zeros(8, F32))

    def helper(acc: Acc, i: Any) -> None:
        acc[i] = 1.0

    assert compile_for(lambda i: helper(a, i), 1).direct_index == ()

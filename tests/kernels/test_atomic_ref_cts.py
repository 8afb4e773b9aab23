"""SYCL-CTS ``atomic_ref`` ``fetch_add``/``fetch_sub`` (tests/atomic_ref/
atomic_ref_fetch_add_sub_all_types_test.h), translated: every atomic type, memory
order (relaxed, acq_rel, seq_cst) and memory scope, in global and local memory, each
space also spelled ``generic_space``.

As in the CTS, one work-item adds an operand (1, or 1.25 for floating point) to a
value 1, checks the returned old value and the updated one, subtracts it again and
checks both (SYCL 2020 §3.8.3.3: atomic operations through ``atomic_ref``; the
C++ ``atomic_ref::fetch_add/fetch_sub`` semantics). The global case is a
``single_task`` on a buffer, the local one an ``nd_range(1, 1)`` on a local
accessor the kernel fills first, as the CTS's ``queue_submit_local_scope``.

On an H100 the local cases faulted (``clWaitForEvents`` -9999, issue 21, item 13):
the kernel's first store to local memory gave its parameter LLVM's
``initializes((0, 8))`` attribute, whose comma stopped the PTX target's ``align 16``
rewrite, and NVIDIA's OpenCL placed the ``.align 1`` local argument where 64-bit
atomics fault. The ``ptx_images`` fixture checks every PTX image here (on a machine
without a GPU too); ``kq`` runs the kernels on the GPU where there is one.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import pysycl as sycl
from tests.conftest import ptxas_check

MO, MS, AS = sycl.memory_order, sycl.memory_scope, sycl.access.address_space
TYPES = [np.int32, np.uint32, np.int64, np.uint64, np.float32, np.float64]
#: 15 (order, scope) cells, then the same 15 through generic_space.
CELLS = 30


def add_sub(acc: Any, i: int, order: Any, scope: Any, space: Any, r: Any, op: Any) -> None:
    """The CTS's ``fetch_add_sub_test`` on ``acc[i]`` (which holds 1); results in ``r[i]``."""
    a = sycl.atomic_ref(acc, i, order, scope, space)
    r[i, 0] = a.fetch_add(op) == 1
    r[i, 1] = acc[i] == 1 + op
    r[i, 2] = a.fetch_sub(op) == 1 + op
    r[i, 3] = acc[i] == 1


def orders_and_scopes(acc: Any, base: int, space: Any, r: Any, op: Any) -> None:
    """Every (order, scope) pair of the CTS's full-conformance loop, one cell each."""
    add_sub(acc, base + 0, MO.relaxed, MS.work_item, space, r, op)
    add_sub(acc, base + 1, MO.relaxed, MS.sub_group, space, r, op)
    add_sub(acc, base + 2, MO.relaxed, MS.work_group, space, r, op)
    add_sub(acc, base + 3, MO.relaxed, MS.device, space, r, op)
    add_sub(acc, base + 4, MO.relaxed, MS.system, space, r, op)
    add_sub(acc, base + 5, MO.acq_rel, MS.work_item, space, r, op)
    add_sub(acc, base + 6, MO.acq_rel, MS.sub_group, space, r, op)
    add_sub(acc, base + 7, MO.acq_rel, MS.work_group, space, r, op)
    add_sub(acc, base + 8, MO.acq_rel, MS.device, space, r, op)
    add_sub(acc, base + 9, MO.acq_rel, MS.system, space, r, op)
    add_sub(acc, base + 10, MO.seq_cst, MS.work_item, space, r, op)
    add_sub(acc, base + 11, MO.seq_cst, MS.sub_group, space, r, op)
    add_sub(acc, base + 12, MO.seq_cst, MS.work_group, space, r, op)
    add_sub(acc, base + 13, MO.seq_cst, MS.device, space, r, op)
    add_sub(acc, base + 14, MO.seq_cst, MS.system, space, r, op)


def _operand(dtype: type) -> Any:
    return dtype(1.25) if np.dtype(dtype).kind == "f" else dtype(1)


def _check_ptx(images: list, local: bool) -> None:
    for img in images:
        ptx = img.binary.decode()
        shared = [ln for ln in ptx.splitlines() if ".ptr .shared" in ln]
        assert bool(shared) == local
        assert all(".align 16" in ln for ln in shared), shared
        if not local:  # system scope: atom.sys (LLVM 22's atomicrmw has only .gpu)
            assert re.search(r"\batom\.sys\.global\.add\.", ptx)
        ptxas_check(img.binary)


@pytest.mark.parametrize("dtype", TYPES)
def test_fetch_add_sub_global(kq: sycl.queue, ptx_images: list, dtype: type) -> None:
    res = np.zeros((CELLS, 4), np.int32)
    data = np.ones(CELLS, dtype)
    op = _operand(dtype)
    with sycl.buffer(res) as R, sycl.buffer(data) as D:
        def cg(h: sycl.handler) -> None:
            r = R.get_access(h, sycl.access_mode.write)
            d = D.get_access(h, sycl.access_mode.read_write)

            def k() -> None:
                orders_and_scopes(d, 0, AS.global_space, r, op)
                orders_and_scopes(d, 15, AS.generic_space, r, op)

            h.single_task(k)

        kq.submit(cg).wait_and_throw()
    assert res.all(), np.argwhere(res == 0).tolist()
    np.testing.assert_array_equal(data, np.ones(CELLS, dtype))
    _check_ptx(ptx_images, local=False)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", TYPES)
def test_fetch_add_sub_local(kq: sycl.queue, ptx_images: list, dtype: type) -> None:
    res = np.zeros((CELLS, 4), np.int32)
    op, one = _operand(dtype), dtype(1)
    with sycl.buffer(res) as R:
        def cg(h: sycl.handler) -> None:
            r = R.get_access(h, sycl.access_mode.write)
            loc = sycl.local_accessor(dtype, sycl.range(CELLS), h)

            def k(it: Any) -> None:
                for j in range(CELLS):  # the CTS stores the value first, then makes the ref
                    loc[j] = one
                orders_and_scopes(loc, 0, AS.local_space, r, op)
                orders_and_scopes(loc, 15, AS.generic_space, r, op)

            h.parallel_for(sycl.nd_range(sycl.range(1), sycl.range(1)), k)

        kq.submit(cg).wait_and_throw()
    assert res.all(), np.argwhere(res == 0).tolist()
    _check_ptx(ptx_images, local=True)

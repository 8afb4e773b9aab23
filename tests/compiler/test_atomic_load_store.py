"""``atomic_ref.load/store/exchange`` are atomic, with their order and scope, on both targets.

SYCL 2020 §3.8.3.3: device code accesses memory atomically through ``atomic_ref``;
§3.8.3.1-2: with the ``memory_order`` and ``memory_scope`` it names. LLVM 22's SPIR-V
backend wrote ``load atomic``/``store atomic`` as plain ``OpLoad``/``OpStore`` (a
device compiler may hoist those out of a loop: issue 21, item 12); the lowering
now calls ``__spirv_AtomicLoad``/``__spirv_AtomicStore``. On PTX they are
``ld``/``st`` with ``.relaxed``/``.acquire``/``.release`` and the scope, and an
``exchange`` is ``atom.exch`` between the fences of its order (``atom.sys`` for
the system scope, which LLVM 22 drops). Each kernel is compiled for both targets
here, without a device; the run-time side is tests/kernels/test_atomic_load_store.py.
"""

from __future__ import annotations

import re
import struct
from typing import Any

import numpy as np
import pytest

import pysycl as sycl
from pysycl._core.abi import IndexSpace
from pysycl_numba import compile_kernel
from tests.conftest import ptxas_check

from .conftest import Ptr, make_captures

MO, MS = sycl.memory_order, sycl.memory_scope
SCOPES = ["work_item", "sub_group", "work_group", "device", "system"]
#: SPIR-V Scope operands (SPIR-V 3.27) and the PTX scope of each memory_scope (PTX has
#: no thread or warp scope for memory operations: the CTA includes them).
SPV_SCOPE = {"work_item": 4, "sub_group": 3, "work_group": 2, "device": 1, "system": 0}
PTX_SCOPE = {"work_item": "cta", "sub_group": "cta", "work_group": "cta", "device": "gpu",
             "system": "sys"}
#: MemorySemantics order bits (SPIR-V 3.25).
SEM = {"relaxed": 0x0, "acquire": 0x2, "release": 0x4, "acq_rel": 0x8, "seq_cst": 0x10}
LOADS = ["relaxed", "acquire", "seq_cst"]
STORES = ["relaxed", "release", "seq_cst"]
EXCHANGES = ["relaxed", "acquire", "release", "acq_rel", "seq_cst"]


def _kernel(scope: str) -> Any:
    s = getattr(MS, scope)
    p, out = Ptr(np.zeros(16, np.int32)), Ptr(np.zeros(8, np.int32))

    def k() -> None:
        out[0] = sycl.atomic_ref(p, 0, MO.relaxed, s).load()
        out[1] = sycl.atomic_ref(p, 1, MO.acquire, s).load()
        out[2] = sycl.atomic_ref(p, 2, MO.seq_cst, s).load()
        sycl.atomic_ref(p, 3, MO.relaxed, s).store(1)
        sycl.atomic_ref(p, 4, MO.release, s).store(2)
        sycl.atomic_ref(p, 5, MO.seq_cst, s).store(3)
        out[3] = sycl.atomic_ref(p, 6, MO.relaxed, s).exchange(4)
        out[4] = sycl.atomic_ref(p, 7, MO.acquire, s).exchange(5)
        out[5] = sycl.atomic_ref(p, 8, MO.release, s).exchange(6)
        out[6] = sycl.atomic_ref(p, 9, MO.acq_rel, s).exchange(7)
        out[7] = sycl.atomic_ref(p, 10, MO.seq_cst, s).exchange(8)
    return k


def _compile(scope: str, fmt: str) -> bytes:
    k = _kernel(scope)
    caps, _ = make_captures(k)
    arch = "sm_90" if fmt == "ptx" else ""
    return compile_kernel(k, IndexSpace("single_task", 0), caps, entry_name=f"k_{scope}",
                          image_format=fmt, arch=arch).binary


def _spirv_atomics(binary: bytes) -> list[tuple[str, int, int]]:
    """(instruction, Scope, MemorySemantics) of each OpAtomicLoad/Store/Exchange, in order."""
    w = struct.unpack(f"<{len(binary) // 4}I", binary)
    consts: dict[int, int] = {}
    found: list[tuple[str, int, int]] = []
    names = {227: "load", 228: "store", 229: "exchange"}
    pos = 5
    while pos < len(w):
        count, op = w[pos] >> 16, w[pos] & 0xFFFF
        ops = w[pos + 1:pos + count]
        if op == 43:  # OpConstant: type, id, value
            consts[ops[1]] = ops[2]
        elif op == 46:  # OpConstantNull
            consts[ops[1]] = 0
        elif op in (61, 62):  # OpLoad/OpStore: only the plain `out` stores may remain
            assert op == 62, "a plain OpLoad: an atomic load lost its atomicity"
        elif op in names:
            scope_id, sem_id = (ops[1], ops[2]) if op == 228 else (ops[3], ops[4])
            found.append((names[op], consts[scope_id], consts[sem_id]))
        pos += count
    return found


@pytest.mark.parametrize("scope", SCOPES)
def test_spirv_has_atomic_loads_stores_and_exchanges(scope: str) -> None:
    got = _spirv_atomics(_compile(scope, "spirv"))
    sc = SPV_SCOPE[scope]
    want = ([("load", sc, SEM[o]) for o in LOADS] + [("store", sc, SEM[o]) for o in STORES]
            + [("exchange", sc, SEM[o]) for o in EXCHANGES])
    assert sorted(got) == sorted(want)


def _ptx_memory_ops(ptx: str) -> list[str]:
    """The fences, atomics and ordered loads/stores of ``ptx``, in order, without operands."""
    ops = []
    for ln in ptx.splitlines():
        m = re.match(r"\s*((?:fence|atom|ld|st)\.[\w.]+)", ln)
        if m and (m.group(1).startswith(("fence", "atom"))
                  or re.search(r"\.(?:relaxed|acquire|release)\.", m.group(1))):
            ops.append(m.group(1))
    return ops


@pytest.mark.parametrize("scope", SCOPES)
def test_ptx_loads_stores_and_exchanges_carry_order_and_scope(scope: str) -> None:
    ptx = _compile(scope, "ptx")
    s = PTX_SCOPE[scope]
    exch = "atom.sys.global.exch.b32" if scope == "system" else "atom.global.exch.b32"
    want = [f"ld.relaxed.{s}.global.b32", f"ld.acquire.{s}.global.b32",
            f"fence.sc.{s}", f"ld.acquire.{s}.global.b32",
            f"st.relaxed.{s}.global.b32", f"st.release.{s}.global.b32",
            f"fence.sc.{s}", f"st.release.{s}.global.b32",
            exch,
            exch, f"fence.acq_rel.{s}",
            f"fence.acq_rel.{s}", exch,
            f"fence.acq_rel.{s}", exch, f"fence.acq_rel.{s}",
            f"fence.sc.{s}", exch, f"fence.sc.{s}"]
    assert _ptx_memory_ops(ptx.decode()) == want
    ptxas_check(ptx)


def test_scopes_do_not_depend_on_the_kernel_emitted_before() -> None:
    # LLVM 22's SPIR-V backend keeps the sync scope ids of the first module it emits;
    # each kernel mentions one scope (numbered 2 in its own context), so without the
    # emit worker's fixed numbering one of these two came out with the other's Scope.
    first = _spirv_atomics(_compile("sub_group", "spirv"))
    second = _spirv_atomics(_compile("device", "spirv"))
    assert {s for _, s, _ in first} == {SPV_SCOPE["sub_group"]}
    assert {s for _, s, _ in second} == {SPV_SCOPE["device"]}

"""The compile target is a parameter of the compile, not state of the shared target context.

``compile_kernel(..., target=Target("ptx", arch))`` lowers with the PTX copy of the
Numba target context (``sycl_target.context_for``); the process-wide context stays
SPIR-V's, so a thread that compiles (or looks) meanwhile never sees PTX's choices,
and the kernel's device functions are compiled with the kernel's context, not the
shared one (docs/design/launch.md §2.7). Compiled without a device.
"""

from __future__ import annotations

import re
import struct
import threading
from typing import Any

import numpy as np

import pysycl as sycl
from pysycl._core.abi import IndexSpace
from pysycl._core.launch_types import SPIRV, Target
from pysycl_numba import compile_kernel
from pysycl_numba.target import sycl_target
from tests.conftest import ptxas_check

from .conftest import Ptr, make_captures

RELAXED, DEVICE = sycl.memory_order.relaxed, sycl.memory_scope.device
PTX = Target("ptx", "sm_90")
_CAS = 230  # SPIR-V OpAtomicCompareExchange
_FLOAT_ADD = re.compile(r"(atom|red)\.global\.add\.f32")


def _helper_kernel() -> Any:
    """A kernel whose float atomic add is in a helper function it calls."""
    p = Ptr(np.zeros(4, np.float32))

    def add_to(ptr: Any, j: Any, v: Any) -> None:
        sycl.atomic_ref(ptr, j, RELAXED, DEVICE).fetch_add(v)

    def k(i: Any) -> None:
        add_to(p, i % 4, np.float32(1.5))
    return k


def _compile(k: Any, target: Target) -> bytes:
    caps, _ = make_captures(k)
    return compile_kernel(k, IndexSpace("range", 1), caps, entry_name="k_target",
                          target=target).binary


def _opcodes(binary: bytes) -> set[int]:
    w = struct.unpack(f"<{len(binary) // 4}I", binary)
    found, pos = set(), 5
    while pos < len(w):
        found.add(w[pos] & 0xFFFF)
        pos += max(w[pos] >> 16, 1)
    return found


def test_a_helper_compiles_to_the_kernels_target() -> None:
    """A helper's float atomic add is PTX's native one in a PTX kernel, and SPIR-V's
    compare-exchange loop in a SPIR-V kernel: the helper lowers with the kernel's context."""
    k = _helper_kernel()
    spirv = _compile(k, SPIRV)
    assert _CAS in _opcodes(spirv)
    ptx = _compile(k, PTX).decode()
    assert _FLOAT_ADD.search(ptx), ptx
    assert "atom.global.cas" not in ptx, ptx
    ptxas_check(ptx.encode())
    assert _CAS in _opcodes(_compile(k, SPIRV))  # and SPIR-V's again after


def test_a_ptx_compile_leaves_the_shared_context_spirv() -> None:
    """While one thread compiles for PTX, another reading the process-wide target
    context's image format sees ``"spirv"`` every time."""
    base = sycl_target.target_context
    assert sycl_target.context_for(SPIRV) is base
    assert sycl_target.context_for(PTX) is sycl_target.context_for(Target("ptx", "sm_80"))
    assert sycl_target.context_for(PTX).image_format == "ptx"
    k = _helper_kernel()
    seen: list[str] = []
    done = threading.Event()
    started = threading.Event()

    def watch() -> None:
        started.set()
        while not done.is_set():
            seen.append(base.image_format)

    reader = threading.Thread(target=watch)
    reader.start()
    started.wait()
    try:
        ptx = _compile(k, PTX).decode()
    finally:
        done.set()
        reader.join()
    assert _FLOAT_ADD.search(ptx), ptx
    assert seen and set(seen) == {"spirv"}, f"{len(seen)} reads, {seen.count('ptx')} saw ptx"
    assert base.image_format == "spirv"


def test_image_format_and_arch_still_name_the_target() -> None:
    """The runtime's call (``image_format=``, ``arch=``) compiles the same image."""
    k = _helper_kernel()
    caps, _ = make_captures(k)
    ck = compile_kernel(k, IndexSpace("range", 1), caps, entry_name="k_target",
                        image_format="ptx", arch="sm_90")
    assert (ck.format, ck.arch) == ("ptx", "sm_90")
    assert ck.binary == _compile(k, PTX)


def test_internal_subroutines_are_the_formats_own() -> None:
    """``joint_reduce`` lowers through ``context.compile_internal``, whose subroutines
    Numba caches on the context: PTX's context keeps its own cache, so a PTX kernel
    compiled after a SPIR-V one compiles the subroutine with PTX's lowering instead of
    reusing SPIR-V's (today's group built-ins happen to translate either way; a float
    atomic add in such a subroutine would not)."""
    p = Ptr(np.zeros(64, np.int32))
    out = Ptr(np.zeros(1, np.int32))

    def k(it: Any) -> None:
        g = it.get_group()
        s = sycl.joint_reduce(g, p, 0, 64, sycl.plus())
        if g.leader():
            out[0] = s

    caps, _ = make_captures(k)
    index = IndexSpace("nd_range", 1)
    compile_kernel(k, index, caps, entry_name="k_joint", target=SPIRV)
    ptx_ctx = sycl_target.context_for(PTX)
    assert ptx_ctx.cached_internal_func is not sycl_target.target_context.cached_internal_func
    ptx_ctx.cached_internal_func.clear()  # what an earlier test compiled
    ptx = compile_kernel(k, index, caps, entry_name="k_joint", target=PTX).binary
    assert [key[0].co_name for key in ptx_ctx.cached_internal_func] == ["_reduce"]
    ptxas_check(ptx)

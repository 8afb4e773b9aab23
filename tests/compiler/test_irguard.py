"""The IR guard rejects what would make LLVM abort the process."""

from __future__ import annotations

import llvmlite.binding as ll
import pytest

from pysycl_numba.errors import KernelSourceError
from pysycl_numba.targets.spirv.irguard import check_module

HEADER = 'target triple = "spirv64v1.2-unknown-unknown"\n'


def _check(body: str) -> None:
    check_module(ll.parse_assembly(HEADER + body), "k")


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ("define spir_kernel void @k(ptr addrspace(1) %p) {\n"
         "  %v = load i128, ptr addrspace(1) %p\n  store i128 %v, ptr addrspace(1) %p\n  ret void\n}",
         "128-bit"),
        ("define spir_kernel void @k(ptr %f) {\n  call void %f()\n  ret void\n}", "pointer"),
        ("define spir_kernel void @k(ptr addrspace(1) %p) {\n"
         "  %o = atomicrmw fadd ptr addrspace(1) %p, float 1.0 seq_cst\n  ret void\n}",
         "floating-point atomics"),
        ("declare double @sin(double)\n"
         "define spir_kernel void @k(ptr addrspace(1) %p) {\n"
         "  %v = call double @sin(double 1.0)\n  store double %v, ptr addrspace(1) %p\n  ret void\n}",
         "'sin'"),
    ],
)
def test_guard_rejects(body, fragment):
    with pytest.raises(KernelSourceError) as info:
        _check(body)
    assert fragment in info.value.message


def test_guard_accepts_plain_kernel():
    _check(
        "define spir_kernel void @k(ptr addrspace(1) %p) {\n"
        "  %v = load float, ptr addrspace(1) %p\n  %w = call float @llvm.fabs.f32(float %v)\n"
        "  store float %w, ptr addrspace(1) %p\n  ret void\n}\n"
        "declare float @llvm.fabs.f32(float)\n"
    )

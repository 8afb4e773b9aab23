"""Kernel sources for the kernel_compiler tests, in the language a device compiles: OpenCL C
where it can (OpenCL devices), else the same kernels in PTX (``source_language.
ext_pysycl_ptx``: a CUDA device, whose driver compiles PTX only). Each PTX kernel computes
what its OpenCL C twin does, with the global id ``ctaid * ntid + tid``."""

from __future__ import annotations

from typing import Any

import pysycl as sycl

L = sycl.ext.oneapi.experimental.source_language

_HEAD = ".version 7.8\n.target sm_60\n.address_size 64\n"


def _ptx(*kernels: str) -> str:
    return _HEAD + "".join(kernels)


PTX_SCALE = """
.visible .entry scale(.param .u64 .ptr .global .align 4 scale_p0, .param .f32 scale_p1)
{
    .reg .b32 %r<5>; .reg .f32 %f<4>; .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [scale_p0];
    ld.param.f32 %f1, [scale_p1];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r1, %ctaid.x; mov.u32 %r2, %ntid.x; mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r1, %r2, %r3;
    mul.wide.u32 %rd2, %r4, 4;
    add.s64 %rd3, %rd1, %rd2;
    ld.global.f32 %f2, [%rd3];
    mul.f32 %f3, %f2, %f1;
    st.global.f32 [%rd3], %f3;
    ret;
}
"""

PTX_FILL2D = """
.visible .entry fill2d(.param .u64 .ptr .global .align 4 fill2d_p0, .param .u32 fill2d_p1)
{
    .reg .b32 %r<16>; .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [fill2d_p0];
    ld.param.u32 %r1, [fill2d_p1];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r2, %ctaid.x; mov.u32 %r3, %ntid.x; mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    mov.u32 %r6, %ctaid.y; mov.u32 %r7, %ntid.y; mov.u32 %r8, %tid.y;
    mad.lo.s32 %r9, %r6, %r7, %r8;
    mad.lo.s32 %r10, %r9, %r1, %r5;
    mad.lo.s32 %r11, %r9, 100, %r5;
    mul.wide.u32 %rd2, %r10, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r11;
    ret;
}
"""

PTX_WGSUM = """
.visible .entry wgsum(.param .u64 .ptr .global .align 4 wgsum_p0,
                      .param .u64 .ptr .global .align 4 wgsum_p1,
                      .param .u64 .ptr .shared .align 16 wgsum_p2)
{
    .reg .pred %p<3>; .reg .b32 %r<16>; .reg .b64 %rd<12>;
    ld.param.u64 %rd1, [wgsum_p0];
    ld.param.u64 %rd2, [wgsum_p1];
    ld.param.u64 %rd3, [wgsum_p2];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    mov.u32 %r1, %ctaid.x; mov.u32 %r2, %ntid.x; mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r1, %r2, %r3;
    mul.wide.u32 %rd4, %r4, 4;
    add.s64 %rd5, %rd1, %rd4;
    ld.global.u32 %r5, [%rd5];
    mul.wide.u32 %rd6, %r3, 4;
    add.s64 %rd7, %rd3, %rd6;
    st.shared.u32 [%rd7], %r5;
    bar.sync 0;
    setp.ne.s32 %p1, %r3, 0;
    @%p1 bra DONE;
    mov.u32 %r6, 0;
    mov.u32 %r7, 0;
LOOP:
    mul.wide.u32 %rd8, %r7, 4;
    add.s64 %rd9, %rd3, %rd8;
    ld.shared.u32 %r8, [%rd9];
    add.s32 %r6, %r6, %r8;
    add.s32 %r7, %r7, 1;
    setp.lt.u32 %p2, %r7, %r2;
    @%p2 bra LOOP;
    mul.wide.u32 %rd10, %r1, 4;
    add.s64 %rd11, %rd2, %rd10;
    st.global.u32 [%rd11], %r6;
DONE:
    ret;
}
"""

PTX_ONE = """
.visible .entry one(.param .u64 .ptr .global .align 8 one_p0, .param .u64 one_p1)
{
    .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [one_p0];
    ld.param.u64 %rd2, [one_p1];
    cvta.to.global.u64 %rd1, %rd1;
    add.s64 %rd3, %rd2, 1;
    st.global.u64 [%rd1], %rd3;
    ret;
}
"""

#: x[i] = n + (int)s
PTX_F = """
.visible .entry f(.param .u64 .ptr .global .align 4 f_p0, .param .u32 f_p1, .param .f32 f_p2)
{
    .reg .b32 %r<8>; .reg .f32 %f<2>; .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [f_p0];
    ld.param.u32 %r1, [f_p1];
    ld.param.f32 %f1, [f_p2];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r2, %ctaid.x; mov.u32 %r3, %ntid.x; mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    cvt.rzi.s32.f32 %r6, %f1;
    add.s32 %r7, %r1, %r6;
    mul.wide.u32 %rd2, %r5, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r7;
    ret;
}
"""

#: scale, fill2d, wgsum and one: the kernel_compiler tests' OpenCL C source in PTX
PTX_KERNELS = _ptx(PTX_SCALE, PTX_FILL2D, PTX_WGSUM, PTX_ONE)
#: f(int* x, int n, float s): the kernel-argument tests' kernel
PTX_ARGS = _ptx(PTX_F)
#: a PTX kernel that does not assemble: it names an undeclared register
PTX_BROKEN = _ptx("""
.visible .entry f(.param .u64 f_p0)
{
    ld.param.u64 %undeclared_name, [f_p0];
    ret;
}
""")


def lang_and_source(dev: sycl.device, opencl_c: str, ptx: str) -> tuple[Any, str]:
    """(source language, source) of these kernels for ``dev``: OpenCL C where the device
    compiles it, else PTX."""
    if dev.ext_oneapi_can_compile(L.opencl):
        return L.opencl, opencl_c
    return L.ext_pysycl_ptx, ptx

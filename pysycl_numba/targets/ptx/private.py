"""pysycl's own built-ins for the PTX target (not OpenCL C's), each a workaround.

``LOW_WORD`` (``low_word(i64) -> i32``) takes the low word of a kernel ``print``
record's 64-bit value (:mod:`pysycl_numba.overloads.printing`) with an explicit
``cvt.u32.u64``: LLVM folds a ``trunc`` into a narrowing store
(``st.global.b32 [a], %rd``) that NVIDIA's JIT miscompiled for an f64 product
(docs/design/gpu.md). The SPIR-V target uses ``trunc``.
"""

from __future__ import annotations

from pysycl_numba.targets.ptx.builtins import Decl, Definition, define

LOW_WORD = "_Z17__pysycl_low_wordl"


@define(LOW_WORD)
def _low_word(decl: Decl) -> Definition:
    body = f"""define internal i32 @{decl.name}(i64 %a0) alwaysinline {{
  %r = call i32 asm "cvt.u32.u64 $0, $1;", "=r,l"(i64 %a0)
  ret i32 %r
}}"""
    return Definition(body)

"""OpenCL C integer built-ins for PTX: ``mul_hi`` of 64-bit integers.

(Definitions registered with :mod:`.builtins`.) The SYCL integer functions
(:mod:`pysycl_numba.overloads.sycl_intrel`) are plain LLVM arithmetic except the high
half of a 64-bit product, which needs 128 bits: SPIR-V calls OpenCL's ``mul_hi``
(``_Z6mul_hill``, ``_Z6mul_himm``); on NVPTX an ``i128`` multiply selects to one
``mul.hi.s64``/``mul.hi.u64``.
"""

from __future__ import annotations

from pysycl_numba.targets.ptx.builtins import Decl, Definition, define, header

#: Mangled name -> the extension of its operands to 128 bits.
MUL_HI: dict[str, str] = {"_Z6mul_hill": "sext", "_Z6mul_himm": "zext"}


@define(*MUL_HI)
def _mul_hi(decl: Decl) -> Definition:
    ext = MUL_HI[decl.name]
    return Definition(f"""{header(decl)}
  %x = {ext} i64 %a0 to i128
  %y = {ext} i64 %a1 to i128
  %p = mul i128 %x, %y
  %h = lshr i128 %p, 64
  %r = trunc i128 %h to i64
  ret i64 %r
}}""")

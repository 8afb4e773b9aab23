"""Reject LLVM IR that would make the SPIR-V backend abort the process.

LLVM's SPIR-V backend reports some unsupported IR with ``LLVM ERROR`` and
``abort()`` instead of an error we could catch: a kernel mistake would kill
the user's Python process or Jupyter kernel. This guard scans the final,
optimised module before emission and raises a clear error instead.

Abort cases found (LLVM 22 / llvmlite 0.50):

* integer types other than i1/i8/i16/i32/i64 (i128 needs
  ``SPV_ALTERA_arbitrary_precision_integers``; odd widths such as i65 too);
* indirect calls / function pointers (``SPV_INTEL_function_pointers``) and
  inline assembly;
* ``atomicrmw`` on floating point (``SPV_EXT_shader_atomic_float_add``);
* calls to functions without a body that are neither LLVM intrinsics the
  backend lowers nor OpenCL built-ins (they would be unresolved imports, and
  some unknown intrinsics abort instruction selection).
"""

from __future__ import annotations

import re

import llvmlite.binding as ll

from pysycl._core.exceptions import errc
from pysycl_numba.errors import KernelSourceError
from pysycl_numba.targets.spirv.ocl import KNOWN_BUILTINS

_INT_TYPE = re.compile(r"(?<![\w%@.$\"-])i(\d+)\b")
_ALLOWED_INT_WIDTHS = {"1", "8", "16", "32", "64"}

# LLVM intrinsics the SPIR-V backend lowers (to OpenCL.std extended
# instructions or core SPIR-V). Matched by prefix, so overloads (.f32/.f64/...)
# are covered.
_SAFE_INTRINSIC_PREFIXES = (
    "llvm.lifetime.",
    "llvm.memcpy.",
    "llvm.memmove.",
    "llvm.memset.",
    "llvm.assume",
    "llvm.experimental.noalias.scope.decl",
    "llvm.fabs.",
    "llvm.sqrt.",
    "llvm.floor.",
    "llvm.ceil.",
    "llvm.trunc.",
    "llvm.rint.",
    "llvm.nearbyint.",
    "llvm.round.",
    "llvm.roundeven.",
    "llvm.copysign.",
    "llvm.minnum.",
    "llvm.maxnum.",
    "llvm.minimum.",
    "llvm.maximum.",
    "llvm.fma.",
    "llvm.fmuladd.",
    "llvm.pow.",
    "llvm.exp.",
    "llvm.exp2.",
    "llvm.log.",
    "llvm.log2.",
    "llvm.log10.",
    "llvm.sin.",
    "llvm.cos.",
    "llvm.smax.",
    "llvm.smin.",
    "llvm.umax.",
    "llvm.umin.",
    "llvm.abs.",
    "llvm.ctpop.",
    "llvm.ctlz.",
    "llvm.cttz.",
    "llvm.bswap.",
    "llvm.bitreverse.",
    "llvm.fshl.",
    "llvm.fshr.",
    "llvm.sadd.with.overflow.",
    "llvm.uadd.with.overflow.",
    "llvm.ssub.with.overflow.",
    "llvm.usub.with.overflow.",
    "llvm.smul.with.overflow.",
    "llvm.umul.with.overflow.",
    "llvm.sadd.sat.",
    "llvm.uadd.sat.",
    "llvm.ssub.sat.",
    "llvm.usub.sat.",
    "llvm.is.fpclass.",
    "llvm.vector.reduce.",
)


def _fail(message: str) -> None:
    raise KernelSourceError(message, None, errc.build)


def _check_type_text(text: str, where: str) -> None:
    for width in _INT_TYPE.findall(text):
        if width not in _ALLOWED_INT_WIDTHS:
            _fail(
                f"the kernel needs {width}-bit integers ({where}), which SPIR-V for "
                "OpenCL cannot express; use int64/uint64 arithmetic (a 128-bit "
                "product typically comes from multiplying two 64-bit values with "
                "overflow checks or from integer division by a constant)"
            )


def _no_check(text: str, where: str) -> None:
    """Every integer width is fine (PTX)."""


def _check_declaration(fn: ll.ValueRef) -> None:
    name = fn.name
    if name in KNOWN_BUILTINS:
        return
    if name.startswith(_SAFE_INTRINSIC_PREFIXES):
        return
    if name.startswith("llvm."):
        _fail(
            f"the kernel uses the LLVM intrinsic {name}, which the SPIR-V backend "
            "cannot lower; please report this with the kernel's code"
        )
    _fail(
        f"the kernel calls '{name}', which has no device implementation; only "
        "numbers, tuples, the math module, accessors and plain Python functions "
        "can be used in kernels"
    )


def check_module(module: ll.ModuleRef, entry: str, float_atomics: bool = False,
                 odd_ints: bool = False) -> None:
    """Raise :class:`KernelSourceError` if ``module`` would abort emission.

    Args:
        module: the linked and optimised module about to be emitted.
        entry: the kernel entry point's name (the only external definition).
        float_atomics: the target has floating-point ``atomicrmw`` (PTX).
        odd_ints: the target takes integers of any width (PTX: LLVM's NVPTX backend
            legalizes the ``i33`` a loop's trip count can need); SPIR-V does not.
    """
    check = _check_type_text if not odd_ints else _no_check
    for gv in module.global_variables:
        check(str(gv.type) + " " + str(gv.global_value_type), f"global {gv.name}")
    for fn in module.functions:
        check(str(fn.type) + " " + str(fn.global_value_type), f"function {fn.name}")
        if fn.is_declaration:
            _check_declaration(fn)
            continue
        for block in fn.blocks:
            for instr in block.instructions:
                opcode = instr.opcode
                check(str(instr.type), f"in {fn.name}")
                for op in instr.operands:
                    check(str(op.type), f"in {fn.name}")
                if opcode == "call":
                    callee = list(instr.operands)[-1]
                    if callee.value_kind == ll.ValueKind.inline_asm:
                        _fail("inline assembly cannot be compiled to SPIR-V")
                    if callee.value_kind != ll.ValueKind.function:
                        _fail(
                            "the kernel calls a function through a pointer (a "
                            "first-class function value); SPIR-V for OpenCL has no "
                            "function pointers -- call the function directly"
                        )
                elif opcode == "atomicrmw" and not float_atomics:
                    text = str(instr)
                    if re.search(r"atomicrmw\s+(volatile\s+)?f(add|sub|min|max)", text) or any(
                        t in text for t in (" float ", " double ", " half ")
                    ):
                        _fail(
                            "floating-point atomics need SPIR-V extensions this "
                            "device image does not enable; use integer atomics"
                        )
                elif opcode in ("invoke", "landingpad", "resume", "callbr", "va_arg"):
                    _fail(f"the LLVM instruction '{opcode}' cannot be compiled to SPIR-V")
    if module.get_function(entry).is_declaration:
        _fail(f"the kernel entry point {entry} has no body")

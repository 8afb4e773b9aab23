"""Specialization constants for PTX: loads of patchable ``.const`` globals.

PTX has no ``OpSpecConstant``. The SPIR-V lowering calls
``__spirv_SpecConstant(id, default)`` (:mod:`pysycl_numba.overloads.specconst`)
with literal operands; for PTX each call becomes a load of the module global
``@__pysycl_sc_<id>`` in the constant address space (4, PTX ``.const``),
initialised with the default's bit pattern::

    .const .align 4 .u32 __pysycl_sc_0 = -3;

The global is ``externally_initialized``: LLVM may not assume its initializer
(``GlobalVariable::hasDefinitiveInitializer`` is false), so no load is folded
into the default, while the loads still hoist and CSE (the global is
``constant``). The runtime specialises the PTX text by rewriting the
initializer (:func:`pysycl._kernels.ptx_specconst.specialize_ptx`), never
running Numba again. Every global is an unsigned integer of the value's width
(the NVPTX printer has no ``half`` initializers); the load reads it with the
constant's own type (``bool``: an ``i8`` holding 0 or 1).

The rewriting is done on call sites, not by defining the built-in, because
the id is an operand: the declaration alone does not say which global to read.
"""

from __future__ import annotations

import re
import struct

#: The PTX symbol of specialization constant ``SpecId`` n is ``SYMBOL.format(n)``.
SYMBOL = "__pysycl_sc_{}"

_NAME = r"_Z20__spirv_SpecConstanti\w+"
_CALL = re.compile(
    r"^(?P<lhs>\s*%[-\w.$]+) = (?:tail |notail |musttail )?call (?:[\w()]+ )*?(?P<ty>[\w]+) "
    rf"@{_NAME}\(i32(?: noundef)? (?P<id>\d+), (?P=ty)(?: noundef)? (?P<default>[^,)]+)\)"
    r".*$", re.M)
_ANY_CALL = re.compile(rf"@{_NAME}\(")
_DECLARE = re.compile(rf"^declare [^\n]*@{_NAME}\([^\n]*$\n?", re.M)
_WIDTH = {"i1": 8, "i8": 8, "i16": 16, "half": 16, "i32": 32, "float": 32, "i64": 64,
          "double": 64}


def _bits(ty: str, literal: str) -> int:
    """The bit pattern, as a signed integer of the global's width, of an LLVM constant."""
    width = _WIDTH[ty]
    if ty == "i1":
        v = 1 if literal == "true" else 0
    elif ty.startswith("i"):
        v = int(literal)
    elif literal.startswith("0xH"):  # half: its own bits
        v = int(literal[3:], 16)
    else:
        # float/double: decimal, or 0x + the *double* bits (LLVM prints floats that way)
        x = (struct.unpack("<d", int(literal[2:], 16).to_bytes(8, "little"))[0]
             if literal.startswith("0x") else float(literal))
        raw = struct.pack("<f" if ty == "float" else "<d", x)
        v = int.from_bytes(raw, "little")
    v &= (1 << width) - 1
    return v - (1 << width) if v >= 1 << (width - 1) else v


def lower_spec_constants(ir: str) -> tuple[str, frozenset[str]]:
    """Each ``__spirv_SpecConstant`` call in ``ir`` replaced by a load of its global.

    Returns:
        The rewritten IR (the declarations removed) and the globals' definitions.

    Raises:
        NotImplementedError: a call whose id or default is not a literal (LLVM
            never makes one from the lowering's calls; refused rather than guessed).
    """
    globals_: dict[int, str] = {}

    def load(m: re.Match[str]) -> str:
        ty, sid = m.group("ty"), int(m.group("id"))
        width = _WIDTH[ty]
        sym = SYMBOL.format(sid)
        globals_[sid] = (f"@{sym} = internal addrspace(4) externally_initialized constant "
                         f"i{width} {_bits(ty, m.group('default').strip())}, align {width // 8}")
        return f"{m.group('lhs')} = load {ty}, ptr addrspace(4) @{sym}, align {width // 8}"

    ir = _CALL.sub(load, ir)
    left = [ln.strip() for ln in ir.splitlines() if _ANY_CALL.search(ln)
            and not ln.startswith("declare ")]
    if left:
        raise NotImplementedError(
            "specialization constant read the PTX target cannot map: " + left[0])
    return _DECLARE.sub("", ir), frozenset(globals_.values())

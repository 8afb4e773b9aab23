"""A structural check of emitted SPIR-V: every result id defined once.

LLVM 22's SPIR-V backend (llvmlite 0.50), run many times in one process,
intermittently numbers a type and a label with the same result id (seen in
about one of ten kernels once a few dozen modules were emitted; a fresh
``TargetMachine`` and a fresh ``LLVMContext`` per module do not prevent it).
Such a module is invalid and may build into a wrong kernel. The emitter
checks every binary with :func:`duplicate_result_ids` and emits again when it
finds one.

The check needs to know where an instruction's result id is: instructions
without a result are listed in :data:`_NO_RESULT`, those whose result id is
the first operand (types, labels, ...) in :data:`_RESULT_FIRST`; all others
are ``<opcode> <result type> <result id> ...`` (SPIR-V spec, 2.2 and 3.52).
"""

from __future__ import annotations

import struct

SPIRV_MAGIC = 0x07230203

# Opcodes without a result id (SPIR-V 1.0-1.4, those an OpenCL kernel can hold).
_NO_RESULT = frozenset(
    {
        0, 2, 3, 4, 5, 6, 8, 10, 14, 15, 16, 17, 39, 56, 62, 63, 64, 71, 72, 74, 75,
        218, 219, 220, 221, 224, 225, 228, 246, 247, 249, 250, 251, 252, 253, 254, 255,
        256, 257, 260, 297, 298, 301, 302, 317, 319, 330, 331, 332, 5632, 5633, 5630,
    }
)  # fmt: skip

# Opcodes whose result id is the first operand (no result type).
_RESULT_FIRST = frozenset(
    {7, 11, 73, 248, 322, 327, *range(19, 39)}
)  # fmt: skip


def duplicate_result_ids(binary: bytes) -> list[int]:
    """Result ids defined more than once in a SPIR-V module (empty if none).

    Raises:
        ValueError: ``binary`` is not a little-endian SPIR-V module.
    """
    if len(binary) < 20 or len(binary) % 4:
        raise ValueError("not a SPIR-V module")
    words = struct.unpack(f"<{len(binary) // 4}I", binary)
    if words[0] != SPIRV_MAGIC:
        raise ValueError("not a little-endian SPIR-V module")
    seen: set[int] = set()
    dups: list[int] = []
    pos = 5
    while pos < len(words):
        word = words[pos]
        count, opcode = word >> 16, word & 0xFFFF
        if count == 0:
            raise ValueError(f"malformed SPIR-V instruction at word {pos}")
        if opcode not in _NO_RESULT:
            at = pos + 1 if opcode in _RESULT_FIRST else pos + 2
            if at < pos + count:
                rid = words[at]
                if rid in seen:
                    dups.append(rid)
                seen.add(rid)
        pos += count
    return dups

"""Device side of bounds-checked mode (``PYSYCL_BOUNDS_CHECK=1``).

In a bounds-checked kernel every captured accessor is a
``AccessorType(..., checked=True)``: its value carries the kernel's error
buffer (the entry point's last argument) and the capture's position. An
element access first compares each index component with the access range
(one unsigned compare per dimension, so negative indices fail too); an access
outside it is skipped -- a load gives 0, an atomic works on a scratch word --
and the first violating work-item records what, where and which index in the
error buffer, whose layout ``pysycl._kernel_abi`` defines. The runtime reads it
after the kernel (``pysycl._bounds``).

The source line comes from the lowering: :class:`pysycl_numba.passes.LocLowering`
leaves the location of the instruction being lowered on the IR builder.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any

from llvmlite import ir as llir

from pysycl._kernel_abi import BOUNDS_ACCESS_KINDS
from pysycl_numba import ocl

_I32 = llir.IntType(32)
_I64 = llir.IntType(64)

#: ``long`` words of the error buffer: index components, scratch word, work-item id.
_INDEX_WORD, _SCRATCH_WORD, _GID_WORD = 4, 7, 8


def in_bounds(builder: llir.IRBuilder, ids: list[Any], ranges: list[Any]) -> Any:
    """``0 <= ids[d] < ranges[d]`` for every ``d`` (unsigned compares)."""
    ok = None
    for i, r in zip(ids, ranges, strict=True):
        c = builder.icmp_unsigned("<", i, r)
        ok = c if ok is None else builder.and_(ok, c)
    return ok


def _loc(builder: llir.IRBuilder) -> tuple[int, int]:
    """(line, CRC-32 of the file name as a signed int) of the code being lowered."""
    loc = getattr(builder, "pysycl_loc", None)
    if loc is None:
        return 0, 0
    crc = zlib.crc32(str(loc.filename).encode())
    return int(loc.line or 0), crc - (1 << 32) if crc >= 1 << 31 else crc


def report(builder: llir.IRBuilder, err: Any, slot: Any, kind: str, ids: list[Any]) -> None:
    """Record this violation in ``err`` unless an earlier one is there (first wins)."""
    line, crc = _loc(builder)
    pair = builder.cmpxchg(err, _I32(0), _I32(1), "monotonic", "monotonic")
    with builder.if_then(builder.extract_value(pair, 1), likely=False):
        fields = (slot, _I32(line), _I32(crc), _I32(BOUNDS_ACCESS_KINDS.index(kind)),
                  _I32(len(ids)))
        for k, v in enumerate(fields, start=1):
            builder.store(v, builder.gep(err, [_I32(k)], inbounds=True))
        words = builder.bitcast(err, _I64.as_pointer(addrspace=err.type.addrspace))
        for d, i in enumerate(ids):
            builder.store(i, builder.gep(words, [_I32(_INDEX_WORD + d)], inbounds=True))
        for d in range(3):  # the work-item, OpenCL dimension order
            gid = ocl.work_item_query(builder, "get_global_id", d)
            builder.store(gid, builder.gep(words, [_I32(_GID_WORD + d)], inbounds=True))


def scratch(builder: llir.IRBuilder, err: Any, elem_ptr_type: llir.Type, space: str) -> Any:
    """A scratch word of ``elem_ptr_type`` for an out-of-range atomic to work on.

    Global accessors use the error buffer's scratch word; local ones a
    work-group variable of the module (a pointer cannot change address space).
    """
    if space == "local":
        module = builder.module
        gv = module.globals.get(_LOCAL_SCRATCH)
        if gv is None:
            gv = llir.GlobalVariable(module, _I64, _LOCAL_SCRATCH, addrspace=elem_ptr_type.addrspace)
            gv.linkage = "internal"
            gv.initializer = llir.Constant(_I64, llir.Undefined)
            gv.align = 8
        return builder.bitcast(gv, elem_ptr_type)
    words = builder.bitcast(err, _I64.as_pointer(addrspace=err.type.addrspace))
    return builder.bitcast(builder.gep(words, [_I32(_SCRATCH_WORD)], inbounds=True),
                           elem_ptr_type)


_LOCAL_SCRATCH = "pysycl.bounds.local_scratch"


def checked(builder: llir.IRBuilder, ok: Any, err: Any, slot: Any, kind: str,
            ids: list[Any], body: Callable[[], Any], default: Any = None) -> Any:
    """Run ``body()`` if ``ok``, else report; the value of ``body`` or ``default``."""
    with builder.if_else(ok, likely=True) as (then, otherwise):
        with then:
            value = body()
            then_block = builder.block
        with otherwise:
            report(builder, err, slot, kind, ids)
            else_block = builder.block
    if default is None:
        return None
    phi = builder.phi(value.type)
    phi.add_incoming(value, then_block)
    phi.add_incoming(default, else_block)
    return phi

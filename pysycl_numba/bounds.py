"""Device side of bounds-checked mode (``PYSYCL_BOUNDS_CHECK=1``).

In a bounds-checked kernel every captured accessor is a
``AccessorType(..., checked=True)``: its value also carries the kernel's error
buffer (the entry point's last argument), a pointer to the work-item's private
violation record, and the capture's position. An element access compares each
index component with the access range (one unsigned compare per dimension, so
negative indices fail too); an access outside it is skipped -- a load gives 0,
an atomic works on a scratch word -- and, if it is the work-item's first, it is
written into the private record.

The entry point publishes the record once, at its end (:func:`publish`): if any
work-item of the sub-group has one (``sub_group_any``, a uniform branch), those
that do race with ``atomic_cmpxchg`` for the error buffer, whose layout
``pysycl._core.abi`` defines, and the winner copies its record there.

Why the two steps, measured on the Intel OpenCL CPU device: the device compiler
vectorises 16 work-items per vector and runs a divergent branch for every
vector, lane by lane when it holds an atomic. An atomic compare-exchange in the
(never taken) failure branch of each access made a vector add 12x slower; plain
stores to a private record there cost almost nothing, and the one uniform
branch per sub-group at the end is skipped when no lane failed.

The source location comes from the lowering: :class:`pysycl_numba.pipelines.LocLowering`
leaves the location of the instruction being lowered on the IR builder. The site word
holds its number in the compile's :class:`Sites` (``CompiledKernel.sites``), not a line:
the runtime resolves it against the code of the program that submits the kernel.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Sequence
from typing import overload

from llvmlite import ir as llir

from pysycl._core.abi import BOUNDS_ACCESS_KINDS
from pysycl_numba.targets.spirv import ocl

_I32 = llir.IntType(32)
_I64 = llir.IntType(64)

#: The private record, ``long`` words: the access's packed site (0: none), index[3], the
#: failing item's linear id (``range`` kernels, whose work-items loop over items; -1: none).
RECORD_WORDS = 5
_LINEAR = 4
#: ``long`` words of the error buffer (``pysycl._core.abi``): site, index, scratch, work-item.
_SITE_WORD, _INDEX_WORD, _SCRATCH_WORD, _GID_WORD = 1, 4, 7, 8
_LOCAL_SCRATCH = "pysycl.bounds.local_scratch"
#: The entry point's out-of-line publishing function (never inlined).
PUBLISH = "pysycl.bounds.publish"


def in_bounds(builder: llir.IRBuilder, ids: Sequence[llir.Value], ranges: Sequence[llir.Value],
              ) -> llir.Value:
    """``0 <= ids[d] < ranges[d]`` for every ``d`` (unsigned compares)."""
    ok = None
    for i, r in zip(ids, ranges, strict=True):
        c = builder.icmp_unsigned("<", i, r)
        ok = c if ok is None else builder.and_(ok, c)
    return ok


class Sites:
    """The source locations one kernel compile refers to, numbered in order of first use.

    Bounds-checked accesses (their site words) and ``direct_index`` entries hold the
    numbers; the driver turns the ``(file, line)`` list into ``CompiledKernel.sites``.
    """

    def __init__(self) -> None:
        self.numbers: dict[tuple[str, int], int] = {}

    def number(self, loc: object) -> int:
        """The number of ``loc`` (a Numba ``ir.Loc``; None: an unknown location)."""
        key = (str(getattr(loc, "filename", "") or ""), int(getattr(loc, "line", 0) or 0))
        return self.numbers.setdefault(key, len(self.numbers))


#: The sites of the kernel being compiled (set by ``compiler.compile_kernel``).
sites: contextvars.ContextVar[Sites] = contextvars.ContextVar("pysycl_bounds_sites")


def site_number(loc: object) -> int:
    """The number of source location ``loc`` in the current compile's :class:`Sites`."""
    table = sites.get(None)
    if table is None:  # a device function compiled on its own: no kernel to report for
        return 0
    return table.number(loc)


def _word(builder: llir.IRBuilder, ptr: llir.Value, k: int) -> llir.Value:
    return builder.gep(ptr, [_I32(k)], inbounds=True)


def _site(builder: llir.IRBuilder, slot: llir.Value, kind: str) -> llir.Value:
    """The packed, never zero, ``long`` naming an access: kind, slot, site number."""
    number = site_number(getattr(builder, "pysycl_loc", None))
    const = (BOUNDS_ACCESS_KINDS.index(kind) + 1) | (min(number, (1 << 22) - 1) << 10)
    slot = builder.and_(builder.zext(slot, _I64), _I64(0xFF))  # 8 bits: captures 0..255
    return builder.or_(_I64(const), builder.shl(slot, _I64(2)))


def record(builder: llir.IRBuilder, rec: llir.Value, slot: llir.Value, kind: str,
           ids: Sequence[llir.Value]) -> None:
    """Write this violation into the private record unless the work-item has one already."""
    first = builder.icmp_unsigned("==", builder.load(_word(builder, rec, 0)), _I64(0))
    for k, v in enumerate([_site(builder, slot, kind), *ids]):
        p = _word(builder, rec, k)
        builder.store(builder.select(first, v, builder.load(p)), p)


def new_record(builder: llir.IRBuilder) -> llir.Value:
    """The work-item's private violation record (entry point), cleared."""
    with builder.goto_entry_block():
        rec = builder.alloca(_I64, size=RECORD_WORDS, name="pysycl.bounds.record")
    for k in range(RECORD_WORDS):
        builder.store(_I64(-1 if k == _LINEAR else 0), _word(builder, rec, k))
    return rec


def note_linear_id(builder: llir.IRBuilder, rec: llir.Value, lin: llir.Value) -> None:
    """After the call of the user's function for linear id ``lin`` (a ``range`` kernel's
    loop over items): the id of the record's first violation, if it just happened."""
    failed = builder.icmp_unsigned("!=", builder.load(_word(builder, rec, 0)), _I64(0))
    p = _word(builder, rec, _LINEAR)
    old = builder.load(p)
    unset = builder.icmp_signed("==", old, _I64(-1))
    builder.store(builder.select(builder.and_(failed, unset), lin, old), p)


def publish(builder: llir.IRBuilder, rec: llir.Value, err: llir.Value) -> None:
    """At the end of the entry point: the first failing work-item's record into ``err``."""
    site = builder.load(_word(builder, rec, 0))
    failed = builder.icmp_unsigned("!=", site, _I64(0))
    anyone = ocl.call(builder, "_Z13sub_group_anyi", _I32, [builder.zext(failed, _I32)],
                      pure=False, convergent=True)
    with builder.if_then(builder.icmp_unsigned("!=", anyone, _I32(0)), likely=False), \
            builder.if_then(failed):
        idx = [builder.load(_word(builder, rec, 1 + d)) for d in range(3)]
        lin = builder.load(_word(builder, rec, _LINEAR))
        call = builder.call(_publish_function(builder.module, err.type), [err, site, *idx, lin])
        call.calling_convention = "spir_func"


def _publish_function(module: llir.Module, err_type: llir.Type) -> llir.Function:
    """``publish(err, site, i0, i1, i2, lin)``: compare-exchange ``err[0]``; the winner
    writes (its work-item id, or the item's linear id ``lin`` in its first word when
    ``lin`` is not -1).

    A function of its own (``noinline``; :mod:`pysycl_numba.targets.spirv.codegen` keeps it):
    inlined, the device compiler ran its atomic lane by lane in every vector even
    though no lane took the branch (+5 ms on a 2^22 vector add, 0.2 ms as a call).
    """
    fn = module.globals.get(PUBLISH)
    if fn is not None:
        return fn
    fn = llir.Function(module, llir.FunctionType(llir.VoidType(), [err_type, *[_I64] * 5]),
                       name=PUBLISH)
    fn.calling_convention = "spir_func"
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    err, site, *idx, lin = fn.args
    b = llir.IRBuilder(fn.append_basic_block("entry"))
    pair = b.cmpxchg(err, _I32(0), _I32(1), "monotonic", "monotonic")
    with b.if_then(b.extract_value(pair, 1)):
        words = b.bitcast(err, _I64.as_pointer(addrspace=err.type.addrspace))
        b.store(site, _word(b, words, _SITE_WORD))
        for d in range(3):
            b.store(idx[d], _word(b, words, _INDEX_WORD + d))
            gid = ocl.work_item_query(b, "get_global_id", d)  # OpenCL order
            if d == 0:
                gid = b.select(b.icmp_signed("!=", lin, _I64(-1)), lin, gid)
            b.store(gid, _word(b, words, _GID_WORD + d))
    b.ret_void()
    return fn


def scratch(builder: llir.IRBuilder, err: llir.Value, elem_ptr_type: llir.Type, space: str) -> llir.Value:
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
    return builder.bitcast(_word(builder, words, _SCRATCH_WORD), elem_ptr_type)


@overload
def checked(builder: llir.IRBuilder, ok: llir.Value, rec: llir.Value, slot: llir.Value, kind: str,
            ids: Sequence[llir.Value], body: Callable[[], llir.Value], default: llir.Value) -> llir.Value: ...
@overload
def checked(builder: llir.IRBuilder, ok: llir.Value, rec: llir.Value, slot: llir.Value, kind: str,
            ids: Sequence[llir.Value], body: Callable[[], object], default: None = None) -> None: ...
def checked(builder: llir.IRBuilder, ok: llir.Value, rec: llir.Value, slot: llir.Value, kind: str,
            ids: Sequence[llir.Value], body: Callable[[], object], default: llir.Value | None = None,
            ) -> llir.Value | None:
    """Run ``body()`` if ``ok``, else record; the value of ``body`` or ``default``."""
    with builder.if_else(ok, likely=True) as (then, otherwise):
        with then:
            value = body()
            then_block = builder.block
        with otherwise:
            record(builder, rec, slot, kind, ids)
            else_block = builder.block
    if default is None:
        return None
    phi = builder.phi(value.type)
    phi.add_incoming(value, then_block)
    phi.add_incoming(default, else_block)
    return phi

"""``async_work_group_copy`` from global to local memory on NVIDIA GPUs (sm_80+): ``cp.async``.

Called by :mod:`pysycl_numba.overloads.async_copy` for a copy into local memory whose
stride is 1 (a run-time test where a stride is given). Where both ends of the copy and
its length are multiples of 16 bytes (a run-time test, the same for the whole group),
work-item ``l`` of ``L`` issues the 16-byte ``cp.async.cg`` chunks ``l, l + L, ...``;
else 4-, 8- and 16-byte elements go one ``cp.async.ca`` each; then
``cp.async.commit_group``. Other element sizes (2-byte halves not 16-byte aligned,
1-byte integers) and bounds-checked accessors copy element by element.

Each function counts the ``cp.async`` groups it committed (a counter of its own, an
``alloca`` in its entry block: registers once LLVM promotes it), and a copy's
``sycl.device_event`` is ``tag << 32 | number``: the function's tag (a CRC of its name)
and the number of its group. ``wait_for(ev, ...)`` then waits with ``cp.async.wait_group
N`` (:func:`wait`), ``N`` the groups committed after the newest of its events (at most
:data:`~pysycl_numba.targets.ptx.asynccopy.MAX_PENDING`) -- a copy issued after the one
waited for stays in flight, the pipelines of CUTLASS and Triton (copy step ``t + 2``
while step ``t`` is used) -- and a work-group barrier follows. An event of another function
(its tag differs) waits for every copy (``N`` 0); an event of no ``cp.async`` copy (0:
a scatter, a bounds-checked accessor, another target) for none but the barrier.
"""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING

from llvmlite import ir as llir

from pysycl._kernels.matrix_ptx import arch_cc
from pysycl_numba._numba_compat import cgutils
from pysycl_numba.overloads.accessor import element_pointer
from pysycl_numba.overloads.pointer import element_address
from pysycl_numba.targets.ptx import asynccopy as nv
from pysycl_numba.targets.ptx.mma import ptx_arch
from pysycl_numba.targets.spirv import ocl
from pysycl_numba.types import AccessorType, index_type

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from pysycl_numba._numba_compat import BaseContext, types

_I32 = llir.IntType(32)
_I64 = llir.IntType(64)
_VOID = llir.VoidType()


def _address(context: BaseContext, builder: llir.IRBuilder, t: types.Type, v: llir.Value,
             off: llir.Value) -> llir.Value:
    if isinstance(t, AccessorType):
        p = element_pointer(context, builder, t, v, index_type, off)
    else:
        p = element_address(context, builder, index_type, v, off)
    return builder.ptrtoint(p, _I64)


def _has_cp_async() -> bool:
    """Whether this compile's GPU has ``cp.async`` (sm_80+)."""
    arch = ptx_arch.get()
    return bool(arch) and arch_cc(arch) >= 80


def usable(dt: types.Type, st: types.Type) -> bool:
    """Whether this compile's GPU has ``cp.async`` and the operands allow it (no
    bounds-checked accessor: those copy element by element, each access checked)."""
    return _has_cp_async() and not any(isinstance(t, AccessorType) and t.checked
                                       for t in (dt, st))


def _counter(builder: llir.IRBuilder) -> tuple[llir.Value, int]:
    """(this function's ``cp.async`` group counter, its tag): an ``i32`` in the entry block,
    0 there, made at the function's first copy or wait."""
    fn = builder.function
    got = getattr(fn, "_pysycl_cp_groups", None)
    if got is None:
        got = (cgutils.alloca_once(builder, _I32, name="cp.async.groups"),
               zlib.crc32(fn.name.encode()) | 1)
        fn._pysycl_cp_groups = got  # type: ignore[attr-defined]
    return got


def event(builder: llir.IRBuilder) -> llir.Value:
    """The ``sycl.device_event`` of the copy just lowered: ``tag << 32 | groups``."""
    counter, tag = _counter(builder)
    count = builder.zext(builder.load(counter), _I64)
    return builder.or_(count, _I64(tag << 32))


def lower_copy(context: BaseContext, builder: llir.IRBuilder, dt: types.Type, dv: llir.Value,
               doff: llir.Value, st: types.Type, sv: llir.Value, soff: llir.Value,
               n: llir.Value, lid: llir.Value, size: llir.Value,
               plain: Callable[[], None]) -> None:
    """Emit the contiguous copy with ``cp.async`` (where :func:`usable`); ``plain()`` emits
    the element-by-element copy (elements ``cp.async`` cannot copy one by one). The
    function's group counter counts the group it commits."""
    es = context.get_abi_sizeof(context.get_data_type(dt.dtype))
    d0 = _address(context, builder, dt, dv, doff)
    s0 = _address(context, builder, st, sv, soff)
    nbytes = builder.mul(n, _I64(es))
    whole = builder.icmp_unsigned("==", builder.and_(builder.or_(builder.or_(d0, s0), nbytes),
                                                     _I64(15)), _I64(0))
    mod = builder.module

    def issue(width: int, count: llir.Value) -> None:
        fn = ocl.declare(mod, nv.CP_ASYNC[width], _VOID, [_I64, _I64], pure=False)
        with cgutils.for_range_slice(builder, lid, count, size) as (k, _count):
            at = builder.mul(k, _I64(width))
            builder.call(fn, [builder.add(d0, at), builder.add(s0, at)])

    with builder.if_else(whole, likely=True) as (vec, elem):
        with vec:
            issue(16, builder.udiv(nbytes, _I64(16)))
        with elem:
            if es in nv.CP_ASYNC:
                issue(es, n)
            else:
                plain()
    builder.call(ocl.declare(mod, nv.COMMIT, _VOID, [], pure=False), [])
    counter, _ = _counter(builder)
    builder.store(builder.add(builder.load(counter), _I32(1)), counter)


def wait(builder: llir.IRBuilder, events: Sequence[llir.Value]) -> None:
    """This work-item's copies of ``events`` complete (a barrier follows): ``cp.async.wait_group
    N``, ``N`` the fewest groups committed after one of them (an event of another function:
    0); nothing before sm_80, whose copies were plain ones."""
    if not _has_cp_async():
        return
    counter, tag = _counter(builder)
    count = builder.load(counter)
    most = _I32(nv.MAX_PENDING)
    free = _I32(nv.MAX_PENDING + 1)  # no cp.async copy to wait for: no wait
    pending = free
    for ev in events:
        mine = builder.icmp_unsigned("==", builder.lshr(ev, _I64(32)), _I64(tag))
        after = builder.sub(count, builder.trunc(ev, _I32))
        after = builder.select(builder.icmp_unsigned("<", after, most), after, most)
        none = builder.icmp_unsigned("==", ev, _I64(0))
        n = builder.select(none, free, builder.select(mine, after, _I32(0)))
        pending = builder.select(builder.icmp_unsigned("<", n, pending), n, pending)
    builder.call(ocl.declare(builder.module, nv.WAIT_PENDING, _VOID, [_I32], pure=False),
                 [pending])

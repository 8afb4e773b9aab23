"""``async_work_group_copy`` from global to local memory on NVIDIA GPUs (sm_80+): ``cp.async``.

Called by :mod:`pysycl_numba.overloads.async_copy` for a copy into local memory whose
stride is 1 (a run-time test where a stride is given). Where both ends of the copy and
its length are multiples of 16 bytes (a run-time test, the same for the whole group),
work-item ``l`` of ``L`` issues the 16-byte ``cp.async.cg`` chunks ``l, l + L, ...``;
else 4-, 8- and 16-byte elements go one ``cp.async.ca`` each; then
``cp.async.commit_group``. Other element sizes (2-byte halves not 16-byte aligned,
1-byte integers) and bounds-checked accessors copy element by element. ``wait_for``
waits with ``cp.async.wait_all`` (:func:`wait_all`) before its barrier.
"""

from __future__ import annotations

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
    from collections.abc import Callable

    from pysycl_numba._numba_compat import BaseContext, types

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


def lower_copy(context: BaseContext, builder: llir.IRBuilder, dt: types.Type, dv: llir.Value,
               doff: llir.Value, st: types.Type, sv: llir.Value, soff: llir.Value,
               n: llir.Value, lid: llir.Value, size: llir.Value,
               plain: Callable[[], None]) -> None:
    """Emit the contiguous copy with ``cp.async`` (where :func:`usable`); ``plain()`` emits
    the element-by-element copy (elements ``cp.async`` cannot copy one by one)."""
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


def wait_all(builder: llir.IRBuilder) -> None:
    """``cp.async.wait_all``: this work-item's copies complete (a barrier follows); nothing
    before sm_80, whose copies were plain ones."""
    if _has_cp_async():
        builder.call(ocl.declare(builder.module, nv.WAIT_ALL, _VOID, [], pure=False), [])

"""``sycl::reduction`` (SYCL 2020 §4.10.2): reduction variables of ``parallel_for``.

``sycl.reduction(buf, h, sycl.plus())`` (or an accessor, a custom combiner
with ``identity=``, ``properties=[sycl.property.reduction.initialize_to_identity()]``)
is handed to ``h.parallel_for(index, red1, red2, ..., kernel)``; the kernel
takes ``(item, r1, r2, ...)`` and calls ``r.combine(x)`` or ``r += x``.

How it runs (docs/design/compiler.md, "Reductions"): the compiler gives each
work-item a private accumulator and ends the kernel with a work-group combine
that writes one partial per work-group to a temporary device buffer; a
``range`` kernel is launched as a padded 1-D ``nd_range``. A second kernel,
one work-group, folds the partials -- and the reduction variable's old value
unless ``initialize_to_identity`` -- into the variable. Both are enqueued on
the queue's in-order OpenCL queue; the command group's event is the last one.
"""

from __future__ import annotations

import hashlib
import sys
import types
from collections.abc import Callable, Hashable, Iterable, Sequence
from math import prod
from typing import TYPE_CHECKING, Any

import numpy as np

from pysycl._core.abi import (
    AccessorType,
    IndexSpace,
    ReductionOp,
    ReductionType,
    ScalarType,
)
from pysycl._core.exceptions import errc, exception
from pysycl._kernels import argplan as _args
from pysycl._kernels import bounds as _bounds
from pysycl._kernels import steps as _steps
from pysycl._kernels.cache import Kernel, kernels, target_of
from pysycl._kernels.captures import capture_values, captures_of
from pysycl._kernels.digest import hash_static, stable_digest
from pysycl._kernels.functor import body_of
from pysycl._kernels.group_algorithms import known_identity
from pysycl._kernels.kassert import submit_site
from pysycl._kernels.kernel_api import _functor, group_barrier
from pysycl._kernels.ndrange import SMALL, check_global_size, ndrange_sizes
from pysycl._memory import tables as _tables
from pysycl._memory.accessor import access_mode, accessor
from pysycl._memory.buffer import buffer
from pysycl._objects.info import _device_info
from pysycl.property import REDUCTION, checked, no_init
from pysycl.property import reduction as _reduction_props

if TYPE_CHECKING:
    from pysycl._backends.base import DeviceExecutor
    from pysycl._core.abi import CaptureType
    from pysycl._core.launch_types import CommandGroupRef, KernelCommandRef
    from pysycl._kernels.captures import CaptureEntry
    from pysycl._objects.device import device
    from pysycl.property import _Property


# ----------------------------------------------------------- known operators
# The known SYCL function objects as Python functions: the compiler combines
# with them like with a user's combiner (they inline to one instruction).
def _plus(a: Any, b: Any) -> Any:
    return a + b


def _multiplies(a: Any, b: Any) -> Any:
    return a * b


def _minimum(a: Any, b: Any) -> Any:
    return a if a < b else b  # sycl::minimum: (x < y) ? x : y


def _maximum(a: Any, b: Any) -> Any:
    return a if a > b else b


def _bit_and(a: Any, b: Any) -> Any:
    return a & b


def _bit_or(a: Any, b: Any) -> Any:
    return a | b


def _bit_xor(a: Any, b: Any) -> Any:
    return a ^ b


def _logical_and(a: Any, b: Any) -> Any:
    return 1 if (a != 0 and b != 0) else 0


def _logical_or(a: Any, b: Any) -> Any:
    return 1 if (a != 0 or b != 0) else 0


_COMBINERS: dict[str, Callable[[Any, Any], Any]] = {
    "plus": _plus, "multiplies": _multiplies, "minimum": _minimum, "maximum": _maximum,
    "bit_and": _bit_and, "bit_or": _bit_or, "bit_xor": _bit_xor,
    "logical_and": _logical_and, "logical_or": _logical_or,
}
assert list(_COMBINERS) == [op.name for op in ReductionOp]
_BITWISE = ("bit_and", "bit_or", "bit_xor")


def _caller() -> str:
    f = sys._getframe(2)
    return f"{f.f_code.co_filename}:{f.f_lineno}"


def _variable_dtype(var: buffer | accessor, h: CommandGroupRef, where: str) -> np.dtype:
    """The element type of a reduction variable, checked (one element, writable, this group's)."""
    if isinstance(var, buffer):
        n = var.size()
        dt = var.dtype
    elif isinstance(var, accessor):
        n = var.size()
        dt = var.dtype
        if var.handler is not h:
            raise exception(errc.invalid, f"{where}: the reduction's accessor was not "
                            "created in this command group")
        if not var.writes:
            raise exception(errc.invalid, f"{where}: the reduction's accessor has "
                            "access_mode.read; a reduction writes its variable")
    else:
        raise TypeError(f"{where}: sycl.reduction takes a sycl.buffer or sycl.accessor of "
                        f"one element, not {type(var).__name__}")
    if n != 1:
        raise exception(errc.invalid, f"{where}: a reduction variable has exactly one "
                        f"element; this {type(var).__name__} has {n}")
    dt = np.dtype(dt)
    if dt.kind not in "iuf":
        raise TypeError(f"{where}: reductions of {dt} are not supported (integer and "
                        "floating-point types are)")
    return dt


def _combiner_of(combiner: _functor | Callable[..., Any], identity: Any, dt: np.dtype, where: str
                 ) -> tuple[str, Callable[..., Any], Any]:
    """(operator name or ``"custom"``, the combine function, the identity) of a reduction."""
    if isinstance(combiner, _functor):
        op = combiner.op
        if op in _BITWISE and dt.kind == "f":
            raise TypeError(f"{where}: sycl.{op}() needs an integer type, the reduction "
                            f"variable is {dt}")
        return op, _COMBINERS[op], known_identity(op, dt) if identity is None else identity
    if isinstance(combiner, (types.FunctionType, types.BuiltinFunctionType)) \
            or hasattr(combiner, "py_func"):
        if identity is None:
            raise exception(errc.invalid, f"{where}: a reduction with the custom combiner "
                            f"{getattr(combiner, '__qualname__', combiner)!r} needs "
                            "identity=... (SYCL knows the identity only of its function "
                            "objects such as sycl.plus())")
        return "custom", combiner, identity
    raise TypeError(f"{where}: the reduction's combiner must be a SYCL function object "
                    f"(sycl.plus(), ...) or a Python function, not {type(combiner).__name__}")


# ------------------------------------------------------------------ reduction
class reduction:  # noqa: N801 - the spec's spelling
    """A reduction variable of one ``parallel_for`` (``sycl::reduction``).

    Args:
        var: a one-element ``sycl.buffer`` or a one-element, writable
            ``sycl.accessor`` created in this command group.
        h: the command group's handler.
        combiner: ``sycl.plus()``, ``sycl.multiplies()``, ``sycl.minimum()``,
            ``sycl.maximum()``, ``sycl.bit_and()``, ``sycl.bit_or()``,
            ``sycl.bit_xor()``, ``sycl.logical_and()``, ``sycl.logical_or()``,
            or a Python function of two values (then ``identity`` is required).
        identity: the combiner's identity; for the function objects above
            SYCL's ``known_identity`` is the default. The spec's positional
            order ``reduction(var, h, identity, combiner)`` is accepted too.
        properties: ``[sycl.property.reduction.initialize_to_identity()]``
            discards the variable's old value; without it the result is
            combined with the old value.

    Raises:
        exception: ``errc.invalid`` for a variable with other than one
            element, a read-only or foreign accessor, or a custom combiner
            without identity.
        TypeError: wrong argument types, unsupported element types or a
            bitwise operator on floating-point values.
    """

    __slots__ = ("_acc", "_combiner", "_dtype", "_handler", "_identity", "_init", "_op",
                 "_where")

    def __init__(self, var: buffer | accessor, h: CommandGroupRef,
                 combiner: _functor | Callable[..., Any], identity: Any = None,
                 properties: Iterable[_Property] | None = None) -> None:
        where = _caller()
        if not hasattr(h, "requirements"):
            raise TypeError(f"{where}: sycl.reduction(var, h, combiner): the second argument "
                            f"must be the command group's handler, not {type(h).__name__}")
        if not callable(combiner) and callable(identity):  # the spec's (var, h, identity, op)
            combiner, identity = identity, combiner
        props = checked(properties or (), REDUCTION, "sycl.reduction")
        init = props.has_property(_reduction_props.initialize_to_identity)
        dt = _variable_dtype(var, h, where)
        op, comb, identity = _combiner_of(combiner, identity, dt, where)
        try:
            with np.errstate(all="raise"):
                ident = dt.type(identity)
        except (TypeError, ValueError, OverflowError, FloatingPointError) as e:
            raise TypeError(f"{where}: identity {identity!r} is not a {dt} value: {e}") from None
        if isinstance(var, buffer):
            var = var.get_access(h, access_mode.write if init else access_mode.read_write,
                                 properties=[no_init] if init else ())
        self._acc = var
        self._handler = h
        self._dtype = dt
        self._op = op
        self._combiner = comb
        self._identity = ident
        self._init = init
        self._where = where

    # What the launcher and the host device read (pysycl's own; not in the spec).
    @property
    def accessor(self) -> accessor:
        """The reduction variable as an accessor of this command group (a buffer's, made here)."""
        return self._acc

    @property
    def handler(self) -> CommandGroupRef:
        """The command group's handler the reduction was created with."""
        return self._handler

    @property
    def where(self) -> str:
        """``file:line`` of the ``sycl.reduction(...)`` call (for error messages)."""
        return self._where

    @property
    def op(self) -> str:
        """The operator's name (a :class:`ReductionOp` name such as ``"plus"``) or ``"custom"``."""
        return self._op

    @property
    def dtype(self) -> np.dtype:
        """The reduction variable's element type."""
        return self._dtype

    @property
    def identity(self) -> np.generic:
        """The combiner's identity, a numpy scalar of :attr:`dtype`."""
        return self._identity

    @property
    def combiner(self) -> Callable[..., Any]:
        """The combine function of two values (the Python form of a known operator)."""
        return self._combiner

    @property
    def initialize_to_identity(self) -> bool:
        """Whether the variable's old value is discarded (``initialize_to_identity``)."""
        return self._init

    def __repr__(self) -> str:
        return (f"sycl.reduction({self._dtype}, {self._op}, identity={self._identity!r}, "
                f"initialize_to_identity={self._init})")


# ------------------------------------------------------------- final kernel
# One final kernel serves every known operator of a dtype (the operator's
# ReductionOp code is a kernel argument, a uniform branch), so a program using
# several operators compiles it once per dtype; a custom combiner gets its own.
# Numba types enum *members* read from globals (compile-time constants), not
# attributes of an enum class: hence these names.
(_PLUS, _MULTIPLIES, _MINIMUM, _MAXIMUM, _BIT_AND, _BIT_OR, _BIT_XOR, _LOGICAL_AND,
 _LOGICAL_OR) = ReductionOp


def _int_bitwise(opc: Any, a: Any, b: Any) -> Any:
    if opc == _BIT_AND:
        return a & b
    if opc == _BIT_OR:
        return a | b
    return a ^ b


def _no_bitwise(opc: Any, a: Any, b: Any) -> Any:
    return a  # never called: bitwise reductions of floats are refused by sycl.reduction


def _known_combiner(dt: type, integer: bool) -> Callable[..., Any]:
    bitwise = _int_bitwise if integer else _no_bitwise  # `a & b` does not type for floats

    def comb(opc: Any, a: Any, b: Any) -> Any:
        if opc == _PLUS:
            return dt(a + b)
        if opc == _MULTIPLIES:
            return dt(a * b)
        if opc == _MINIMUM:
            return a if a < b else b
        if opc == _MAXIMUM:
            return a if a > b else b
        if opc == _LOGICAL_AND:
            return dt(1 if (a != 0 and b != 0) else 0)
        if opc == _LOGICAL_OR:
            return dt(1 if (a != 0 or b != 0) else 0)
        return dt(bitwise(opc, a, b))

    return comb


def _custom_combiner(user: Callable[..., Any], dt: type) -> Callable[..., Any]:
    def comb(opc: Any, a: Any, b: Any) -> Any:
        return dt(user(a, b))

    return comb


def _make_final(comb: Callable[..., Any]) -> Callable[..., Any]:
    # Placeholders: these names become kernel arguments (captures).
    part = out = tmp = npart = ident = keep = opc = None

    def _pysycl_reduction_final(it: Any) -> None:
        lid = it.get_local_id(0)
        nl = it.get_local_range(0)
        a = ident
        i = lid
        while i < npart:
            a = comb(opc, a, part[i])
            i += nl
        tmp[lid] = a
        group_barrier(it.get_group())
        n = nl
        while n > 1:
            half = (n + 1) >> 1
            if lid + half < n:
                tmp[lid] = comb(opc, tmp[lid], tmp[lid + half])
            group_barrier(it.get_group())
            n = half
        if lid == 0:
            if keep:
                out[0] = comb(opc, out[0], tmp[0])
            else:
                out[0] = tmp[0]

    return _pysycl_reduction_final


def _final_captures(fn: types.FunctionType, dt: np.dtype) -> list[tuple[str, str, CaptureType]]:
    kinds = {
        "part": AccessorType(dt, 1, "read"),
        "out": AccessorType(dt, 1, "read_write"),
        "tmp": AccessorType(dt, 1, "read_write", "local"),
        "npart": ScalarType(np.dtype(np.int64)),
        "ident": ScalarType(dt),
        "keep": ScalarType(np.dtype(np.bool_)),
        "opc": ScalarType(np.dtype(np.int32)),
    }
    return [(n, "freevar", kinds[n]) for n in fn.__code__.co_freevars if n in kinds]


def _final_kernel(r: reduction, ckey: Hashable, target: tuple[str, str]) -> Kernel:
    what = "custom" if r.op == "custom" else "known"
    key = ("reduction_final", ckey if what == "custom" else what, r.dtype, target)

    def make() -> Kernel:
        dt = r.dtype.type
        comb = (_custom_combiner(r.combiner, dt) if what == "custom"
                else _known_combiner(dt, r.dtype.kind in "iu"))
        fn = _make_final(comb)
        captures = captures_of(_final_captures(fn, r.dtype))
        index = IndexSpace("nd_range", 1)
        return kernels.load_or_compile(stable_digest(fn, captures, index), fn, index, captures,
                                       f"reduction_final<{r.dtype},{what}>", target=target)

    return kernels.once(key, make)  # uncounted: the stats count the user's kernels


def _final_args(r: reduction, part: Any, groups: int, fl: int, ex: DeviceExecutor
                ) -> dict[str, Any]:
    """The final kernel's arguments by capture name (``fl``: its work-group size)."""
    out = r.accessor
    return {"part": (part, 0, max(groups, 1)),
            "out": (out.coherence.dev[ex.key], out.kernel_tail[0], 1),
            "tmp": (ex.local_memory(fl * r.dtype.itemsize), fl),
            "npart": (groups,), "ident": (r.identity,),
            "keep": (np.uint8(not r.initialize_to_identity),),
            "opc": (np.int32(ReductionOp[r.op] if r.op != "custom" else -1),)}


# --------------------------------------------------------------- main kernel
def _combiner_key(comb: _functor | Callable[..., Any]) -> Hashable:
    if isinstance(comb, types.FunctionType):
        return comb if comb.__closure__ else comb.__code__
    return comb


def _load_or_compile(fn: types.FunctionType, caps: list[CaptureEntry], index: IndexSpace,
                     reds: tuple[reduction, ...], rtypes: tuple[ReductionType, ...],
                     kernel_name: str | None, bounds_check: bool,
                     target: tuple[str, str]) -> Kernel:
    captures = captures_of(caps)
    h = hashlib.sha256(stable_digest(fn, captures, index).encode())
    h.update(repr(tuple((t.dtype.str, t.op) for t in rtypes)).encode())
    if bounds_check:
        h.update(b"bounds_check")
    seen: set[int] = set()
    for r in reds:
        hash_static(r.combiner, h, seen)
    digest = h.hexdigest()
    name = kernel_name or fn.__qualname__
    compiled = kernels.load_or_compile_image(
        digest, fn, index, captures, name, bounds_check, target,
        tuple((t, r.combiner) for t, r in zip(rtypes, reds, strict=True)))
    k = Kernel(compiled, name, digest)
    if index.kind == "range":
        k.arg_dtypes.extend([np.int64] * index.ndim)
    for t in rtypes:
        k.arg_dtypes.extend([t.dtype, None, None])
    if bounds_check or compiled.asserts:
        k.arg_dtypes.append(None)  # the error buffer
    return k


_partials: dict[tuple[int, int], tuple[Any, Any, int]] = {}


def _partials_buffer(ex: DeviceExecutor, slot: int, nbytes: int) -> Any:
    # One temporary per (native queue, reduction slot): the queue is in order,
    # so a later command group's kernels never overlap this one's.
    clq = ex.native
    key = (id(clq), slot)
    hit = _partials.get(key)
    if hit is None or hit[0] is not clq or hit[2] < nbytes:
        if len(_partials) > 64:
            _partials.clear()  # enqueued commands keep their buffers alive (drivers retain)
        size = max(nbytes, 4096)
        hit = _partials[key] = (clq, ex.alloc(size), size)
    return hit[1]


def _check(h: CommandGroupRef, cmd: KernelCommandRef) -> None:
    for r in cmd.reductions:
        if r.handler is not h:
            raise exception(errc.invalid, f"{r.where}: the reduction was created in another "
                            "command group")


#: Work-groups per compute unit of a ``range`` reduction's launch on a GPU: the final
#: step reads every group's partial from one work-group (fewer is faster: 0.2x -> see
#: docs/performance.md).
_GROUPS_PER_UNIT_GPU = 16


def _sizes(k: Kernel, dev: device, lim: tuple[int, tuple[int, ...], int], cmd: KernelCommandRef,
           values: list[Any]) -> tuple[tuple[int, ...], tuple[int, ...], list[Any]]:
    """(global size, local size, extra arguments): a range runs as a padded 1-D nd_range
    (``lim``: the built kernel's limits)."""
    if cmd.kind != "range":
        gsize, lsize = ndrange_sizes(k, dev, lim, cmd.index_space, values)
        return gsize, lsize, []
    if k.has_local:
        raise exception(errc.kernel_argument, f"{k.where} captures a sycl.local_accessor, but "
                        "local memory exists only in nd_range kernels")
    user = tuple(cmd.index_space)
    if prod(user) > SMALL:
        check_global_size(k.named(cmd.name), user, dev)
    total = int(np.prod(user, dtype=np.int64)) if user else 0
    wg = max(1, min(256, lim[0], lim[1][0], total))
    # The kernel loops over the items (grid-stride). On a GPU: enough groups to fill it,
    # few enough that the final step has little to combine. On a CPU: one item per
    # work-item, which Intel's compiler vectorises across work-items; its grid-stride
    # loop ran at 0.4x the OpenCL C peer (2.5 against 6.1 GB/s, benchmarks/bench_ndrange).
    groups = -(-total // wg)
    if dev.is_gpu():
        units = max(1, int(dev.get_info(_device_info.max_compute_units)))  # cached per device
        groups = min(groups, _GROUPS_PER_UNIT_GPU * units)
    return (groups * wg,), (wg,), list(user)


def _check_local_memory(k: Kernel, lim: tuple[int, tuple[int, ...], int], values: list[Any],
                        reds: tuple[reduction, ...], wg: int) -> None:
    local = _args.local_bytes(values, k.arg_kinds) + sum(wg * r.dtype.itemsize for r in reds)
    if local > lim[2]:
        raise exception(errc.nd_range, f"{k.where}: its local accessors and reductions need "
                        f"{local} bytes of local memory per work-group, more than the "
                        f"{lim[2]} bytes available; use a smaller local range")


# long: the reduction launch's checks, in the order their errors must be reported.
def prepare(ex: DeviceExecutor, h: CommandGroupRef,
            cmd: KernelCommandRef) -> Callable[[Sequence[Any] | None], Any]:
    """Compile/build/validate a kernel with reductions for executor ``ex``; return
    ``launch(wait_for) -> native event``: the main kernel, then one final kernel per
    reduction, each through the executor's prepared launch (``DeviceExecutor.prepared``).

    The caller (the backend's launch) has refused ``sycl.kernel`` objects and
    ``use_kernel_bundle``.
    """
    _check(h, cmd)
    kind, ndim, fn, reds = cmd.kind, cmd.ndim, cmd.fn, cmd.reductions
    body = body_of(fn) if not isinstance(fn, types.FunctionType) else None
    obj = None
    if body is not None:  # a function object: its body and self
        fn, obj = body
    info, values, caps, tkey = capture_values(fn, h, obj)
    rtypes = tuple(ReductionType(r.dtype, r.op) for r in reds)
    ckeys = tuple(_combiner_key(r.combiner) for r in reds)
    checked = _bounds.enabled()
    dev = h.queue.get_device()
    target = target_of(dev)  # one image per entry: the combiners are not kept to compile more
    mkey = (info.code, tkey, kind, ndim, rtypes, ckeys, checked, target)
    k = kernels.get(mkey)
    if k is None:
        with _tables.explaining([c[0] for c in caps], values):
            k = kernels.once(mkey, lambda: _load_or_compile(
                fn, caps, IndexSpace(kind, ndim), reds, rtypes, cmd.name, checked, target))
    if k.prints:
        raise exception(errc.feature_not_supported, f"kernel {k.name}: print() and sycl.stream "
                        "in kernels with reductions are not supported yet; print in a kernel "
                        "without reductions or run it on the host_debuggable device")
    if k.has_spec:
        raise exception(errc.feature_not_supported, f"kernel {k.name}: pysycl does not support "
                        "specialization constants in kernels with reductions yet")
    clk = ex.build(k, name=cmd.name)
    if cmd.kind == "nd_range":  # wider than the driver promises (PTX): a launch bound
        clk = ex.bounded_kernel(k, clk, cmd.index_space, name=cmd.name)
    finals = [_final_kernel(r, ck, target) for r, ck in zip(reds, ckeys, strict=True)]
    fclks = [ex.build(fk) for fk in finals]
    lim = ex.kernel_limits(clk)
    gsize, lsize, extra = _sizes(k, dev, lim, cmd, values)
    wg = int(np.prod(lsize))
    groups = int(np.prod(gsize)) // wg
    if k.direct or k.direct_rest:
        _bounds.check_static(k, info.location, fn, kind, cmd.index_space, values)
    _check_local_memory(k, lim, values, reds, wg)
    ranges = _args.accessor_ranges(values, k.arg_kinds)
    values = _args.with_local_memory(values, k.arg_kinds, ex.local_memory)
    parts = [_partials_buffer(ex, i, max(groups, 1) * r.dtype.itemsize)
             for i, r in enumerate(reds)]
    main = ex.prepared(k, clk, gsize, lsize)
    fl = [max(1, min(256, ex.kernel_limits(c)[0], groups)) for c in fclks]
    fls = [ex.prepared(fk, c, (n,), (n,)) for fk, c, n in zip(finals, fclks, fl, strict=True)]
    # USM pointers (and host arrays) live until the last kernel completes (in order: both)
    holds = values if k.has_pointer else None
    site = submit_site() if k.asserts else ""
    record = (_bounds.record(h.queue, k, fn, cmd.name or fn.__qualname__, info.location, values,  # type: ignore[arg-type]
                             ranges, ndim, site, tuple(extra) or None)
              if checked or k.asserts else None)
    ctx_key = h.context_key

    def launch(wait_for: Sequence[Any] | None) -> Any:
        ev = None
        if groups:
            args = _args.flat_args(values, k.arg_kinds, ex.key)
            args.extend(extra)
            for r, p in zip(reds, parts, strict=True):
                args.extend((r.identity, p, ex.local_memory(wg * r.dtype.itemsize)))
            slot = _steps.error_slot(ex, k, ctx_key, record) if record else None  # type: ignore[arg-type]
            if slot is not None:
                args.append(slot.arg)
            try:
                ev = main.enqueue(args, None, wait_for)
            except BaseException:
                if slot is not None:
                    slot.release()
                raise
            if slot is not None:
                slot.add(ev, record)
            wait_for = None
        last = len(reds) - 1
        for i, (r, p, fk, fn_, n) in enumerate(zip(reds, parts, finals, fls, fl, strict=True)):
            fargs = _final_args(r, p, groups, n, ex)
            flat = [a for c in fk.compiled.captures for a in fargs[c.name]]
            ev = fn_.enqueue(flat, holds if i == last else None, wait_for)
            wait_for = None
        return ev

    return launch

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

from pysycl._core.abi import IndexSpace, ReductionType
from pysycl._core.exceptions import errc, exception
from pysycl._core.where import location
from pysycl._kernels import argplan as _args
from pysycl._kernels import bounds as _bounds
from pysycl._kernels import steps as _steps
from pysycl._kernels.cache import Kernel, kernels, target_of
from pysycl._kernels.captures import capture_values, captures_of
from pysycl._kernels.digest import hash_static, stable_digest
from pysycl._kernels.functor import body_of
from pysycl._kernels.group_algorithms import known_identity
from pysycl._kernels.kassert import submit_site
from pysycl._kernels.kernel_api import _functor
from pysycl._kernels.ndrange import SMALL, check_global_size, ndrange_sizes
from pysycl._kernels.rangesize import COARSEN
from pysycl._kernels.reduction_final import COMBINERS, final_args, final_kernel, final_sizes
from pysycl._memory import tables as _tables
from pysycl._memory.accessor import access_mode, accessor
from pysycl._memory.buffer import buffer
from pysycl._memory.span import span
from pysycl._memory.usm import usm_pointer
from pysycl._objects.info import _device_info
from pysycl.property import REDUCTION, checked, no_init, property_list
from pysycl.property import reduction as _reduction_props

if TYPE_CHECKING:
    from pysycl._core.backends import DeviceExecutor
    from pysycl._core.launch_types import CommandGroupRef, KernelCommandRef
    from pysycl._kernels.captures import CaptureEntry
    from pysycl._objects.device import device
    from pysycl.property import _Property


_BITWISE = ("bit_and", "bit_or", "bit_xor")


def _caller() -> str:
    f = sys._getframe(2)
    return location(f.f_code.co_filename, f.f_lineno)


#: Element types of span reductions: the work-items combine into their group's row
#: with a compare-exchange loop, which OpenCL has for 32- and 64-bit words.
_SPAN_DTYPES = tuple(np.dtype(t) for t in ("int32", "uint32", "int64", "uint64", "float32",
                                           "float64"))
_MISSING: Any = object()


def _check_dtype(dt: Any, where: str) -> np.dtype:
    dt = np.dtype(dt)
    if dt.kind not in "iuf":
        raise TypeError(f"{where}: reductions of {dt} are not supported (integer and "
                        "floating-point types are)")
    return dt


def _variable_dtype(var: buffer | accessor, h: CommandGroupRef, where: str) -> np.dtype:
    """The element type of a buffer or accessor variable, checked (one element, writable,
    this group's)."""
    if isinstance(var, accessor):
        if var.handler is not h:
            raise exception(errc.invalid, f"{where}: the reduction's accessor was not "
                            "created in this command group")
        if not var.writes:
            raise exception(errc.invalid, f"{where}: the reduction's accessor has "
                            "access_mode.read; a reduction writes its variable")
    n = var.size()
    if n != 1:
        raise exception(errc.invalid, f"{where}: a reduction variable has exactly one "
                        f"element; this {type(var).__name__} has {n}")
    return _check_dtype(var.dtype, where)


def _usm_variable(var: usm_pointer | span, where: str) -> tuple[usm_pointer, int, np.dtype]:
    """(pointer, element count, element type) of a USM pointer or span variable, checked."""
    if isinstance(var, span):
        p, n = var.data(), var.size()
        if n == 0:
            raise exception(errc.invalid, f"{where}: sycl.reduction of an empty span: a span "
                            "reduction has at least one element (sycl.span(ptr, n), n >= 1)")
    else:
        p, n = var, 1
        if p.count < 1:
            raise exception(errc.invalid, f"{where}: the reduction's pointer {p!r} points at "
                            "the end of its allocation; a reduction writes one element there")
    p.check_live(f"{where}: sycl.reduction")
    if p.readonly:
        raise exception(errc.invalid, f"{where}: {p!r} is read-only memory; a reduction "
                        "writes its variable")
    dt = _check_dtype(p.dtype, where)
    if isinstance(var, span) and dt not in _SPAN_DTYPES:
        raise TypeError(f"{where}: span reductions of {dt} are not supported (32- and 64-bit "
                        "integer and floating-point types are: the work-items combine with "
                        "a compare-exchange loop)")
    return p, n, dt


def _split_args(var: Any, args: tuple[Any, ...], identity: Any, properties: Any, where: str
                ) -> tuple[CommandGroupRef | None, Any, Any, Any]:
    """(handler or None, combiner, identity, properties) of ``sycl.reduction``'s arguments:
    ``(var, h, [identity,] combiner[, properties])`` for buffers and accessors,
    ``(var, [identity,] combiner[, properties])`` for USM pointers and spans."""
    usm = isinstance(var, (usm_pointer, span))
    if not usm and not isinstance(var, (buffer, accessor)):
        raise TypeError(f"{where}: sycl.reduction takes a sycl.buffer or sycl.accessor of one "
                        "element, a USM pointer or a sycl.span, not " + type(var).__name__)
    h = None
    if not usm:
        if not args or not hasattr(args[0], "requirements"):
            got = type(args[0]).__name__ if args else "nothing"
            raise TypeError(f"{where}: sycl.reduction(var, h, combiner): the second argument "
                            f"must be the command group's handler, not {got}")
        h, args = args[0], args[1:]
    elif args and hasattr(args[0], "requirements"):
        raise TypeError(f"{where}: sycl.reduction({type(var).__name__}, combiner) takes no "
                        "handler (SYCL 2020 §4.10.2: the USM and span forms have none); "
                        "write sycl.reduction(ptr, sycl.plus())")
    if args and isinstance(args[-1], (list, tuple, property_list)):
        if properties is not None:
            raise TypeError(f"{where}: sycl.reduction got the properties twice")
        properties, args = args[-1], args[:-1]
    if len(args) == 2 and identity is _MISSING:
        a, b = args
        args, identity = ((b,), a) if callable(b) and not callable(a) else ((a,), b)
    if len(args) != 1:
        form = "h, " if h is not None else ""
        raise TypeError(f"{where}: sycl.reduction(var, {form}[identity,] combiner[, "
                        f"properties]): {'missing the combiner' if not args else 'too many arguments'}")
    return h, args[0], None if identity is _MISSING else identity, properties


def _identity_value(identity: Any, dt: np.dtype, where: str) -> np.generic:
    """``identity`` as a ``dt`` scalar; a value of another kind (a float for an integer
    variable, a complex number, ...) is refused as C++'s ``const T& identity`` would be."""
    kind = (identity.dtype.kind if isinstance(identity, np.generic) else
            "i" if isinstance(identity, int) else "f" if isinstance(identity, float) else "?")
    if (kind == "f" and dt.kind in "iu") or kind not in "biuf":
        raise TypeError(f"{where}: the identity {identity!r} ({type(identity).__name__}) does "
                        f"not match the reduction variable's type {dt}")
    try:
        with np.errstate(all="raise"):
            ident = dt.type(identity)
    except (TypeError, ValueError, OverflowError, FloatingPointError) as e:
        raise TypeError(f"{where}: identity {identity!r} is not a {dt} value: {e}") from None
    if kind in "biu" and int(ident) != int(identity):
        raise TypeError(f"{where}: identity {identity!r} is not a {dt} value (out of range)")
    return ident


def _combiner_of(combiner: _functor | Callable[..., Any], identity: Any, dt: np.dtype, where: str
                 ) -> tuple[str, Callable[..., Any], Any]:
    """(operator name or ``"custom"``, the combine function, the identity) of a reduction."""
    if isinstance(combiner, _functor):
        op = combiner.op
        if op in _BITWISE and dt.kind == "f":
            raise TypeError(f"{where}: sycl.{op}() needs an integer type, the reduction "
                            f"variable is {dt}")
        return op, COMBINERS[op], known_identity(op, dt) if identity is None else identity
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
    """A reduction variable of one ``parallel_for`` (``sycl::reduction``, §4.10.2).

    The forms (``[...]`` optional; the spec's positional order)::

        sycl.reduction(buf_or_acc, h, [identity,] combiner[, properties])
        sycl.reduction(ptr, [identity,] combiner[, properties])
        sycl.reduction(sycl.span(ptr, n), [identity,] combiner[, properties])

    Args:
        var: a one-element ``sycl.buffer`` or a one-element, writable
            ``sycl.accessor`` created in this command group (both need the
            handler ``h``); a USM pointer (the result is element 0); or a
            ``sycl.span`` of ``n >= 1`` elements: ``n`` independent reductions,
            the kernel's reducer is indexed (``r[i] += x``).
        *args: the handler (buffers and accessors only), then the identity
            (optional), the combiner, and the properties (optional). The
            combiner is ``sycl.plus()``, ``sycl.multiplies()``,
            ``sycl.minimum()``, ``sycl.maximum()``, ``sycl.bit_and()``,
            ``sycl.bit_or()``, ``sycl.bit_xor()``, ``sycl.logical_and()``,
            ``sycl.logical_or()``, or a Python function of two values (then
            ``identity`` is required).
        identity: the combiner's identity (keyword form); for the function objects
            above SYCL's ``known_identity`` is the default.
        properties: ``[sycl.property.reduction.initialize_to_identity()]``
            discards the variable's old value; without it the result is
            combined with the old value.

    Raises:
        exception: ``errc.invalid`` for a variable with other than one
            element, a read-only or foreign accessor, a freed or read-only
            pointer, an empty span, or a custom combiner without identity.
        TypeError: wrong argument types, unsupported element types, an identity
            that is not a value of the variable's type, or a bitwise operator on
            floating-point values.
    """

    __slots__ = ("_acc", "_combiner", "_count", "_dtype", "_handler", "_identity", "_init",
                 "_kind", "_op", "_ptr", "_where")

    def __init__(self, var: buffer | accessor | usm_pointer | span, *args: Any,
                 identity: Any = _MISSING, properties: Iterable[_Property] | None = None
                 ) -> None:
        where = _caller()
        h, combiner, identity, properties = _split_args(var, args, identity, properties, where)
        props = checked(properties or (), REDUCTION, "sycl.reduction")
        init = props.has_property(_reduction_props.initialize_to_identity)
        self._acc: accessor | None = None
        self._ptr: usm_pointer | None = None
        self._count = 1
        if h is None:
            self._ptr, self._count, dt = _usm_variable(var, where)  # type: ignore[arg-type]
            self._kind = "span" if isinstance(var, span) else "pointer"
        else:
            dt = _variable_dtype(var, h, where)  # type: ignore[arg-type]
            self._kind = "accessor"
        op, comb, identity = _combiner_of(combiner, identity, dt, where)
        ident = _identity_value(identity, dt, where)
        if isinstance(var, buffer):
            var = var.get_access(h, access_mode.write if init else access_mode.read_write,
                                 properties=[no_init] if init else ())
        if isinstance(var, accessor):
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
    def variable_kind(self) -> str:
        """``"accessor"`` (a buffer's or an accessor's), ``"pointer"`` or ``"span"``."""
        return self._kind

    @property
    def accessor(self) -> accessor:
        """The reduction variable as an accessor of this command group (a buffer's, made
        here); only for :attr:`variable_kind` ``"accessor"``."""
        assert self._acc is not None
        return self._acc

    @property
    def pointer(self) -> usm_pointer:
        """The USM pointer the result goes to (a span's first element); only for
        :attr:`variable_kind` ``"pointer"`` and ``"span"``."""
        assert self._ptr is not None
        return self._ptr

    @property
    def count(self) -> int:
        """The number of independent reductions: a span's size, else 1."""
        return self._count

    @property
    def handler(self) -> CommandGroupRef | None:
        """The command group's handler the reduction was created with (None: USM, a span)."""
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
        var = "" if self._kind == "accessor" else (
            f"{self._kind}[{self._count}], " if self._kind == "span" else "pointer, ")
        return (f"sycl.reduction({var}{self._dtype}, {self._op}, identity={self._identity!r}, "
                f"initialize_to_identity={self._init})")


def check_command(h: CommandGroupRef, reds: Sequence[reduction]) -> None:
    """The submit-time checks of a command's reductions (every device): a buffer or accessor
    reduction of this command group; a USM variable live, in the queue's context, and
    written by one reduction of the command only."""
    seen: dict[int, reduction] = {}
    for r in reds:
        if r.handler is not None:
            if r.handler is not h:
                raise exception(errc.invalid, f"{r.where}: the reduction was created in "
                                "another command group")
            continue
        p = r.pointer
        p.check_live(f"{r.where}: sycl.reduction")
        if p.signature[0] != h.context_key:
            raise exception(errc.invalid, f"{r.where}: the reduction's pointer {p!r} was "
                            f"allocated in {p.allocation.ctx!r}, not in the queue's "
                            f"context {h.queue.get_context()!r}")
        lo, hi = p.address, p.address + r.count * r.dtype.itemsize
        for other in seen.values():
            q = other.pointer
            if max(lo, q.address) < min(hi, q.address + other.count * q.dtype.itemsize):
                raise exception(errc.invalid, f"{r.where}: the reduction's variable overlaps "
                                f"that of the reduction at {other.where} in the same kernel")
        seen[id(r)] = r


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
    h.update(repr(tuple((t.dtype.str, t.op, t.span) for t in rtypes)).encode())
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
        k.arg_dtypes.extend([t.dtype, None, np.int64 if t.span else None])
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


#: Work-groups per compute unit of a ``range`` reduction's launch on a GPU (and on every
#: device with a span reduction, whose partials are a row of n per group): the final
#: step reads every group's partial (fewer is faster: 0.2x -> see docs/performance.md).
_GROUPS_PER_UNIT_GPU = 16
#: The same for a 1-D range on PTX without span reductions
#: (``pysycl_numba.reduction_entry.strided_blocks``: each work-item has 64 bytes a step in
#: flight per array): one wave of work-groups of 256 -- an SM holds four at up to 64
#: registers a work-item (ptxas: 40 for a float32 sum, sm_90) -- whose work-items then loop
#: over the range; 528 partials on a 132-SM H200. At most one vector of 4 items per
#: work-item below that.
_GROUPS_PER_UNIT_PTX = 4
#: The same on a CPU device: work enough for its threads and its vectorizer, several items
#: per work-item (2 compute units: 4096 groups of 256; measured 0.88-1.03x the OpenCL C
#: two-stage reduction at 2^22-2^24 float32, against 0.31-0.35x with one item per work-item;
#: docs/performance.md)
_GROUPS_PER_UNIT_CPU = 2048


def _sizes(k: Kernel, dev: device, lim: tuple[int, tuple[int, ...], int], cmd: KernelCommandRef,
           values: list[Any], target: tuple[str, str]
           ) -> tuple[tuple[int, ...], tuple[int, ...], list[Any]]:
    """(global size, local size, extra arguments): a range runs as a padded 1-D nd_range
    (``lim``: the built kernel's limits; ``target``: its image's)."""
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
    # few enough that the final step has little to combine. On a CPU: more groups (its
    # runtime vectorises across a group's work-items and spreads groups over threads), still
    # several items per work-item; one item per work-item ran at a third of the OpenCL C
    # peer (each item paid a work-group reduction).
    groups = -(-total // wg)
    units = max(1, int(dev.get_info(_device_info.max_compute_units)))  # cached per device
    spans = any(r.variable_kind == "span" for r in cmd.reductions)
    if target[0] == "ptx" and len(user) == 1 and not spans:  # strided_blocks
        groups = min(-(-total // (wg * COARSEN)), _GROUPS_PER_UNIT_PTX * units)
    elif dev.is_gpu() or spans:  # a span's rows take atomics: more groups, more rows
        groups = min(groups, _GROUPS_PER_UNIT_GPU * units)
    else:
        groups = min(groups, _GROUPS_PER_UNIT_CPU * units)
    return (groups * wg,), (wg,), list(user)


def _check_local_memory(k: Kernel, lim: tuple[int, tuple[int, ...], int], values: list[Any],
                        reds: tuple[reduction, ...], wg: int) -> None:
    local = _args.local_bytes(values, k.arg_kinds) + sum(wg * r.dtype.itemsize for r in reds
                                                          if r.variable_kind != "span")
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
    kind, ndim, fn, reds = cmd.kind, cmd.ndim, cmd.fn, cmd.reductions
    check_command(h, reds)
    body = body_of(fn) if not isinstance(fn, types.FunctionType) else None
    obj = None
    if body is not None:  # a function object: its body and self
        fn, obj = body
    info, values, caps, tkey = capture_values(fn, h, obj)
    rtypes = tuple(ReductionType(r.dtype, r.op, r.variable_kind == "span") for r in reds)
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
    finals = [final_kernel(r, ck, target) for r, ck in zip(reds, ckeys, strict=True)]
    fclks = [ex.build(fk) for fk in finals]
    lim = ex.kernel_limits(clk)
    gsize, lsize, extra = _sizes(k, dev, lim, cmd, values, target)
    wg = int(np.prod(lsize))
    groups = int(np.prod(gsize)) // wg
    if k.direct or k.direct_rest:
        _bounds.check_static(k, info.location, fn, kind, cmd.index_space, values)
    _check_local_memory(k, lim, values, reds, wg)
    ranges = _args.accessor_ranges(values, k.arg_kinds)
    values = _args.with_local_memory(values, k.arg_kinds, ex.local_memory)
    parts = [_partials_buffer(ex, i, max(groups * r.count, 1) * r.dtype.itemsize)
             for i, r in enumerate(reds)]
    main = ex.prepared(k, clk, gsize, lsize)
    fsz = [final_sizes(r, groups, ex.kernel_limits(c)[0]) for r, c in zip(reds, fclks, strict=True)]
    fls = [ex.prepared(fk, c, (g,), (n,))
           for fk, c, (g, n) in zip(finals, fclks, fsz, strict=True)]
    fl = [n for _, n in fsz]
    # USM pointers (and host arrays) live until the last kernel completes (in order: both)
    held = [*(values if k.has_pointer else ()), *(r.pointer for r in reds if r.handler is None)]
    holds = held or None
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
                args.extend((r.identity, p, np.int64(r.count) if r.variable_kind == "span"
                             else ex.local_memory(wg * r.dtype.itemsize)))
            if record is None:
                ev = main.enqueue(args, None, wait_for)
            else:
                ev = _steps.enqueue_checked(ex, k, ctx_key, record, args,  # type: ignore[arg-type]
                                            lambda a: main.enqueue(a, None, wait_for))
            wait_for = None
        last = len(reds) - 1
        for i, (r, p, fk, fn_, n) in enumerate(zip(reds, parts, finals, fls, fl, strict=True)):
            fargs = final_args(r, p, groups, n, ex)
            flat = [a for c in fk.compiled.captures for a in fargs[c.name]]
            ev = fn_.enqueue(flat, holds if i == last else None, wait_for)
            wait_for = None
        return ev

    return launch

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

import sys
import types
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from pysycl._core.exceptions import errc, exception
from pysycl._core.where import location
from pysycl._kernels.group_algorithms import known_identity
from pysycl._kernels.kernel_api import _functor
from pysycl._kernels.reduction_final import COMBINERS
from pysycl._memory.accessor import access_mode, accessor
from pysycl._memory.buffer import buffer
from pysycl._memory.span import span
from pysycl._memory.usm import usm_pointer
from pysycl.property import REDUCTION, checked, no_init, property_list
from pysycl.property import reduction as _reduction_props

if TYPE_CHECKING:
    from pysycl._core.launch_types import CommandGroupRef
    from pysycl.property import _Property


_BITWISE = ("bit_and", "bit_or", "bit_xor")
#: an executor's ``launches`` hold at most this many entries, then forget them all (as
#: :data:`pysycl._backends.launching.REMEMBERED`)
PLANS = 64


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
    """(operator name or ``"custom"``, the combine function, the identity given -- None: the
    operator's known identity, :func:`_known_identity_value`) of a reduction."""
    if isinstance(combiner, _functor):
        op = combiner.op
        if op in _BITWISE and dt.kind == "f":
            raise TypeError(f"{where}: sycl.{op}() needs an integer type, the reduction "
                            f"variable is {dt}")
        return op, COMBINERS[op], identity
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


def _initializes(properties: Iterable[_Property] | None) -> bool:
    """Whether ``properties`` (checked: reduction properties only) have
    ``initialize_to_identity``."""
    if not properties:
        return False
    init = _reduction_props.initialize_to_identity
    if type(properties) is list:  # the common list, checked cheaply
        for p in properties:
            if type(p) is not init:
                break
        else:
            return True
    return checked(properties, REDUCTION, "sycl.reduction").has_property(init)


_KNOWN: dict[tuple[str, np.dtype], np.generic] = {}


def _known_identity_value(op: str, dt: np.dtype, where: str) -> np.generic:
    """SYCL's ``known_identity`` of operator ``op`` as a ``dt`` scalar (made once: a loop
    that makes a reduction per launch makes this one's per launch)."""
    v = _KNOWN.get((op, dt))
    if v is None:
        v = _KNOWN[(op, dt)] = _identity_value(known_identity(op, dt), dt, where)
    return v


#: What the short forms of :class:`reduction` read of a SYCL function object's operator on
#: an element type: (combiner, known identity, an accessor variable's launch signature).
_Form = tuple[Callable[..., Any], np.generic, tuple[Any, ...]]
_SHORT: dict[tuple[str, np.dtype], _Form] = {}
_DISCARD_WRITE, _READ_WRITE = access_mode.discard_write, access_mode.read_write


def _short(op: str, dt: np.dtype) -> _Form | None:
    """The :data:`_SHORT` entry of operator ``op`` on ``dt`` (made once); None where the
    short forms do not apply (not an integer or floating-point type, a bitwise operator on
    floating-point values: the general way says what is wrong)."""
    if dt.kind not in "iuf" or (dt.kind == "f" and op in _BITWISE):
        return None
    form = _SHORT[(op, dt)] = (COMBINERS[op], _known_identity_value(op, dt, ""),
                               ("accessor", dt, op, None, 1, None))
    return form


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
                 "_kind", "_op", "_ptr", "_sig", "_site", "_where")

    def __init__(self, var: buffer | accessor | usm_pointer | span, *args: Any,
                 identity: Any = _MISSING, properties: Iterable[_Property] | None = None
                 ) -> None:
        n = len(args)
        if type(var) is buffer and identity is _MISSING and 1 < n <= 3 \
                and isinstance(args[1], _functor) \
                and (n == 2 or (properties is None and type(args[2]) is list)) \
                and self._buffer_form(var, args[0], args[1], args[2] if n == 3 else properties):
            return
        if type(var) is usm_pointer and identity is _MISSING and 0 < n <= 2 \
                and isinstance(args[0], _functor) \
                and (n == 1 or (properties is None and type(args[1]) is list)) \
                and self._pointer_form(var, args[0], args[1] if n == 2 else properties):
            return
        where = _caller()
        h, combiner, identity, properties = _split_args(var, args, identity, properties, where)
        init = _initializes(properties)
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
        ident = (_known_identity_value(op, dt, where) if identity is None
                 else _identity_value(identity, dt, where))
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
        self._where: str | None = where
        self._site: tuple[str, int] | None = None
        self._sig = (self._kind, dt, op, combiner_key(comb) if op == "custom" else None,
                     self._count, None if self._ptr is None else self._ptr.signature)

    def _buffer_form(self, buf: buffer, h: Any, comb: _functor, properties: Any) -> bool:
        """``sycl.reduction(buf, h, sycl.plus()[, properties])``, the form a command group
        makes at each submit, made without the general way's parsing (``where`` found when
        asked); False where the general way must say what is wrong."""
        op = comb.op
        dt = buf.dtype
        form = _SHORT.get((op, dt)) or _short(op, dt)
        if form is None or not hasattr(h, "requirements") or buf.size() != 1:
            return False
        init = self._known_form(dt, op, properties, form, form[2])
        # (discard_write: write with no_init, without a property list to check)
        self._acc = accessor.bound(buf, h, _DISCARD_WRITE if init else _READ_WRITE)
        self._ptr, self._handler, self._kind = None, h, "accessor"
        return True

    def _pointer_form(self, p: usm_pointer, comb: _functor, properties: Any) -> bool:
        """``sycl.reduction(ptr, sycl.plus()[, properties])``, the form a loop makes at each
        launch, made without the general way's parsing (``where`` found when asked); False
        where the general way must say what is wrong (it checks everything again)."""
        dt = p.dtype
        op = comb.op
        form = _SHORT.get((op, dt)) or _short(op, dt)
        if form is None or p.count < 1 or p.readonly or not p.live:
            return False
        self._known_form(dt, op, properties, form, ("pointer", dt, op, None, 1, p.signature))
        self._acc, self._ptr, self._handler, self._kind = None, p, None, "pointer"
        return True

    def _known_form(self, dt: np.dtype, op: str, properties: Any, form: _Form,
                    sig: tuple[Any, ...]) -> bool:
        """What the short forms share (a SYCL function object's operator ``op`` on ``dt``,
        one element; ``form``: :func:`_short`'s): the user's frame (``where`` formatted when
        asked), the combiner, the known identity, ``sig``; whether ``properties`` initialize
        to the identity."""
        init = _initializes(properties)  # (raises what the general way raises)
        f = sys._getframe(3)  # the user's frame: __init__'s caller
        self._site = (f.f_code.co_filename, f.f_lineno)
        self._where = None
        self._count, self._dtype, self._op, self._init, self._sig = 1, dt, op, init, sig
        self._combiner, self._identity = form[0], form[1]
        return init

    # What the launcher and the host device read (pysycl's own; not in the spec).
    @property
    def variable_kind(self) -> str:
        """``"accessor"`` (a buffer's or an accessor's), ``"pointer"`` or ``"span"``."""
        return self._kind

    @property
    def launch_signature(self) -> tuple[Any, ...]:
        """What a remembered launch with this reduction depends on
        (:mod:`pysycl._backends.reductions`): variable kind, element type, operator, a
        custom combiner's cache key (None for the known operators), count, and a USM
        variable's pointer signature (context, type, read-only; None for an accessor). The
        identity and ``initialize_to_identity`` are launch arguments."""
        return self._sig

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
        where = self._where
        if where is None:  # the pointer form: its frame's line, formatted when asked
            where = self._where = location(*self._site)  # type: ignore[misc]
        return where

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
    seen: list[reduction] = []
    for r in reds:
        if r.handler is not None:
            if r.handler is not h:
                raise exception(errc.invalid, f"{r.where}: the reduction was created in "
                                "another command group")
            continue
        p = r.pointer
        if not p.live:  # (r.where is formatted only for the message)
            p.check_live(f"{r.where}: sycl.reduction")
        if p.signature[0] != h.context_key:
            raise exception(errc.invalid, f"{r.where}: the reduction's pointer {p!r} was "
                            f"allocated in {p.allocation.ctx!r}, not in the queue's "
                            f"context {h.queue.get_context()!r}")
        lo, hi = p.address, p.address + r.count * r.dtype.itemsize
        for other in seen:
            q = other.pointer
            if max(lo, q.address) < min(hi, q.address + other.count * q.dtype.itemsize):
                raise exception(errc.invalid, f"{r.where}: the reduction's variable overlaps "
                                f"that of the reduction at {other.where} in the same kernel")
        seen.append(r)


# --------------------------------------------------------------- main kernel
def combiner_key(comb: _functor | Callable[..., Any]) -> Hashable:
    """What identifies a combiner in cache keys: a closure itself, else its code."""
    if isinstance(comb, types.FunctionType):
        return comb if comb.__closure__ else comb.__code__
    return comb

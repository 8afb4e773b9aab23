"""What a kernel captures, and the keys of both kernel caches (one rule).

The submit hot path starts here: :func:`capture_values` reads a kernel's
captured values -- closure cells and module globals it loads, and those of the
plain Python helper functions it calls, however deep, with the helpers'
parameter defaults (:func:`defaults_of`) -- and classifies each
(:func:`classify`): numbers, tuples of numbers, accessors, USM pointers, host
arrays (passed as they are, or as lookup tables: :mod:`pysycl._memory.tables`) and
specialization ids are kernel *arguments* (a value, a
:class:`~pysycl._core.abi.Capture`, its type in the key); functions are walked;
modules, classes, enums, function objects, strings and attributes read off a
user's module are compile-time constants (in the key by identity or value). The
per-code-object analysis (:class:`CodeInfo`) is done once.

The in-memory key is ``(code, key tuple, index kind, ndim)``;
:func:`stable_digest` hashes the same things stably across processes for the
disk cache (docs/kernels.md, "Helper functions: one rule for what they read").
"""

from __future__ import annotations

import dataclasses
import dis
import enum
import types
from collections.abc import Callable, Hashable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from pysycl._core.abi import (
    FUNCTOR_ATTR,
    PROPS_ATTR,
    AccessorType,
    Capture,
    PointerType,
    SameAsType,
    ScalarType,
    TupleType,
    nested_codes,
)
from pysycl._core.plaincode import plain_code
from pysycl._core.where import location
from pysycl._kernels import capture_errors as _err
from pysycl._kernels import functor as _fobj
from pysycl._kernels import kprint as _kprint
from pysycl._kernels import kstream as _kstream
from pysycl._kernels import specconst as _specconst
from pysycl._kernels.kernel_api import _functor, local_accessor
from pysycl._memory.accessor import accessor
from pysycl._memory.usm import usm_pointer
from pysycl._memory.usm_api import adopt
from pysycl._objects.vec import vec_type

if TYPE_CHECKING:
    from pysycl._core.abi import CaptureType
    from pysycl._core.launch_types import CommandGroupRef

    #: One capture as the analysis records it, :class:`Capture`'s arguments:
    #: ``(name, source, type)``, or ``(name, source, type, owner)`` for a helper's.
    CaptureEntry = tuple[str, str, CaptureType] | tuple[str, str, CaptureType, int]


_SCALAR_KEYS: dict[type, ScalarType] = {
    bool: ScalarType(np.dtype(np.bool_)),
    int: ScalarType(np.dtype(np.int64)),
    float: ScalarType(np.dtype(np.float64)),
    complex: ScalarType(np.dtype(np.complex128)),
}
for _t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
           np.uint64, np.float16, np.float32, np.float64, np.complex64, np.complex128):
    _SCALAR_KEYS[_t] = ScalarType(np.dtype(_t))

_COMPLEX = frozenset({complex, np.complex64, np.complex128})
_FunctionType = types.FunctionType
#: numpy's ufuncs (``fn = np.sqrt``) are library functions like ``math.sqrt``.
_STATIC_TYPES = (types.FunctionType, types.BuiltinFunctionType, types.ModuleType, type, np.ufunc)
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
#: Top-level packages whose functions and module attributes are library code that
#: never changes while a program runs (``math.pi``, ``np.float32``, ``sycl.atomic_ref``):
#: their functions are not walked as helpers, their attributes not read on each submit.
_LIBRARY_ROOTS = frozenset({"math", "cmath", "numpy", "pysycl", "numba", "builtins", "operator"})


class CodeInfo:
    """What a kernel's (or helper's) code object reads, computed once per code object.

    ``globals``: names loaded with ``LOAD_GLOBAL``, in order; ``attrs``: for a
    global name, the attribute chains read off it (``mod.N``, ``mod.sub.f``), so
    that attributes of a user's module are looked at (they are compile-time
    constants, see docs/kernels.md). The functions defined inside the code (nested
    ``def``/``lambda``, compiled with it) count as its own code: what they read is
    read by the kernel.
    """

    __slots__ = ("attrs", "code", "globals", "lines", "location")

    def __init__(self, code: types.CodeType) -> None:
        self.code = code
        names: list[str] = []
        lines: dict[str, int] = {}
        attrs: dict[str, list[tuple[str, ...]]] = {}
        for c in nested_codes(code):
            self._read(c, names, lines, attrs)
        self.globals = tuple(names)
        self.lines = lines
        self.attrs = {n: tuple(c) for n, c in attrs.items()}
        self.location = location(code.co_filename, code.co_firstlineno)

    @staticmethod
    def _read(code: types.CodeType, names: list[str], lines: dict[str, int],
              attrs: dict[str, list[tuple[str, ...]]]) -> None:
        ins = list(dis.get_instructions(code))
        for k, i in enumerate(ins):
            if i.opname in ("LOAD_GLOBAL", "LOAD_NAME") and i.argval not in names:
                names.append(i.argval)
            if i.opname in ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF", "LOAD_CLOSURE",
                            "STORE_DEREF"):
                if i.argval not in lines and i.positions and i.positions.lineno:
                    lines[i.argval] = i.positions.lineno
            if i.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
                chain: list[str] = []
                j = k + 1
                while j < len(ins) and ins[j].opname in ("LOAD_ATTR", "LOAD_METHOD"):
                    chain.append(ins[j].argval)
                    j += 1
                if chain and tuple(chain) not in attrs.setdefault(i.argval, []):
                    attrs[i.argval].append(tuple(chain))




_infos: dict[types.CodeType, CodeInfo] = {}
_MISSING = object()


def info_of(code: types.CodeType) -> CodeInfo:
    """The :class:`CodeInfo` of ``code`` (made once), of its unrewritten code if pytest
    rewrote its asserts (:mod:`pysycl._core.plaincode`; the compiler compiles that code)."""
    info = _infos.get(code)
    if info is None:  # a kernel in a module pytest rewrote: what its plain code reads
        info = _infos[code] = CodeInfo(plain_code(code) or code)
    return info


_POINTER_TYPES: dict[tuple[np.dtype, bool], PointerType] = {}


def walkable(v: Any) -> types.FunctionType | None:
    """The Python function of a helper the kernel calls (None for library functions)."""
    f = v.py_func if hasattr(v, "py_func") else v  # a Numba dispatcher: its Python function
    if type(f) is not types.FunctionType:
        return None
    mod = f.__module__
    if mod is not None and mod.partition(".")[0] in _LIBRARY_ROOTS:
        return None
    return f


def plan_index(fns: list[Callable[..., Any]], v: Callable[..., Any]) -> int:
    for k, x in enumerate(fns):
        if x is v:
            return k
    fns.append(v)
    return len(fns) - 1


def capture_values(fn: types.FunctionType, group: CommandGroupRef, obj: Any = None
                   ) -> tuple[CodeInfo, list[Any], list[CaptureEntry], tuple[Hashable, ...]]:
    """Captured argument values, their Capture descriptors' parts, and the type key.

    ``group`` is the command group the kernel is submitted in: its accessors, local
    accessors and streams must be of it, its USM pointers of its context.

    The captures of the kernel come first (closure cells, then globals, then
    for a function object ``obj`` -- ``fn`` is then its marked body, see
    :mod:`pysycl._kernels.functor` -- the attributes it reads as ``self.x``),
    then those of the functions it calls, directly or not (see :func:`walk_helpers`).
    """
    code = fn.__code__
    info = _infos.get(code)
    if info is None:  # info_of, inlined: the submit hot path
        info = _infos[code] = CodeInfo(plain_code(code) or code)
    values: list[Any] = []
    caps: list[CaptureEntry] = []
    key: list[Hashable] = []
    fns = [fn]
    closure = fn.__closure__
    if closure:
        for name, cell in zip(code.co_freevars, closure):  # noqa: B905 - strict=False costs 0.1 us
            try:
                v = cell.cell_contents
            except ValueError:
                raise _err.unassigned(fn, info, name, 0) from None
            if type(v) is accessor and v.handler is group:  # the common case, inlined
                kt = v.kernel_type
                values.append(v)
                caps.append((name, "freevar", kt))
                key.append(kt)
            else:
                classify(fn, info, group, name, "freevar", v, values, caps, key, fns)
    g = fn.__globals__
    for name in info.globals:
        v = g.get(name, _MISSING)
        if v is _MISSING:
            if name == "print":  # the builtin: an output buffer argument (pysycl._kernels.kprint)
                _add_print(values, caps, key, 0)
            continue  # a builtin, or an undefined name the compiler reports
        classify(fn, info, group, name, "global", v, values, caps, key, fns)
    if obj is not None:
        _attr_values(fn, obj, info, group, values, caps, key)
    if len(fns) > 1:
        walk_helpers(fns, group, values, caps, key)
    props = getattr(fn, PROPS_ATTR, None)
    if props is not None:  # kernel properties (pysycl._kernels.kprops): another image
        key.append((PROPS_ATTR, props))
    return info, values, caps, tuple(key)


def _add_print(values: list[Any], caps: list[CaptureEntry], key: list[Hashable],
               owner: int) -> None:
    """The builtin ``print``, called by function ``owner``: a print-buffer argument."""
    values.append(_kprint.SLOT)
    caps.append(("print", "global", _kprint.PRINT_TYPE, owner) if owner
                else ("print", "global", _kprint.PRINT_TYPE))
    key.append(_kprint.PRINT_TYPE)


def _attr_values(fn: types.FunctionType, obj: Any, info: CodeInfo, group: CommandGroupRef,
                 values: list[Any], caps: list[CaptureEntry], key: list[Hashable]) -> None:
    """The captures of a function object: the attributes its body reads as ``self.x``.

    Each is a kernel argument (``source="attr"``, named ``"self.x"``); anything
    that is no argument (a method, a module, a string) is an error.
    """
    key.append(FUNCTOR_ATTR)  # the same code as a plain function is another kernel
    for attr in _fobj.self_attrs(fn.__code__):
        v = getattr(obj, attr, _MISSING)
        if v is _MISSING:
            raise _fobj.missing_attribute(fn, obj, attr)
        if callable(v) and not is_argument(v):
            raise _fobj.not_an_argument(fn, attr, v)
        n = len(caps)
        classify(fn, info, group, "self." + attr, "attr", v, values, caps, key)
        if len(caps) == n:
            raise _fobj.not_an_argument(fn, attr, v)


def walk_helpers(fns: list[Callable[..., Any]], group: CommandGroupRef | None, values: list[Any],
                 caps: list[CaptureEntry], key: list[Hashable]) -> None:
    """Add the captures of the helper functions ``fns[1:]`` (growing as they call others).

    A helper's closure cells and globals follow the kernel's rules: numbers,
    tuples of numbers and accessors become kernel arguments (``Capture.owner``
    is the helper's index in ``fns``), passed down to it by its callers, so a
    changed global never needs a recompile; functions are walked in turn.
    The key gets each helper's code, then what it reads.
    """
    k = 1
    while k < len(fns):
        f = fns[k]
        if type(f) is not types.FunctionType:
            f = f.py_func  # a Numba dispatcher
        code = f.__code__
        info = info_of(code)
        key.append(code)
        closure = f.__closure__
        if closure:
            for name, cell in zip(code.co_freevars, closure, strict=False):
                try:
                    v = cell.cell_contents
                except ValueError:
                    raise _err.unassigned(f, info, name, k) from None
                classify(f, info, group, name, "freevar", v, values, caps, key, fns, k)
        g = f.__globals__
        for name in info.globals:
            v = g.get(name, _MISSING)
            if v is not _MISSING:
                classify(f, info, group, name, "global", v, values, caps, key, fns, k)
            elif name == "print":
                _add_print(values, caps, key, k)
        if f.__defaults__ or f.__kwdefaults__:  # parameter defaults: read like closure cells
            dflt = defaults_of(f)
            key.append(("defaults", len(dflt)))
            for name, v in dflt:
                classify(f, info, group, name, "default", v, values, caps, key, fns, k)
        k += 1


def defaults_of(f: types.FunctionType) -> list[tuple[str, Any]]:
    """``(parameter, default value)`` of a helper's parameters that have one.

    Positional parameters, then keyword-only ones, in the order of the ``def``.
    A default is what the helper reads when a call leaves the parameter out, so
    it follows the rule of a closure cell: a number (tuple, accessor, pointer)
    is a kernel argument, a function a helper, anything else a constant.
    """
    code = f.__code__
    n = code.co_argcount
    pos = f.__defaults__ or ()
    out = list(zip(code.co_varnames[n - len(pos):n], pos, strict=True))
    kw = f.__kwdefaults__
    if kw:
        out += [(p, kw[p]) for p in code.co_varnames[n:n + code.co_kwonlyargcount] if p in kw]
    return out


def references(f: types.FunctionType, info: CodeInfo,
               defaults: bool = False) -> Iterator[tuple[str, Any]]:
    """``(name, value)`` of what ``f`` reads, in the capture walk's order.

    Closure cells, then globals, each module global followed by the attributes
    read off it (named by their dotted path); then, for a helper (``defaults``),
    its parameters' default values (:func:`defaults_of`).
    """
    for name, cell in zip(f.__code__.co_freevars, f.__closure__ or (), strict=False):
        try:
            yield name, cell.cell_contents
        except ValueError:
            continue
    g = f.__globals__
    for name in info.globals:
        v = g.get(name, _MISSING)
        if v is _MISSING:
            continue
        yield name, v
        if isinstance(v, types.ModuleType):
            yield from module_attrs(v, info.attrs.get(name, ()))
    if defaults and (f.__defaults__ or f.__kwdefaults__):
        yield from defaults_of(f)


def call_graph(fn: types.FunctionType) -> tuple[tuple[Callable[..., Any], tuple[int, ...]], ...]:
    """The functions a kernel calls, as ``compile_kernel(helpers=...)`` takes them.

    Entry ``k`` is ``(function, indices of the entries it references)``; entry 0
    is the kernel. The numbering is :func:`capture_values`'s (``Capture.owner``).
    """
    fns = [fn]
    edges: list[tuple[int, ...]] = []
    k = 0
    while k < len(fns):
        f = fn if k == 0 else walkable(fns[k])
        assert f is not None
        out: list[int] = []
        for _, v in references(f, info_of(f.__code__), defaults=k > 0):
            if walkable(v) is not None:
                i = plan_index(fns, v)
                if i not in out:
                    out.append(i)
        edges.append(tuple(out))
        k += 1
    return tuple(zip(fns, edges, strict=True))


def is_argument(v: Any) -> bool:
    """Whether a value read by a kernel or helper is a kernel argument (see :func:`classify`)."""
    t = type(v)
    return (t in _SCALAR_KEYS or t is accessor or t is local_accessor or t is usm_pointer
            or t is _specconst.specialization_id or t is _kstream.stream
            or (t is tuple and bool(v)))


def module_attrs(mod: types.ModuleType,
                  chains: tuple[tuple[str, ...], ...]) -> list[tuple[str, Any]]:
    """``(dotted path, value)`` of the attributes read off a user's module."""
    out: list[tuple[str, Any]] = []
    if not chains or mod.__name__.partition(".")[0] in _LIBRARY_ROOTS:
        return out
    for chain in chains:
        val: Any = mod
        path = mod.__name__
        for a in chain:
            if not isinstance(val, types.ModuleType):
                break
            nxt = getattr(val, a, _MISSING)
            if nxt is _MISSING:
                break
            val = nxt
            path += "." + a
        if val is not mod:
            out.append((path, val))
    return out


def _tuple_type(v: tuple[Any, ...]) -> tuple[TupleType, list[Any]] | None:
    """The type and flat argument values of a tuple of numbers (None for anything else)."""
    elements: list[ScalarType | TupleType] = []
    flat: list[Any] = []
    for e in v:
        t = type(e)
        st = _SCALAR_KEYS.get(t)
        if st is not None:
            if t is int and not _INT64_MIN <= e <= _INT64_MAX:
                return None
            elements.append(st)
            if t is bool or t is np.bool_:
                flat.append(np.uint8(e))
            elif st.dtype.kind == "c":
                flat.extend((e.real, e.imag))
            else:
                flat.append(e)
        elif t is tuple and e:
            sub = _tuple_type(e)
            if sub is None:
                return None
            elements.append(sub[0])
            flat.extend(sub[1])
        else:
            return None
    return TupleType(tuple(elements)), flat


# long: the per-capture type dispatch of the submit hot path, kept in one frame.
def classify(fn: types.FunctionType, info: CodeInfo, group: CommandGroupRef | None, name: str,
             source: str, v: Any, values: list[Any], caps: list[CaptureEntry],
             key: list[Hashable], fns: list[Callable[..., Any]] | None = None,
             owner: int = 0) -> None:
    """Classify one value that ``fn`` reads (its ``owner``-th function of the kernel's calls).

    Arguments (values, caps, key type) or compile-time constants (key only);
    functions are appended to ``fns`` for :func:`walk_helpers`. ``group`` is the
    command group of the submit (None: a declared kernel's captures, with no group).
    """
    t = type(v)
    st = _SCALAR_KEYS.get(t)
    if st is not None:
        if t is int and not _INT64_MIN <= v <= _INT64_MAX:
            raise _err.too_big(fn, info, name, v, owner, source)
        if t is bool or t is np.bool_:
            v = np.uint8(v)
        elif t in _COMPLEX:  # two arguments, real and imaginary part (see _core.abi)
            v = (v.real, v.imag)
        values.append(v)
        caps.append((name, source, st, owner) if owner else (name, source, st))
        key.append(st)
        return
    if t is _FunctionType and fns is not None:  # a helper (the common static value)
        mod = v.__module__
        if mod is None or mod.partition(".")[0] not in _LIBRARY_ROOTS:
            key.append(("fn", plan_index(fns, v)))
            return
    if t is accessor or t is local_accessor:
        if v.handler is not group:
            raise _err.foreign_accessor(fn, info, name, t is accessor, owner, source)
        kt = v.kernel_type
        if t is local_accessor:  # read again (by a helper): the same argument, the same memory
            j = next((j for j, x in enumerate(values) if x is v), -1)
            if j >= 0:
                kt = SameAsType(j)
        values.append(v)
        caps.append((name, source, kt, owner) if owner else (name, source, kt))
        key.append(kt)
        return
    if t is usm_pointer:
        a = v._alloc
        if not a.live or a.ctx_key != group.context_key:
            raise _err.bad_pointer(fn, info, name, v, group, owner, source)
        _add_pointer(v, name, source, values, caps, key, owner)
        return
    if t is _kstream.stream:  # a launch's output buffer (pysycl._kernels.kstream)
        if v.handler is not group:
            raise _err.foreign_stream(fn, info, name, owner, source)
        values.append(v)
        caps.append((name, source, _kstream.STREAM_TYPE, owner) if owner
                    else (name, source, _kstream.STREAM_TYPE))
        key.append(_kstream.STREAM_TYPE)
        return
    if t is _specconst.specialization_id:  # read with kh.get_specialization_constant
        st = v.kernel_type
        values.append(v)
        caps.append((name, source, st, owner) if owner else (name, source, st))
        key.append(st)
        return
    if t is tuple and v:
        tt = _tuple_type(v)
        if tt is None:
            raise _err.bad_capture(fn, info, name, v, owner, source)
        values.append(tt[1])
        caps.append((name, source, tt[0], owner) if owner else (name, source, tt[0]))
        key.append(tt[0])
        return
    if _classify_static(info, name, v, key, fns):
        return
    ptr = adopt(v, group.queue, f"{_err.where(fn, info, name)}: {_err.who(fn, owner, name, source)}")
    if ptr is None:
        raise _err.bad_capture(fn, info, name, v, owner, source)
    _add_pointer(ptr, name, source, values, caps, key, owner)


def _add_pointer(v: usm_pointer, name: str, source: str, values: list[Any],
                 caps: list[CaptureEntry], key: list[Hashable], owner: int) -> None:
    """A USM pointer capture: the pointer is the value, its dtype (and constness) the type."""
    pt = _POINTER_TYPES.get((v.dtype, v.readonly))
    if pt is None:
        pt = _POINTER_TYPES[(v.dtype, v.readonly)] = PointerType(v.dtype, v.readonly)
    values.append(v)
    caps.append((name, source, pt, owner) if owner else (name, source, pt))  # type: ignore[arg-type]
    key.append(pt)


def _classify_static(info: CodeInfo, name: str, v: Any, key: list[Hashable],
                     fns: list[Callable[..., Any]] | None) -> bool:
    """Add a compile-time constant read as ``name`` to the key; False if ``v`` is none."""
    if isinstance(v, (enum.Enum, _functor, vec_type)):
        key.append(v)  # compile-time constants: memory orders, fence spaces, sycl.plus(), ...
        return True
    if isinstance(v, _STATIC_TYPES) or hasattr(v, "py_func"):
        # Functions, modules, classes: resolved by the compiler at compile time.
        # A helper function is walked (its captures are the kernel's too): the key
        # refers to it by its place in the call graph, its code comes later.
        f = walkable(v)
        if f is not None:
            if fns is None:  # a caller that does not walk helpers
                key.append(f.__code__)
            else:
                key.append(("fn", plan_index(fns, v)))
        elif isinstance(v, types.ModuleType):
            key.append(v.__name__)
            chains = info.attrs.get(name)
            if chains:
                for path, a in module_attrs(v, chains):
                    _classify_attr(path, a, key, fns)
        else:
            key.append(v)
        return True
    if isinstance(v, (str, bytes, type(None), tuple, np.dtype)) or (
            type(v).__module__.startswith("numba.core.types")):
        # Compile-time constants (rare): strings, dtypes (DT.type(x)), Numba types,
        # named tuples (Numba freezes them); the value is part of the key.
        key.append((name, v))
        return True
    return False


def _classify_attr(path: str, v: Any, key: list[Hashable],
                   fns: list[Callable[..., Any]] | None) -> None:
    """An attribute of a user's module (``mod.N``, ``mod.f``): a compile-time constant.

    Numba freezes what a kernel reads off a module, so the value is part of the
    key (a changed ``mod.N`` compiles again); functions are walked like helpers.
    """
    if walkable(v) is not None:
        if fns is not None:
            key.append(("fn", plan_index(fns, v)))
            return
        v = walkable(v).__code__  # type: ignore[union-attr]
    elif isinstance(v, types.ModuleType):
        v = v.__name__
    elif not isinstance(v, (bool, int, float, complex, np.generic, str, bytes, type(None),
                            tuple, type, types.BuiltinFunctionType, np.ufunc, enum.Enum)):
        v = type(v)  # an object the compiler rejects or resolves by type
    elif type(v) is tuple:
        try:
            hash(v)
        except TypeError:
            v = tuple
    key.append((path, type(v), v))


def _generic(t: Any) -> Any:
    if type(t) is AccessorType and t.shape is not None:
        return dataclasses.replace(t, shape=None)
    return t


def generic_key(caps: list[CaptureEntry], tkey: tuple[Hashable, ...],
                mkey: tuple[Hashable, ...]
                ) -> tuple[list[CaptureEntry], tuple[Hashable, ...], tuple[Hashable, ...], bool]:
    """The captures and keys with local accessors not specialised on their range.

    Compiled kernels are specialised on their local accessors' ranges (constant tile
    strides); kernel bundles and the kernel-id registry hold the generic kernel, which
    takes any range. The last item says whether anything was specialised.
    """
    if not any(type(t) is AccessorType and t.shape is not None for t in tkey):
        return caps, tkey, mkey, False
    gcaps = [(c[0], c[1], _generic(c[2]), *c[3:]) for c in caps]
    gtkey = tuple(_generic(t) for t in tkey)
    return gcaps, gtkey, (mkey[0], gtkey, *mkey[2:]), True  # type: ignore[return-value]


def captures_of(caps: list[CaptureEntry]) -> tuple[Capture, ...]:
    """The :class:`Capture` descriptors of :func:`capture_values`'s ``caps``."""
    return tuple(Capture(*c) for c in caps)


def forget_code_infos() -> None:
    """Drop the per-code analyses (with the memory cache of kernels)."""
    _infos.clear()

"""The disk cache's key: a digest of everything a compiled kernel depends on.

The same rule as the in-memory key (:func:`pysycl._kernels.captures.classify`,
docs/kernels.md, "Helper functions: one rule for what they read"), hashed
stably across processes: the code of the kernel and of every helper it calls
(through closure cells, globals or parameter defaults),
capture names and types, compile-time constants by value, the index space and
the tool versions (the compiler's own source included).
"""

from __future__ import annotations

import dis
import enum
import hashlib
import types
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pysycl._core.abi import (
    FUNCTOR_ATTR,
    PROPS_ATTR,
    AccessorType,
    Capture,
    IndexSpace,
    PointerType,
    PrintType,
    SameAsType,
    SpecConstantType,
    StreamType,
    TupleType,
)
from pysycl._core.vec_layout import dtype_text
from pysycl._kernels.captures import (
    defaults_of,
    info_of,
    is_argument,
    plan_index,
    references,
    walkable,
)
from pysycl._kernels.kernel_api import _functor
from pysycl._objects.vec import vec_type

if TYPE_CHECKING:
    from _hashlib import HASH

    from pysycl._core.abi import CaptureType


def _versions() -> str:
    global _VERSIONS
    if _VERSIONS is None:
        parts = [f"compiler={_compiler_fingerprint()}"]
        for dist in ("pysycl", "numba", "llvmlite"):
            try:
                parts.append(f"{dist}={metadata.version(dist)}")
            except metadata.PackageNotFoundError:
                parts.append(f"{dist}=none")
        _VERSIONS = ";".join(parts)
    return _VERSIONS


def _compiler_fingerprint() -> str:
    """A hash of the compiler's source files (read, not imported: no Numba).

    A change to code generation between releases, or in a developer's checkout,
    must never hand out SPIR-V compiled by the old compiler from the disk cache.
    """
    root = Path(__file__).resolve().parents[2]  # pysycl/_kernels/digest.py -> the checkout
    h = hashlib.sha256()
    files = [*sorted((root / "pysycl_numba").rglob("*.py")), root / "pysycl" / "_core" / "abi.py"]
    for f in files:
        try:
            h.update(str(f.relative_to(root)).encode() + f.read_bytes())
        except OSError:
            h.update(f.name.encode() + b"<unreadable>")
    return h.hexdigest()[:16]


_VERSIONS: str | None = None


def _hash_code(code: types.CodeType, h: HASH) -> None:
    h.update(code.co_code)
    h.update(repr((code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars,
                   code.co_argcount, code.co_name)).encode())
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _hash_code(c, h)
        else:
            h.update(repr((type(c).__name__, c)).encode())


def code_digest(code: types.CodeType) -> str:
    """A digest of a code object's text (bytecode, names, constants, nested code); not of
    its file or line. Two compiles of one source text have one digest."""
    h = hashlib.sha256()
    _hash_code(code, h)
    return h.hexdigest()


def hash_static(v: Any, h: HASH, seen: set[int]) -> None:
    """Hash a compile-time value: functions recursively (helpers compile with the kernel)."""
    if hasattr(v, "py_func"):
        v = v.py_func
    if isinstance(v, types.FunctionType):
        if id(v) in seen:
            return
        seen.add(id(v))
        h.update(b"fn:")
        _hash_code(v.__code__, h)
        if v.__closure__:
            for cell in v.__closure__:
                try:
                    hash_static(cell.cell_contents, h, seen)
                except ValueError:
                    h.update(b"<empty cell>")
        if v.__defaults__ or v.__kwdefaults__:
            for _, d in defaults_of(v):
                hash_static(d, h, seen)
        g = v.__globals__
        for ins in dis.get_instructions(v.__code__):
            if ins.opname == "LOAD_GLOBAL" and ins.argval in g:
                h.update(ins.argval.encode())
                hash_static(g[ins.argval], h, seen)
    elif isinstance(v, types.ModuleType):
        h.update(f"mod:{v.__name__}".encode())
    elif isinstance(v, (bool, int, float, complex, str, bytes, tuple, type(None), np.generic)):
        h.update(repr((type(v).__name__, v)).encode())  # frozen into helpers by Numba
    elif isinstance(v, (type, types.BuiltinFunctionType)):
        h.update(f"obj:{getattr(v, '__module__', '')}.{getattr(v, '__qualname__', v)}".encode())
    elif isinstance(v, np.ufunc):  # no __module__/__qualname__: its name tells (np.sqrt)
        h.update(f"ufunc:{v.__name__}".encode())
    else:
        h.update(f"other:{type(v).__module__}.{type(v).__qualname__}".encode())


def _type_repr(t: CaptureType) -> str:
    """A stable text of a capture type."""
    if isinstance(t, TupleType):
        return "tuple(" + ",".join(_type_repr(e) for e in t.elements) + ")"
    if isinstance(t, SpecConstantType):
        return f"spec({t.dtype.str},{t.default!r})"
    if isinstance(t, AccessorType):
        shape = "" if t.shape is None else "," + "x".join(map(str, t.shape))
        return f"acc({dtype_text(t.dtype)},{t.ndim},{t.mode},{t.space}{shape})"
    if isinstance(t, PrintType):
        return "print"
    if isinstance(t, StreamType):
        return "stream"
    if isinstance(t, PointerType):
        return f"ptr({t.dtype.str},{'ro' if t.readonly else 'rw'})"
    if isinstance(t, SameAsType):
        return f"same({t.index})"
    return f"scalar({getattr(t, 'dtype', np.dtype(np.void)).str})"


def stable_digest(fn: types.FunctionType, captures: tuple[Capture, ...], index: IndexSpace,
                  bounds_check: bool = False) -> str:
    """A digest of everything the compiled module depends on, stable across processes.

    The same rule as the in-memory key (:func:`pysycl._kernels.captures.classify`):
    the code of the kernel and of every helper function it calls, the capture
    names and types (values that are kernel arguments count by type only, so a
    changed helper global needs no new entry), and the compile-time constants by
    value; plus the index space and the tool versions. A bounds-checked kernel
    (another module) has another digest.
    """
    d = _digest(fn, captures, index)
    if bounds_check:
        d = hashlib.sha256(f"{d}:bounds_check".encode()).hexdigest()
    return d


def _digest(fn: types.FunctionType, captures: tuple[Capture, ...], index: IndexSpace) -> str:
    h = hashlib.sha256()
    h.update(_versions().encode())
    h.update(repr((index.kind, index.ndim, getattr(fn, FUNCTOR_ATTR, False))
                  + (("looped",) if index.looped else ())).encode())
    h.update(repr(getattr(fn, PROPS_ATTR, None)).encode())  # kernel properties
    for c in captures:
        h.update(repr((c.name, c.source, c.owner, _type_repr(c.type))).encode())
    captured = {(c.owner, c.name) for c in captures}
    fns = [fn]
    seen: set[int] = set()
    k = 0
    while k < len(fns):
        f = fn if k == 0 else walkable(fns[k])
        assert f is not None
        h.update(f"def {k}:".encode())
        _hash_code(f.__code__, h)
        if k and (f.__defaults__ or f.__kwdefaults__):  # a helper's defaults are read last
            h.update(f"\ndefaults {len(defaults_of(f))}".encode())
        for name, v in references(f, info_of(f.__code__), defaults=k > 0):
            h.update(f"\n{name}=".encode())
            if walkable(v) is not None:
                h.update(f"fn{plan_index(fns, v)}".encode())
            elif (k, name) in captured or ("." not in name and is_argument(v)):
                h.update(b"arg")  # its type is in the captures (mod.N is a constant)
            elif isinstance(v, enum.Enum):
                h.update(f"enum:{type(v).__module__}.{type(v).__qualname__}.{v.name}".encode())
            elif isinstance(v, _functor):
                h.update(f"functor:{type(v).__qualname__}".encode())
            elif isinstance(v, vec_type):
                h.update(f"vec_type:{v.name}".encode())
            else:
                hash_static(v, h, seen)
        k += 1
    return h.hexdigest()

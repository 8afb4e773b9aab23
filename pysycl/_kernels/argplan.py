"""A kernel's native arguments, from its captured values: the argument plan (target-neutral).

Two halves, both independent of the backend:

* :func:`flat_args` -- the arguments of one launch from the captured values and their
  :class:`~pysycl._core.abi.ArgKind` s, in the ABI's layout (:mod:`pysycl._core.abi`): a
  global accessor passes its buffer's device copy for the launching executor, then its
  offset and ranges; a local accessor the backend's local-memory argument, then its range;
  a USM pointer its allocation's kernel argument (made once by the allocation's backend);
  a spec id nothing.
* :func:`refresh_for` -- the *refresh* of a remembered handler-less launch
  (``q.parallel_for(r, k)`` again and again, docs/design/launch.md §2.6): a function
  generated per argument shape that reads the kernel's closure cells (and module
  globals), checks each holds what the remembered launch was made for -- a type, a
  pointer signature, a library object -- and returns the argument list, or ``None``
  (the launch then takes the whole way, which raises the proper errors). It only reads
  and checks: no enqueue, no lock, no event; those are the backend's ``Launch``.
  A refresh holds no user value: the per-kernel constants (types, signatures, library
  objects) are a tuple it is given, and the same function serves every kernel of one
  shape, as pyopencl's invokers are cached per argument-type signature. Asked with
  ``seen=True`` it also returns every value it read (a backend that keeps a native copy of
  the remembered launch -- CUDA's ``_native.Primed`` -- checks those by identity next time),
  and the function says how each was checked (``modes``) and which globals it read
  (``names``).

Eligible for a refresh: closure captures and module globals only (no helper functions,
so no helper's parameter defaults, no attribute of a user's module), each a number
(complex too) or a USM pointer of a pysycl allocation, or a library object the kernel
uses as a constant (``sycl.plus()``, ``np``); no specialization constants, local
accessors, reductions, ``print`` or ``assert``, and no static bounds check.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any

import numpy as np

from pysycl._core.abi import ArgKind
from pysycl._core.codegen import CodeGenerator
from pysycl._kernels.captures import _LIBRARY_ROOTS, info_of, is_argument
from pysycl._memory.usm import usm, usm_pointer

if TYPE_CHECKING:
    from pysycl._kernels.cache import Kernel
    from pysycl._objects.range import range as range_

_SCALAR, _ACCESSOR, _LOCAL, _SCALARS, _POINTER = (
    ArgKind.SCALAR, ArgKind.ACCESSOR, ArgKind.LOCAL_ACCESSOR, ArgKind.SCALARS, ArgKind.POINTER)
_MISSING = object()
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_COMPLEX_TYPES = (complex, np.complex64, np.complex128)

#: What a refresh checks of one captured value (the first item of a slot):
#: the same type; an int (and int64 range); a bool (passed as int); a complex (two
#: arguments); a USM pointer (its signature and liveness); a library object (identity).
SAME, INT, BOOL, COMPLEX, POINTER, CONSTANT = "same", "int", "bool", "complex", "pointer", "const"


# ------------------------------------------------------------------ one launch's arguments
def flat_args(values: list[Any], kinds: tuple[ArgKind, ...], key: Hashable) -> list[Any]:
    """The native arguments of captured ``values`` for the executor whose buffer key is
    ``key`` (the device copy of each accessor's buffer it uses).

    Local accessors must have been replaced by :func:`with_local_memory` first.
    """
    args: list[Any] = []
    for v, kind in zip(values, kinds):  # noqa: B905 - as strict=False; a keyword costs ~0.1 us
        if kind is _ACCESSOR:
            args.append(v.coherence.dev[key])
            args.extend(v.kernel_tail)
        elif kind is _SCALAR:
            args.append(v)
        elif kind is _LOCAL:
            args.append(v[0])
            args.extend(v[1])
        elif kind is _SCALARS:
            args.extend(v)
        elif kind is _POINTER:  # a USM pointer: its backend argument, made once
            karg = v.native_arg
            args.append(karg if karg is not None else v.make_native_arg())
    return args


def with_local_memory(values: list[Any], kinds: tuple[ArgKind, ...],
                      local_memory: Callable[[int], Any]) -> list[Any]:
    """``values`` with each local accessor as ``(the backend's local-memory argument of its
    size, its range)``; ``local_memory(nbytes)`` is the executor's."""
    return [(local_memory(v.byte_size()), v.kernel_tail) if kind is _LOCAL else v
            for v, kind in zip(values, kinds, strict=True)]


def accessor_ranges(values: list[Any], kinds: tuple[ArgKind, ...]) -> list[range_ | None]:
    """The range of each (global or local) accessor capture, None for the others."""
    return [v.get_range() if kind is _ACCESSOR or kind is _LOCAL else None
            for v, kind in zip(values, kinds, strict=True)]


def local_bytes(values: list[Any], kinds: tuple[ArgKind, ...]) -> int:
    """Local memory the local accessors among ``values`` need per work-group."""
    return sum(v.byte_size() for v, kind in zip(values, kinds, strict=True) if kind is _LOCAL)


# ------------------------------------------------------------------ the refresh
#: A refresh: ``refresh(fn, want) -> ([native arguments], (USM pointers)) | None``; made
#: with ``seen=True``, ``([native arguments], (USM pointers), (every value read)) | None``.
Refresh = Callable[[types.FunctionType, tuple[Any, ...]],
                   "tuple[list[Any], tuple[Any, ...]] | None"]
_refreshes: dict[tuple[Any, ...], Refresh] = {}
#: How a ``seen=True`` refresh checked each value it read (its ``modes``, one byte a value):
#: a USM pointer (type, signature, liveness), a number (its type: the value is the argument),
#: a library object (identity).
MODE_POINTER, MODE_VALUE, MODE_CONSTANT = ord("p"), ord("v"), ord("c")


def refresh_for(fn: types.FunctionType, k: Kernel, tail: tuple[int, ...] = (),
                seen: bool = False) -> tuple[Refresh, tuple[Any, ...]] | None:
    """The refresh of kernel ``k`` launched as ``fn`` and the constants it checks against,
    or None when ``fn``'s captures cannot be checked cheaply (see the module docstring).
    ``tail``: arguments after the captures' that the launch always passes (a ``range``
    kernel's range: :class:`~pysycl._backends.launching.Launch`); ``seen``: the refresh
    also returns the values it read, in order (the closure's cells, then the globals of
    its ``names``)."""
    if k.has_spec or k.has_local or k.direct or k.direct_rest or k.prints or k.asserts:
        return None
    caps = k.compiled.captures
    if any(c.owner or c.source not in ("freevar", "global") for c in caps):
        return None
    cells = _cell_slots(fn, caps, k.arg_kinds)
    globs = _global_slots(fn, caps, k.arg_kinds)
    if cells is None or globs is None:
        return None
    shape = (tuple(how for how, _ in cells), tuple((name, how) for name, how, _ in globs),
             len(tail), seen)
    consts = (*(want for _, want in cells), *(want for _, _, want in globs), *tail)
    r = _refreshes.get(shape)
    if r is None:
        if len(_refreshes) >= 256:
            _refreshes.clear()
        r = _refreshes[shape] = _generate(*shape)
    return r, consts


def _cell_slots(fn: types.FunctionType, caps: Any, kinds: tuple[ArgKind, ...]
                ) -> list[tuple[str, Any]] | None:
    """What each closure cell must hold, in order; None when one cannot be checked cheaply."""
    by_name = {c.name: kind for c, kind in zip(caps, kinds, strict=True) if c.source == "freevar"}
    out: list[tuple[str, Any]] = []
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=True):
        try:
            slot = _slot(cell.cell_contents, by_name.get(name))
        except ValueError:  # an empty cell: the whole way said so, or will
            return None
        if slot is None:
            return None
        out.append(slot)
    return out


def _global_slots(fn: types.FunctionType, caps: Any, kinds: tuple[ArgKind, ...]
                  ) -> list[tuple[str, str, Any]] | None:
    """``(name, how, constant)`` of each module global the kernel reads: library objects
    (checked by identity) and arguments (numbers, pointers), in the kernel's order."""
    by_name = {c.name: kind for c, kind in zip(caps, kinds, strict=True) if c.source == "global"}
    g = fn.__globals__
    out: list[tuple[str, str, Any]] = []
    for name in info_of(fn.__code__).globals:
        v = g.get(name, _MISSING)
        if v is _MISSING:
            continue  # a builtin
        kind = by_name.get(name)
        if kind is None and is_argument(v):
            return None
        slot = _slot(v, kind)
        if slot is None:
            return None
        out.append((name, *slot))
    return out  # in the order capture analysis reads them: the kernel's argument order


def _slot(v: Any, kind: ArgKind | None) -> tuple[str, Any] | None:
    """How a refresh checks a captured value of ``kind`` (None: not an argument)."""
    if kind is None:  # not an argument: a constant of the kernel's key
        return (CONSTANT, v) if _library_object(v) else None
    if kind is _POINTER:
        if type(v) is not usm_pointer or v.allocation.kind is usm.alloc.unknown:
            return None
        return (POINTER, v.signature)  # context, dtype, read-only: one comparison per launch
    t = type(v)
    if kind is _SCALAR:
        return (INT if t is int else BOOL if t is bool or t is np.bool_ else SAME, t)
    if kind is _SCALARS and t in _COMPLEX_TYPES:
        return (COMPLEX, t)
    return None  # tuples, accessors: the whole way


def _library_object(v: Any) -> bool:
    """A constant a kernel may hold by identity: library code, enums, SYCL function objects."""
    if isinstance(v, types.ModuleType):
        return v.__name__.partition(".")[0] in _LIBRARY_ROOTS
    mod = getattr(type(v), "__module__", "") if not isinstance(v, type) else v.__module__
    if callable(v) and not isinstance(v, type):
        mod = getattr(v, "__module__", None) or mod
    return (mod or "").partition(".")[0] in _LIBRARY_ROOTS


def _generate(cells: tuple[str, ...], globs: tuple[tuple[str, str], ...], tail: int,
              seen: bool = False) -> Refresh:
    """The refresh of one shape: straight-line checks, one per captured value, about half
    the bytecode of a loop over the slots (docs/performance.md, launch latency)."""
    g = CodeGenerator()
    ptr, missing = g.name(usm_pointer, "usm_pointer"), g.name(_MISSING, "MISSING")
    args: list[str] = []
    held: list[str] = []
    n = 0
    with g.function("refresh", ["fn", "want"]):
        if cells:
            g.line("cells = fn.__closure__")
        if globs:
            g.line("glob = fn.__globals__")
        sources = [f"cells[{i}].cell_contents" for i in range(len(cells))]
        sources += [f"glob.get({name!r}, {missing})" for name, _ in globs]
        for how, src in zip((*cells, *(how for _, how in globs)), sources, strict=True):
            _check_lines(g, n, how, src, ptr, args)
            if how == POINTER:
                held.append(f"v{n}")
            n += 1
        args += [f"want[{n + i}]" for i in range(tail)]  # the tail: constants
        read = f", ({''.join(f'v{i}, ' for i in range(n))})" if seen else ""
        g.line(f"return [{', '.join(args)}], ({''.join(h + ', ' for h in held)}){read}")
    r = g.compile("refresh", "refresh " + "/".join((*cells, *(h for _, h in globs))))
    hows = (*cells, *(how for _, how in globs))
    r.modes = bytes(MODE_POINTER if h == POINTER else MODE_CONSTANT if h == CONSTANT
                    else MODE_VALUE for h in hows)  # type: ignore[attr-defined]
    r.names = tuple(name for name, _ in globs)  # type: ignore[attr-defined]
    return r


def _check_lines(g: CodeGenerator, i: int, how: str, src: str, ptr: str, args: list[str]) -> None:
    """The check of captured value ``i`` (``v{i}``); appends its argument expressions."""
    v = f"v{i}"
    g.line(f"{v} = {src}")
    if how == POINTER:
        with g.block(f"if type({v}) is not {ptr} or {v}.signature != want[{i}] or not {v}.live"):
            g.line("return None")
        g.line(f"a{i} = {v}.native_arg")
        with g.block(f"if a{i} is None"):
            g.line(f"a{i} = {v}.make_native_arg()")
        args.append(f"a{i}")
        return
    if how == CONSTANT:
        with g.block(f"if {v} is not want[{i}]"):
            g.line("return None")
        return
    with g.block(f"if type({v}) is not want[{i}]"):
        g.line("return None")
    if how == INT:
        with g.block(f"if not {_INT64_MIN} <= {v} <= {_INT64_MAX}"):
            g.line("return None")
        args.append(v)
    elif how == COMPLEX:  # two arguments, real and imaginary part (see _core.abi)
        args += [f"{v}.real", f"{v}.imag"]
    else:
        args.append(f"int({v})" if how == BOOL else v)

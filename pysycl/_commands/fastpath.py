"""The steady state of handler-less launches: ``q.parallel_for(range, kernel)`` again and again.

A USM program launches the same kernel in a loop, with the same pointers or others
of the same type. The first launch goes the whole way (:func:`launch.prepare`: the
capture walk, the cache lookups, the launch checks); when the kernel is simple enough
to check cheaply, the queue's executor remembers the *plan* of that launch, keyed by
the kernel's code object: the compiled kernel, the built ``cl_kernel``, the sizes,
and for each closure cell what it must hold -- a type (numbers, pointers: the value
itself is read again on every launch and becomes the argument) or, for a library
object the kernel uses as a constant (``sycl.plus()``, ``np``), that object. A plan
holds no user value: no pointer, no number, no function of the user's.

A later launch whose cells still match (and whose index space is the same, and with
the kernel cache not cleared, and bounds-checked mode off) only reads the cells,
checks their types, sets the arguments if they changed and enqueues. Anything else
takes the whole way again, which raises the proper errors and makes a new plan.
Each plan's launch is a function generated for its cells (:func:`_launcher`, as
pyopencl generates kernel invokers): straight-line checks, ~40% less bytecode than a
loop over the cells, which is most of what pysycl adds to a launch.

Eligible: ``q.parallel_for(range or nd_range, kernel)`` and ``q.single_task(kernel)``
without events or a kernel name, over a non-empty index space; closure captures only
(no argument read from a module global, no helper functions -- so no helper's
parameter defaults either --, no attribute of a user's module): numbers (complex
ones too) and USM pointers of a pysycl allocation; no specialization constants,
local accessors, reductions, ``print`` or ``assert`` (an error buffer per launch).
"""

from __future__ import annotations

import time
import types
from typing import TYPE_CHECKING, Any

import numpy as np

from pysycl._backends.opencl import exec as _x
from pysycl._commands.event import event
from pysycl._core.abi import ArgKind
from pysycl._core.exceptions import errc
from pysycl._kernels import bounds as _bounds
from pysycl._kernels.cache import kernels
from pysycl._kernels.captures import _LIBRARY_ROOTS, info_of, is_argument
from pysycl._memory.usm import usm, usm_pointer
from pysycl._memory.usm_api import PRUNE_AT, prune

if TYPE_CHECKING:
    import pyopencl as cl

    from pysycl._commands.commands import KernelCommand
    from pysycl._commands.queue import queue
    from pysycl._kernels.cache import Kernel

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_MISSING = object()
_stats = kernels.stats
_new = object.__new__
_lock, _enqueue, _Error = _x.launch_lock, _x.enqueue, _x.cl.Error
#: what a plan's cell check is: the value's type and how it becomes an argument
_SAME, _INT, _BOOL, _COMPLEX, _POINTER, _CONSTANT = range(6)
_COMPLEX_TYPES = (complex, np.complex64, np.complex128)


class Plan:
    """A remembered launch (see the module docstring). No user values."""

    __slots__ = ("bound", "cells", "clk", "generation", "globals", "gnames", "gsize", "kernel",
                 "launch", "lsize", "space")

    def __init__(self, k: Kernel, clk: cl.Kernel, space: tuple[str, tuple[int, ...]],
                 gsize: tuple[int, ...], lsize: tuple[int, ...] | None,
                 cells: tuple[tuple[int, Any], ...],
                 glob: tuple[tuple[str, Any], ...], gnames: tuple[str, ...] = (),
                 bound: dict[Any, list[Any]] | None = None) -> None:
        self.kernel = k
        self.clk = clk
        self.space = space
        self.gsize = gsize
        self.lsize = lsize
        self.cells = cells  # one check per closure cell, then one per global argument
        self.globals = glob  # library globals: (name, the object)
        self.gnames = gnames  # the globals that are arguments, in capture order
        self.bound = bound if bound is not None else {}  # clk -> its last arguments (ex.last_args)
        self.generation = kernels.generation
        self.launch = _launcher(self)


def _space(kind: str, sp: Any) -> tuple[str, tuple[int, ...]]:
    if kind == "range":
        return ("range", sp.values)
    if kind == "single_task":
        return ("single_task", ())
    return ("nd_range", (*sp.get_global_range(), *sp.get_local_range()))


def submit(ex: Any, q: queue, kind: str, index_space: Any, fn: types.FunctionType,
           name: str | None) -> event:
    """``ex.submit_kernel``: launch ``fn`` from the executor's plan for it; the whole way
    (``ex.submit_whole``) when there is none, or its checks fail."""
    plan = ex.plans.get(fn.__code__)
    if plan is not None and plan is not NONE and name is None:
        try:
            e = plan.launch(q, ex, kind, index_space, fn)
        except ValueError:  # an empty closure cell: the whole way says so
            e = None
        if e is not None:
            return e  # type: ignore[no-any-return]
    return ex.submit_whole(q, kind, index_space, fn, name)  # type: ignore[no-any-return]


def _launcher(plan: Plan) -> Any:
    """The plan's launch function, ``launch(q, ex, kind, index_space, fn) -> event | None``.

    Generated from the plan (as pyopencl generates its kernel invokers): one straight
    line of checks per cell, no loop and no dispatch on the cell kind, about half the
    bytecode of a generic loop (docs/performance.md, launch latency). ``None``: a check
    failed, the caller takes the whole way. The source is built here from the plan's
    shape only (cell kinds, sizes); values enter through the namespace, never the text.
    """
    ns: dict[str, Any] = {
        "kernels": kernels, "_checked": _bounds.mode, "_space": _space,
        "_same_globals": _same_globals, "plan": plan, "usm_pointer": usm_pointer,
        "_MISSING": _MISSING, "_stats": _stats, "_lock": _lock, "_enqueue": _enqueue,
        "_Error": _Error, "_x": _x, "errc": errc, "PRUNE_AT": PRUNE_AT, "prune": prune,
        "_new": _new, "event": event, "GEN": plan.generation, "SPACE": plan.space,
        "_now": time.perf_counter,
        "clk": plan.clk, "bound": plan.bound, "GSIZE": plan.gsize, "LSIZE": plan.lsize,
    }
    kind = plan.space[0]
    space = ("space.values != SPACE[1]" if kind == "range"
             else "False" if kind == "single_task" else "_space(kind, space) != SPACE")
    lines = [
        "def launch(q, ex, kind, space, fn):",
        f"    if kind != {kind!r} or kernels.generation != GEN or {space}:",
        "        return None",
        "    if _checked[0]:",
        "        return None",
    ]
    if plan.globals:
        lines += ["    if not _same_globals(plan, fn):", "        return None"]
    ncells = len(plan.cells) - len(plan.gnames)
    if ncells:
        lines.append("    cl = fn.__closure__")
    if plan.gnames:
        lines.append("    g = fn.__globals__")
    args: list[str] = []
    pointers: list[str] = []
    for i, (how, want) in enumerate(plan.cells):
        ns[f"W{i}"] = want
        src = (f"cl[{i}].cell_contents" if i < ncells
               else f"g.get({plan.gnames[i - ncells]!r}, _MISSING)")
        lines += _cell_lines(i, how, src, args, pointers)
    lines += _enqueue_lines(args, pointers)
    exec(compile("\n".join(lines), f"<pysycl launch plan of {plan.kernel.name}>", "exec"), ns)
    return ns["launch"]


def _cell_lines(i: int, how: int, src: str, args: list[str], pointers: list[str]) -> list[str]:
    """The checks of cell ``i`` (value ``v{i}``); appends its argument expressions."""
    v = f"v{i}"
    out = [f"    {v} = {src}"]
    if how == _POINTER:
        out += [f"    if type({v}) is not usm_pointer or {v}._sig != W{i} or not {v}._alloc.live:",
                "        return None",
                f"    a{i} = {v}._karg",
                f"    if a{i} is None:",
                f"        a{i} = {v}._karg = {v}._alloc.native.kernel_arg({v}._offset)"]
        args.append(f"a{i}")
        pointers.append(v)
        return out
    if how == _CONSTANT:
        return [*out, f"    if {v} is not W{i}:", "        return None"]
    out += [f"    if type({v}) is not W{i}:", "        return None"]
    if how == _INT:
        out += [f"    if not {_INT64_MIN} <= {v} <= {_INT64_MAX}:", "        return None"]
        args.append(v)
    elif how == _COMPLEX:  # two arguments, real and imaginary part (see _core.abi)
        args += [f"{v}.real", f"{v}.imag"]
    else:
        args.append(f"int({v})" if how == _BOOL else v)
    return out


def _enqueue_lines(args: list[str], pointers: list[str]) -> list[str]:
    """Set the arguments (if they changed) and enqueue; keep pointers alive; the event."""
    out = [
        f"    args = [{', '.join(args)}]",
        "    _stats['memory_hits'] += 1",
        *(["    d = ex.inflight"] if pointers else []),
        "    try:",
        "        with _lock:  # setting arguments and enqueuing is one step (exec.launch's)",
        "            if bound.get(clk) != args:",
        "                bound.pop(clk, None)  # set_args may fail half-way",
        "                clk.set_args(*args)",
        "                bound[clk] = args",
        "            ev = _enqueue(ex.native, clk, GSIZE, LSIZE, None, None)",
    ]
    if pointers:  # the pointers live until the kernel completes: held in the same step
        out.append(f"            d.append((ev, [{', '.join(pointers)}]))")
    out += ["    except _Error as e:",
            "        raise _x.translate(e, 'kernel launch failed', errc.kernel) from e",
            "    ex.last = ev  # the newest command, when and how launched (quick waits)",
            "    ex.since = _now()",
            "    ex.shape = plan"]
    if pointers:
        out += ["    if len(d) > PRUNE_AT:",
                "        prune(ex)"]
    return [*out,
            "    e = _new(event)  # event._make, inlined: q's event of ev",
            "    e._cl = e._first = ev",
            "    e._queue = q",
            "    e._exec = ex",
            "    e._deps = ()",
            "    return e"]


def _same_globals(plan: Plan, fn: types.FunctionType) -> bool:
    """Whether the library globals the kernel reads are the plan's."""
    g = fn.__globals__
    return all(g.get(name, _MISSING) is obj for name, obj in plan.globals)


#: the plan of a kernel that cannot have one (its launches take the whole way)
NONE = object()


def remember(ex: Any, q: queue, cmd: KernelCommand, k: Kernel | None, clk: Any) -> None:
    """Make a plan for ``cmd`` after a whole-way launch with kernel ``k`` (if eligible)."""
    if k is None or _bounds.enabled():
        return
    fn = cmd.fn
    if len(ex.plans) >= 64:
        ex.plans.clear()
    if (type(fn) is not types.FunctionType or cmd.name is not None or cmd.reductions
            or k.has_spec or k.has_local or k.direct or k.direct_rest or k.prints or k.asserts):
        ex.plans[fn.__code__] = NONE  # type: ignore[union-attr]
        return
    cells = _cell_checks(fn, k)
    globs = _global_checks(fn, k)
    if cells is None or globs is None:
        ex.plans[fn.__code__] = NONE
        return
    glob, gchecks, gnames = globs
    if cmd.kind == "range":
        gsize, lsize = tuple(cmd.index_space)[::-1], None  # type: ignore[arg-type]
    elif cmd.kind == "single_task":
        gsize, lsize = (1,), None
    else:  # the whole way checked the nd_range (ndrange_sizes): only its sizes here
        nd = cmd.index_space
        gsize, lsize = nd.get_global_range().values[::-1], nd.get_local_range().values[::-1]  # type: ignore[union-attr]
    if 0 in gsize:  # an empty index space: the whole way enqueues a marker, no kernel
        return
    ex.plans[fn.__code__] = Plan(k, clk, _space(cmd.kind, cmd.index_space), gsize, lsize,
                                 cells + gchecks, glob, gnames, ex.last_args(k))


def _cell_checks(fn: types.FunctionType, k: Kernel) -> tuple[tuple[int, Any], ...] | None:
    """What each closure cell must hold, in order; None when a cell cannot be checked cheaply."""
    caps = k.compiled.captures
    if any(c.owner or c.source not in ("freevar", "global") for c in caps):
        return None
    by_name = {c.name: kind for c, kind in zip(caps, k.arg_kinds, strict=True)
               if c.source == "freevar"}
    out: list[tuple[int, Any]] = []
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=True):
        check = _check(cell.cell_contents, by_name.get(name))
        if check is None:
            return None
        out.append(check)
    return tuple(out)


def _check(v: Any, kind: ArgKind | None) -> tuple[int, Any] | None:
    """How a launch checks a captured value of ``kind`` (None: not an argument)."""
    if kind is None:  # not an argument: a constant of the key
        return (_CONSTANT, v) if _library_object(v) else None
    if kind is ArgKind.POINTER:
        if type(v) is not usm_pointer or v._alloc.kind is usm.alloc.unknown:
            return None
        return (_POINTER, v._sig)  # context, dtype, read-only: one comparison per launch
    t = type(v)
    if kind is ArgKind.SCALAR:
        return (_INT if t is int else _BOOL if t is bool or t is np.bool_ else _SAME, t)
    if kind is ArgKind.SCALARS and t in _COMPLEX_TYPES:
        return (_COMPLEX, t)
    return None  # tuples, accessors: the whole way


def _global_checks(fn: types.FunctionType, k: Kernel
                   ) -> tuple[tuple[tuple[str, Any], ...], tuple[tuple[int, Any], ...],
                              tuple[str, ...]] | None:
    """The kernel's globals: library objects (checked by identity), and the checks and
    names of those that are arguments (numbers, pointers), in capture order."""
    by_name = {c.name: kind for c, kind in zip(k.compiled.captures, k.arg_kinds, strict=True)
               if c.source == "global"}
    g = fn.__globals__
    library, checks, names = [], [], []
    for name in info_of(fn.__code__).globals:
        v = g.get(name, _MISSING)
        if v is _MISSING:
            continue  # a builtin
        kind = by_name.get(name)
        if kind is None:
            if is_argument(v) or not _library_object(v):
                return None
            library.append((name, v))
            continue
        check = _check(v, kind)
        if check is None:
            return None
        checks.append(check)
        names.append(name)
    return tuple(library), tuple(checks), tuple(names)


def _library_object(v: Any) -> bool:
    """A constant the kernel may hold by identity: library code, enums, SYCL function objects."""
    if isinstance(v, types.ModuleType):
        return v.__name__.partition(".")[0] in _LIBRARY_ROOTS
    mod = getattr(type(v), "__module__", "") if not isinstance(v, type) else v.__module__
    if callable(v) and not isinstance(v, type):
        mod = getattr(v, "__module__", None) or mod
    return (mod or "").partition(".")[0] in _LIBRARY_ROOTS

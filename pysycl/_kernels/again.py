"""A command group submitted again unchanged: its kept launch, :class:`Again` (issue 27).

A loop that submits the same command group -- ``X.get_access(h, mode)``, maybe
``sycl.reduction(S, h, sycl.plus(), ...)``, ``h.parallel_for(r, [reduction,] kernel)`` --
makes new accessors (and a new reduction) each time, yet launches the same kernels with the
same arguments: the device copies of the same buffers, the same index space, the same
identity. The first submit takes the whole way (a kernel with reductions:
:func:`pysycl._kernels.reduction_launch.prepare`; any other:
:func:`pysycl._backends.launching.prepare`; the plan or launch, the per-submit checks, the
arguments); once its kernels are enqueued, the queue keeps an :class:`Again` under
``(AGAIN, code)`` in ``ex.launches`` with those arguments and what they were made of. A
later submit of that kernel code whose captures and reductions read the same
(:meth:`Again.repeats`: each captured accessor's device copy and range by identity, each
reduction's signature, variable, ``initialize_to_identity`` and identity; the index space,
kernel name, bounds mode and kernel-cache generation) enqueues the kept arguments
(:meth:`Again.__call__`): the checks that read them passed for the same values, and a
launch whose argument buffer holds them does not pack again. Anything else takes the whole
way, which raises what it raises. Through CUDA the kept launch is one C call
(``CUDALaunch.again``: ``_native.enqueue_again``). The host time of a reduction's such
submit on an H200 host: 14.2 µs against ``cupy.sum``'s 21.2 (docs/performance.md).

Which command groups qualify (:func:`keepable`): a plain function kernel without kernel
properties whose closure cells and globals are each an accessor of the group, a USM pointer
(checked live, by its kernel argument: one per pointer object), a module (each attribute
chain the kernel reads is resolved again and checked by identity: such values are
compile-time constants), a builtin, or an immutable scalar (its identity is its value);
with buffer, accessor or USM pointer variables (not spans); no local accessors, asserts or
error slot (bounds-checked mode), no kernel name. A kernel calling helper functions, or
capturing anything else (arrays adopted as pointers, tuples, streams), takes the whole way
each time. Nothing of the user's is kept but immutable values, modules and pointers' kernel
arguments: the device copies' handles are what the launch keeps anyway; a launch over USM
holds its captures and pointers until it completes, as the whole way does.
"""

from __future__ import annotations

import enum
import types
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from pysycl._core.abi import PROPS_ATTR
from pysycl._kernels import bounds as _bounds
from pysycl._kernels.cache import kernels
from pysycl._memory.accessor import accessor as _accessor
from pysycl._memory.usm import usm_pointer

if TYPE_CHECKING:
    from pysycl._core.launch_types import CommandGroupRef, KernelCommandRef
    from pysycl._kernels.captures import CodeInfo
    from pysycl._kernels.reduction import reduction
    from pysycl._kernels.reduction_plan import ReductionPlan

#: ``ex.launches[(AGAIN, code)]``: the :class:`Again` of a kernel code's newest launch
AGAIN = "command group again"


class Again:
    """The launch of a command group as last submitted (see the module docstring):
    ``again(wait_for)`` enqueues the (main) kernel and a reduction's final kernels with the
    kept arguments; :meth:`repeats` says whether a new submit's command reads the same. A launch
    that captures or writes USM (``holding``) holds the submit's captures and pointers until
    it completes, as the whole way does: :meth:`holding_run`."""

    __slots__ = ("__weakref__", "args", "cells", "closure", "code", "finals", "gdict", "gen",
                 "globs", "holding", "key", "kind", "main", "plan", "reds", "skey")

    def __init__(self, main: Any, plan: ReductionPlan | None, fn: types.FunctionType, kind: str,
                 skey: Any, holding: bool, globs: tuple[tuple[str, Any, tuple[Any, ...]], ...]
                 ) -> None:
        #: the launch of the main kernel; the reduction plan it is of (None: a kernel without
        #: reductions, whose launch holds what it holds itself)
        self.main, self.plan, self.key = main, plan, main.ex.key
        self.code, self.kind, self.skey, self.holding = fn.__code__, kind, skey, holding
        self.gen = kernels.generation
        #: the kernel's module globals and what it reads of them (:func:`keepable`)
        self.gdict, self.globs = fn.__globals__, globs
        self.closure: Any = fn.__closure__ or ()  # (until remember)
        self.cells: tuple[tuple[Any, Any], ...] = ()
        self.reds: tuple[tuple[Any, ...], ...] = ()
        self.args: list[Any] = []
        self.finals: tuple[tuple[Any, list[Any]], ...] = ()

    def remember(self, reds: Sequence[reduction], args: list[Any],
                 finals: tuple[tuple[Any, list[Any]], ...]) -> None:
        """Keep the main kernel's arguments ``args`` and the final kernels' ``(launch,
        arguments)`` just enqueued for the kernel's captures and reductions ``reds``: the
        queue's launch of this code from now on."""
        key = self.key
        #: per closure cell: an accessor's device copy and ``kernel_tail`` (its range; one
        #: tuple per buffer and mode, so identity means the same buffer, mode and whole
        #: range); a USM pointer's kernel argument (made once per pointer object) and
        #: ``_POINTER``; an immutable scalar itself and ``_SAME``
        cells = []
        for c in self.closure:
            v = c.cell_contents
            cells.append((v.coherence.dev[key], v.kernel_tail) if type(v) is _accessor
                         else (v.native_arg, _POINTER) if type(v) is usm_pointer
                         else (v, _SAME))
        self.cells, self.closure = tuple(cells), None
        #: per reduction: signature, the variable (an accessor's device copy and
        #: ``kernel_tail``; a pointer's kernel argument and None), ``initialize_to_identity``,
        #: identity
        self.reds = tuple((r._sig, *((r._acc.coherence.dev[key], r._acc.kernel_tail)
                                     if r._acc is not None else (r._ptr.native_arg, None)),
                           r._init, r._identity) for r in reds)
        self.args, self.finals = args, finals
        self.main.ex.launches[(AGAIN, self.code)] = self
        _kept.add(self)

    # long: one frame for the whole check (the submit hot path; helper calls cost ~50 ns)
    def repeats(self, h: CommandGroupRef, cmd: KernelCommandRef, fn: types.FunctionType,
                reds: tuple[reduction, ...]) -> bool:
        """Whether command ``cmd`` of group ``h`` (kernel ``fn`` of this code) launches with
        the kept arguments: the same buffers' device copies (identity), the same live USM
        pointers (their kernel arguments, made once per pointer object), the same
        reductions."""
        if cmd.kind != self.kind or cmd.name is not None or _bounds.mode[0] \
                or kernels.generation != self.gen or len(reds) != len(self.reds):
            return False
        space = cmd.index_space
        if (space.values if self.kind == "range" else space_key(self.kind, space)) \
                != self.skey:
            return False
        key = self.key
        for cell, (dev, tail) in zip(fn.__closure__ or (), self.cells):  # noqa: B905 - the same code
            try:
                v = cell.cell_contents
            except ValueError:  # unassigned: the whole way says so
                return False
            if type(v) is _accessor:
                if v.handler is not h or v.kernel_tail is not tail \
                        or v.coherence.dev.get(key) is not dev:
                    return False
            elif tail is _POINTER:
                if type(v) is not usm_pointer or v.native_arg is not dev or not v.live:
                    return False
            elif v is not dev or tail is not _SAME:
                return False
        if self.globs:
            g = fn.__globals__
            if g is not self.gdict:
                return False
            for name, was, chains in self.globs:
                v = g.get(name, _MISSING)
                if v is not was or (type(v) is usm_pointer and not v.live):
                    return False
                for chain, got in chains:
                    if _resolve(v, chain) is not got:
                        return False
        for r, (sig, dev, tail, init, ident) in zip(reds, self.reds):  # noqa: B905 - checked
            if (r._sig is not sig and r._sig != sig) or r._init is not init \
                    or r._identity is not ident:
                return False
            acc = r._acc
            if tail is None:  # a USM variable: the same live pointer
                p = r._ptr
                if acc is not None or p is None or p.native_arg is not dev or not p.live:
                    return False
            elif r._handler is not h or acc is None or acc.kernel_tail is not tail \
                    or acc.coherence.dev.get(key) is not dev:
                return False
        return getattr(fn, PROPS_ATTR, None) is None

    def __call__(self, wait_for: Sequence[Any] | None) -> Any:
        """Enqueue the main kernel after ``wait_for``, then the final kernels; the last
        one's native event."""
        ev = self.main.again(self.args, wait_for)
        for ln, a in self.finals:
            ev = ln.again(a, None)
        return ev

    def holding_run(self, fn: types.FunctionType, reds: tuple[reduction, ...]) -> Any:
        """The launch of a ``holding`` submit (kernel ``fn``, reductions ``reds``):
        ``run(wait_for)`` launches and holds the captures and USM variables until the last
        kernel completes (the queue's ``inflight``)."""
        holds = [c.cell_contents for c in fn.__closure__ or ()]
        holds.extend(v for _, v, _ in self.globs if type(v) is usm_pointer)
        holds.extend(r._ptr for r in reds if r._ptr is not None)

        plan, ln = self.plan, self.main

        def run(wait_for: Sequence[Any] | None) -> Any:
            if plan is None:  # (the launch holds them, as Launch.run's does)
                return ln.enqueue(self.args, holds, wait_for, ln.bound)
            ev = self(wait_for)
            plan.hold(ev, holds)
            return ev
        return run


#: the kept launches of every queue (:func:`forget_memory`)
_kept: weakref.WeakSet[Again] = weakref.WeakSet()


def kept_launch(ex: Any, h: CommandGroupRef, cmd: KernelCommandRef, fn: types.FunctionType,
                reds: tuple[reduction, ...]) -> Any:
    """The launch queue ``ex`` kept for kernel ``fn``'s code, where command ``cmd`` of group
    ``h`` repeats it (:meth:`Again.repeats`; a kernel-cache hit for the statistics): itself,
    or a run that holds what it must (:meth:`Again.holding_run`); None: take the whole way."""
    again = ex.launches.get((AGAIN, fn.__code__))
    if again is None or not again.repeats(h, cmd, fn, reds):
        return None
    kernels.stats["memory_hits"] += 1  # (the kernel-cache hit the whole way would count)
    return again.holding_run(fn, reds) if again.holding else again


def forget_memory(mems: tuple[Any, ...]) -> None:
    """Drop the kept launches whose arguments hold any of ``mems`` (buffers' device copies
    about to be freed: a kept launch must not keep one allocated; the next submit of such a
    command group takes the whole way). A dropped launch is not changed: a submit that
    took it before runs it as it was."""
    ids = {id(m) for m in mems}
    for a in list(_kept):
        if any(id(v) in ids for v in a.args) \
                or any(id(v) in ids for _, args in a.finals for v in args):
            launches = a.main.ex.launches
            key = (AGAIN, a.code)
            if launches.get(key) is a:
                launches.pop(key, None)
            _kept.discard(a)


#: what a kept closure cell is besides an accessor (``Again.cells``)
_POINTER, _SAME = "pointer", "same"
_MISSING = object()
#: immutable values a kept launch checks by identity, in closure cells and globals
_SCALARS = (int, float, bool, complex, np.generic, enum.Enum)


def keepable(fn: Any, info: CodeInfo, h: CommandGroupRef, reds: tuple[reduction, ...]
             ) -> tuple[tuple[str, Any, tuple[Any, ...]], ...] | None:
    """The globals a kept launch of kernel ``fn`` (submitted in group ``h`` with reductions
    ``reds``) checks -- ``(name, value, ((attribute chain, its value), ...))`` each -- or None
    where its launch cannot be kept: a plain function without kernel properties whose
    closure cells and globals are each an accessor of this group, a USM pointer, a module
    (its attribute chains read too), a builtin or an immutable scalar (whose identity is its
    value), with buffer, accessor or USM pointer reduction variables (not spans)."""
    if type(fn) is not types.FunctionType or getattr(fn, PROPS_ATTR, None) is not None:
        return None
    for r in reds:
        if r._kind != "accessor" and r._kind != "pointer":
            return None
    for c in fn.__closure__ or ():
        try:
            v = c.cell_contents
        except ValueError:
            return None
        if not (type(v) is _accessor and v.handler is h) and type(v) is not usm_pointer \
                and not isinstance(v, _SCALARS):
            return None
    g = fn.__globals__
    globs = []
    for name in info.globals:
        v = g.get(name, _MISSING)
        chains: tuple[Any, ...] = ()
        if type(v) is types.ModuleType:
            try:
                chains = tuple((c, _resolve(v, c)) for c in info.attrs.get(name, ()))
            except AttributeError:
                return None
        elif v is not _MISSING and type(v) is not usm_pointer and not isinstance(v, _SCALARS):
            return None
        globs.append((name, v, chains))
    return tuple(globs)


def _resolve(v: Any, chain: tuple[str, ...]) -> Any:
    """``v.a.b`` of attribute chain ``("a", "b")``."""
    for a in chain:
        v = getattr(v, a)
    return v


def space_key(kind: str, space: Any) -> Any:
    """What a reduction plan depends on of an index space: a range's extents; an nd_range's
    global and local range and offset (an offset is refused at the plan's first launch)."""
    if kind == "range":
        return space.values
    return (space.get_global_range().values, space.get_local_range().values,
            space.get_offset().values)


"""The kernel cache: compiled kernels in memory and on disk, and the one call into the compiler.

Levels (docs/design/caching.md):

1. memory: a launcher key ``(code object, capture types, index kind, ndim, ...)``
   → :class:`Kernel` (the compiled module, plus one ``cl_kernel`` per context,
   device and spec-constant values);
2. disk: a stable digest of the same key (:mod:`pysycl._kernels.digest`) →
   SPIR-V (:mod:`pysycl._kernels.diskcache`); a hit skips Numba entirely;
3. the compiler (``pysycl_numba``), imported on first use by :func:`_compile`
   (whole, even under Ctrl-C: :func:`load_compiler`), the runtime's only way into it.

:data:`kernels` is the process's cache; its :attr:`KernelCache.stats` are what
``pysycl.ext.kernel_cache_stats()`` reports.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import signal
import sys
import threading
import time
import weakref
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from pysycl._core.abi import (
    ArgKind,
    Capture,
    CompiledKernel,
    IndexSpace,
    PrintType,
    ReductionType,
    StreamType,
    arg_kind,
    detached,
    source_location,
)
from pysycl._core.exceptions import errc, exception
from pysycl._core.first_use import first_use
from pysycl._kernels import bincache as _bincache
from pysycl._kernels import bounds as _bounds
from pysycl._kernels import diskcache as _diskcache
from pysycl._kernels import ndrange as _ndrange
from pysycl._kernels import specconst as _specconst
from pysycl._kernels import steps as _steps
from pysycl._kernels.captures import call_graph, forget_code_infos
from pysycl._kernels.ptx_bounds import with_launch_bound

if TYPE_CHECKING:
    import types
    from types import ModuleType

    import pyopencl as cl

    from pysycl._objects.context import context
    from pysycl._objects.device import device


_log = logging.getLogger("pysycl.kernel")
T = TypeVar("T")


class Kernel:
    """A compiled kernel as the launcher uses it: argument kinds and its ``cl_kernel`` objects.

    Attributes:
        compiled: the compiler's (or the disk cache's) :class:`CompiledKernel`: the
            first image made, for the device it was first submitted to.
        images: its images by target ``(format, arch)`` (SPIR-V, PTX per compute
            capability); :meth:`KernelCache.image` adds one when a device needs it.
        digest: the disk-cache digest of the kernel (every target's entry derives
            from it).
        name: the kernel's name in messages.
        arg_kinds: one :class:`ArgKind` per capture.
        arg_dtypes: the OpenCL arguments' dtypes (None: a memory object).
        has_spec, has_local: whether some capture is a spec id / a local accessor.
        has_pointer: whether some capture is a USM pointer (its launches keep the
            pointers alive until they complete).
        direct, direct_rest: the static bounds check's entries
            (:func:`pysycl._kernels.bounds.fast_checks`).
        asserts: whether the kernel has asserts (its launches bind an error buffer).
        kernels: ``cl_kernel`` by (context key, device key[, spec-constant values]);
            the entries of a context go when the context does
            (:meth:`KernelCache.watch_context`).
        bound: ``cl_kernel`` -> the arguments it was last launched with, so that a
            launch with the same ones does not set them again. A buffer's device
            copy that is freed is dropped from it first
            (:meth:`KernelCache.forget_memory`): what it remembers never keeps
            memory alive.
    """

    __slots__ = ("__weakref__", "arg_dtypes", "arg_kinds", "asserts", "bound", "codes",
                 "compiled", "digest", "direct",
                 "direct_rest", "has_local", "has_pointer", "has_spec", "images", "kernels", "name",
                 "prints")

    def __init__(self, compiled: CompiledKernel, name: str, digest: str = "") -> None:
        self.compiled = compiled
        self.name = name
        self.digest = digest  # the disk-cache digest of its SPIR-V image ("" if none)
        # (format, arch) -> the kernel's image for that target; the argument layout
        # (everything above but the binary) is the same in all of them.
        self.images: dict[tuple[str, str], CompiledKernel] = {
            (compiled.format, compiled.arch): compiled}
        dts: list[np.dtype | type[np.int64] | None] = []
        kinds = tuple(arg_kind(c.type) for c in compiled.captures)
        for c, kind in zip(compiled.captures, kinds, strict=True):
            if kind is ArgKind.POINTER:
                dts.append(None)  # an SVM pointer
            elif kind is ArgKind.ACCESSOR or kind is ArgKind.LOCAL_ACCESSOR:
                dts.append(None)  # the memory object, then offset and ranges
                dts.extend([np.int64] * (c.type.flat_arg_count() - 1))
            elif isinstance(c.type, (PrintType, StreamType)):
                dts.append(None)  # the launch's print or stream buffer
            elif kind is not ArgKind.SPEC_CONSTANT:  # (a SAME capture has no dtypes)
                dts.extend(c.type.flat_dtypes())  # type: ignore[union-attr]
        if (compiled.bounds_checked or compiled.asserts) and not compiled.reductions:
            dts.append(None)  # the error buffer (reduction kernels add it after theirs)
        self.arg_dtypes = dts
        self.arg_kinds = kinds
        self.has_spec = ArgKind.SPEC_CONSTANT in kinds
        self.has_local = ArgKind.LOCAL_ACCESSOR in kinds
        self.has_pointer = ArgKind.POINTER in kinds
        # kernel print() or a sycl.stream: output buffers per launch (pysycl._kernels.kprint)
        self.prints = any(type(c.type) in (PrintType, StreamType) for c in compiled.captures)
        self.direct, self.direct_rest = _bounds.fast_checks(compiled.direct_index, kinds)
        # asserts: the launch binds an error buffer and reports a failure (pysycl._kernels.bounds)
        self.asserts = bool(compiled.asserts)
        # id of a submitting code object -> (it, the code table its sites resolve against)
        self.codes: dict[int, tuple[types.CodeType, tuple[types.CodeType, ...]]] = {}
        self.kernels: dict[tuple[Hashable, ...], cl.Kernel] = {}
        # cl_kernel -> the arguments it was last launched with (exec.launch sets only changes)
        self.bound: dict[cl.Kernel, list[Any]] = {}
        _live.add(self)

    @property
    def where(self) -> str:
        """``kernel NAME (file:line)`` for messages."""
        return f"kernel {self.name} ({self.compiled.source_location})"

    def named(self, name: str | None) -> str:
        """:attr:`where`, under the ``kernel_name`` of this submit when there is one (the
        compiled kernel may be shared by several names)."""
        return self.where if name is None else f"kernel {name} ({self.compiled.source_location})"


#: Every kernel alive (the cache's, kernel bundles', reductions' combine steps): where
#: :meth:`KernelCache.forget_memory` and a context's end look for what to drop.
_live: weakref.WeakSet[Kernel] = weakref.WeakSet()

SPIRV = ("spirv", "")


def load_compiler() -> ModuleType:
    """The compiler, ``pysycl_numba``, imported on first use: whole, even under Ctrl-C.

    A ``KeyboardInterrupt`` raised inside the import of Numba (about a second, circular
    imports) leaves half-initialised modules in ``sys.modules``: every later compile of
    the process would fail with an ``ImportError`` about a partially initialized module.
    So the main thread holds SIGINT back while the import runs (its handler replaced,
    then restored) and raises it once the import is complete: the interrupted compile
    stops there, the next one works. Should the import fail anyway (elsewhere than the
    main thread, which alone gets signals), every module it added is removed, so that
    the next attempt imports them afresh.
    """
    mod = sys.modules.get("pysycl_numba")
    if mod is not None and getattr(mod, "compile_kernel", None) is not None:
        return mod
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or previous is None:
        with first_use("import the compiler"):
            return _import_compiler()  # no Python-level SIGINT handler to hold back here
    held: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    try:
        with first_use("import the compiler"):
            return _import_compiler()
    finally:
        signal.signal(signal.SIGINT, previous)
        if held:  # Ctrl-C came during the import: deliver it now, to the handler it was for
            signal.raise_signal(signal.SIGINT)


def _import_compiler() -> ModuleType:
    before = set(sys.modules)
    try:
        import pysycl_numba
    except BaseException:
        for name in set(sys.modules) - before:  # Numba's, and its dependencies' (yaml, ...)
            sys.modules.pop(name, None)
        raise
    return pysycl_numba


def _compile(fn: types.FunctionType, index: IndexSpace, captures: tuple[Capture, ...], entry: str,
             bounds_check: bool,
             reductions: tuple[tuple[ReductionType, Callable[..., Any]], ...] = (),
             target: tuple[str, str] = SPIRV) -> CompiledKernel:
    """The runtime's one call into the compiler (imported here, on first use: no Numba before)."""
    compile_kernel = load_compiler().compile_kernel
    return compile_kernel(detached(fn, captures), index, captures, entry_name=entry,
                          reductions=reductions, bounds_check=bounds_check,
                          helpers=call_graph(fn), image_format=target[0], arch=target[1])


def target_of(dev: device) -> tuple[str, str]:
    """The image target Python kernels compile to for ``dev`` (SPIR-V when it loads none:
    :func:`_check_device` then says why the kernel cannot run there)."""
    t = dev.image_targets
    return t[0] if t else SPIRV


def target_digest(digest: str, target: tuple[str, str]) -> str:
    """The disk-cache digest of a kernel's image for ``target`` (SPIR-V: ``digest`` itself)."""
    if target == SPIRV:
        return digest
    return hashlib.sha256(f"{digest}:{target[0]}:{target[1]}".encode()).hexdigest()


def _dev_name(dev: device) -> str:
    return dev.display_name


def _check_device(k: Kernel, dev: device, name: str | None = None) -> None:
    """Raise ``errc.kernel_not_supported`` unless ``dev`` can run ``k`` (before anything runs);
    the message names ``name`` (the submit's ``kernel_name``) when given."""
    from pysycl._objects.aspects import aspect

    missing = [name for name in sorted(k.compiled.required_aspects)
               if not dev.has(getattr(aspect, name))]
    if missing:
        raise exception(
            errc.kernel_not_supported,
            f"{k.named(name)} needs {', '.join('aspect.' + m for m in missing)}, which device "
            f"{_dev_name(dev)!r} does not have (float16 needs fp16, float64 and Python floats "
            "need fp64)")
    if not dev.image_targets:
        raise exception(
            errc.kernel_not_supported,
            f"{k.named(name)} is a Python kernel, but device {_dev_name(dev)!r} loads neither SPIR-V "
            "(no OpenCL IL support; PoCL from PyPI is such a device) nor PTX (an NVIDIA GPU). "
            "Run it on a device with aspect.ext_pysycl_spirv or aspect.ext_pysycl_ptx, e.g. "
            "sycl.queue(sycl.aspect_selector(sycl.aspect.ext_pysycl_spirv)).")


class KernelCache:
    """Compiled kernels by launcher key, in memory and on disk, with counters.

    Counters (:attr:`stats`): ``compiles`` (compiler runs), ``memory_hits``,
    ``disk_hits``, ``disk_writes``, ``cl_builds`` (OpenCL builds of its kernels).
    """

    def __init__(self) -> None:
        self.memory: dict[Hashable, Kernel] = {}
        #: bumped when the memory is cleared (launch plans of ``_commands.fastpath`` check it)
        self.generation = 0
        self.stats = {"compiles": 0, "memory_hits": 0, "disk_hits": 0, "disk_writes": 0,
                      "cl_builds": 0, "native_hits": 0, "native_writes": 0}
        self._flights: dict[Hashable, threading.Lock] = {}
        self._flights_lock = threading.Lock()
        #: context key -> the finalizer that drops its entries when the context goes
        self._watched: dict[int, weakref.finalize] = {}

    # --- memory
    def get(self, key: Hashable) -> Kernel | None:
        """The kernel in memory under ``key`` (a hit is counted), else None."""
        k = self.memory.get(key)
        if k is not None:
            self.stats["memory_hits"] += 1
        return k

    def peek(self, key: Hashable) -> Kernel | None:
        """The kernel in memory under ``key``, else None (not counted: no submit asked)."""
        return self.memory.get(key)

    def add(self, key: Hashable, k: Kernel) -> Kernel:
        """Keep ``k`` under ``key`` unless a kernel is there already; the one kept."""
        return self.memory.setdefault(key, k)

    def once(self, key: Hashable, make: Callable[[], Kernel]) -> Kernel:
        """``memory[key]``, made by ``make()`` exactly once however many threads ask at once.

        Threads that miss the same key together wait for the first one's compile
        instead of compiling again; if it fails, the next waiter tries (and gets its
        own error).
        """
        with self._flights_lock:
            v = self.memory.get(key)
            if v is not None:
                return v
            lock = self._flights.setdefault(key, threading.Lock())
        try:
            with lock:
                v = self.memory.get(key)
                if v is None:
                    with first_use("kernel from the disk cache or the compiler"):
                        v = self.memory[key] = make()
                return v
        finally:
            with self._flights_lock:
                if self._flights.get(key) is lock and key in self.memory:
                    del self._flights[key]

    def clear_memory(self) -> None:
        """Forget every compiled kernel held in memory (the disk cache stays)."""
        self.memory.clear()
        self.generation += 1  # launch plans made before are void
        forget_code_infos()

    def reset_stats(self) -> None:
        """Zero the counters."""
        for k in self.stats:
            self.stats[k] = 0

    # --- disk and compiler
    def load(self, digest: str, fn: types.FunctionType, accept: Callable[[CompiledKernel], bool]
             ) -> CompiledKernel | None:
        """The disk-cached kernel ``digest`` if ``accept`` takes it (a hit is counted).

        An entry may have been written by another program whose kernel had the same
        bytecode: messages must name the file:line of the function being submitted,
        never what the cache remembers.
        """
        compiled = _diskcache.load(digest)
        if compiled is None or not accept(compiled):
            return None
        self.stats["disk_hits"] += 1
        here = source_location(fn)
        if compiled.source_location != here:
            compiled = dataclasses.replace(compiled, source_location=here)
        return compiled

    def compile(self, digest: str, fn: types.FunctionType, index: IndexSpace,
                captures: tuple[Capture, ...], name: str, bounds_check: bool,
                reductions: tuple[tuple[ReductionType, Callable[..., Any]], ...] = (),
                target: tuple[str, str] = SPIRV) -> CompiledKernel:
        """Compile ``fn`` for ``target`` (entry point named after ``digest``) and store
        it on disk (under :func:`target_digest`)."""
        t0 = time.perf_counter()
        compiled = _compile(fn, index, captures, "pysycl_" + digest[:24], bounds_check,
                            reductions, target)
        self.stats["compiles"] += 1
        _log.info("compiled kernel %s (%s) in %.1f ms (%s)", name, source_location(fn),
                  1e3 * (time.perf_counter() - t0), ":".join(p for p in target if p))
        if _diskcache.store(target_digest(digest, target), compiled):
            self.stats["disk_writes"] += 1
        return compiled

    def load_or_compile(self, digest: str, fn: types.FunctionType, index: IndexSpace,
                        captures: tuple[Capture, ...], name: str,
                        bounds_check: bool = False, target: tuple[str, str] = SPIRV) -> Kernel:
        """The kernel of ``digest`` with its image for ``target``: from the disk cache,
        else compiled."""
        return Kernel(self.load_or_compile_image(digest, fn, index, captures, name,
                                                 bounds_check, target), name, digest)

    def load_or_compile_image(self, digest: str, fn: types.FunctionType, index: IndexSpace,
                              captures: tuple[Capture, ...], name: str, bounds_check: bool,
                              target: tuple[str, str],
                              reductions: tuple[tuple[ReductionType, Callable[..., Any]], ...]
                              = ()) -> CompiledKernel:
        """One image of the kernel ``digest``: from the disk cache, else compiled."""
        with first_use(f"kernel {name}: disk cache or compiler"):
            return self._load_or_compile_image(digest, fn, index, captures, name, bounds_check,
                                               target, reductions)

    def _load_or_compile_image(self, digest: str, fn: types.FunctionType, index: IndexSpace,
                               captures: tuple[Capture, ...], name: str, bounds_check: bool,
                               target: tuple[str, str],
                               reductions: tuple[tuple[ReductionType, Callable[..., Any]], ...]
                               ) -> CompiledKernel:
        compiled = self.load(target_digest(digest, target), fn,
                             lambda c: c.captures == captures and c.bounds_checked == bounds_check
                             and (c.format, c.arch) == target
                             and tuple(c.reductions) == tuple(r for r, _ in reductions))
        if compiled is not None:
            _log.debug("kernel %s: disk cache hit %s (%s)", name, digest[:16], target[0])
            return compiled
        return self.compile(digest, fn, index, captures, name, bounds_check, reductions, target)

    def image(self, k: Kernel, dev: device, fn: types.FunctionType | None,
              name: str | None = None) -> CompiledKernel:
        """``k``'s image for ``dev``'s target (:meth:`target_image`)."""
        return self.target_image(k, target_of(dev), fn, dev.display_name, name)

    def target_image(self, k: Kernel, target: tuple[str, str], fn: types.FunctionType | None,
                     where: str = "", name: str | None = None) -> CompiledKernel:
        """``k``'s image for ``target``, compiled (or loaded) the first time one is asked.

        ``fn`` is the kernel's Python function, needed only for a target ``k`` has no
        image for yet (a kernel first submitted to a CPU, now to a GPU).
        """
        img = k.images.get(target)
        if img is None:
            c = k.compiled
            if fn is None or not k.digest or c.reductions:  # reductions: one target per entry
                raise exception(errc.kernel_not_supported,
                                f"{k.named(name)} has no {target[0]} image (for {where or target[1]}) "
                                "and no Python function to compile one from")
            img = k.images.setdefault(target, self.load_or_compile_image(
                k.digest, fn, c.index, c.captures, k.name, c.bounds_checked, target))
        return img

    # --- OpenCL
    def cl_kernel(self, k: Kernel, ctx: context, dev: device,
                  spec: tuple[np.generic | None, ...] | None = None,
                  key: tuple[Hashable, ...] | None = None,
                  fn: types.FunctionType | None = None, name: str | None = None,
                  launch_bound: int = 0) -> cl.Kernel:
        """``k``'s ``cl_kernel`` for (``ctx``, ``dev``[, ``spec`` values][, ``launch_bound``]),
        built once (from the image for ``dev``'s target: :meth:`image`; a PTX image with
        ``.maxntid launch_bound``: :mod:`pysycl._kernels.ptx_bounds`); errors name ``name``
        (the submit's ``kernel_name``) when given."""
        if key is None:
            key = (ctx.key, dev.key)
            if spec is not None:
                key += _specconst.value_key(spec)
            if launch_bound:
                key += ("maxntid", launch_bound)
        clk = k.kernels.get(key)
        if clk is None:
            with first_use(f"kernel {k.name}: build for {dev.display_name}"):
                clk = k.kernels[key] = self._build(k, ctx, dev, spec, fn, name, launch_bound)
        return clk

    # --- lifetimes
    def watch_context(self, ctx: context) -> None:
        """Drop the kernels built for ``ctx`` (and what refers to them) when it goes.

        Called for every queue's context and every build: a context's ``cl_kernel``
        objects (each holding its program and, through it, the OpenCL context)
        must not outlive it. Keyed by ``ctx.key``: a second ``sycl.context`` object
        over the same native context (interop) makes its kernels again if the first
        one goes before it.
        """
        key = ctx.key
        if key not in self._watched:
            f = self._watched[key] = weakref.finalize(ctx, self._forget_context, key)
            f.atexit = False  # at exit everything goes anyway; no OpenCL calls then

    def _forget_context(self, key: int) -> None:
        """Context ``key`` is gone: drop its ``cl_kernel`` objects, and what remembers them."""
        from pysycl._backends.opencl import programs as clp

        self._watched.pop(key, None)
        dropped = []
        for k in list(_live):
            built = k.kernels
            for bkey in [b for b in list(built) if b[0] == key]:
                clk = built.pop(bkey, None)
                if clk is not None:
                    dropped.append(clk)
                    k.bound.pop(clk, None)
            for clk in list(k.bound):  # a kernel bundle's kernels of that context
                if clp.handle(clp.kernel_context(clk)) == key:
                    k.bound.pop(clk, None)
        _ndrange.forget(dropped)
        _steps.forget_context(key)
        if dropped:
            _log.debug("context %#x is gone: dropped %d built kernels", key, len(dropped))

    @staticmethod
    def forget_memory(mems: tuple[Any, ...]) -> None:
        """Drop the remembered arguments (``Kernel.bound``) that hold any of ``mems``.

        Called before a buffer's device copy is freed, so that no kernel keeps it
        allocated until its next launch. The next launch of such a kernel sets its
        arguments again.
        """
        ids = {id(m) for m in mems}
        for k in list(_live):
            bound = k.bound
            if bound:
                for clk, args in list(bound.items()):
                    if any(id(a) in ids for a in args):
                        bound.pop(clk, None)

    def _build(self, k: Kernel, ctx: context, dev: device,
               spec: tuple[np.generic | None, ...] | None,
               fn: types.FunctionType | None, name: str | None = None,
               launch_bound: int = 0) -> cl.Kernel:
        from pysycl._backends.opencl import exec as x

        _check_device(k, dev, name)
        self.watch_context(ctx)
        img = self.image(k, dev, fn, name)
        if launch_bound:  # a PTX image, for work-groups wider than the driver promises
            try:
                bounded = with_launch_bound(img.binary, img.entry, launch_bound)
            except ValueError as e:
                raise exception(errc.build, f"{k.where}: {e}") from e
            img = dataclasses.replace(img, binary=bounded)
        t0 = time.perf_counter()
        if spec is not None:  # specialization constant values applied to the image (no Numba)
            clk = _specconst.build_for(k, img, ctx, dev, spec)
        else:
            clk = x.create_kernel(self._program(img, ctx, dev), img.entry, k.arg_dtypes)
        self.stats["cl_builds"] += 1
        _log.info("built kernel %s for %s in %.1f ms", k.name, _dev_name(dev),
                  1e3 * (time.perf_counter() - t0))
        return clk


    def _program(self, img: CompiledKernel, ctx: context, dev: device) -> cl.Program:
        """The built program of ``img`` for ``dev``: from the device-binary cache when the
        driver built it before (no device compiler), else built and its binary stored."""
        from pysycl._backends.opencl import exec as x
        from pysycl._backends.opencl import programs as clp

        bkey = _bincache.key("kernel", img.format, img.arch,
                             hashlib.sha256(img.binary).hexdigest(),
                             clp.device_cache_key(dev.native))
        binary = _bincache.load(bkey)
        if binary is not None:
            try:
                prg = clp.from_binaries(ctx.native, [dev.native], [binary])
                clp.build_program(prg, [dev.native], "")
                self.stats["native_hits"] += 1
                return clp.wrap_program(prg)
            except exception:
                pass  # a binary this driver no longer takes: build from the image
        if img.format == "ptx":
            built = x.build_ptx(ctx.native, [dev.native], img.binary)
        else:
            built = x.build_il(ctx.native, [dev.native], img.binary)
        if _bincache.store(bkey, clp.binaries(built).get(clp.handle(dev.native), b"")):
            self.stats["native_writes"] += 1
        return built


#: The process's kernel cache.
kernels = KernelCache()

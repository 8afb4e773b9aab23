"""The kernel cache: compiled kernels in memory and on disk, and the one call into the compiler.

Levels (docs/caching.md):

1. memory: a launcher key ``(code object, capture types, index kind, ndim, ...)``
   → :class:`Kernel` (the compiled module and its images per target; built native
   kernels are the backend's, ``pysycl._backends.opencl.build``);
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
    ID_LOCAL,
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
from pysycl._core.launch_types import SPIRV, Target
from pysycl._kernels import diskcache as _diskcache
from pysycl._kernels.breakpoints import warn_breakpoints
from pysycl._kernels.captures import call_graph, forget_code_infos

if TYPE_CHECKING:
    import types
    from types import ModuleType

    from pysycl._objects.device import device


_log = logging.getLogger("pysycl.kernel")
T = TypeVar("T")


def fast_checks(direct_index: tuple[tuple[int, int, int, int, int], ...],
                kinds: tuple[ArgKind, ...]) -> tuple[tuple[tuple[int, int, int], ...], bool]:
    """The launcher's precomputed form of ``direct_index``.

    Returns ``(fast, rest)``: ``fast`` holds ``(capture, 1 + accessor dimension,
    launch dimension)`` of the global-id indexing of (global) accessors, compared
    on the hot path as ``g[d] > values[capture].kernel_tail[1 + ad]``; ``rest`` says
    whether other entries (local ids, local accessors) need
    :func:`pysycl._kernels.bounds.check_launch`.
    """
    fast = tuple((ci, 1 + ad, d) for ci, ad, src, d, _ in direct_index
                 if src != ID_LOCAL and kinds[ci] is ArgKind.ACCESSOR)
    return fast, len(fast) != len(direct_index)


class Kernel:
    """A compiled kernel as the launcher uses it: its images and argument kinds.

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
            (:func:`fast_checks`; :mod:`pysycl._kernels.bounds` compares them).
        asserts: whether the kernel has asserts (its launches bind an error buffer).

    Built native kernels (and the arguments each was last launched with) are the
    backend's: ``pysycl._backends.opencl.build``.
    """

    __slots__ = ("__weakref__", "arg_dtypes", "arg_kinds", "asserts", "codes", "compiled",
                 "digest", "direct", "direct_rest", "has_local", "has_pointer", "has_spec",
                 "images", "name", "prints", "props")

    def __init__(self, compiled: CompiledKernel, name: str, digest: str = "") -> None:
        self.compiled = compiled
        self.name = name
        self.digest = digest  # the disk-cache digest of its SPIR-V image ("" if none)
        # (format, arch) -> the kernel's image for that target; the argument layout
        # (everything above but the binary) is the same in all of them.
        self.images: dict[Target, CompiledKernel] = {
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
        if not compiled.reductions:  # (reduction kernels add theirs after these)
            if compiled.index.kind == "range":
                dts.extend([np.int64] * compiled.index.ndim)  # the user's range
            if compiled.bounds_checked or compiled.asserts:
                dts.append(None)  # the error buffer
        self.arg_dtypes = dts
        self.arg_kinds = kinds
        self.has_spec = ArgKind.SPEC_CONSTANT in kinds
        self.has_local = ArgKind.LOCAL_ACCESSOR in kinds
        self.has_pointer = ArgKind.POINTER in kinds
        # kernel print() or a sycl.stream: output buffers per launch (pysycl._kernels.kprint)
        self.prints = any(type(c.type) in (PrintType, StreamType) for c in compiled.captures)
        self.direct, self.direct_rest = fast_checks(compiled.direct_index, kinds)
        # asserts: the launch binds an error buffer and reports a failure (pysycl._kernels.bounds)
        self.asserts = bool(compiled.asserts)
        # kernel properties (pysycl._kernels.kprops), None when it has none: each launch checks
        self.props = compiled.properties if any(compiled.properties) else None
        # id of a submitting code object -> (it, the code table its sites resolve against)
        self.codes: dict[int, tuple[types.CodeType, tuple[types.CodeType, ...]]] = {}

    @property
    def where(self) -> str:
        """``kernel NAME (file:line)`` for messages."""
        return f"kernel {self.name} ({self.compiled.source_location})"

    def named(self, name: str | None) -> str:
        """:attr:`where`, under the ``kernel_name`` of this submit when there is one (the
        compiled kernel may be shared by several names)."""
        return self.where if name is None else f"kernel {name} ({self.compiled.source_location})"




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
             target: Target = SPIRV) -> CompiledKernel:
    """The runtime's one call into the compiler (imported here, on first use: no Numba before)."""
    compile_kernel = load_compiler().compile_kernel
    return compile_kernel(detached(fn, captures), index, captures, entry_name=entry,
                          reductions=reductions, bounds_check=bounds_check,
                          helpers=call_graph(fn), image_format=target[0], arch=target[1])


def target_of(dev: device) -> Target:
    """The image target Python kernels compile to for ``dev`` (SPIR-V when it loads none:
    :func:`check_device` then says why the kernel cannot run there)."""
    t = dev.image_targets
    return t[0] if t else SPIRV


def target_digest(digest: str, target: Target) -> str:
    """The disk-cache digest of a kernel's image for ``target`` (SPIR-V: ``digest`` itself)."""
    if target == SPIRV:
        return digest
    return hashlib.sha256(f"{digest}:{target[0]}:{target[1]}".encode()).hexdigest()


def check_device(k: Kernel, dev: device, name: str | None = None) -> None:
    """Raise ``errc.kernel_not_supported`` unless ``dev`` can run ``k`` (before anything runs);
    the message names ``name`` (the submit's ``kernel_name``) when given."""
    from pysycl._objects.aspects import aspect

    missing = [name for name in sorted(k.compiled.required_aspects)
               if not dev.has(getattr(aspect, name))]
    if missing:
        raise exception(
            errc.kernel_not_supported,
            f"{k.named(name)} needs {', '.join('aspect.' + m for m in missing)}, which device "
            f"{dev.display_name!r} does not have (float16 needs fp16, float64 and Python floats "
            "need fp64)")
    if not dev.image_targets:
        raise exception(
            errc.kernel_not_supported,
            f"{k.named(name)} is a Python kernel, but device {dev.display_name!r} loads neither SPIR-V "
            "(no OpenCL IL support; PoCL from PyPI is such a device) nor PTX (an NVIDIA GPU). "
            "Run it on a device with aspect.ext_pysycl_spirv or aspect.ext_pysycl_ptx, e.g. "
            "sycl.queue(sycl.aspect_selector(sycl.aspect.ext_pysycl_spirv)).")


class KernelCache:
    """Compiled kernels by launcher key, in memory and on disk, with counters.

    Counters (:attr:`stats`): ``compiles`` (compiler runs), ``memory_hits``,
    ``disk_hits``, ``disk_writes``, ``cl_builds`` (OpenCL builds of its kernels, counted by the
    backend's program cache).
    """

    def __init__(self) -> None:
        self.memory: dict[Hashable, Kernel] = {}
        #: bumped when the memory is cleared (launch plans of ``_commands.fastpath`` check it)
        self.generation = 0
        self.stats = {"compiles": 0, "memory_hits": 0, "disk_hits": 0, "disk_writes": 0,
                      "cl_builds": 0, "native_hits": 0, "native_writes": 0}
        self._flights: dict[Hashable, threading.Lock] = {}
        self._flights_lock = threading.Lock()

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
                target: Target = SPIRV) -> CompiledKernel:
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
                        bounds_check: bool = False, target: Target = SPIRV) -> Kernel:
        """The kernel of ``digest`` with its image for ``target``: from the disk cache,
        else compiled."""
        return Kernel(self.load_or_compile_image(digest, fn, index, captures, name,
                                                 bounds_check, target), name, digest)

    def load_or_compile_image(self, digest: str, fn: types.FunctionType, index: IndexSpace,
                              captures: tuple[Capture, ...], name: str, bounds_check: bool,
                              target: Target,
                              reductions: tuple[tuple[ReductionType, Callable[..., Any]], ...]
                              = ()) -> CompiledKernel:
        """One image of the kernel ``digest``: from the disk cache, else compiled."""
        with first_use(f"kernel {name}: disk cache or compiler"):
            return self._load_or_compile_image(digest, fn, index, captures, name, bounds_check,
                                               target, reductions)

    def _load_or_compile_image(self, digest: str, fn: types.FunctionType, index: IndexSpace,
                               captures: tuple[Capture, ...], name: str, bounds_check: bool,
                               target: Target,
                               reductions: tuple[tuple[ReductionType, Callable[..., Any]], ...]
                               ) -> CompiledKernel:
        warn_breakpoints(fn, name)  # once per line: the kernel reaches a compiled device
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

    def target_image(self, k: Kernel, target: Target, fn: types.FunctionType | None,
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


#: The process's kernel cache.
kernels = KernelCache()


_R = TypeVar("_R")


def kernel_record(table: dict[int, _R], k: Kernel, make: Callable[[], _R]) -> _R:
    """``k``'s record in a backend's ``table`` (by ``id(k)``): made on first use, dropped when
    ``k`` goes; two threads at once both get the one record kept."""
    r = table.get(id(k))
    if r is None:
        new = make()
        r = table.setdefault(id(k), new)
        if r is new:
            weakref.finalize(k, table.pop, id(k), None).atexit = False
    return r

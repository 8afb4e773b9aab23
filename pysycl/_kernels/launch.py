"""From a recorded kernel command to an enqueued OpenCL kernel.

The submit hot path: read the kernel's captured values (closure cells and
module globals it loads, and those of the helpers it calls) and type-key them
(:mod:`pysycl._kernels.captures`), look the key up in memory, flatten the values into
OpenCL arguments, enqueue. The per-``__code__`` analysis (which names are
captured, from where) is done once; a command group that creates a fresh lambda
object on every submit hits the same cache entry.

Cache levels (see docs/design/caching.md):

1. memory: ``(code object, capture types, index kind, ndim)`` → compiled kernel,
   plus one ``cl_kernel`` per (context, device);
2. disk: a stable digest of the same key (:func:`pysycl._kernels.captures.stable_digest`:
   the code of the kernel and its helpers, capture types, compile-time constants,
   index space, tool versions) → SPIR-V (see :mod:`pysycl._kernels.diskcache`); a hit
   skips Numba entirely;
3. the compiler (``pysycl_numba``), imported on first use.
"""

from __future__ import annotations

import builtins
import dataclasses
import hashlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from pysycl._bundles import bundle as _bundle
from pysycl._bundles import kernel as _kernel
from pysycl._bundles import kernel_id as _kernel_id
from pysycl._core.abi import (
    AccessorType,
    CompiledKernel,
    IndexSpace,
    ScalarType,
    SpecConstantType,
    detached,
    source_location,
)
from pysycl._core.exceptions import errc, exception
from pysycl._kernels import bounds as _bounds
from pysycl._kernels import diskcache as _diskcache
from pysycl._kernels import specconst as _specconst
from pysycl._kernels.captures import (  # noqa: F401 - also used as _launch.X by other modules
    _capture_values,
    _classify,
    _code_infos,
    _CodeInfo,
    _hash_static,
    _walk_helpers,
    call_graph,
    captures_of,
    stable_digest,
)

_log = logging.getLogger("pysycl.kernel")
_sycl_kernel = _kernel.kernel

#: Counters proving what the cache did (``pysycl.ext.kernel_cache_stats()``).
stats = {"compiles": 0, "memory_hits": 0, "disk_hits": 0, "disk_writes": 0, "cl_builds": 0}

class _Kernel:
    """A compiled kernel and its per-(context, device) OpenCL kernel objects."""

    __slots__ = ("acc_slots", "arg_dtypes", "compiled", "direct", "direct_rest", "kernels", "name")

    def __init__(self, compiled: CompiledKernel, name: str) -> None:
        self.compiled = compiled
        self.name = name
        dts: list[Any] = []
        # 0: scalar, 1: global/2: local accessor, 3: spec id (no arg), 4: several scalars
        slots: list[int] = []
        for c in compiled.captures:
            t = c.type
            if isinstance(t, SpecConstantType):
                slots.append(3)
            elif isinstance(t, AccessorType):
                dts.append(None)
                dts.extend([np.int64] * (t.flat_arg_count() - 1))
                slots.append(2 if t.space == "local" else 1)
            else:
                fd = t.flat_dtypes()
                dts.extend(fd)
                slots.append(0 if isinstance(t, ScalarType) and len(fd) == 1 else 4)
        if compiled.bounds_checked and not compiled.reductions:
            dts.append(None)  # the error buffer (reduction kernels add it after theirs)
        self.arg_dtypes = dts
        self.acc_slots = tuple(slots)
        # The static bounds check's entries (pysycl._kernels.bounds.fast_checks).
        self.direct, self.direct_rest = _bounds.fast_checks(compiled.direct_index, self.acc_slots)
        self.kernels: dict[tuple[Any, Any], Any] = {}


_kernels: dict[tuple[Any, ...], _Kernel] = {}
_flights: dict[Any, threading.Lock] = {}
_flights_lock = threading.Lock()
T = TypeVar("T")


def once(cache: dict[Any, T], key: Any, make: Callable[[], T]) -> T:
    """``cache[key]``, made by ``make()`` exactly once however many threads ask at once.

    Threads that miss the same key together wait for the first one's compile
    instead of compiling again; if it fails, the next waiter tries (and gets its
    own error).
    """
    with _flights_lock:
        v = cache.get(key)
        if v is not None:
            return v
        lock = _flights.setdefault(key, threading.Lock())
    try:
        with lock:
            v = cache.get(key)
            if v is None:
                v = cache[key] = make()
            return v
    finally:
        with _flights_lock:
            if _flights.get(key) is lock and key in cache:
                del _flights[key]


def prepare(q: Any, h: Any, cmd: Any) -> Callable[[Any], Any]:
    """Compile/build as needed and return ``launch(wait_for) -> cl event``.

    Everything that can fail for a user mistake happens here, before the
    scheduler moves any data.
    """
    kind, ndim, index_space, fn, reductions, kernel_name = (
        cmd.kind, cmd.ndim, cmd.index_space, cmd.fn, cmd.reductions, cmd.name)
    if reductions:  # sycl.reduction arguments: a kernel plus a combine step
        from pysycl._kernels import reduction as _reduction

        return _reduction.prepare(q, h, cmd)
    if type(fn) is _sycl_kernel:  # a sycl.kernel object (source/interop) with set_arg arguments
        return _kernel.prepare_interop(q, h, cmd)
    info, values, caps, tkey = _capture_values(fn, h)
    mkey = (info.code, tkey, kind, ndim)
    kb = h._bundle
    checked = kb is None and _bounds.enabled()  # bounds-checked mode: another compiled kernel
    if kb is not None:  # use_kernel_bundle: the kernel comes from the bundle, never compiled
        k, bclk = _bundle.launch_kernel(kb, mkey, q._ctx, q._dev, fn)
    else:
        k = _kernels.get(mkey if not checked else (*mkey, _CHECKED))
    if k is None:
        k = once(_kernels, mkey if not checked else (*mkey, _CHECKED),
                 lambda: _load_or_compile(fn, info, caps, tkey, IndexSpace(kind, ndim),
                                          kernel_name, checked))
        # bundles never get a bounds-checked kernel: register the plain variant
        _kernel_id.register_submitted(None if checked else k, fn, kernel_name, mkey,
                                      IndexSpace(kind, ndim), caps, tkey)
    else:
        stats["memory_hits"] += 1
        if kernel_name is not None and not _kernel_id.is_registered(kernel_name, mkey):
            # the same code submitted under another name: its own kernel_id, same code
            _kernel_id.register_submitted(None if checked else k, fn, kernel_name, mkey,
                                          IndexSpace(kind, ndim), caps, tkey)
    dev = q._dev
    ctx = q._ctx
    ckey: tuple[Any, ...] = (ctx._handle, dev._handle)
    spec = None
    if kb is None and 3 in k.acc_slots:  # spec constants: one build per set of values
        spec = _specconst.values_for([v for v, s in zip(values, k.acc_slots, strict=False) if s == 3],
                                     h._spec)
        ckey += _specconst.value_key(spec)
    clk = k.kernels.get(ckey) if kb is None else bclk
    if clk is None:
        clk = k.kernels[ckey] = _build(k, ctx, dev, spec)
    acc_slots = k.acc_slots
    x = _cl_exec()
    if kind == "range":
        gsize = index_space._v[::-1]  # SYCL dim 0 is the slowest: OpenCL's last
        lsize = None
    elif kind == "single_task":
        gsize, lsize = (1,), None
    else:
        gsize, lsize = _ndrange_sizes(k, dev, clk, index_space, values, acc_slots)
    direct = k.direct
    if direct or k.direct_rest:  # the static bounds check: a few int compares
        g = index_space._v if kind == "range" else index_space._global._v
        for ci, t, d in direct:
            if g[d] > values[ci]._tail[t]:
                break
        else:
            if not k.direct_rest:
                g = None
        if g is not None:  # a violation, or entries only the full check knows
            _bounds.check_launch(k, info.location, info.code.co_filename, g,
                                 None if kind == "range" else index_space._local._v, values)
    if checked:
        ranges = [v._range if s in (1, 2) else None for v, s in zip(values, acc_slots,
                                                                    strict=False)]
    if 2 in acc_slots:
        if kind != "nd_range":
            raise exception(errc.kernel_argument, f"kernel {k.name} "
                            f"({k.compiled.source_location}) captures a sycl.local_accessor, but "
                            "local memory exists only in nd_range kernels: launch it with "
                            "h.parallel_for(sycl.nd_range(global_range, local_range), kernel)")
        values = [(x.local_memory(v.byte_size()), v._tail()) if s == 2 else v
                  for v, s in zip(values, acc_slots, strict=False)]
    clq = q._clq
    key = ctx._handle
    if checked:
        return _checked_launch(q, k, info.location, _bounds.files_of(fn), ranges,
                               max(ndim, 1), clk, gsize, lsize, values)

    def launch(wait_for: Any) -> Any:
        if 0 in gsize:
            return x.marker(clq, wait_for=wait_for)  # an empty range runs no work-item
        return x.launch(clq, clk, gsize, lsize, flat_args(values, acc_slots, key), wait_for)

    return launch


_CHECKED = "bounds_check"  # the memory-cache key's suffix in bounds-checked mode


def _checked_launch(q: Any, k: _Kernel, location: str, files: dict[int, str],
                    ranges: list[Any], ndim: int, clk: Any, gsize: tuple[int, ...],
                    lsize: tuple[int, ...] | None, values: list[Any]) -> Callable[[Any], Any]:
    """``launch(wait_for)`` of a bounds-checked kernel: an error buffer, read back after it."""
    x = _cl_exec()
    clq, ctx, acc_slots = q._clq, q._ctx, k.acc_slots

    def launch(wait_for: Any) -> Any:
        if 0 in gsize:
            return x.marker(clq, wait_for=wait_for)
        buf, host = _bounds.error_buffer(x, ctx, clq)
        args = flat_args(values, acc_slots, ctx._handle)
        args.append(buf)
        ev = x.launch(clq, clk, gsize, lsize, args, wait_for)
        _bounds.watch(x, _bounds._Watch(q, k, location, files, values, ranges, ndim, buf, host),
                      clq, ev)
        return ev

    return launch


def flat_args(values: list[Any], acc_slots: tuple[int, ...], key: int) -> list[Any]:
    """The OpenCL arguments of captured ``values`` (see ``_kernel_abi``) in context ``key``.

    Slots: 0 scalar, 1 accessor (its cl buffer, then offset and ranges), 2 local
    accessor (``(cl.LocalMemory, ranges)``), 3 specialization id (no argument),
    4 a sequence of scalars (a complex number's real and imaginary part, a
    tuple's elements).
    """
    args: list[Any] = []
    for v, slot in zip(values, acc_slots, strict=False):
        if slot == 1:
            args.append(v._buf._storage.dev[key])
            args.extend(v._tail)
        elif slot == 2:
            args.append(v[0])
            args.extend(v[1])
        elif slot == 0:
            args.append(v)
        elif slot == 4:
            args.extend(v)
    return args


def _ndrange_sizes(k: _Kernel, dev: Any, clk: Any, nd: Any, values: list[Any],
                   acc_slots: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """OpenCL global and local sizes of an nd_range launch, validated (§4.9.4.2.2)."""
    lim = _dev_limits(dev, clk)
    local_bytes = sum(v.byte_size() for v, s in zip(values, acc_slots, strict=False) if s == 2)

    def describe(what: str) -> str:  # built only when a check fails
        if what == "where":
            return f"kernel {k.name} ({k.compiled.source_location})"
        if what == "wg":
            return (f"the {lim[0]} this kernel can have on {_dev_name(dev)!r} "
                    "(info.device.max_work_group_size and the kernel's own limit); use a "
                    "smaller local range")
        return (f"the {lim[2]} bytes device {_dev_name(dev)!r} has (info.device.local_mem_size, "
                "less what the kernel itself uses); use smaller local accessors or work-groups")

    check_nd_range(nd, lim[0], lim[1], local_bytes, lim[2], describe)
    return tuple(nd._global)[::-1], tuple(nd._local)[::-1]


def check_nd_range(nd: Any, max_wg: int, item_caps: tuple[int, ...] | None, local_bytes: int,
                   local_limit: int, describe: Callable[[str], str]) -> None:
    """The launch checks of an nd_range (§4.9.4.2.2), for any device.

    Args:
        nd: the ``sycl.nd_range``.
        max_wg: the largest work-group (the device's, and the kernel's own limit).
        item_caps: max work-item sizes in OpenCL order, or None when unlimited.
        local_bytes: local memory the kernel's local accessors need per work-group.
        local_limit: local memory available per work-group.
        describe: texts for the messages, asked for only on failure: ``"where"``
            (the kernel), ``"wg"`` (the work-group limit), ``"mem"`` (the memory limit).

    Raises:
        exception: ``errc.nd_range`` (``errc.feature_not_supported`` for offsets).
    """
    g, loc = tuple(nd._global), tuple(nd._local)
    if any(nd._offset):
        raise exception(errc.feature_not_supported, f"{describe('where')}: nd_range offsets "
                        "(deprecated in SYCL 2020) are not supported by pysycl; add the offset "
                        "to the ids")
    if 0 in loc:
        raise exception(errc.nd_range, f"{describe('where')}: the local range {loc} has a zero "
                        "extent; every work-group needs at least one work-item")
    bad = [d for d in builtins.range(len(g)) if g[d] % loc[d]]
    if bad:
        d = bad[0]
        raise exception(errc.nd_range, f"{describe('where')}: global range {g} is not a multiple "
                        f"of the local range {loc} in dimension {d} ({g[d]} % {loc[d]} != 0); "
                        "round the global range up to a multiple and skip the extra work-items "
                        "in the kernel")
    size = 1
    for e in loc:
        size *= e
    if size > max_wg:
        raise exception(errc.nd_range, f"{describe('where')}: a work-group of {loc} = {size} "
                        f"work-items exceeds {describe('wg')}")
    if item_caps is not None:
        n = len(loc)
        for d in builtins.range(n):
            cap = item_caps[n - 1 - d]  # SYCL dimension d is OpenCL dimension n-1-d
            if loc[d] > cap:
                raise exception(errc.nd_range, f"{describe('where')}: local range {loc} exceeds "
                                f"the device's max_work_item_sizes in dimension {d} "
                                f"({loc[d]} > {cap})")
    if local_bytes > local_limit:
        raise exception(errc.nd_range, f"{describe('where')}: its local accessors need "
                        f"{local_bytes} bytes of local memory per work-group, more than "
                        f"{describe('mem')}")


_limits: dict[tuple[Any, Any], tuple[int, tuple[int, ...], int]] = {}


def _dev_limits(dev: Any, clk: Any) -> tuple[int, tuple[int, ...], int]:
    """(max work-group size, max work-item sizes in OpenCL order, free local memory bytes)."""
    key = (dev._handle, id(clk))
    lim = _limits.get(key)
    if lim is None:
        lim = _limits[key] = _cl_exec().kernel_limits(clk, dev._cl)
    return lim


_cl_mod: list[Any] = []


def _cl_exec() -> Any:
    if not _cl_mod:
        from pysycl._backends.opencl import exec as x

        _cl_mod.append(x)
    return _cl_mod[0]


def _dev_name(dev: Any) -> str:
    return dev._name()


def _check_device(k: _Kernel, dev: Any) -> None:
    """Raise ``errc.kernel_not_supported`` unless ``dev`` can run ``k`` (before anything runs)."""
    from pysycl._objects.aspects import aspect

    missing = [name for name in sorted(k.compiled.required_aspects)
               if not dev.has(getattr(aspect, name))]
    if missing:
        raise exception(
            errc.kernel_not_supported,
            f"kernel {k.name} ({k.compiled.source_location}) needs "
            f"{', '.join('aspect.' + m for m in missing)}, which device {_dev_name(dev)!r} "
            "does not have (float16 needs fp16, float64 and Python floats need fp64)")
    if k.compiled.format == "spirv" and not dev.has(aspect.ext_pysycl_spirv):
        raise exception(
            errc.kernel_not_supported,
            f"kernel {k.name} ({k.compiled.source_location}) is a SPIR-V device image, but device "
            f"{_dev_name(dev)!r} cannot load SPIR-V (no OpenCL IL support; PoCL from PyPI is "
            "such a device). Run it on a device with aspect.ext_pysycl_spirv, e.g. "
            "sycl.queue(sycl.aspect_selector(sycl.aspect.ext_pysycl_spirv)).")


def _build(k: _Kernel, ctx: Any, dev: Any, spec: tuple[Any, ...] | None = None) -> Any:
    from pysycl._backends.opencl import exec as x

    _check_device(k, dev)
    t0 = time.perf_counter()
    if spec is None:
        prg = x.build_il(ctx._cl, [dev._cl], k.compiled.binary)
        clk = x.create_kernel(prg, k.compiled.entry, k.arg_dtypes)
    else:  # specialization constant values applied to the SPIR-V module (no Numba)
        clk = _specconst.build_for(k, ctx, dev, spec)
    stats["cl_builds"] += 1
    _log.info("built kernel %s for %s in %.1f ms", k.name, _dev_name(dev),
              1e3 * (time.perf_counter() - t0))
    return clk


def _load_or_compile(fn: Any, info: _CodeInfo, caps: list[Any], tkey: tuple[Any, ...],
                     index: IndexSpace, kernel_name: str | None,
                     bounds_check: bool = False) -> _Kernel:
    captures = captures_of(caps)
    digest = stable_digest(fn, captures, tkey, index)
    if bounds_check:  # another module: another disk-cache entry
        digest = hashlib.sha256(f"{digest}:{_CHECKED}".encode()).hexdigest()
    name = kernel_name or fn.__qualname__
    entry = "pysycl_" + digest[:24]
    compiled = disk_load(digest, fn)
    if compiled is not None and compiled.captures == captures \
            and compiled.bounds_checked == bounds_check:
        stats["disk_hits"] += 1
        _log.debug("kernel %s: disk cache hit %s", name, digest[:16])
        return _Kernel(compiled, name)
    t0 = time.perf_counter()
    from pysycl_numba import compile_kernel  # the compiler loads on first use

    compiled = compile_kernel(detached(fn, captures), index, captures, entry_name=entry,
                              bounds_check=bounds_check, helpers=call_graph(fn))
    stats["compiles"] += 1
    _log.info("compiled kernel %s (%s) in %.1f ms", name, info.location,
              1e3 * (time.perf_counter() - t0))
    if _diskcache.store(digest, compiled):
        stats["disk_writes"] += 1
    return _Kernel(compiled, name)


def disk_load(digest: str, fn: Any) -> CompiledKernel | None:
    """The disk-cached kernel ``digest`` with *this* submitter's source location.

    An entry may have been written by another program whose kernel had the same
    bytecode: messages must name the file:line of the function being submitted,
    never what the cache remembers.
    """
    compiled = _diskcache.load(digest)
    if compiled is None:
        return None
    here = source_location(fn)
    if compiled.source_location == here:
        return compiled
    return dataclasses.replace(compiled, source_location=here)


def reset_stats() -> None:
    """Zero the cache counters."""
    for k in stats:
        stats[k] = 0


def clear_memory_cache() -> None:
    """Forget every compiled kernel held in memory (the disk cache stays)."""
    _kernels.clear()
    _code_infos.clear()


"""Native kernels of compiled Python kernels: the OpenCL backend's program cache.

docs/design/launch.md §2.4: :mod:`pysycl._kernels.cache` makes device images
(SPIR-V, PTX) of a :class:`~pysycl._kernels.cache.Kernel`; this module turns an
image into a built ``cl_kernel`` for one context and device, once
(:class:`ProgramCache`), and keeps what belongs to a native kernel object:

* the built kernels of each ``Kernel`` by (context key, device key[, spec-constant
  values][, PTX launch bound]) -- they go when their context does
  (:meth:`ProgramCache.watch_context`) or their ``Kernel`` does;
* the arguments each native kernel was last launched with (``last``: a launch with
  the same ones does not set them again; a freed buffer is dropped from them first,
  :meth:`ProgramCache.forget_memory`, so they never keep memory alive);
* device limits of a built kernel (:meth:`ProgramCache.limits`) and the PTX variant
  built with a launch bound for wide work-groups (:meth:`ProgramCache.bounded`).

The executor answers for it (``ex.build``, ``ex.last_args``, ``ex.kernel_limits``,
``ex.bounded_kernel``): nothing above the backend names a ``cl.Kernel``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import time
import weakref
from collections.abc import Callable, Hashable, Sequence
from math import prod
from typing import TYPE_CHECKING, Any

import numpy as np

from pysycl._backends.opencl import exec as x
from pysycl._backends.opencl import programs as clp
from pysycl._core.exceptions import errc, exception
from pysycl._core.first_use import first_use
from pysycl._kernels import bincache as _bincache
from pysycl._kernels import specconst as _specconst
from pysycl._kernels import steps as _steps
from pysycl._kernels.cache import check_device, kernel_record, kernels
from pysycl._kernels.ptx_bounds import launch_bound, with_launch_bound
from pysycl._objects.info import _device_info

if TYPE_CHECKING:
    import types

    import pyopencl as cl

    from pysycl._core.abi import CompiledKernel
    from pysycl._kernels.cache import Kernel
    from pysycl._objects.context import context
    from pysycl._objects.device import device
    from pysycl._objects.range import nd_range


_log = logging.getLogger("pysycl.kernel")

#: (max work-group size, max work-item sizes in OpenCL order, free local memory bytes)
Limits = tuple[int, tuple[int, ...], int]


class Builds:
    """What the backend holds for one :class:`Kernel`: its built kernels and their last
    arguments."""

    __slots__ = ("last", "natives")

    def __init__(self) -> None:
        #: (context key, device key[, spec values][, "maxntid", n]) -> built ``cl_kernel``
        self.natives: dict[tuple[Hashable, ...], cl.Kernel] = {}
        #: ``cl_kernel`` -> the arguments it was last launched with (``Launch.enqueue``)
        self.last: dict[cl.Kernel, list[Any]] = {}


class ProgramCache:
    """Built ``cl_kernel`` objects of compiled kernels, per context and device.

    Counts into the kernel cache's counters (``cl_builds``, ``native_hits``,
    ``native_writes``: what ``sycl.ext.kernel_cache_stats()`` reports).
    """

    def __init__(self) -> None:
        self.stats = kernels.stats
        #: ``id(Kernel)`` -> its builds; the entry goes when the kernel does
        self.by_kernel: dict[int, Builds] = {}
        #: context key -> the finalizer that drops its builds when the context goes
        self._watched: dict[int, weakref.finalize] = {}
        #: (device key, id(cl_kernel)) -> its limits (:meth:`limits`)
        self._limits: dict[tuple[Hashable, int], Limits] = {}

    def builds(self, k: Kernel) -> Builds:
        """``k``'s record (made on first use; dropped when ``k`` goes)."""
        return kernel_record(self.by_kernel, k, Builds)

    def kernel(self, k: Kernel, ctx: context, dev: device,
               spec: tuple[np.generic | None, ...] | None = None,
               fn: types.FunctionType | None = None, name: str | None = None,
               launch_bound: int = 0) -> cl.Kernel:
        """``k``'s ``cl_kernel`` for (``ctx``, ``dev``[, ``spec`` values][, ``launch_bound``]),
        built once (from the image for ``dev``'s target; a PTX image with ``.maxntid
        launch_bound``: :mod:`pysycl._kernels.ptx_bounds`); errors name ``name`` (the
        submit's ``kernel_name``) when given."""
        key: tuple[Hashable, ...] = (ctx.key, dev.key)
        if spec is not None:
            key += _specconst.value_key(spec)
        if launch_bound:
            key += ("maxntid", launch_bound)
        natives = self.builds(k).natives
        clk = natives.get(key)
        if clk is None:
            with first_use(f"kernel {k.name}: build for {dev.display_name}"):
                clk = natives[key] = self._build(k, ctx, dev, spec, fn, name, launch_bound)
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
        self._watched.pop(key, None)
        dropped = []
        for b in list(self.by_kernel.values()):
            built, last = b.natives, b.last
            for bkey in [bk for bk in list(built) if bk[0] == key]:
                clk = built.pop(bkey, None)
                if clk is not None:
                    dropped.append(clk)
                    last.pop(clk, None)
            for clk in list(last):  # a kernel bundle's kernels of that context
                if clp.handle(clp.kernel_context(clk)) == key:
                    last.pop(clk, None)
        if dropped and self._limits:  # their ids may be reused
            ids = {id(c) for c in dropped}
            for lkey in [lk for lk in self._limits if lk[1] in ids]:
                self._limits.pop(lkey, None)
        _steps.forget_context(key)
        if dropped:
            _log.debug("context %#x is gone: dropped %d built kernels", key, len(dropped))

    def forget_memory(self, mems: tuple[Any, ...]) -> None:
        """Drop the remembered arguments that hold any of ``mems``.

        Called before a buffer's device copy is freed, so that no kernel keeps it
        allocated until its next launch. The next launch of such a kernel sets its
        arguments again.
        """
        ids = {id(m) for m in mems}
        for b in list(self.by_kernel.values()):
            last = b.last
            if last:
                for clk, args in list(last.items()):
                    if any(id(a) in ids for a in args):
                        last.pop(clk, None)

    # --- limits
    def limits(self, dev: device, clk: cl.Kernel) -> Limits:
        """(max work-group size, max work-item sizes in OpenCL order, free local memory bytes)."""
        key = (dev.key, id(clk))
        lim = self._limits.get(key)
        if lim is None:
            lim = self._limits[key] = x.kernel_limits(clk, dev.native)
        return lim

    def bounded(self, k: Kernel, dev: device, clk: cl.Kernel, nd: nd_range,
                build: Callable[[int], cl.Kernel] | None) -> cl.Kernel:
        """``clk``, or for a PTX image and a work-group wider than ``clk`` may run, the
        kernel built with a launch bound that fits it (``build(bound)``).

        NVIDIA's driver promises 256 work-items to any kernel without a bound; built
        with ``.maxntid N`` the kernel runs N wide (its limit, for :meth:`limits`, is
        N). Other targets, and kernels of a bundle (``build`` None), keep ``clk``.
        """
        t = dev.image_targets
        if build is None or not t or t[0][0] != "ptx":  # first: the CPU's submits pay only this
            return clk
        size = prod(nd.get_local_range().values)
        if size <= self.limits(dev, clk)[0]:
            return clk
        n = launch_bound(size, int(dev.get_info(_device_info.max_work_group_size)))
        try:
            wide = build(n)
        except exception as e:
            raise exception(errc.nd_range, f"{k.where}: a work-group of {size} work-items needs "
                            f"the kernel built with the launch bound .maxntid {n}, and the driver "
                            f"could not build it: {e}") from e
        lim = self.limits(dev, wide)
        if lim[0] != n:
            self._limits[(dev.key, id(wide))] = (n, lim[1], lim[2])
        return wide

    # --- building
    def _build(self, k: Kernel, ctx: context, dev: device,
               spec: tuple[np.generic | None, ...] | None,
               fn: types.FunctionType | None, name: str | None = None,
               launch_bound: int = 0) -> cl.Kernel:
        check_device(k, dev, name)
        self.watch_context(ctx)
        img = kernels.image(k, dev, fn, name)
        if launch_bound:  # a PTX image, for work-groups wider than the driver promises
            try:
                bounded = with_launch_bound(img.binary, img.entry, launch_bound)
            except ValueError as e:
                raise exception(errc.build, f"{k.where}: {e}") from e
            img = dataclasses.replace(img, binary=bounded)
        t0 = time.perf_counter()
        if spec is not None:  # specialization constant values applied to the image (no Numba)
            clk = _build_with_values(k, img, ctx, dev, spec)
        else:
            clk = x.create_kernel(self._program(img, ctx, dev), img.entry, k.arg_dtypes)
        self.stats["cl_builds"] += 1
        _log.info("built kernel %s for %s in %.1f ms", k.name, dev.display_name,
                  1e3 * (time.perf_counter() - t0))
        return clk

    def _program(self, img: CompiledKernel, ctx: context, dev: device) -> cl.Program:
        """The built program of ``img`` for ``dev``: from the device-binary cache when the
        driver built it before (no device compiler), else built and its binary stored."""
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


def _build_with_values(k: Kernel, img: CompiledKernel, ctx: context, dev: device,
                       values: Sequence[np.generic | None]) -> cl.Kernel:
    """Build ``k``'s image ``img`` for ``dev`` with spec values ``values``; its ``cl_kernel``
    (:mod:`pysycl._kernels.specconst`: native or emulated; PTX: the ``.const``
    initializers)."""
    if img.format == "ptx":  # always emulated: the values are the .const initializers
        prg = x.build_ptx(ctx.native, [dev.native], _specconst.ptx_for(img.binary, values))
        return x.create_kernel(prg, img.entry, k.arg_dtypes)
    raw = _specconst.program_for(clp, ctx.native, [dev], img.binary, values)
    clp.build_program(raw, [dev.native], "")
    return x.create_kernel(clp.wrap_program(raw), img.entry, k.arg_dtypes)


#: The process's built kernels (every OpenCL executor's).
builds = ProgramCache()

"""Built kernels of the CUDA backend: a Python kernel's PTX image as a ``CUfunction``.

The image is the PTX NVIDIA's OpenCL loads too (``("ptx", "sm_XY")``), in which a local
accessor is a ``.ptr .shared`` kernel parameter -- OpenCL's ``__local`` argument, whose
memory the OpenCL runtime provides. The driver API has no such parameters (a module with
them is ``CUDA_ERROR_INVALID_IMAGE``), so :func:`for_driver` rewrites them: each becomes a
plain ``.u64`` parameter carrying an *offset* into the kernel's one block of dynamic shared
memory (``.extern .shared __pysycl_dyn[]``), and the address is formed where the kernel
loads the parameter. The launch passes the offsets and the block's size
(:mod:`pysycl._backends.cuda.launch`).

The rewritten PTX goes through the driver's JIT linker (``cuLinkCreate`` ..
``cuLinkComplete``) once; the cubin is kept in the device-binary cache
(:mod:`pysycl._kernels.bincache`: plain bytes, integrity-checked, private, atomic) keyed
by the PTX digest, the architecture and the driver version, so a warm process loads it
with ``cuModuleLoadData`` and runs neither Numba, LLVM nor the assembler.
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from pysycl._backends.cuda import driver as d
from pysycl._backends.cuda.driver import cu
from pysycl._backends.cuda.objects import make_current, primary_context
from pysycl._core.exceptions import errc, exception
from pysycl._core.first_use import first_use
from pysycl._kernels import bincache as _bincache
from pysycl._kernels import specconst as _specconst
from pysycl._kernels.cache import check_device, kernel_record, kernels
from pysycl._kernels.ptx_bounds import with_launch_bound

if TYPE_CHECKING:
    import types

    import numpy as np

    from pysycl._kernels.cache import Kernel
    from pysycl._objects.context import context
    from pysycl._objects.device import device

_log = logging.getLogger("pysycl.kernel")

_SHARED_PARAM = re.compile(r"\.param \.u64 \.ptr \.shared \.align \d+ (\w+)")
_ENTRY = re.compile(r"\n(\.visible )?\.entry (\w+)\(")
DYN = "__pysycl_dyn"
_LOG_BYTES = 1 << 14


def for_driver(ptx: bytes) -> bytes:
    """``ptx`` with its ``.ptr .shared`` parameters as offsets into dynamic shared memory."""
    text = ptx.decode()
    names = _SHARED_PARAM.findall(text)
    if not names:
        return ptx
    text = _SHARED_PARAM.sub(lambda m: f".param .u64 {m.group(1)}", text)
    m = _ENTRY.search(text)
    if m is None:
        raise exception(errc.build, "pysycl: a PTX image without an entry point")
    text = (text[:m.start()] + f"\n.extern .shared .align 1024 .b8 {DYN}[];\n"
            + text[m.start():])
    for nm in names:
        load = re.compile(r"(ld\.param\.(?:b64|u64)\s+(%rd\d+),\s*\[" + re.escape(nm) + r"\];)")
        text = load.sub(lambda m: (m.group(1) + "\n\t{ .reg .b64 %dyn; mov.u64 %dyn, " + DYN
                                   + "; add.s64 " + m.group(2) + ", " + m.group(2)
                                   + ", %dyn; }"), text)
    return text.encode()


def jit_link(ptx: bytes, name: str, options: tuple[tuple[str, int], ...] = (),
             log: list[str] | None = None) -> bytes:
    """The cubin of ``ptx`` for the current context's device (the driver's JIT linker);
    ``errc.build`` with the JIT's error log when it refuses the PTX. ``options``: more JIT
    options by ``CUjit_option`` name (:func:`pysycl._backends.cuda.programs.jit_options`);
    ``log``: the JIT's info log is appended to it."""
    info, err = bytearray(_LOG_BYTES), bytearray(_LOG_BYTES)
    o = cu.CUjit_option
    opts = [o.CU_JIT_INFO_LOG_BUFFER, o.CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
            o.CU_JIT_ERROR_LOG_BUFFER, o.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES]
    values: list[Any] = [info, _LOG_BYTES, err, _LOG_BYTES]
    for nm, v in options:
        opts.append(getattr(o, nm))
        values.append(v)
    state = d.call(cu.cuLinkCreate, len(opts), opts, values)
    try:
        data = ptx + b"\0"
        r = cu.cuLinkAddData(state, cu.CUjitInputType.CU_JIT_INPUT_PTX, data, len(data),
                             name.encode(), 0, [], [])
        if not r[0]:
            r = cu.cuLinkComplete(state)
        if r[0]:
            text = bytes(err).split(b"\0")[0].decode(errors="replace").strip()
            e = d.error(int(r[0]), f"the CUDA driver could not build kernel {name}", errc.build)
            raise exception(errc.build, f"{e.what()}; JIT log:\n{text}") from None
        cubin, size = r[1], r[2]
        if log is not None:
            log.append(bytes(info).split(b"\0")[0].decode(errors="replace").strip())
        import ctypes

        return ctypes.string_at(int(cubin), int(size))
    finally:
        cu.cuLinkDestroy(state)


class Built:
    """A kernel loaded in one context: its ``CUfunction`` and what the launch asks of it."""

    __slots__ = ("__weakref__", "dyn_opt_in", "entry", "fn", "max_threads", "module",
                 "static_shared")

    def __init__(self, module: Any, fn: Any, entry: str) -> None:
        self.module, self.fn, self.entry = module, fn, entry
        a = cu.CUfunction_attribute
        self.max_threads = int(d.call(cu.cuFuncGetAttribute,
                                      a.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn))
        self.static_shared = int(d.call(cu.cuFuncGetAttribute,
                                        a.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn))
        #: dynamic shared memory allowed so far (48 KiB until raised: :meth:`allow_shared`)
        self.dyn_opt_in = 48 * 1024 - self.static_shared

    def allow_shared(self, nbytes: int) -> None:
        """Let the kernel take ``nbytes`` of dynamic shared memory: past 48 KiB (less its
        static shared memory) ``CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES``, once per
        new high (``info.device.local_mem_size`` is the opt-in maximum, and the launch
        checks ``nbytes`` against it first: ``errc.nd_range``)."""
        if nbytes > self.dyn_opt_in:
            d.call(cu.cuFuncSetAttribute, self.fn,
                   cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                   nbytes, what="raising the kernel's shared memory")
            self.dyn_opt_in = nbytes


class Builds:
    """What the backend holds for one :class:`Kernel`: its built kernels and last arguments."""

    __slots__ = ("last", "natives")

    def __init__(self) -> None:
        self.natives: dict[tuple[Hashable, ...], Built] = {}
        self.last: dict[Any, list[Any]] = {}


class Cache:
    """Built kernels of compiled kernels, per (context, device[, spec values])."""

    def __init__(self) -> None:
        self.stats = kernels.stats
        self.by_kernel: dict[int, Builds] = {}

    def builds(self, k: Kernel) -> Builds:
        """``k``'s record (made on first use; dropped when ``k`` goes)."""
        return kernel_record(self.by_kernel, k, Builds)

    def kernel(self, k: Kernel, ctx: context, dev: device,
               spec: tuple[np.generic | None, ...] | None = None,
               fn: types.FunctionType | None = None, name: str | None = None,
               bound: int = 0) -> Built:
        """``k`` loaded for (``ctx``, ``dev``[, ``spec`` values][, the launch bound ``bound``:
        ``.maxntid``, so the JIT keeps registers for that many work-items]), once."""
        key: tuple[Hashable, ...] = (ctx.key, dev.key)
        if spec is not None:
            key += _specconst.value_key(spec)
        if bound:
            key += ("maxntid", bound)
        natives = self.builds(k).natives
        b = natives.get(key)
        if b is None:
            with first_use(f"kernel {k.name}: build for {dev.display_name}"):
                b = natives[key] = self._build(k, dev, spec, fn, name, bound)
        return b

    def _build(self, k: Kernel, dev: device, spec: tuple[np.generic | None, ...] | None,
               fn: types.FunctionType | None, name: str | None, bound: int = 0) -> Built:
        check_device(k, dev, name)
        img = kernels.image(k, dev, fn, name)
        ptx = img.binary if spec is None else _specconst.ptx_for(img.binary, spec)
        if bound:
            try:
                ptx = with_launch_bound(ptx, img.entry, bound)
            except ValueError as e:
                raise exception(errc.build, f"{k.where}: {e}") from e
        ptx = for_driver(ptx)
        t0 = time.perf_counter()
        make_current(primary_context(dev.ordinal))  # type: ignore[attr-defined]
        module, _cubin = self.module(ptx, img.arch, k.name)
        f = d.call(cu.cuModuleGetFunction, module, img.entry.encode(),
                   what=f"kernel {k.name}", default=errc.build)
        self.stats["cl_builds"] += 1
        _log.info("built kernel %s for %s in %.1f ms", k.name, dev.display_name,
                  1e3 * (time.perf_counter() - t0))
        return Built(module, f, img.entry)

    def module(self, ptx: bytes, arch: str, name: str,
               options: tuple[tuple[str, int], ...] = (),
               log: list[str] | None = None) -> tuple[Any, bytes]:
        """``ptx`` loaded in the current context, and its cubin: a cached cubin the driver
        refuses (another driver's, or a corrupt entry that passed the integrity check) is
        JIT-linked again and replaced."""
        cubin, cached = self.cubin(ptx, arch, name, options, log)
        r = cu.cuModuleLoadData(cubin)
        if r[0] and cached:
            cubin, _ = self.cubin(ptx, arch, name, options, log, fresh=True)
            r = cu.cuModuleLoadData(cubin)
        if r[0]:
            raise d.error(int(r[0]), f"loading kernel {name} (cuModuleLoadData)", errc.build)
        return r[1], cubin

    def cubin(self, ptx: bytes, arch: str, name: str, options: tuple[tuple[str, int], ...] = (),
              log: list[str] | None = None, fresh: bool = False) -> tuple[bytes, bool]:
        """The cubin of ``ptx`` and whether it came from the device-binary cache (never when
        ``fresh``), else JIT-linked (with JIT ``options``; its info log appended to ``log``)
        and stored."""
        parts = [arch, hashlib.sha256(ptx).hexdigest(), f"cuda-driver-{d.driver_version()}"]
        if options:
            parts.append(repr(options))
        bkey = _bincache.key("kernel", "cubin", *parts)
        cubin = None if fresh else _bincache.load(bkey)
        if cubin is not None:
            self.stats["native_hits"] += 1
            return cubin, True
        cubin = jit_link(ptx, name, options, log)
        if _bincache.store(bkey, cubin):
            self.stats["native_writes"] += 1
        return cubin, False


#: The process's built CUDA kernels.
builds = Cache()

"""Which compiled kernel a kernel command runs, and with which values (target-neutral).

The first half of every Python kernel's launch, for every backend: read the kernel's
captured values and type-key them (:mod:`pysycl._kernels.captures`), look the key up in
the kernel cache (:mod:`pysycl._kernels.cache`) or in the user's kernel bundle
(``use_kernel_bundle``), compile on a miss (the one call into the compiler, for the
device's image target), register the kernel by name (:mod:`pysycl._bundles.kernel_id`)
and read its specialization constants' values. Everything that can fail for a user
mistake in the kernel itself happens here, before the backend moves any data.

It reads a command group only through :class:`~pysycl._core.launch_types.CommandGroupRef`
and the command through ``KernelCommandRef``: the backend's launch
(``_backends/<name>/launch.py``) builds, sizes and enqueues what :func:`resolve` returns.
The per-``__code__`` analysis is done once; a command group that creates a fresh lambda
object on every submit hits the same cache entry.
"""

from __future__ import annotations

import types
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from pysycl._bundles import kernel_id as _kernel_id
from pysycl._bundles.ops import bundle_entry
from pysycl._bundles.ops import launch_kernel as _bundle_kernel
from pysycl._core.abi import ArgKind, IndexSpace
from pysycl._kernels import bounds as _bounds
from pysycl._kernels import specconst as _specconst
from pysycl._kernels.cache import Kernel, kernels, target_of
from pysycl._kernels.captures import CodeInfo, capture_values, captures_of, generic_key
from pysycl._kernels.digest import stable_digest
from pysycl._kernels.functor import body_of
from pysycl._memory import tables as _tables

if TYPE_CHECKING:
    from pysycl._core.launch_types import CommandGroupRef, KernelCommandRef
    from pysycl._kernels.captures import CaptureEntry

_FunctionType = types.FunctionType
_CHECKED = "bounds_check"  # the memory-cache key's suffix in bounds-checked mode
_memory = kernels.memory
_stats = kernels.stats


#: A kernel command resolved, a plain tuple (a NamedTuple costs 0.3-0.5 µs per submit):
#: ``(k, fn, info, values, native, spec, checked)`` -- the compiled kernel ``k``; ``fn`` the
#: function it was compiled from (a function object's body); ``info`` its code's analysis;
#: ``values`` the captured values (the kernel's arguments, in order); ``native`` the
#: bundle's built kernel (``use_kernel_bundle``; None: the backend builds ``k``); ``spec``
#: the specialization constants' values (None: none); ``checked`` bounds-checked mode.
Resolved = tuple[Kernel, types.FunctionType, CodeInfo, list[Any], Any, "tuple[Any, ...] | None",
                 bool]


# long: the per-submit hot path, kept in one frame (each helper call costs ~50 ns).
def resolve(group: CommandGroupRef, cmd: KernelCommandRef, ctx: Any, dev: Any) -> Resolved:
    """The compiled kernel of ``cmd``, submitted in ``group`` to a queue of ``ctx``/``dev``,
    and its captured values (compiling on a cache miss)."""
    fn = cmd.fn
    kind = cmd.kind
    obj = None
    if type(fn) is not _FunctionType:  # a function object: its body and self
        fn, obj = body_of(fn)  # the handler checked it has one
    info, values, caps, tkey = capture_values(fn, group, obj)
    mkey = (info.code, tkey, kind, cmd.ndim)
    kb = group.kernel_bundle
    checked = kb is None and _bounds.mode[0]  # bounds-checked mode: another compiled kernel
    native = spec = None
    if kb is not None:  # use_kernel_bundle: the kernel comes from the bundle, never compiled
        gkey = generic_key(caps, tkey, mkey)[2]
        k, native = _bundle_kernel(kb, gkey, ctx, dev, fn, cmd.name)
        if cmd.name is not None and not _kernel_id.is_registered(cmd.name, gkey):
            _register(k, fn, caps, tkey, mkey, cmd)
    else:
        k = _memory.get(mkey if not checked else (*mkey, _CHECKED))
        if k is None:
            k = _compile(fn, caps, tkey, mkey, cmd, checked, target_of(dev), values)
        else:
            _stats["memory_hits"] += 1
            if cmd.name is not None and not _kernel_id.is_registered(
                    cmd.name, generic_key(caps, tkey, mkey)[2]):
                _register(k, fn, caps, tkey, mkey, cmd, checked)
        if k.has_spec:  # spec constants: one build per set of values
            spec = _specconst.values_for([v for v, a in zip(values, k.arg_kinds, strict=True)
                                          if a is ArgKind.SPEC_CONSTANT],
                                         group.specialization_values)
    return k, fn, info, values, native, spec, checked


def _compile(fn: types.FunctionType, caps: list[CaptureEntry], tkey: tuple[Hashable, ...],
             mkey: tuple[Hashable, ...], cmd: KernelCommandRef, checked: bool,
             target: tuple[str, str], values: list[Any]) -> Kernel:
    """A memory miss: the kernel (its image for ``target``) from the disk cache or the
    compiler, registered by name. A compile error about a lookup table (a store into
    it) says what the table is (``values``: the captured values)."""
    index = IndexSpace(cmd.kind, cmd.ndim)  # type: ignore[arg-type]
    name = cmd.name or fn.__qualname__

    def make() -> Kernel:
        captures = captures_of(caps)
        return kernels.load_or_compile(stable_digest(fn, captures, index, checked), fn, index,
                                       captures, name, checked, target)

    with _tables.explaining([c[0] for c in caps], values):
        k = kernels.once(mkey if not checked else (*mkey, _CHECKED), make)
    _register(k, fn, caps, tkey, mkey, cmd, checked)
    return k


def _register(k: Kernel | None, fn: types.FunctionType, caps: list[CaptureEntry],
              tkey: tuple[Hashable, ...], mkey: tuple[Hashable, ...], cmd: KernelCommandRef,
              checked: bool = False) -> None:
    """Add the kernel to the kernel-id registry (under ``cmd.name`` or its automatic name).

    Bundles never get a bounds-checked kernel: the registry gets the plain variant
    (compiled when a bundle asks for it).
    """
    caps, tkey, mkey, specialised = generic_key(caps, tkey, mkey)
    if specialised:  # the registry's kernel is the generic one, compiled when asked for
        k = None
    _kernel_id.register_submitted(None if checked else k, fn, cmd.name, mkey,
                                  IndexSpace(cmd.kind, cmd.ndim), caps, tkey)  # type: ignore[arg-type]


def interpreted_submit(group: CommandGroupRef, cmd: KernelCommandRef, fn: types.FunctionType,
                       caps: list[CaptureEntry], tkey: tuple[Hashable, ...],
                       code: types.CodeType, ctx: Any, dev: Any) -> None:
    """The kernel-id and bundle side of a submit to a device that runs the Python kernel in
    the interpreter (the host_debuggable device), which compiles nothing.

    The kernel joins the kernel-id registry under its name, as a compiled submit's does
    (compiled only when a bundle for another device asks for it); with
    ``use_kernel_bundle`` the bundle must hold this variant for ``dev``.

    Raises:
        exception: ``errc.kernel_not_supported`` (or ``errc.invalid``) as
            :func:`pysycl._bundles.ops.bundle_entry` says.
    """
    mkey = (code, tkey, cmd.kind, cmd.ndim)
    gkey = generic_key(caps, tkey, mkey)[2]
    if group.kernel_bundle is not None:
        bundle_entry(group.kernel_bundle, gkey, ctx, dev, fn, cmd.name)
    if cmd.reductions:  # as compiled devices: a kernel with reductions joins no registry
        return
    if not _kernel_id.is_registered(cmd.name or _kernel_id.auto_name(fn), gkey):
        _register(None, fn, caps, tkey, mkey, cmd)

"""Accessor bounds: the static check before a launch, and bounds-checked mode.

**Static check** (always on, docs/kernels.md). The compiler records, per kernel,
the accessor dimensions every work-item indexes with its own id, unmodified
(``CompiledKernel.direct_index``). A launch whose range is larger than such an
accessor's range in that dimension is certain to index outside the accessor:
:func:`check_launch` raises ``errc.invalid`` before anything is enqueued. The
cost on the hot path is a loop over those few entries comparing two ints.

**Bounds-checked mode** (opt-in: ``PYSYCL_BOUNDS_CHECK=1`` or
:func:`pysycl.ext.set_bounds_check`; docs/debugging.md). Kernels are compiled
with every accessor access checked on the device (:mod:`pysycl_numba.bounds`);
each kernel gets a small zeroed error slot per context as its last argument
(:mod:`pysycl._kernels.steps`), read at the synchronization point; a launch that
failed becomes a :class:`Watch` that :func:`sync` reports. A violation is an asynchronous error
(SYCL 2020 §4.13): it is reported at the first synchronization point after the
kernel -- ``queue.wait()``/``wait_and_throw()``, ``event.wait()``/``wait_and_throw()``,
and for the buffers the kernel used a ``host_accessor``, a copy to host memory or
the write-back -- as ``sycl.exception(errc.kernel)``, before any of the kernel's
results reach the host. A queue (or context) with an ``async_handler`` gets it
there instead.

**Kernels with asserts** (``Kernel.asserts``) take the same error slot, in either
mode; a failed assert is reported at the same points, as ``AssertionError``
(:mod:`pysycl._kernels.kassert`).
"""

from __future__ import annotations

import os
import threading
import types
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from pysycl._core.abi import (
    ASSERT_FLAG_INT,
    BOUNDS_ACCESS_KINDS,
    ID_LOCAL,
    ArgKind,
)
from pysycl._core.exceptions import device_report, errc, exception, hidden_in_tracebacks
from pysycl._core.launch_types import sycl_order
from pysycl._core.sites import code_table, site_location
from pysycl._kernels.captures import call_graph
from pysycl._kernels.kassert import from_error_buffer, gid_words
from pysycl._objects.info import _device_info

if TYPE_CHECKING:
    from pysycl._kernels.cache import Kernel
    from pysycl._memory.coherence import Coherence
    from pysycl._objects.range import nd_range
    from pysycl._objects.range import range as range_

#: pytest leaves this module's frames out of a kernel's reported failure (a failed assert,
#: a bounds violation): the user's synchronizing line shows where it surfaced.
__tracebackhide__ = hidden_in_tracebacks


ENV = "PYSYCL_BOUNDS_CHECK"
_FALSE = ("", "0", "false", "no", "off")


def from_environment() -> bool:
    """Whether ``PYSYCL_BOUNDS_CHECK`` asks for bounds-checked mode now."""
    v = os.environ.get(ENV)
    return v is not None and v.strip().lower() not in _FALSE


#: Whether kernels launched now are bounds-checked: ``PYSYCL_BOUNDS_CHECK`` as it was when
#: pysycl was imported, until :func:`set_enabled` (a one-element list: the launchers read it).
mode: list[bool] = [from_environment()]


def enabled() -> bool:
    """Whether kernels launched now are compiled and run bounds-checked.

    ``sycl.ext.set_bounds_check(True/False)`` decides; by default (``None``) the
    environment variable ``PYSYCL_BOUNDS_CHECK``, read when pysycl is imported (and
    again by ``set_bounds_check(None)``).
    """
    return mode[0]


def set_enabled(flag: bool | None) -> None:
    """Force bounds-checked mode on or off; ``None`` reads ``PYSYCL_BOUNDS_CHECK`` again."""
    if flag is not None and not isinstance(flag, bool):
        raise TypeError(f"set_bounds_check takes True, False or None, not {flag!r}")
    mode[0] = from_environment() if flag is None else flag


# --------------------------------------------------------------- static check
def check_static(k: Kernel, location: str, fn: types.FunctionType, kind: str,
                 index_space: range_ | nd_range | None,
                 values: list[Any]) -> None:
    """The static check of a launch of ``k`` (a ``range`` or ``nd_range``): int compares first.

    ``k.direct`` entries are compared here; :func:`check_launch` runs only for a
    violation, or when entries only it knows (``k.direct_rest``) exist.
    """
    g = index_space.values if kind == "range" else index_space.get_global_range().values
    for ci, t, d in k.direct:
        if g[d] > values[ci].kernel_tail[t]:
            break
    else:
        if not k.direct_rest:
            return
    check_launch(k, location, fn, g,
                 None if kind == "range" else index_space.get_local_range().values,
                 values)


def check_launch(k: Kernel, location: str, fn: types.FunctionType, g: tuple[int, ...],
                 loc: tuple[int, ...] | None, values: list[Any]) -> None:
    """Raise ``errc.invalid`` if the launch is certain to index outside an accessor.

    Args:
        k: the :class:`pysycl._kernels.cache.Kernel`.
        location: ``file:line`` of the kernel's definition (the submitting function's).
        fn: the submitted kernel function (the recorded sites are read from its code).
        g: the global range (SYCL order).
        loc: the local range of an ``nd_range`` launch, else None.
        values: the captured values, in capture order.
    """
    for ci, ad, src, d, site in k.compiled.direct_index:
        n = g[d] if src != ID_LOCAL else (loc[d] if loc is not None else 0)
        v = values[ci]  # an accessor or a local accessor: the range of its dimension ad
        if n > v.get_range().values[ad]:
            at = site_location(k.compiled.sites[site], kernel_codes(fn))
            _reject(k, location, at, g, loc, ci, ad, src, d, v, n)


def kernel_codes(fn: types.FunctionType) -> tuple[types.CodeType, ...]:
    """The code objects a compiled kernel's sites refer to, from the submitted ``fn``
    (:func:`pysycl._core.sites.code_table` of its call graph)."""
    return code_table(f for f, _ in call_graph(fn))


def _reject(k: Kernel, location: str, site: str, g: tuple[int, ...],
            loc: tuple[int, ...] | None, ci: int, ad: int, src: int, d: int,
            v: Any, n: int) -> None:
    if 0 in g:
        return  # an empty range runs no work-item: nothing goes out of bounds
    name = k.compiled.captures[ci].name
    rng = tuple(v.get_range())
    what = "local range" if src == ID_LOCAL else ("global range" if loc is not None else "range")
    ids = "local id" if src == ID_LOCAL else "id"
    space = f"sycl.range({', '.join(map(str, loc if src == ID_LOCAL and loc else g))})"
    off = getattr(v, "_offset", None)
    at = f" at offset {tuple(off)}" if off is not None and any(off) else ""
    raise exception(
        errc.invalid,
        f"kernel {k.name!r} ({location}): its {what} {space} is larger than accessor "
        f"{name!r} (range {rng}{at}) in dimension {ad}: every work-item indexes {name!r} with "
        f"its own {ids} at {site}, so work-items {rng[ad]}..{n - 1} of dimension {d} "
        "would access elements outside the accessor (undefined behaviour in SYCL; it "
        "corrupts memory on CPU devices). Launch over the accessor's range, or guard the "
        "access (if i < n: ...). Nothing was enqueued.")


# -------------------------------------------------------- bounds-checked mode
class AsyncTarget(Protocol):
    """Where a launch's failure is reported: the submitting queue (its executor, device,
    context and asynchronous errors)."""

    executor: Any
    async_handler: Any

    def get_context(self) -> Any: ...
    def get_device(self) -> Any: ...
    def add_async_error(self, err: BaseException) -> None: ...
    def throw_asynchronous(self) -> None: ...


class Watch:
    """A launch whose error slot recorded a failure (a bounds violation or a failed assert),
    read back and waiting for the synchronization point that reports it."""

    __slots__ = ("codes", "host", "kernel", "linear", "location", "name", "ndim", "queue",
                 "ranges", "storages", "submitted")

    def __init__(self, rec: tuple[Any, ...], host: np.ndarray) -> None:
        """The failure of the launch :func:`record` described; ``host``: its slot's words."""
        (self.queue, self.kernel, code, self.name, self.location, self.storages, self.ranges,
         self.ndim, self.linear, self.submitted) = rec
        self.codes = self.kernel.codes[id(code)][1]
        self.host = host

    def error(self) -> exception | AssertionError:
        """A failed assert as ``AssertionError`` (a bounds violation too: in a note), else
        the bounds violation as ``errc.kernel``."""
        if not self.host[ASSERT_FLAG_INT]:
            return self._violation()
        g = gid_words(self.host)
        gid = (sycl_order(g[:self.ndim]) if self.linear is None
               else tuple(int(i) for i in np.unravel_index(g[0], self.linear)))
        at = f", submitted at {self.submitted}" if self.submitted else ""
        err = from_error_buffer(self.kernel.compiled, self.host, self.codes, gid,
                                f"kernel {self.name!r} ({self.location}{at})",
                                f"on {self.queue.get_device().get_info(_device_info.name)}")
        if self.host[0]:
            err.add_note(f"The launch also went out of bounds: {self._violation()}")
        return err

    def _violation(self) -> exception:
        """The violation this launch recorded, as ``errc.kernel``."""
        words = self.host.view(np.int64)
        site = int(words[1]) & 0xFFFFFFFFFFFFFFFF
        kind, slot, number = (site & 3) - 1, (site >> 2) & 0xFF, (site >> 10) & 0x3FFFFF
        n = getattr(self.kernel.compiled.captures[slot].type, "ndim", 1)
        idx = tuple(int(i) for i in words[4:4 + n])
        if self.linear is None:
            gid = sycl_order([int(i) for i in words[8:8 + self.ndim]])
        else:
            gid = tuple(int(i) for i in np.unravel_index(int(words[8]), self.linear))
        cap = self.kernel.compiled.captures[slot]
        what = "local_accessor" if getattr(cap.type, "space", "") == "local" else "accessor"
        rng = tuple(self.ranges[slot]) if self.ranges[slot] is not None else ()
        sites = self.kernel.compiled.sites
        where = (site_location(sites[number], self.codes) if number < len(sites)
                 else "<unknown location>")
        access = BOUNDS_ACCESS_KINDS[kind] if 0 <= kind < len(BOUNDS_ACCESS_KINDS) else "access"
        index = ", ".join(map(str, idx))
        return exception(
            errc.kernel,
            f"kernel {self.name!r} ({self.location}): out-of-bounds {access} of "
            f"{what} {cap.name!r} at {where}: index [{index}] is outside its range {rng} "
            f"(work-item {gid}; the first violation found, bounds-checked mode). The access "
            "was skipped: out-of-range loads give 0, stores and atomics change nothing.")


def codes_of(kernel: Kernel, fn: types.FunctionType) -> tuple[types.CodeType, ...]:
    """The code objects the sites of ``kernel`` refer to when submitted as ``fn``, cached
    in the kernel by code object.

    The submitting program's code (a kernel compiled from another file serves it too);
    its code objects only: a watch must not keep the kernel's captures alive. (The same
    Kernel and code object -- identical, not equal: code objects of two files compare
    equal -- have the same helpers' code, which the Kernel's key holds.)
    """
    code = fn.__code__
    known = kernel.codes.get(id(code))
    if known is None or known[0] is not code:
        known = kernel.codes[id(code)] = (code, kernel_codes(fn))
    return known[1]


def record(queue: AsyncTarget, kernel: Kernel, fn: types.FunctionType, name: str,
           location: str, values: list[Any], ranges: list[range_ | None], ndim: int,
           submitted: str, linear: tuple[int, ...] | None = None) -> tuple[Any, ...]:
    """What a failure of one launch reports, kept cheaply until its error slot is read
    (then a :class:`Watch`): the buffers it used as ids, so that a record keeps neither
    their memory nor the kernel's captures alive. ``submitted``: the user's ``file:line``
    of the submit (kernels with asserts); ``linear``: the user's range of a range launched
    as 1-D (reductions)."""
    codes_of(kernel, fn)
    acc = ArgKind.ACCESSOR
    return (queue, kernel, fn.__code__, name, location,
            tuple([id(v.coherence) for v, kind in zip(values, kernel.arg_kinds, strict=False)
                   if kind is acc]), ranges, ndim, linear, submitted)


#: Failed launches not reported yet, in the order they were read (empty: nothing to do).
watching: list[Watch] = []
_lock = threading.Lock()  # queues may be used from several threads


def keep_failed(ws: list[Watch]) -> None:
    """Launches whose failure was read elsewhere (:mod:`pysycl._kernels.steps`): reported by
    the next :func:`sync` that concerns them, in launch order with the others."""
    with _lock:
        watching.extend(ws)


def sync(storage: Coherence | None = None) -> None:
    """A synchronization point: report the first failure read so far.

    Args:
        storage: a buffer's storage whose data the host is about to see (a
            ``host_accessor``, a write-back): only launches that used it report
            here, so another buffer's write-back is never skipped for them.
    """
    with _lock:
        bad = list(watching)
        if storage is not None:
            bad = [w for w in bad if id(storage) in w.storages]
        if not bad:
            return
        watching[:] = [w for w in watching if w not in bad]
    first = bad[0]
    err = first.error()
    device_report(err)
    if len(bad) > 1:
        err.add_note(f"{len(bad) - 1} more launch(es) also failed an assert or went out of "
                     "bounds (bounds-checked mode)")
    q = first.queue
    if q.async_handler is not None or q.get_context().async_handler is not None:
        q.add_async_error(err)
        q.throw_asynchronous()
        return
    raise err

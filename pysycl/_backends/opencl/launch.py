"""Kernel launches on an OpenCL queue: :class:`OpenCLLaunch`, the OpenCL ``enqueue`` of a
backend-neutral :class:`~pysycl._backends.launching.Launch`.

A ``cl_kernel`` keeps its arguments between launches, so a launch sets them only when they
changed (``bound``: the built kernel's last ones, shared by every queue of the device),
under the process's enqueue lock (threads share kernel objects). :func:`prepare`,
:func:`launch` and :func:`prepared` are :mod:`pysycl._backends.launching`'s, which take
this class from the executor (``launch_class``).
"""

from __future__ import annotations

import array
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pysycl._backends.launching import Launch, hold, launch, prepare, prepared, same_signs
from pysycl._backends.opencl import exec as x
from pysycl._backends.opencl.cmdbuf_api import loader
from pysycl._backends.opencl.discovery import status_name
from pysycl._core.exceptions import errc, exception
from pysycl._memory.usm_api import PRUNE_AT, prune

try:  # a replay's enqueues in one C call (pysycl/_backends/opencl/_native.c), where it was built
    from pysycl._backends.opencl._native import replay as _replay_native
except ImportError:  # no C compiler at install: one pyopencl call a kernel
    _replay_native = None

if TYPE_CHECKING:
    import pyopencl as cl

__all__ = ["Launch", "OpenCLLaunch", "launch", "prepare", "prepared"]

_lock, _enqueue, _Error = x.launch_lock, x.enqueue, x.cl.Error
_now = time.perf_counter


class OpenCLLaunch(Launch):
    """A Python kernel built for one OpenCL queue (``clk``: its ``cl_kernel``), with its
    sizes in OpenCL order."""

    __slots__ = ()

    def enqueue(self, args: list[Any], holds: Any, wait_for: Sequence[cl.Event] | None,
                bound: dict[Any, list[Any]] | None = None) -> cl.Event:
        """Set ``args`` if they differ from the kernel's last ones (``bound``, None: set
        them), enqueue, and hold ``holds`` (None: nothing) until the kernel completes
        (:func:`~pysycl._backends.launching.hold`: a loop launching one kernel holds one
        entry, as pyopencl's floor holds none).
        """
        ex, clk = self.ex, self.clk
        try:
            with _lock:  # setting arguments and enqueuing is one step (threads share kernels)
                if bound is None:
                    clk.set_args(*args)
                elif (last := bound.get(clk)) != args or (
                        self.floats and not same_signs(last, args, self.floats)):
                    bound.pop(clk, None)  # set_args may fail half-way
                    clk.set_args(*args)
                    bound[clk] = args
                ev = _enqueue(ex.native, clk, self.gsize, self.lsize, None, wait_for)
                if holds is not None:
                    hold(ex, self, ev, holds)
        except _Error as e:
            raise x.translate(e, "kernel launch failed", errc.kernel) from e
        ex.last = ev  # the newest command, when and how it was launched (quick waits)
        ex.since = _now()
        ex.shape = self
        if holds is not None and len(ex.inflight) > PRUNE_AT:
            prune(ex)
        return ev


    def prebound(self, args: list[Any]) -> tuple[Any, ...]:
        """A command graph's kernel node (:mod:`pysycl._backends.graph_exec`): a
        ``cl_kernel`` of its own (a clone of the built one) with ``args`` set once; what
        :meth:`replayer` enqueues -- at each replay nothing but ``clEnqueueNDRangeKernel``.
        Without ``clCloneKernel`` (OpenCL < 2.1): the built kernel, its arguments set at
        each replay. The graph holds what the arguments point to."""
        native, gsize, lsize = self.ex.native, self.gsize, self.lsize
        try:
            clk = self.clk.clone()  # clCloneKernel, then pyopencl's fast invoker
        except (AttributeError, _Error):
            return (native, self.clk, gsize, lsize, (args, self.bound))
        try:
            clk.set_scalar_arg_dtypes(list(self.k.arg_dtypes))
            clk.set_args(*args)
        except _Error as e:
            raise x.translate(e, "setting a graph node's kernel arguments failed",
                              errc.kernel_argument) from e
        return (native, clk, gsize, lsize, None)

    @staticmethod
    def replayer(nodes: Sequence[tuple[Any, ...]]) -> Any:
        """The function that enqueues the :meth:`prebound` ``nodes`` in order and returns
        (first, last) native events: a replay of a graph of such nodes only. Where every
        node has a ``cl_kernel`` of its own on one queue, the enqueues are one C call
        (:func:`native_replayer`) or, without the C extension, a loop of pyopencl's."""
        if any(n[4] is not None for n in nodes) or len({id(n[0]) for n in nodes}) != 1:
            return lambda: OpenCLLaunch._replay(nodes)
        fast = native_replayer(nodes)
        if fast is not None:
            return fast
        native = nodes[0][0]
        head, rest = nodes[0][1:4], [n[1:4] for n in nodes[1:]]

        def replay() -> tuple[cl.Event, cl.Event]:  # each its own cl_kernel: enqueues only
            try:
                first = ev = _enqueue(native, *head)
                for clk, gsize, lsize in rest:
                    ev = _enqueue(native, clk, gsize, lsize)
            except _Error as e:
                raise x.translate(e, "kernel launch failed", errc.kernel) from e
            return first, ev

        return replay

    @staticmethod
    def _replay(nodes: Sequence[tuple[Any, ...]]) -> tuple[cl.Event, cl.Event]:
        """Enqueue the :meth:`prebound` ``nodes`` in order: (first, last) native events."""
        ev = first = None
        try:
            for native, clk, gsize, lsize, shared in nodes:
                if shared is None:
                    ev = _enqueue(native, clk, gsize, lsize)
                else:  # the built kernel: its arguments, under the enqueue lock
                    args, bound = shared
                    with _lock:
                        bound.pop(clk, None)
                        clk.set_args(*args)
                        ev = _enqueue(native, clk, gsize, lsize)
                if first is None:
                    first = ev
        except _Error as e:
            raise x.translate(e, "kernel launch failed", errc.kernel) from e
        return first, ev  # type: ignore[return-value]


def _entry_points() -> tuple[int, int] | None:
    """The ICD loader's ``clEnqueueNDRangeKernel`` and ``clReleaseEvent`` (addresses)."""
    import ctypes

    lib = loader()
    if lib is None:
        return None
    try:
        return (ctypes.cast(lib.clEnqueueNDRangeKernel, ctypes.c_void_p).value or 0,
                ctypes.cast(lib.clReleaseEvent, ctypes.c_void_p).value or 0)
    except AttributeError:
        return None


_ENTRY: list[tuple[int, int] | None] = []  # looked up once, at the first native replayer


def native_replay_available() -> bool:
    """Whether :func:`native_replayer` enqueues in one C call here (the extension was
    built and the ICD loader gives the entry points)."""
    if _replay_native is None:
        return False
    if not _ENTRY:
        _ENTRY.append(_entry_points())
    return _ENTRY[0] is not None and all(_ENTRY[0])


def native_replayer(nodes: Sequence[tuple[Any, ...]]) -> Any:
    """A replay of the pre-bound ``nodes`` (each a ``cl_kernel`` of its own, one queue) as
    one call of the C extension: every kernel enqueued in order with no event but the first
    and the last; None where the extension or the loader's entry points are missing.

    The record (``_native.c``'s layout: 8 words a kernel) holds the handles; the
    returned function holds the nodes, so the handles stay valid while it lives."""
    if not nodes or not native_replay_available():
        return None
    enqueue, release = _ENTRY[0]  # type: ignore[misc]
    rec = array.array("Q")
    for _, clk, gsize, lsize, _shared in nodes:
        if not 1 <= len(gsize) <= 3 or (lsize is not None and len(lsize) != len(gsize)):
            return None
        g = [*gsize, 0, 0, 0][:3]
        loc = [*lsize, 0, 0, 0][:3] if lsize else [0, 0, 0]
        rec.extend((clk.int_ptr, len(gsize), *g, *loc))
    queue, n = nodes[0][0], len(nodes)
    address = rec.buffer_info()[0]
    qptr = queue.int_ptr
    from_ptr = x.cl.Event.from_int_ptr

    def replay() -> tuple[cl.Event, cl.Event]:
        status, at, first, last = _replay_native(enqueue, release, qptr, address, n)
        if status:
            code = errc.memory_allocation if status in x.MEM_ERRORS else errc.kernel
            raise exception(code, f"kernel launch failed: clEnqueueNDRangeKernel of a "
                            f"graph's node {at} failed: {status_name(status)}",
                            cl_error=status)
        ev = from_ptr(first, retain=False)
        return ev, (from_ptr(last, retain=False) if last else ev)

    replay.holds = (nodes, rec)  # type: ignore[attr-defined]
    return replay

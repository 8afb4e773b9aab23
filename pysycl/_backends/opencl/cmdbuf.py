"""A command graph replayed as one OpenCL command buffer (``cl_khr_command_buffer``).

Where the device has the extension (:func:`~pysycl._backends.opencl.cmdbuf_api.api_for`),
:func:`record_graph` turns an executable graph's nodes, in the graph's order, into the
commands of one command buffer on the executor's in-order queue, each after the sync points
of its predecessors (the graph's edges):

* a Python kernel: its pre-bound launch (a ``cl_kernel`` of its own, arguments set:
  :meth:`OpenCLLaunch.prebound`), ``clCommandNDRangeKernelKHR``;
* a ``sycl.kernel`` object (a bundle from source, OpenCL interop): a clone of its
  ``cl_kernel`` with the node's ``set_arg`` arguments, ``clCommandNDRangeKernelKHR``;
* a buffer ``fill`` / accessor-to-accessor ``copy``: ``clCommandFillBufferKHR`` /
  ``clCommandCopyBufferKHR`` on the buffers' device copies;
* a USM ``memcpy``/``copy`` between USM allocations, ``memset``/``fill`` of one:
  ``clCommandSVMMemcpyKHR`` / ``clCommandSVMMemFillKHR`` (pysycl's USM is SVM);
* an empty node, a ``prefetch`` or ``mem_advise`` (hints), an empty index space: no
  command (their successors wait for their predecessors).

A graph with any other node -- a host task, a reduction, a kernel that prints, asserts or is
bounds-checked, a copy to or from host memory (a numpy array), a fill of host memory -- or a
command the driver refuses to record (logged at DEBUG on ``pysycl.opencl``) is not one
command buffer: it replays node by node (:mod:`pysycl._backends.graph_exec`). The kernel
arguments are the node's values of recording time, as the extension captures them.

A graph that uses buffers is recorded at its first replay on the queue (its buffers' device
copies exist then and stay until the buffers close); any other at ``finalize`` (for the
graph's queue) or at its first replay on another queue. A replay is one
``clEnqueueCommandBufferKHR``; the command buffer is released with the executable graph
(and the replays still running hold it).
"""

from __future__ import annotations

import ctypes
import logging
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyopencl as cl

from pysycl._backends.opencl import cmdbuf_api as _api
from pysycl._backends.opencl import exec as x
from pysycl._backends.opencl.discovery import status_name
from pysycl._backends.opencl.launch import native_replay_available
from pysycl._backends.opencl.programs import set_interop_args
from pysycl._bundles.kernel import interop_args, interop_plan
from pysycl._bundles.kernel import kernel as sycl_kernel
from pysycl._commands.commands import (
    CopyCommand,
    FillCommand,
    KernelCommand,
    PrefetchCommand,
    USMCopyCommand,
    USMFillCommand,
)
from pysycl._core.exceptions import errc, exception
from pysycl._memory.accessor import accessor
from pysycl._memory.usm import usm_pointer

_log = logging.getLogger("pysycl.opencl")
_CPU = cl.device_type.CPU

_Op = Callable[["_Recorder", list[int]], list[int]]


class Refused(Exception):  # noqa: N818 - not an error of the user's: the graph replays node by node
    """The driver refused to record a command (its OpenCL status and the function)."""

    def __init__(self, code: int, what: str) -> None:
        super().__init__(f"{what}: {status_name(code)}")
        self.code = code


class _Recorder:
    """Records commands into one command buffer, keeping what they use."""

    __slots__ = ("api", "handle", "holds")

    def __init__(self, api: _api.Api, handle: int, holds: list[Any]) -> None:
        self.api, self.handle, self.holds = api, handle, holds

    def command(self, fn: Callable[..., int], what: str, *args: Any, waits: list[int]) -> int:
        """Record one command after the sync points ``waits``: its sync point."""
        wl = (ctypes.c_uint * len(waits))(*waits) if waits else None
        sp = ctypes.c_uint(0)
        code = fn(self.handle, *args, len(waits), wl, ctypes.byref(sp), None)
        if code:
            raise Refused(code, what)
        return sp.value

    def ndrange(self, clk: cl.Kernel, gsize: Sequence[int], lsize: Sequence[int] | None,
                waits: list[int]) -> int:
        """``clCommandNDRangeKernelKHR`` of ``clk`` with the arguments set on it now."""
        d = len(gsize)
        g = (ctypes.c_size_t * d)(*gsize)
        loc = (ctypes.c_size_t * d)(*lsize) if lsize else None
        self.holds.append(clk)
        return self.command(self.api.ndrange, "clCommandNDRangeKernelKHR", clk.int_ptr, d,
                            None, g, loc, waits=waits)

    def prebound(self, bound: Any, waits: list[int]) -> list[int]:
        """A pre-bound Python kernel (:meth:`OpenCLLaunch.prebound`): ``(queue, cl_kernel,
        gsize, lsize, shared)``; ``shared`` (no ``clCloneKernel``): the built kernel's
        arguments, set now (under the enqueue lock, as the recording is)."""
        if type(bound) is not tuple or len(bound) != 5:
            raise Refused(-30, "a pre-bound launch of another form")  # CL_INVALID_VALUE
        _, clk, gsize, lsize, shared = bound
        if shared is not None:
            args, last = shared
            last.pop(clk, None)  # the built kernel's last arguments are these no more
            clk.set_args(*args)
        return [self.ndrange(clk, gsize, lsize, waits)]


class CommandBuffer:
    """An executable graph's command buffer on one OpenCL queue: :meth:`record` once,
    :meth:`enqueue` at each replay."""

    __slots__ = ("__weakref__", "_api", "_done", "_ex", "_handle", "_holds", "_ops", "_preds",
                 "last", "recorded")

    def __init__(self, api: _api.Api, ex: Any, ops: list[_Op], preds: list[list[int]]) -> None:
        self._api, self._ex, self._ops, self._preds = api, ex, ops, preds
        self._handle: int | None = None
        self._holds: list[Any] = []
        self._done: weakref.finalize | None = None
        self.last: cl.Event | None = None  # the newest replay's event
        self.recorded = False

    def record(self) -> bool:
        """Create, record and finalize the command buffer; False (and nothing kept) where
        the driver refuses a command. Errors of the user's (a kernel argument) raise."""
        api = self._api
        err = ctypes.c_int(0)
        queues = (ctypes.c_void_p * 1)(self._ex.native.int_ptr)
        props = ((ctypes.c_uint64 * 3)(_api.FLAGS, _api.SIMULTANEOUS_USE, 0)
                 if api.simultaneous else None)
        handle = api.create(1, queues, props, ctypes.byref(err))
        if err.value or not handle:
            _log.debug("clCreateCommandBufferKHR: %s", status_name(err.value))
            return False
        done = weakref.finalize(self, api.release, handle)
        done.atexit = False  # at exit the driver may be gone: the process frees it
        holds: list[Any] = []
        rec = _Recorder(api, handle, holds)
        points: list[list[int]] = []
        try:
            with x.launch_lock:  # kernels without a clone of their own are shared
                for op, preds in zip(self._ops, self._preds, strict=True):
                    points.append(op(rec, sorted({s for p in preds for s in points[p]})))
            code = api.finalize(handle)
            if code:
                raise Refused(code, "clFinalizeCommandBufferKHR")
        except Refused as e:
            _log.debug("a command graph replays node by node: %s", e)
            done()
            return False
        except cl.Error as e:
            done()
            raise x.translate(e, "recording a command graph's kernel failed",
                              errc.kernel_argument) from e
        except BaseException:
            done()
            raise
        self._handle, self._done, self._holds, self.recorded = handle, done, holds, True
        return True

    def enqueue(self, wait_for: Sequence[cl.Event] | None) -> cl.Event:
        """``clEnqueueCommandBufferKHR`` on the queue after ``wait_for``: its event."""
        api = self._api
        n = len(wait_for) if wait_for else 0
        wl = (ctypes.c_void_p * n)(*[e.int_ptr for e in wait_for]) if n else None  # type: ignore[union-attr]
        ev = ctypes.c_void_p(0)
        code = api.enqueue(0, None, self._handle, n, wl, ctypes.byref(ev))
        if code == _api.INVALID_OPERATION and self.last is not None:
            x.wait([self.last])  # a sequential-use buffer still pending: after its replay
            code = api.enqueue(0, None, self._handle, n, wl, ctypes.byref(ev))
        if code:
            raise exception(errc.runtime, "q.ext_oneapi_graph: clEnqueueCommandBufferKHR "
                            f"failed: {status_name(code)}", cl_error=code)
        if not ev.value:  # a driver that returns no event: one after the replay
            self.last = e = x.marker(self._ex.native)
        else:
            self.last = e = cl.Event.from_int_ptr(ev.value, retain=False)
        return e

    def release(self) -> None:
        """Release the command buffer now (the executable graph's replays completed or
        holding it: a driver keeps a pending buffer until it completes)."""
        if self._done is not None:
            self._done()


def _pass(_rec: _Recorder, waits: list[int]) -> list[int]:
    """A node with no command: its successors wait for its predecessors."""
    return waits


def _interop_op(ex: Any, sub: Any, cmd: KernelCommand) -> _Op:
    """A ``sycl.kernel`` object's node: a clone of its kernel with the node's arguments."""
    native, gsize, lsize, plan = interop_plan(ex, sub, cmd)
    if 0 in gsize:
        return _pass
    key = ex.key

    def op(rec: _Recorder, waits: list[int]) -> list[int]:
        try:
            k = native.clone()  # the kernel object's own cl_kernel stays as it is
        except (AttributeError, cl.Error):  # OpenCL < 2.1: the shared one (under the lock)
            k = native
        set_interop_args(k, interop_args(plan, key))
        rec.holds.append(plan)
        return [rec.ndrange(k, gsize, lsize, waits)]

    return op


def prebind_object(ex: Any, sub: Any, cmd: KernelCommand) -> tuple[Any, ...] | None:
    """``OpenCLExecutor.prebind_object``: a ``sycl.kernel`` object's graph node (no
    accessors among its ``set_arg`` arguments) pre-bound like a Python kernel's
    (:meth:`OpenCLLaunch.prebound`: a clone of its ``cl_kernel`` with the node's arguments
    set once), or None -- no ``clCloneKernel`` (OpenCL < 2.1), an empty index space, or
    arguments the submit will report: then the node's command group is submitted again at
    each replay; None too for a command group of another kind (a Python kernel over an
    empty range). The graph keeps the node's arguments (USM pointers) alive."""
    if type(cmd.fn) is not sycl_kernel:
        return None
    try:
        native, gsize, lsize, plan = interop_plan(ex, sub, cmd)
    except exception:
        return None  # the submit at the replay says what is wrong, where it always did
    if 0 in gsize or any(what == "acc" for what, _ in plan):
        return None
    try:
        k = native.clone()
    except (AttributeError, cl.Error):
        return None
    try:
        set_interop_args(k, interop_args(plan, ex.key))
    except cl.Error as e:
        raise x.translate(e, "setting a graph node's kernel arguments failed",
                          errc.kernel_argument) from e
    return (ex.native, k, gsize, lsize, None)


def _usm_op(api: _api.Api, cmd: USMCopyCommand | USMFillCommand) -> _Op | None:
    """A USM copy or fill between USM allocations (SVM); None for host memory."""
    if not all(type(o) is usm_pointer for o in cmd.keep):
        return None  # a host array at one end: not SVM of the context
    if not cmd.nbytes:
        return _pass
    if type(cmd) is USMCopyCommand:
        if api.svm_copy is None:
            return None
        fn, dst, src, n = api.svm_copy, cmd.dst, cmd.src, cmd.nbytes
        return lambda rec, waits: [rec.command(fn, "clCommandSVMMemcpyKHR", dst, src, n,
                                               waits=waits)]
    if cmd.staged or api.svm_fill is None:
        return None
    pattern = np.ascontiguousarray(cmd.pattern)
    fill, dst, n = api.svm_fill, cmd.dst, cmd.nbytes

    def op(rec: _Recorder, waits: list[int]) -> list[int]:
        rec.holds.append(pattern)
        return [rec.command(fill, "clCommandSVMMemFillKHR", dst, pattern.ctypes.data,
                            pattern.nbytes, n, waits=waits)]
    return op


def _buffer_op(api: _api.Api, key: Any, cmd: FillCommand | CopyCommand) -> _Op | None:
    """A buffer fill, or a copy between two accessors (one segment each, one type)."""
    if type(cmd) is FillCommand:
        acc = cmd.dest
        if api.fill is None:
            return None
        pattern = np.asarray(cmd.value, dtype=acc.dtype).reshape(1)
        isz, fill = acc.dtype.itemsize, api.fill

        def op(rec: _Recorder, waits: list[int]) -> list[int]:
            mem = acc.coherence.dev[key].int_ptr
            rec.holds.append(pattern)
            return [rec.command(fill, "clCommandFillBufferKHR", mem, pattern.ctypes.data, isz,
                                off * isz, n * isz, waits=waits)
                    for off, n in acc.segments()] or waits
        return op
    src, dst = cmd.src, cmd.dest
    if api.copy is None or not (isinstance(src, accessor) and isinstance(dst, accessor)):
        return None
    ss, ds = src.segments(), dst.segments()
    if len(ss) != 1 or len(ds) != 1 or src.dtype != dst.dtype:
        return None
    isz, copy = src.dtype.itemsize, api.copy
    return lambda rec, waits: [rec.command(
        copy, "clCommandCopyBufferKHR", src.coherence.dev[key].int_ptr,
        dst.coherence.dev[key].int_ptr, ss[0][0] * isz, ds[0][0] * isz, ss[0][1] * isz,
        waits=waits)]


def _op_for(api: _api.Api, ex: Any, node: tuple[Any, Any, Any, Any]) -> _Op | None:
    """How node ``(command group, pre-bound launch, launch, values)`` is recorded (None:
    it cannot be)."""
    sub, bound, launch, values = node
    if bound is not None:
        return lambda rec, waits: rec.prebound(bound, waits)
    if launch is not None:  # a Python kernel with accessors: bound at recording
        return lambda rec, waits: rec.prebound(launch.prebound(launch.args(values)), waits)
    cmd = sub.command
    t = type(cmd)
    if cmd is None or t is PrefetchCommand:
        return _pass
    if t is KernelCommand:
        if type(cmd.fn) is sycl_kernel:
            return _interop_op(ex, sub, cmd)
        # a Python kernel the plan did not bind: a reduction, or an empty index space
        return None if cmd.reductions else _pass
    if t is USMCopyCommand or t is USMFillCommand:
        return _usm_op(api, cmd)
    if t is FillCommand or t is CopyCommand:
        return _buffer_op(api, ex.key, cmd)
    return None  # a host task


def record_graph(ex: Any, nodes: Sequence[tuple[Any, Any, Any, Any]],
                 preds: list[list[int]]) -> CommandBuffer | None:
    """``OpenCLExecutor.record_graph``: the command buffer of a graph's ``nodes`` (in the
    graph's order; ``preds``: each node's predecessors by position) on executor ``ex``'s
    queue, or None where the graph replays node by node (the device has no command
    buffers, ``PYSYCL_OPENCL_COMMAND_BUFFER=0``, a node that cannot be recorded) -- and
    where the graph is pre-bound kernels only on a CPU device and the C extension enqueues
    them in one call (:func:`~pysycl._backends.opencl.launch.native_replayer`; Intel's CPU
    runtime runs a command buffer's kernels through its queue, at the same or a higher
    cost a kernel: docs/performance.md), unless ``PYSYCL_OPENCL_COMMAND_BUFFER=1``.

    Each node is ``(command group, pre-bound launch, launch, values)``: a Python kernel the
    plan bound (``Launch.prebound``), or one with accessors to bind at recording
    (``launch``, ``values``), or neither (the command group tells). A graph that uses
    buffers is recorded at its first replay (:meth:`CommandBuffer.record`), any other now.
    """
    if not nodes or not _api.enabled():
        return None
    if (all(node[1] is not None for node in nodes) and ex.device.native.type & _CPU
            and native_replay_available() and not _api.forced()):
        # a CPU device's kernels-only graph: its pre-bound kernels enqueued in one C call
        # cost at most what the runtime's command buffer does (docs/performance.md)
        return None
    api = _api.api_for(ex.device.native, ex.native.properties)
    if isinstance(api, str):
        _log.debug("no command buffer on %r: %s", ex.device.native.name, api)
        return None
    ops = []
    for node in nodes:
        op = _op_for(api, ex, node)
        if op is None:
            _log.debug("a command graph with a %s node replays node by node",
                       type(node[0].command).__name__)
            return None
        ops.append(op)
    cb = CommandBuffer(api, ex, ops, preds)
    if not any(node[0].requirements or node[2] is not None for node in nodes) \
            and not cb.record():
        return None
    return cb

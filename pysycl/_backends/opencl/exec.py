"""OpenCL execution: queues, memory objects, programs, kernels, events.

Thin, allocation-light wrappers over pyopencl used by the executor and the kernel layers; every
OpenCL error is translated into a :class:`pysycl.exception` here so that the
rest of ``pysycl`` never sees ``pyopencl.Error``.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from queue import SimpleQueue
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import pyopencl as cl

from pysycl._backends.opencl.discovery import translate_cl_error
from pysycl._core.exceptions import errc, exception
from pysycl._core.spirv_check import check as check_spirv

if TYPE_CHECKING:

    from numpy.typing import DTypeLike

_T = TypeVar("_T")

_log = logging.getLogger("pysycl.opencl")

MEM_ERRORS = frozenset((-4, -5, -6, -61))  # allocation failures, whatever the call


def cl_error_code(e: BaseException) -> int | None:
    """The OpenCL status carried by a ``pyopencl.Error``, if any."""
    status = getattr(e, "code", None)
    if callable(status):
        status = status()
    return status if isinstance(status, int) else None


def translate(e: BaseException, what: str, code: errc | None = None) -> exception:
    """Turn a pyopencl error into a :class:`pysycl.exception` (keeping the CL status).

    ``code`` is used unless the status says the failure was an allocation.
    """
    if cl_error_code(e) in MEM_ERRORS:
        code = errc.memory_allocation
    return translate_cl_error(e, what, code)


#: The status NVIDIA's OpenCL returns once a kernel faulted (a sticky CUDA error: every
#: later call in the process fails with it).
NV_KERNEL_FAULT = -9999
_POISONED = ("the device is unusable: a kernel faulted on it earlier in this process "
             "(NVIDIA's OpenCL keeps the error; restart the Python process, or the Jupyter "
             "kernel)")


def create_queue(ctx: cl.Context, dev: cl.Device, profiling: bool) -> cl.CommandQueue:
    """An in-order OpenCL queue (SYCL ordering is enforced with events on top)."""
    props = cl.command_queue_properties.PROFILING_ENABLE if profiling else 0
    try:
        return cl.CommandQueue(ctx, dev, properties=props)
    except cl.Error as e:
        if cl_error_code(e) == NV_KERNEL_FAULT:
            raise translate_cl_error(e, _POISONED, errc.runtime) from e
        raise translate(e, "cannot create an OpenCL command queue") from e


def alloc(ctx: cl.Context, nbytes: int) -> cl.Buffer:
    """Allocate a device buffer of ``nbytes`` (at least 1 byte: OpenCL forbids 0)."""
    try:
        return cl.Buffer(ctx, cl.mem_flags.READ_WRITE, size=max(int(nbytes), 1))
    except cl.Error as e:
        raise translate(e, f"cannot allocate a device buffer of {nbytes} bytes",
                        errc.memory_allocation) from e
    except TypeError as e:  # pyopencl refuses a size past size_t
        raise exception(errc.memory_allocation, f"cannot allocate a device buffer of {nbytes} "
                        "bytes: more than a size_t holds") from e


def write(q: cl.CommandQueue, buf: cl.Buffer, host: np.ndarray, byte_offset: int = 0,
          wait_for: Sequence[cl.Event] | None = None) -> cl.Event:
    """Enqueue a non-blocking host-to-device copy of ``host`` (keep ``host`` alive!)."""
    try:
        return cl.enqueue_copy(q, buf, host, dst_offset=byte_offset, is_blocking=False,
                               wait_for=wait_for)
    except cl.Error as e:
        raise translate(e, "host-to-device copy failed") from e


def read(q: cl.CommandQueue, host: np.ndarray, buf: cl.Buffer, byte_offset: int = 0,
         wait_for: Sequence[cl.Event] | None = None, blocking: bool = True) -> cl.Event:
    """Enqueue a device-to-host copy into ``host`` (``blocking``: and wait for it, in the
    main thread so that Ctrl-C interrupts the wait, as :func:`wait_one`)."""
    main = blocking and _get_ident() == _MAIN
    try:
        ev = cl.enqueue_copy(q, host, buf, src_offset=byte_offset,
                             is_blocking=blocking and not main, wait_for=wait_for)
    except cl.Error as e:
        raise translate(e, "device-to-host copy failed") from e
    if main:
        wait_one(ev, q)
    return ev


def copy_buffer(q: cl.CommandQueue, dst: cl.Buffer, src: cl.Buffer, nbytes: int,
                dst_offset: int = 0, src_offset: int = 0,
                wait_for: Sequence[cl.Event] | None = None) -> cl.Event:
    """Enqueue a device-to-device copy."""
    try:
        return cl.enqueue_copy(q, dst, src, byte_count=nbytes, dst_offset=dst_offset,
                               src_offset=src_offset, wait_for=wait_for)
    except cl.Error as e:
        raise translate(e, "device-to-device copy failed") from e


def fill(q: cl.CommandQueue, buf: cl.Buffer, pattern: np.ndarray, byte_offset: int,
         nbytes: int, wait_for: Sequence[cl.Event] | None = None) -> cl.Event:
    """Enqueue a fill of ``nbytes`` with the one-element ``pattern``."""
    try:
        return cl.enqueue_fill_buffer(q, buf, pattern, byte_offset, nbytes, wait_for=wait_for)
    except cl.Error as e:
        raise translate(e, "buffer fill failed") from e


def marker(q: cl.CommandQueue, wait_for: Sequence[cl.Event] | None = None) -> cl.Event:
    """An event that completes when ``wait_for`` (or everything before it) has."""
    try:
        return cl.enqueue_marker(q, wait_for=wait_for)
    except cl.Error as e:
        raise translate(e, "enqueue marker failed") from e


_quiet_lock = threading.Lock()


def quiet(fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
    """``fn(*args, **kwargs)`` with pyopencl's build-log warnings silenced.

    Drivers print informational build logs (Intel: "Compilation started/done");
    they are not the user's concern: logged at DEBUG instead of warned.
    ``warnings.catch_warnings`` changes process-wide state, so concurrent builds
    from several threads take turns (else one thread's exit re-enables the
    warning inside another's build).
    """
    with _quiet_lock, warnings.catch_warnings():
        warnings.simplefilter("ignore", cl.CompilerWarning)
        return fn(*args, **kwargs)


def build_il(ctx: cl.Context, devices: Sequence[cl.Device], il: bytes, options: str = "") -> cl.Program:
    """Create a program from SPIR-V (clCreateProgramWithIL) and build it.

    The module is checked first (:mod:`pysycl._core.spirv_check`): malformed SPIR-V
    hangs or kills the driver, so it never reaches it.
    """
    check_spirv(il)
    try:
        prg = cl.Program(ctx, il)
    except cl.Error as e:
        raise translate(e, "clCreateProgramWithIL rejected the SPIR-V module", errc.build) from e
    try:
        quiet(prg.build, options=options, devices=list(devices))
        if _log.isEnabledFor(logging.DEBUG):
            _log.debug("build log: %s", _build_log(prg, devices))
    except cl.Error as e:
        log = _build_log(prg, devices)
        raise exception(errc.build, f"building the SPIR-V module failed: {e}\n{log}",
                        cl_error=cl_error_code(e)) from e
    return prg


def build_ptx(ctx: cl.Context, devices: Sequence[cl.Device], ptx: bytes,
              options: str = "") -> cl.Program:
    """Create a program from PTX text (clCreateProgramWithBinary, NVIDIA) and build it.

    NVIDIA's OpenCL takes PTX as a program "binary" and assembles it for the
    device (ptxas, inside the driver) during the build: a PTX the assembler
    refuses is ``errc.build`` with the driver's log.
    """
    try:
        prg = cl.Program(ctx, list(devices), [ptx] * len(devices))
    except cl.Error as e:
        raise translate(e, "clCreateProgramWithBinary rejected the PTX module", errc.build) from e
    try:
        quiet(prg.build, options=options, devices=list(devices))
    except cl.Error as e:
        log = _build_log(prg, devices)
        raise exception(errc.build, f"building the PTX module failed: {e}\n{log}",
                        cl_error=cl_error_code(e)) from e
    return prg


def _build_log(prg: cl.Program, devices: Sequence[cl.Device]) -> str:
    parts = []
    for d in devices:
        try:
            parts.append(prg.get_build_info(d, cl.program_build_info.LOG))
        except cl.Error:
            continue
    return "\n".join(p for p in parts if p)


def create_kernel(prg: cl.Program, name: str, arg_dtypes: Sequence[DTypeLike]) -> cl.Kernel:

    """A kernel object with its scalar argument dtypes set (pyopencl's fast invoker)."""
    try:
        k = cl.Kernel(prg, name)
    except cl.Error as e:
        raise translate(e, f"kernel {name!r} not found in the program", errc.kernel) from e
    k.set_scalar_arg_dtypes(list(arg_dtypes))
    return k


#: The enqueue lock, one per process. Setting a kernel object's arguments and
#: enqueuing it is one step: another thread must not set its own arguments in
#: between. Enqueuing a command that holds memory and recording it in its queue's
#: ``inflight`` deque is one step too, so that the deque's order is the queue's
#: order whatever threads submit (:mod:`pysycl._memory.usm_api`).
_launch_lock = launch_lock = threading.Lock()
_enqueue = cl.enqueue_nd_range_kernel
#: ``clEnqueueNDRangeKernel``: what :meth:`pysycl._backends.opencl.launch.Launch.enqueue` calls
enqueue = _enqueue


def kernel_limits(kernel: cl.Kernel, dev: cl.Device) -> tuple[int, tuple[int, ...], int]:
    """(max work-group size, max work-item sizes (OpenCL order), free local memory bytes)."""
    wi = cl.kernel_work_group_info
    try:
        wg = min(dev.max_work_group_size, kernel.get_work_group_info(wi.WORK_GROUP_SIZE, dev))
        used = kernel.get_work_group_info(wi.LOCAL_MEM_SIZE, dev)
    except cl.Error as e:
        raise translate(e, "clGetKernelWorkGroupInfo failed", errc.kernel) from e
    return wg, tuple(dev.max_work_item_sizes), dev.local_mem_size - used


def local_memory(nbytes: int) -> cl.LocalMemory:
    """A ``__local`` kernel argument of ``nbytes``."""
    return cl.LocalMemory(max(int(nbytes), 1))


#: What a failed wait means: commands were accepted, the device failed running one.
_WAIT_FAILED = WAIT_FAILED = ("a command failed on the device while waiting for it (on an NVIDIA GPU, "
                "status -9999 or CL_OUT_OF_RESOURCES here is a kernel that faulted, e.g. an "
                "out-of-bounds access; NVIDIA's OpenCL stays unusable in this process "
                "afterwards: restart the Python process, or the Jupyter kernel)")


# A blocking OpenCL wait (clWaitForEvents, clFinish) cannot be interrupted: Python runs
# its signal handlers -- Ctrl-C's KeyboardInterrupt -- only once the call returns, so
# Ctrl-C during the wait for a long kernel would act only when the kernel ends. In the
# main thread (the only one Python runs signal handlers in) a wait therefore polls the
# events for a short while first (a short command completes within it, for the cost of
# a few status queries), then hands the blocking call to a waiter thread and blocks on
# a lock, which a signal interrupts. The interrupted command goes on running: the
# waiter keeps its events until they complete, the caller's bookkeeping is unchanged.
_MAIN = threading.main_thread().ident
_get_ident = threading.get_ident
_STATUS = cl.event_info.COMMAND_EXECUTION_STATUS
_QUEUE = cl.event_info.COMMAND_QUEUE
#: how long the main thread polls an incomplete command before handing the wait over (s)
POLL_S = 1e-4
_jobs: SimpleQueue[tuple[Callable[[Any], None], Any, Any, list[BaseException]]] = SimpleQueue()


class _Pool:
    """The waiter threads' counts (changed under ``lock``)."""

    lock = threading.Lock()
    threads = 0  # started
    idle = 0  # free for a job
    busy = 0  # jobs not finished


def _settled(events: Sequence[cl.Event]) -> bool:
    """Whether ``events`` completed (or failed) within :data:`POLL_S` of polling."""
    deadline = 0.0
    for ev in events:
        if ev.get_info(_STATUS) == QUEUED:  # as clWaitForEvents would: submit it
            ev.get_info(_QUEUE).flush()
        while ev.get_info(_STATUS) > 0:  # queued, submitted or running
            now = time.perf_counter()
            if not deadline:
                deadline = now + POLL_S
            elif now > deadline:
                return False
            os.sched_yield()  # the device may be this CPU: leave it the core
    return True


def _waiter() -> None:
    while True:
        fn, arg, done, failed = _jobs.get()
        try:
            fn(arg)
        except BaseException as e:  # a failed command: the waiting thread raises it
            failed.append(e)
        del fn, arg  # the events go once complete
        with _Pool.lock:
            _Pool.idle += 1
            _Pool.busy -= 1
        done.release()


def _in_waiter(fn: Callable[[Any], None], arg: Any) -> None:
    """``fn(arg)`` (a blocking wait) on a waiter thread; the calling thread can be interrupted."""
    done = threading.Lock()
    done.acquire()
    failed: list[BaseException] = []
    with _Pool.lock:
        if _Pool.idle:
            _Pool.idle -= 1
        else:  # all busy (a wait interrupted earlier may still be waiting): one more
            threading.Thread(target=_waiter, name="pysycl-wait", daemon=True).start()
            _Pool.threads += 1
        _Pool.busy += 1
    _jobs.put((fn, arg, done, failed))
    done.acquire()  # KeyboardInterrupt here leaves the waiter waiting
    if failed:
        raise failed[0]


def _drain() -> None:
    """At exit: let the waiters' waits end (the commands of interrupted waits complete), and
    wait in the calling thread from now on. A daemon thread that returns from a driver call
    while the interpreter finalizes is ended inside pyopencl's C++ code: the process aborts
    ("terminate called without an active exception")."""
    global _MAIN
    _MAIN = None
    while _Pool.busy:
        time.sleep(0.005)


# Registered on first use of OpenCL, after pysycl's own exit hook (write-back at exit):
# runs before it, so that the exit hook's waits are plain ones.
atexit.register(_drain)


def _forked() -> None:
    """In a forked child: no waiter thread came along (a job for one would never end)."""
    global _jobs, _MAIN
    _jobs = SimpleQueue()
    _Pool.lock = threading.Lock()
    _Pool.threads = _Pool.idle = _Pool.busy = 0
    _MAIN = threading.main_thread().ident


os.register_at_fork(after_in_child=_forked)


def _settle(events: Sequence[cl.Event]) -> None:
    """In the main thread, return once ``events`` completed, interruptibly (elsewhere: at once)."""
    if _get_ident() == _MAIN and not _settled(events):
        _in_waiter(cl.wait_for_events, list(events))


def wait_one(ev: cl.Event, q: cl.CommandQueue | None = None) -> None:
    """Block until ``ev`` (of queue ``q``, when known) completes; raise ``errc.runtime`` if
    its command failed.

    Ctrl-C interrupts it in the main thread (``KeyboardInterrupt``; the command goes on).
    """
    try:
        if _get_ident() == _MAIN:
            if q is not None:
                q.flush()  # as clWaitForEvents does (cheaper than asking the event its queue)
            if not _settled((ev,)):
                _in_waiter(cl.wait_for_events, [ev])
        ev.wait()
    except cl.Error as e:
        raise translate_cl_error(e, _WAIT_FAILED, errc.runtime) from e


def wait(events: Sequence[cl.Event]) -> None:
    """Block until ``events`` complete; raise ``errc.runtime`` on any failed command.

    Ctrl-C interrupts it in the main thread, as :func:`wait_one`.
    """
    if not events:
        return
    try:
        _settle(events)
        cl.wait_for_events(list(events))
    except cl.Error as e:
        raise translate_cl_error(e, _WAIT_FAILED, errc.runtime) from e


def status(ev: cl.Event) -> int:
    """``CL_EVENT_COMMAND_EXECUTION_STATUS`` (negative on failure)."""
    return int(ev.command_execution_status)


def profile(ev: cl.Event, which: str) -> int:
    """Profiling counter (ns): ``submit``, ``start`` or ``end``."""
    try:
        return int(getattr(ev.profile, which))
    except cl.Error as e:
        raise translate(e, "profiling information unavailable", errc.profiling) from e


def finish(q: cl.CommandQueue, last: cl.Event | None = None) -> None:
    """clFinish. ``last``: the queue's newest command pysycl knows of, waited for first so
    that Ctrl-C interrupts the wait in the main thread (its failure is clFinish's to say)."""
    try:
        if last is not None and _get_ident() == _MAIN:
            q.flush()
            if not _settled((last,)):
                _in_waiter(_wait_quietly, last)
        q.finish()
    except cl.Error as e:
        raise translate(e, "a command failed") from e


def _wait_quietly(ev: cl.Event) -> None:
    try:
        ev.wait()
    except cl.Error:
        pass


COMPLETE = cl.command_execution_status.COMPLETE
RUNNING = cl.command_execution_status.RUNNING
SUBMITTED = cl.command_execution_status.SUBMITTED
QUEUED = cl.command_execution_status.QUEUED

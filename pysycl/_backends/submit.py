"""The command-group submit of a device executor, whatever the backend.

:func:`submit` runs what a handler recorded (``handler.submission()``) on the executor of a
queue: kernel commands are prepared first (:func:`pysycl._backends.launching.prepare`: may
compile, may raise -- nothing has moved yet), dependencies of the same context (or of any CUDA
queue: executors of one ``event_domain``) join the command's wait list and others are waited
for on the host, buffers' device copies are made current (:mod:`pysycl._memory.coherence`),
then the command runs. The backend gives the commands (``ex.marker``, ``ex.fill``, ``ex.copy``,
``ex.usm_command``) and its ``launch_class``; the OpenCL and CUDA executors share this
function.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from pysycl._backends import launching as _launching
from pysycl._commands.commands import (
    CopyCommand,
    FillCommand,
    GraphCommand,
    HostTaskCommand,
    KernelCommand,
    PrefetchCommand,
    UpdateHostCommand,
    USMCopyCommand,
    USMFillCommand,
)
from pysycl._commands.host_task import run_host_task
from pysycl._core.exceptions import errc, exception, hidden_in_tracebacks
from pysycl._kernels import bounds as _bounds
from pysycl._kernels import kprint as _kprint
from pysycl._kernels import steps as _steps
from pysycl._memory.usm_api import PRUNE_AT, prune

if TYPE_CHECKING:
    from pysycl._core.launch_types import Submission

#: pytest leaves this module's frames out of a kernel's reported failure (as the executors')
__tracebackhide__ = hidden_in_tracebacks

_now = time.perf_counter
_prepare = _launching.prepare


# long: the command-group hot path, kept in one frame (each helper call costs ~50 ns).
def submit(ex: Any, sub: Submission) -> Any:
    """Execute the command group recorded in ``sub`` on executor ``ex``; its native event."""
    cmd = sub.command
    launch = values = watch = None
    if type(cmd) is KernelCommand:  # may compile; may raise: nothing moved yet
        launch, values, watch = _prepare(ex, sub, cmd, True)
    wait_for: list[Any] = []
    for native, other in sub.waits:
        if other.key == ex.key or other.context is ex.context or (
                getattr(ex, "event_domain", None) is not None
                and getattr(other, "event_domain", None) == ex.event_domain):
            wait_for.append(native)  # the same context (or CUDA's one domain): a wait list
        else:  # another context or backend: on the host, as its event.wait() does
            other.wait_event(native)
            if _steps.active or _kprint.pending or _bounds.watching:
                _steps.settle(waited=native)
    if type(cmd) is HostTaskCommand:
        if wait_for:
            ex.wait_events(wait_for)
        run_host_task(sub.queue, sub.requirements, cmd, native_memory=True)
        return None
    # Requirements: allocate, move data, collect cross-queue dependencies.
    reqs = sub.requirements
    key = ex.key
    for acc in reqs:
        st = acc.coherence
        writes = acc.writes
        needs_data = not acc.no_init
        if not st.is_ready(key, ex, writes, needs_data):
            st.prepare_device(key, ex, writes, needs_data, wait_for)
    ex.shape = None  # set by a kernel launch that has one
    match cmd:
        case KernelCommand():
            try:
                ev = (launch.run(values, wait_for or None, watch)  # type: ignore[union-attr]
                      if type(launch) is ex.launch_class else launch(wait_for or None))  # type: ignore[misc]
            except exception as e:
                raise ex.first_use_failed(e, *(a.coherence.nbytes for a in reqs)) from e
        case FillCommand():
            ev = ex.fill(cmd, wait_for)
        case CopyCommand():
            ev = ex.copy(cmd, wait_for)
        case USMCopyCommand() | USMFillCommand() | PrefetchCommand():
            ev = ex.usm_command(cmd, wait_for or None)
        case UpdateHostCommand(acc=acc):
            acc.coherence.acquire_host(writes=False)
            return None
        case GraphCommand(graph=graph):  # h.ext_oneapi_graph: after the group's waits
            return graph.run(sub.queue, [(e, ex) for e in wait_for])[1]
        case _:  # an empty command group: a barrier on its dependencies
            if not wait_for:
                return None
            ev = ex.marker(wait_for)
    if reqs:  # what the accessors' new events replace, held in one entry until ev completes
        held = None
        for acc in reqs:
            old = acc.coherence.replace(key, ex, ev, acc.writes)
            if old is not None:
                held = old if held is None else (held, old)
        if held is not None and ev is not None:
            ex.inflight.append((ev, held))
    if len(ex.inflight) > PRUNE_AT:
        prune(ex)
    if ev is not None:
        ex.last = ev
        ex.since = _now()
    return ev


def copy_refused(which: str, dtype: object = None) -> exception:
    """The error of a ``handler.copy`` no backend does: ``"accessors"`` (non-contiguous regions
    or different dtypes), ``"to host"`` (a destination array that is not a contiguous view of
    ``dtype``), ``"to device"`` (a source array shorter than the accessor's region)."""
    if which == "accessors":
        return exception(errc.feature_not_supported, "pysycl: accessor-to-accessor copy of "
                         "non-contiguous regions or different dtypes is not supported")
    if which == "to host":
        return exception(errc.invalid, "copy(accessor, array): the destination must be a "
                         f"C-contiguous {dtype} array covering a contiguous accessor region")
    return exception(errc.invalid, "copy(array, accessor): the source must have at least as "
                     "many elements as the (contiguous) accessor region")

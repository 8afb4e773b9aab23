"""The commands a command group records (SYCL 2020 §4.9.4): one frozen dataclass each.

A handler records at most one of these; executors dispatch on them with
``match``. They hold what the user passed, already validated by the handler.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import numpy as np

    from pysycl._bundles.kernel import kernel
    from pysycl._kernels.reduction import reduction
    from pysycl._memory.accessor import accessor
    from pysycl._objects.range import nd_range
    from pysycl._objects.range import range as range_

#: The index space a kernel runs over: ``parallel_for(range)``,
#: ``parallel_for(nd_range)`` or ``single_task``.
KernelKind = Literal["range", "nd_range", "single_task", "hierarchical"]


@dataclasses.dataclass(frozen=True)
class KernelCommand:
    """``parallel_for`` / ``single_task``: a Python kernel or a ``sycl.kernel`` object.

    Recorded on every kernel submit: handlers make it with :meth:`record`, which
    fills the frozen instance directly (0.2 µs instead of the generated
    ``__init__``'s 0.5 µs on the reference VM; see docs/performance.md).
    """

    kind: KernelKind
    ndim: int                       # 0 for single_task
    index_space: range_ | nd_range | None  # None for single_task
    fn: Callable[..., Any] | kernel        # the Python callable, or a sycl.kernel object
    reductions: tuple[reduction, ...]      # parallel_for only
    name: str | None                # kernel_name=

    @classmethod
    def record(cls, kind: KernelKind, ndim: int, index_space: range_ | nd_range | None,
               fn: Callable[..., Any] | kernel, reductions: tuple[reduction, ...],
               name: str | None) -> KernelCommand:
        """The same as ``KernelCommand(...)``, faster (the submit hot path)."""
        self = object.__new__(cls)
        d = self.__dict__
        d["kind"] = kind
        d["ndim"] = ndim
        d["index_space"] = index_space
        d["fn"] = fn
        d["reductions"] = reductions
        d["name"] = name
        return self


@dataclasses.dataclass(frozen=True, slots=True)
class FillCommand:
    """``h.fill(accessor, value)``."""

    dest: accessor
    value: Any  # a scalar of the accessor's element type


@dataclasses.dataclass(frozen=True, slots=True)
class CopyCommand:
    """``h.copy(src, dest)``: accessor to accessor, accessor to array, array to accessor."""

    src: accessor | np.ndarray
    dest: accessor | np.ndarray


@dataclasses.dataclass(frozen=True, slots=True)
class UpdateHostCommand:
    """``h.update_host(accessor)``."""

    acc: accessor


@dataclasses.dataclass(frozen=True, slots=True)
class HostTaskCommand:
    """``h.host_task(fn)``: ``fn()`` runs on the host when its requirements are met, or
    ``fn(interop_handle)`` when ``interop`` (SYCL 2020 §4.10: the task takes one parameter)."""

    fn: Callable[..., Any]
    interop: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class USMCopyCommand:
    """``h.memcpy`` / ``h.copy`` between USM pointers and host memory (checked addresses)."""

    dst: int
    src: int
    nbytes: int
    keep: tuple[Any, ...]  # what owns the two ends (pointers, host arrays)


@dataclasses.dataclass(frozen=True, slots=True)
class USMFillCommand:
    """``h.memset`` / ``h.fill`` of USM memory with a repeated pattern."""

    dst: int
    pattern: np.ndarray  # its bytes are the pattern (1 byte for memset)
    nbytes: int
    keep: tuple[Any, ...]
    #: ``dst`` is host memory (no USM allocation) of a device that cannot use host memory
    #: as it is (no ``usm_system_allocations``): the backend copies the pattern there
    staged: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class PrefetchCommand:
    """``h.prefetch`` (``advice`` is None) or ``h.mem_advise``: hints about USM memory."""

    address: int
    nbytes: int
    advice: int | None
    keep: tuple[Any, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class GraphCommand:
    """``h.ext_oneapi_graph(exec_graph)``: a replay of an executable command graph
    (``sycl_ext_oneapi_graph``); ``graph.run(queue, waits)`` runs it."""

    graph: Any


Command = (KernelCommand | FillCommand | CopyCommand | UpdateHostCommand | HostTaskCommand
           | USMCopyCommand | USMFillCommand | PrefetchCommand | GraphCommand)

#: The name each command has in messages (``handler`` repr, "already has ...").
COMMAND_NAMES: dict[type, str] = {
    KernelCommand: "kernel", FillCommand: "fill", CopyCommand: "copy",
    UpdateHostCommand: "update_host", HostTaskCommand: "host_task",
    USMCopyCommand: "memcpy", USMFillCommand: "fill", PrefetchCommand: "prefetch",
    GraphCommand: "ext_oneapi_graph",
}

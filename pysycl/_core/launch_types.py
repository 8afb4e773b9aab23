"""The low-layer types of a launch: what the backends and ``_kernels`` exchange (issue 23).

Plain immutable values and :class:`~typing.Protocol` s, importing nothing of pysycl, so
every layer may use them: the ``Executor`` protocol (``_core/backends.py``) and the
target-neutral ``_kernels`` annotate with these instead of the queue, handler, context
and device classes of the layers above. Design: docs/design/launch.md §2.2.

Step 0 of the plan added them; the later steps move the code onto them. So far
``ContextRef`` annotates ``_core.exceptions``, ``property`` and ``opencl.discovery``, and
``DeviceRef`` the device queries of ``opencl.device_info`` (step B1); ``Submission`` is
what ``Executor.submit`` takes and ``ContextRef``/``DeviceRef`` type the ``Backend``
protocol (step B2); ``CommandGroupRef`` (with ``QueueRef``) what capture analysis,
reductions, accessors, local accessors and streams read of their command group,
instead of the handler (step B3).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, MutableSequence, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol


class Target(NamedTuple):
    """What a compile produces: an image ``format`` (``"spirv"``, ``"ptx"``, ``"cubin"``)
    for an ``arch`` (``"sm_80"``; ``""`` where the format has none)."""

    format: str
    arch: str = ""


#: The portable target: SPIR-V, loaded by OpenCL devices that take IL.
SPIRV = Target("spirv", "")


def native_order(sizes: Sequence[int]) -> tuple[int, ...]:
    """SYCL sizes or ids (dimension 0 slowest) with the fastest-varying dimension first, as
    OpenCL's ``clEnqueueNDRangeKernel`` and CUDA's grid/block count them: **the** SYCL ->
    native reversal (SYCL's last dimension is the fastest; the OpenCL backend appendix's
    table "syclOpenCL.mapping")."""
    return tuple(sizes)[::-1]


def sycl_order(native: Sequence[int]) -> tuple[int, ...]:
    """The inverse of :func:`native_order`: native sizes or a work-item id a device reports
    back (a failed bounds check, a kernel's compile-time work-group size) in SYCL order."""
    return tuple(native)[::-1]


@dataclass(slots=True, eq=False, repr=False)
class Submission:
    """What a command group recorded: the input of ``Executor.submit``.

    ``waits`` are ``(native event, the Executor that made it)`` pairs of the
    dependencies (those with a native event), the same queue's own left out, so
    executors never see ``sycl.event``; ``requirements`` are :class:`Requirement` s;
    ``kernel_bundle`` the ``use_kernel_bundle`` bundle, ``specialization_values`` the
    ``set_specialization_constant`` values by ``specialization_id`` and ``kernel_args``
    the ``set_arg`` values of a ``sycl.kernel`` object by index (None: none set);
    ``context_key`` the queue's context's. Named as :class:`CommandGroupRef` 's
    properties, a submission is the command group that capture analysis and
    reductions read. ``queue`` is the submitting queue: the target of asynchronous
    errors and a host task's queue.

    ``sycl.handler`` is a subclass -- the handler is its own submission
    (``handler.submission()`` fills ``waits``) -- so that a submit copies nothing (a
    copy cost 0.3 µs of a 1 µs empty command group); for the same reason not frozen
    (a frozen dataclass's ``__init__`` costs 0.9 µs against 0.2). Identity equality.
    """

    command: Any = None
    requirements: Sequence[Requirement] = ()
    waits: Sequence[tuple[Any, Any]] = ()
    kernel_bundle: Any = None
    specialization_values: Mapping[Any, Any] | None = None
    kernel_args: Mapping[int, Any] | None = None
    context_key: Hashable = None
    queue: Any = None


class DeviceRef(Protocol):
    """What executors and ``_kernels`` read of a ``sycl.device``."""

    @property
    def key(self) -> Hashable: ...
    @property
    def native(self) -> Any: ...
    @property
    def display_name(self) -> str: ...
    @property
    def image_targets(self) -> tuple[Target, ...]: ...
    @property
    def parent(self) -> DeviceRef | None: ...   # the device a sub-device was split from
    def has(self, aspect: Any) -> bool: ...
    def get_info(self, param: Any) -> Any: ...


class ContextRef(Protocol):
    """What executors and ``_kernels`` read of a ``sycl.context``."""

    @property
    def key(self) -> Hashable: ...
    @property
    def native(self) -> Any: ...
    @property
    def devices(self) -> tuple[Any, ...]: ...


class Requirement(Protocol):
    """A command group's use of a buffer (an accessor's requirement), as executors read it:
    the buffer's coherence state, whether the command writes it, ``no_init``, and the
    kernel arguments its accessor adds (``kernel_tail``)."""

    @property
    def coherence(self) -> Any: ...
    @property
    def writes(self) -> bool: ...
    @property
    def no_init(self) -> bool: ...
    @property
    def kernel_tail(self) -> tuple[Any, ...]: ...


class QueueRef(Protocol):
    """What ``_kernels`` and ``_memory`` read of a ``sycl.queue``: where memory a kernel
    captures goes (foreign USM and host arrays are adopted for its context and device)."""

    def get_context(self) -> ContextRef: ...
    def get_device(self) -> DeviceRef: ...


class CommandGroupRef(Protocol):
    """What ``_kernels`` and ``_memory`` read of a command group (a ``sycl.handler``, or the
    launch's stand-in for a kernel submitted without one).

    ``context_key``: the key of the queue's context (a captured USM pointer must be of
    it); ``queue``: the queue, for adopting captured host memory; ``requirements``: the
    accessors of the group, which an accessor appends itself to when it is made;
    ``kernel_bundle``: the bundle given to ``use_kernel_bundle`` (or None);
    ``specialization_values``: ``set_specialization_constant`` values by id (or None).
    Accessors, local accessors, streams and reductions keep the group they were made in
    and compare it by identity.
    """

    @property
    def context_key(self) -> Hashable: ...
    @property
    def queue(self) -> QueueRef: ...
    @property
    def requirements(self) -> MutableSequence[Requirement]: ...
    @property
    def kernel_bundle(self) -> Any: ...
    @property
    def specialization_values(self) -> Mapping[Any, Any] | None: ...


class LaunchLike(Protocol):
    """A backend's prepared launch of one kernel on one queue (docs/design/launch.md §2.5):
    set the arguments if they changed since the kernel's last ones (``bound``, its
    :attr:`bound`; None: set them), enqueue, hold ``holds`` until it completes."""

    #: the built kernel's last arguments (what :meth:`enqueue` compares with)
    bound: Any

    def enqueue(self, args: list[Any], holds: Any, wait_for: Sequence[Any] | None,
                bound: Any = None) -> Any: ...


class KernelCommandRef(Protocol):
    """What launch code reads of a recorded kernel command (``parallel_for``/``single_task``):
    its ``kind`` (``"range"``, ``"nd_range"``, ``"single_task"``), dimensions (0 for a single
    task), index space (a ``sycl.range``/``sycl.nd_range``; None for a single task), the
    callable or ``sycl.kernel`` object, its reductions and its ``kernel_name``."""

    @property
    def kind(self) -> str: ...
    @property
    def ndim(self) -> int: ...
    @property
    def index_space(self) -> Any: ...
    @property
    def fn(self) -> Any: ...
    @property
    def reductions(self) -> tuple[Any, ...]: ...
    @property
    def name(self) -> str | None: ...

"""MPI through mpi4py: pysycl's own extension (docs/distributed.md), imported only on use.

``import pysycl`` never imports this module nor mpi4py; ``import pysycl.ext.mpi`` imports
``mpi4py.MPI`` (``pip install pysycl[mpi]``: mpi4py and the mpich wheel), which initializes
MPI.

* :func:`local_rank` — the rank and size within the node (``COMM_TYPE_SHARED`` split).
* :func:`device_for_rank` — one rank per device: the node-local rank picks, round-robin, one
  of the node's devices that run Python kernels; none → ``sycl.exception`` naming the rank
  and the host.
* :func:`gpu_aware` — whether the MPI library reads CUDA device memory.
* :func:`mpi_buffer` — what to hand mpi4py for pysycl memory: host-accessible USM and host
  accessors in place, device memory in place where MPI is GPU-aware, else staged through a
  pinned host copy (a numpy array where the device has no host USM).
* :func:`Send`, :func:`Recv`, :func:`Alltoall` — mpi4py's calls through :func:`mpi_buffer`.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from typing import Any

import numpy as np
from mpi4py import MPI

from pysycl._commands.queue import queue as _queue
from pysycl._core.exceptions import errc, exception
from pysycl._memory.accessor import host_accessor
from pysycl._memory.mpi_guard import gpu_aware
from pysycl._memory.usm import usm_pointer
from pysycl._memory.usm_api import free, malloc_host
from pysycl._objects.aspects import aspect
from pysycl._objects.device import device
from pysycl._objects.info import device_type as _device_type
from pysycl._objects.selector import default_selector_v

__all__ = ["Alltoall", "Recv", "Send", "device_for_rank", "gpu_aware", "local_rank",
           "mpi_buffer"]


def _comm(comm: Any) -> Any:
    return MPI.COMM_WORLD if comm is None else comm


def local_rank(comm: Any = None) -> tuple[int, int]:
    """``(rank, size)`` of this process among the ranks of ``comm`` (default
    ``MPI.COMM_WORLD``) on its node: ``comm.Split_type(MPI.COMM_TYPE_SHARED)``."""
    node = _comm(comm).Split_type(MPI.COMM_TYPE_SHARED)
    try:
        return node.Get_rank(), node.Get_size()
    finally:
        node.Free()


def device_for_rank(comm: Any = None,
                    device_type: _device_type = _device_type.all) -> device:
    """This rank's device: the one-rank-per-device convention.

    The node's devices of ``device_type`` that compile Python kernels (SPIR-V or PTX; the
    host_debuggable interpreter is left out), GPUs first when there are any, are dealt to
    the node-local ranks round-robin (rank ``r`` gets device ``r % n``; more ranks than
    devices share them). One GPU seen through two backends (an NVIDIA GPU through the
    CUDA backend and through NVIDIA's OpenCL) counts once: only the devices of the backend
    ``default_selector_v`` prefers are dealt. ``PYSYCL_DEVICE_FILTER`` narrows the list as
    everywhere.

    Raises:
        sycl.exception: ``errc.runtime``, naming the rank, the host and what was looked
            for, when this node has no such device.
    """
    rank, _ = local_rank(comm)
    found = [d for d in device.get_devices(device_type) if d.image_targets]
    gpus = [d for d in found if d.is_gpu()]
    found = gpus or found
    if found:  # one backend's view of each device, the preferred backend's
        best = max(found, key=default_selector_v).get_backend()
        found = [d for d in found if d.get_backend() == best]
    if not found:
        world = _comm(comm).Get_rank()
        raise exception(errc.runtime,
                        f"MPI rank {world} (node-local rank {rank}) on host "
                        f"{MPI.Get_processor_name() or socket.gethostname()} has no device of "
                        f"type {device_type.name} that runs Python kernels (SPIR-V or PTX); "
                        "`python -m pysycl` lists the node's devices")
    return found[rank % len(found)]


def _host_view(obj: Any, count: int | None) -> np.ndarray | None:
    if isinstance(obj, host_accessor):
        arr = np.asarray(obj).reshape(-1)
    elif isinstance(obj, usm_pointer) and obj.allocation.host:
        arr = np.asarray(obj)
    elif isinstance(obj, np.ndarray):
        arr = obj.reshape(-1)
    else:
        return None
    return arr if count is None else arr[:count]


@contextlib.contextmanager
def mpi_buffer(obj: Any, q: _queue | None = None, *, count: int | None = None,
               read: bool = True, write: bool = False) -> Iterator[Any]:
    """What to hand an mpi4py call for ``obj`` (its first ``count`` elements; all of them
    by default): a ``with`` block around the call.

    * host-accessible memory (``malloc_host`` / ``malloc_shared`` USM of a backend whose
      memory the host reads, a ``host_accessor``, a numpy array): a numpy view, in place;
    * device USM where :func:`gpu_aware`: ``[ptr, count, datatype]`` (mpi4py reads it
      through DLPack, in place), after ``q.wait()`` when ``q`` is given;
    * other device USM: a pinned host copy (``malloc_host``) made with ``q.memcpy``
      before the call when MPI reads it (``read``), written back after it when MPI
      writes it (``write``), after ``q.wait()`` (USM has no implicit dependencies);
      ``q`` is required then. A device without host USM (NVIDIA's OpenCL) stages through
      a numpy array instead.
    """
    view = _host_view(obj, count)
    if view is not None:
        yield view
        return
    if not isinstance(obj, usm_pointer):
        raise TypeError(f"mpi_buffer: {type(obj).__name__} is no pysycl memory (a usm_pointer, "
                        "a host_accessor or a numpy array)")
    n = obj.count if count is None else count
    if not 0 <= n <= obj.count:
        raise ValueError(f"mpi_buffer: count {n} outside the {obj.count} elements of {obj!r}")
    if gpu_aware() and obj.__dlpack_device__()[0] == 2:  # kDLCUDA: MPI reads it in place
        if q is not None:
            q.wait()  # MPI reads (or writes) at once: after the kernels that use it
        yield [obj, n, MPI._typedict[obj.dtype.char]]
        return
    if q is None:
        raise TypeError(f"mpi_buffer: {obj!r} is device memory MPI cannot read; pass the "
                        "queue that stages it through host memory (q=)")
    q.wait()  # USM has no implicit dependencies: the kernels that use it end first
    pinned = q.get_device().has(aspect.usm_host_allocations)
    stage = malloc_host(max(n, 1), q, dtype=obj.dtype) if pinned else np.empty(n, obj.dtype)
    try:
        host = np.asarray(stage)[:n]
        if read and n:
            q.memcpy(stage, obj, n * obj.dtype.itemsize).wait()
        yield host
        if write and n:
            q.memcpy(obj, stage, n * obj.dtype.itemsize).wait()
    finally:
        if pinned:
            free(stage, q)


def Send(comm: Any, obj: Any, dest: int, tag: int = 0, q: _queue | None = None,  # noqa: N802
         count: int | None = None) -> None:
    """``comm.Send`` of pysycl memory (:func:`mpi_buffer`)."""
    with mpi_buffer(obj, q, count=count) as buf:
        comm.Send(buf, dest=dest, tag=tag)


def Recv(comm: Any, obj: Any, source: int = MPI.ANY_SOURCE,  # noqa: N802
         tag: int = MPI.ANY_TAG, q: _queue | None = None, count: int | None = None) -> None:
    """``comm.Recv`` into pysycl memory (:func:`mpi_buffer`)."""
    with mpi_buffer(obj, q, count=count, read=False, write=True) as buf:
        comm.Recv(buf, source=source, tag=tag)


def Alltoall(comm: Any, send: Any, recv: Any, q: _queue | None = None,  # noqa: N802
             count: int | None = None) -> None:
    """``comm.Alltoall`` between pysycl memories (``count`` elements each, split into
    ``comm.size`` equal blocks; :func:`mpi_buffer`)."""
    with mpi_buffer(send, q, count=count) as s, \
            mpi_buffer(recv, q, count=count, read=False, write=True) as r:
        comm.Alltoall(s, r)

"""Device memory never reaches an MPI that cannot read it (docs/distributed.md).

mpi4py takes a buffer through the buffer protocol, then DLPack, then
``__cuda_array_interface__``; for DLPack it calls ``__dlpack__(stream=-1, ...)`` (no
synchronization: MPI reads the memory at once). A device allocation (memory the host
cannot read: CUDA ``malloc_device``) exported that way while ``mpi4py.MPI`` is loaded and
the MPI library is not GPU-aware would make MPI dereference a device address (a segfault
inside MPI); :func:`check_dlpack_export` refuses it first with a ``BufferError`` that says
why and what to use instead. Nothing here imports MPI: the library mpi4py loaded is found
in the process's memory map and asked ``MPIX_Query_cuda_support()`` (MPICH, Open MPI).
"""

from __future__ import annotations

import ctypes
import os
import sys
from typing import Any

#: the answer of :func:`gpu_aware`, once asked (the MPI library of a process stays the same)
_cached: list[bool] = []


def _loaded_mpi_libraries() -> list[str]:
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            paths = {line.split()[-1] for line in f if "libmpi" in line and "/" in line}
    except OSError:  # no /proc (macOS): unknown, so not GPU-aware
        return []
    return sorted(p for p in paths if os.path.basename(p).startswith("libmpi"))


def gpu_aware() -> bool:
    """Whether the MPI library in this process reads CUDA device memory.

    ``PYSYCL_MPI_GPU_AWARE=1`` / ``0`` decides when set (an MPI built with GPU support
    that does not answer the query). Otherwise the loaded ``libmpi`` is asked
    ``MPIX_Query_cuda_support()`` (MPICH >= 4, Open MPI); an MPI that cannot be asked,
    or none loaded yet, counts as not GPU-aware (the safe answer: memory is staged).
    """
    env = os.environ.get("PYSYCL_MPI_GPU_AWARE", "").strip()
    if env in ("0", "1"):
        return env == "1"
    if _cached:
        return _cached[0]
    libs = _loaded_mpi_libraries()
    answer = False
    for path in libs:
        try:
            query = ctypes.CDLL(path).MPIX_Query_cuda_support
        except (OSError, AttributeError):
            continue
        query.restype = ctypes.c_int
        query.argtypes = []
        answer = bool(query())
        break
    if libs:  # asked the library itself: the answer holds for the process
        _cached.append(answer)
    return answer


def check_dlpack_export(ptr: Any, dev: tuple[int, int], stream: Any) -> None:
    """Refuse a device allocation's DLPack export to a non-GPU-aware MPI.

    ``ptr``: the pointer exported; ``dev``: its DLPack device; ``stream``: what the
    consumer passed (mpi4py passes -1). Other consumers (CuPy, PyTorch, JAX pass their
    stream) and GPU-aware MPIs are let through.
    """
    if stream != -1 or "mpi4py.MPI" not in sys.modules or gpu_aware():
        return
    raise BufferError(
        f"{ptr!r} is device memory (DLPack device {dev}) and the MPI library mpi4py loaded "
        "is not GPU-aware (MPIX_Query_cuda_support() is 0 or missing): MPI would read a "
        "device address. Send it with pysycl.ext.mpi (Send/Recv/Alltoall/mpi_buffer stage "
        "it through pinned host memory), allocate the message with sycl.malloc_host, or "
        "set PYSYCL_MPI_GPU_AWARE=1 if this MPI does read CUDA memory")

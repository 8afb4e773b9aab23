"""What the three PRK MPI programs share (the C originals' ``par-res-kern_mpi.h``).

``bail_out``: every rank stops when one found an error (the root prints why);
``setup``: the argument line, ``--numpy`` (the mpi4py + numpy version of the same program)
and, for pysycl, this rank's queue (one rank per device: ``pysycl.ext.mpi``).
"""

from __future__ import annotations

import sys
from typing import Any

from mpi4py import MPI


def bail_out(comm: Any, error: int) -> None:
    """All ranks stop if any rank saw an error (PRK's ``bail_out``)."""
    if comm.allreduce(error, op=MPI.MAX):
        sys.exit(1)


def setup(usage: str, nargs: int) -> tuple[Any, list[int], Any]:
    """``(comm, integer arguments, queue or None for --numpy)``; a usage error stops
    every rank."""
    comm = MPI.COMM_WORLD
    argv = [a for a in sys.argv[1:] if a != "--numpy"]
    use_numpy = "--numpy" in sys.argv[1:]
    error = 0
    try:
        args = [int(a) for a in argv]
    except ValueError:
        args = []
    if len(args) != nargs:
        if comm.rank == 0:
            print(f"Usage: mpiexec -n <ranks> python {sys.argv[0]} {usage} [--numpy]")
        error = 1
    bail_out(comm, error)
    if use_numpy:
        return comm, args, None
    import pysycl as sycl
    from pysycl.ext import mpi as sycl_mpi

    dev = sycl_mpi.device_for_rank(comm)
    return comm, args, sycl.queue(dev, properties=[sycl.property.queue.in_order()])


def device_name(comm: Any, q: Any) -> str:
    """What runs the kernels (every rank's device name, once each)."""
    if q is None:
        return "numpy"
    import pysycl as sycl

    names = comm.gather(q.get_device().get_info(sycl.info.device.name), root=0)
    return ", ".join(sorted(set(names))) if comm.rank == 0 else ""

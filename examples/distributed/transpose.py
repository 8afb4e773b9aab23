"""PRK MPI transpose, Alltoall variant (ParRes/Kernels ``MPI1/Transpose/transpose-a2a``),
with pysycl kernels, one rank per device.

The ``order x order`` matrix A is split into column blocks, one per rank, each stored
as ``order`` rows of ``block = order // ranks`` elements (element ``(i, j)`` of the
block at ``i * block + j``; A's global element is ``i * order + column``). Each
iteration: ``Alltoall`` of the ``block x block`` blocks into T, a kernel transposes
every received block and adds it to B, a kernel adds 1 to A. The iterations' sum has a
closed form; PRK's validation sums ``|B - expected|`` over all ranks. Rate: two
matrices of doubles moved per iteration.

A, B and T are device USM: where MPI cannot read device memory, ``pysycl.ext.mpi.Alltoall``
stages them through pinned host memory.

    mpiexec -n 2 python examples/distributed/transpose.py <iterations> <matrix order> [--numpy]
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI
from prk import bail_out, device_name, setup


def run_numpy(comm, order: int, block: int, iterations: int) -> tuple[np.ndarray, float]:
    """The mpi4py + numpy version: B and the timed seconds."""
    nprocs, me = comm.size, comm.rank
    i = np.arange(order, dtype=np.float64)[:, None]
    j = np.arange(block, dtype=np.float64)[None, :]
    a = (me * block + i * order + j).reshape(-1)
    b = np.zeros_like(a)
    t = np.zeros_like(a)
    t0 = 0.0
    for it in range(iterations + 1):
        if it == 1:
            comm.Barrier()
            t0 = MPI.Wtime()
        comm.Alltoall(a, t)
        tb = t.reshape(nprocs, block, block)
        b.reshape(nprocs, block, block)[...] += tb.transpose(0, 2, 1)
        a += 1.0
    return b, MPI.Wtime() - t0


def run_sycl(q, comm, order: int, block: int, iterations: int) -> tuple[np.ndarray, float]:
    """The pysycl version: B and the timed seconds."""
    import pysycl as sycl
    from pysycl.ext import mpi as sycl_mpi

    nprocs, me = comm.size, comm.rank
    n = order * block
    a, b, t = (sycl.malloc_device(n, q, dtype=np.float64) for _ in range(3))
    me_block, f_order, f_block = np.float64(me * block), np.float64(order), block

    def init(it: sycl.item) -> None:  # A's global values; B and T start at 0
        i, j = it[0], it[1]
        a[i * f_block + j] = me_block + i * f_order + j
        b[i * f_block + j] = 0.0
        t[i * f_block + j] = 0.0

    def transpose_blocks(it: sycl.item) -> None:  # B[p][i][j] += T[p][j][i], every block p
        lo = it[0] * f_block * f_block
        i, j = it[1], it[2]
        b[lo + i + f_block * j] += t[lo + j + f_block * i]

    def add_one(k: sycl.item) -> None:
        a[k] += 1.0

    q.parallel_for(sycl.range(order, block), init).wait()
    t0 = 0.0
    for it in range(iterations + 1):
        if it == 1:
            q.wait()
            comm.Barrier()
            t0 = MPI.Wtime()
        sycl_mpi.Alltoall(comm, a, t, q)
        q.parallel_for(sycl.range(nprocs, block, block), transpose_blocks)
        q.parallel_for(sycl.range(n), add_one)
    q.wait()
    elapsed = MPI.Wtime() - t0
    h_b = np.empty(n)
    q.memcpy(h_b, b, h_b.nbytes).wait()
    for p in (a, b, t):
        sycl.free(p, q)
    return h_b, elapsed


def main() -> None:
    comm, (iterations, order), q = setup("<# iterations> <matrix order>", 2)
    nprocs, me, root = comm.size, comm.rank, 0
    error = 0
    if me == root:
        print("Parallel Research Kernels: MPI matrix transpose: B = A^T")
        if iterations < 1:
            print(f"ERROR: iterations must be >= 1 : {iterations}")
            error = 1
        elif order < nprocs or order % nprocs:
            print(f"ERROR: matrix order {order} should be a multiple of # procs {nprocs}")
            error = 1
    bail_out(comm, error)
    name = device_name(comm, q)
    if me == root:
        print(f"Number of ranks      = {nprocs}\nMatrix order         = {order}\n"
              f"Number of iterations = {iterations}\nAlltoall\nDevice               = {name}")
    block = order // nprocs
    if q is None:
        b, local_time = run_numpy(comm, order, block, iterations)
    else:
        b, local_time = run_sycl(q, comm, order, block, iterations)
    trans_time = comm.reduce(local_time, op=MPI.MAX, root=root)

    addit = (iterations + 1.0) * iterations / 2.0
    i = np.arange(order, dtype=np.float64)[:, None]
    j = np.arange(block, dtype=np.float64)[None, :]
    expected = (order * (me * block + j) + i) * (iterations + 1) + addit
    abserr = float(np.abs(b.reshape(order, block) - expected).sum())
    abserr_tot = comm.reduce(abserr, op=MPI.SUM, root=root)
    if me == root:
        if abserr_tot < 1e-8:
            print("Solution validates")
            avgtime = trans_time / iterations
            nbytes = 2.0 * 8 * order * order
            print(f"Rate (MB/s): {1e-6 * nbytes / avgtime:f} Avg time (s): {avgtime:f}")
        else:
            print(f"ERROR: Aggregate squared error {abserr_tot:f} exceeds threshold 1e-08")
            error = 1
    bail_out(comm, error)


if __name__ == "__main__":
    main()

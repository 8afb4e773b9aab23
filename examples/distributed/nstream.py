"""PRK MPI nstream (ParRes/Kernels ``MPI1/Nstream``) with pysycl kernels, one rank per device.

Every rank owns ``length // ranks`` elements of three vectors and runs
``A[j] += B[j] + scalar * C[j]`` ``iterations + 1`` times (the first one warms up: the
timer starts after a barrier at iteration 1); the slowest rank's time is the time. The
root validates its vector's checksum against the closed form and prints PRK's rate
(4 words per element per iteration, all ranks).

    mpiexec -n 2 python examples/distributed/nstream.py <iterations> <vector length> [--numpy]

``--numpy``: the same program in mpi4py + numpy (the comparison).
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI
from prk import bail_out, device_name, setup

SCALAR = 3.0


def triad(q, length: int, iterations: int, comm) -> tuple[np.ndarray, float]:
    """``iterations + 1`` triads on this rank's part; its A and the timed seconds."""
    h_a = np.zeros(length)
    h_b = np.full(length, 2.0)
    h_c = np.full(length, 2.0)
    scalar = np.float64(SCALAR)
    if q is None:  # the numpy version
        t0 = 0.0
        for it in range(iterations + 1):
            if it == 1:
                comm.Barrier()
                t0 = MPI.Wtime()
            h_a += h_b + scalar * h_c
        return h_a, MPI.Wtime() - t0

    import pysycl as sycl

    a, b, c = (sycl.malloc_device(length, q, dtype=np.float64) for _ in range(3))
    for d, h in ((a, h_a), (b, h_b), (c, h_c)):
        q.memcpy(d, h, h.nbytes)
    q.wait()

    def nstream(j: sycl.item) -> None:
        a[j] += b[j] + scalar * c[j]

    t0 = 0.0
    for it in range(iterations + 1):
        if it == 1:  # after the warm-up (which compiles the kernel)
            q.wait()
            comm.Barrier()
            t0 = MPI.Wtime()
        q.parallel_for(sycl.range(length), nstream)
    q.wait()
    elapsed = MPI.Wtime() - t0
    q.memcpy(h_a, a, h_a.nbytes).wait()
    for p in (a, b, c):
        sycl.free(p, q)
    return h_a, elapsed


def check(iterations: int, a: np.ndarray) -> bool:
    """PRK's checkTRIADresults: the checksum of the root's part."""
    aj, bj, cj = 0.0, 2.0, 2.0
    for _ in range(iterations + 1):
        aj += bj + SCALAR * cj
    aj *= len(a)
    asum = float(a.sum())
    if abs(aj - asum) / asum > 1e-8:
        print("Failed Validation on output array")
        print(f"        Expected checksum: {aj:f} \n        Observed checksum: {asum:f} ")
        return False
    print("Solution validates")
    return True


def main() -> None:
    comm, (iterations, total_length), q = setup("<# iterations> <vector length>", 2)
    nprocs, root = comm.size, 0
    error = 0
    if comm.rank == root:
        print("Parallel Research Kernels: MPI stream triad: A = B + scalar*C")
        if iterations < 1:
            print(f"ERROR: Invalid number of iterations: {iterations}")
            error = 1
        elif total_length < nprocs:
            print(f"ERROR: Invalid vector length: {total_length}")
            error = 1
    bail_out(comm, error)
    length = total_length // nprocs
    name = device_name(comm, q)
    if comm.rank == root:
        print(f"Number of ranks      = {nprocs}\nVector length        = {total_length}\n"
              f"Number of iterations = {iterations}\nDevice               = {name}")
    a, local_time = triad(q, length, iterations, comm)
    nstream_time = comm.reduce(local_time, op=MPI.MAX, root=root)
    if comm.rank == root:
        if check(iterations, a):
            avgtime = nstream_time / iterations
            nbytes = 4.0 * 8 * length * nprocs
            print(f"Rate (MB/s): {1e-6 * nbytes / avgtime:f} Avg time (s): {avgtime:f}")
        else:
            error = 1
    bail_out(comm, error)


if __name__ == "__main__":
    main()

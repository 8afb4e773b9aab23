"""PRK MPI stencil (ParRes/Kernels ``MPI1/Stencil``) with pysycl kernels, one rank per device.

A star stencil of radius 2 (a discrete divergence: weights ``±1/(2kR)``) on an ``n x n``
grid with ``in[i, j] = i + j``, split into a 2-D Cartesian grid of tiles (the rank grid
closest to square; rank ``r`` owns tile ``(r % px, r // px)``). Each iteration exchanges
``R``-deep halos with the neighbours (y then x: ``Irecv``/``Isend``/``Wait``), applies the
stencil to the tile's points at least ``R`` from the grid's edge (``out += ...``) and adds
1 to ``in``. Validation: the L1 norm of ``out`` over the active points is
``(iterations + 1) * 2``. Rate: ``(2 * stencil_size + 1)`` flops per active point.

The grid lives in device USM; kernels pack and unpack the halos into host USM
(``sycl.malloc_host``: pinned where the backend has it), which mpi4py sends in place; on a
device without host USM (NVIDIA's OpenCL) into device USM copied to and from numpy arrays.

    mpiexec -n 4 python examples/distributed/stencil.py <iterations> <grid size> [--numpy]
"""

from __future__ import annotations

import math

import numpy as np
from mpi4py import MPI
from prk import bail_out, device_name, setup

R = 2  # RADIUS


def split(n: int, parts: int, me: int) -> tuple[int, int]:
    """PRK's tile bounds ``[start, end]`` of part ``me`` (the first ``n % parts`` get one more)."""
    size, leftover = divmod(n, parts)
    if me < leftover:
        start = (size + 1) * me
        return start, start + size
    start = (size + 1) * leftover + size * (me - leftover)
    return start, start + size - 1


class Tile:
    """This rank's tile: bounds, neighbours and the halo plan (shared by both versions)."""

    def __init__(self, comm, n: int) -> None:
        nprocs, me = comm.size, comm.rank
        px = next(p for p in range(int(math.sqrt(nprocs + 1)), 0, -1) if nprocs % p == 0)
        self.px, self.py = px, nprocs // px
        self.x, self.y = me % px, me // px
        self.istart, self.iend = split(n, self.px, self.x)
        self.jstart, self.jend = split(n, self.py, self.y)
        self.width = self.iend - self.istart + 1
        self.height = self.jend - self.jstart + 1
        self.W = self.width + 2 * R  # row length of `in`, ghosts included
        # (neighbour, send rows/cols, recv rows/cols, send tag, recv tag), in local
        # coordinates with ghosts: (j0, i0, nj, ni)
        w, h = self.width, self.height
        self.halos = []
        if self.y < self.py - 1:
            self.halos.append(("y", me + px, (h, R, R, w), (h + R, R, R, w), 99, 101))
        if self.y > 0:
            self.halos.append(("y", me - px, (R, R, R, w), (0, R, R, w), 101, 99))
        if self.x < self.px - 1:
            self.halos.append(("x", me + 1, (R, w, h, R), (R, w + R, h, R), 990, 1010))
        if self.x > 0:
            self.halos.append(("x", me - 1, (R, R, h, R), (R, 0, h, R), 1010, 990))
        self.jlo, self.jhi = max(self.jstart, R), min(n - R - 1, self.jend)
        self.ilo, self.ihi = max(self.istart, R), min(n - R - 1, self.iend)


def weights() -> np.ndarray:
    """The star's weights along one axis, offsets -R..R (0 at the centre)."""
    w = np.zeros(2 * R + 1)
    for k in range(1, R + 1):
        w[R + k], w[R - k] = 1.0 / (2.0 * k * R), -1.0 / (2.0 * k * R)
    return w


def exchange(comm, tile: Tile, pack, unpack, bufs) -> None:
    """PRK's halo exchange: the y direction, then x (corners are not needed: a star)."""
    for axis in ("y", "x"):
        reqs, recvs = [], []
        for k, (ax, nbr, snd, rcv, stag, rtag) in enumerate(tile.halos):
            if ax != axis:
                continue
            out_buf, in_buf = bufs[k]  # (what kernels use, what MPI reads or writes)
            reqs.append(comm.Irecv(in_buf[1], source=nbr, tag=rtag))
            pack(out_buf, snd)
            reqs.append(comm.Isend(out_buf[1], dest=nbr, tag=stag))
            recvs.append((in_buf, rcv))
        MPI.Request.Waitall(reqs)
        for in_buf, rcv in recvs:
            unpack(in_buf, rcv)


def run_numpy(comm, tile: Tile, iterations: int) -> tuple[np.ndarray, float]:
    """The mpi4py + numpy version: OUT and the timed seconds."""
    t = tile
    inp = np.zeros((t.height + 2 * R, t.W))
    j = np.arange(t.jstart, t.jend + 1, dtype=np.float64)[:, None]
    i = np.arange(t.istart, t.iend + 1, dtype=np.float64)[None, :]
    inp[R:-R, R:-R] = i + j
    out = np.zeros((t.height, t.width))
    w = weights()
    bufs = [((a, a), (b, b)) for _, _, s, r, _, _ in t.halos  # (ours, MPI's): one array
            for a, b in [(np.empty(s[2] * s[3]), np.empty(r[2] * r[3]))]]

    def pack(pair, s) -> None:
        pair[0][:] = inp[s[0]:s[0] + s[2], s[1]:s[1] + s[3]].reshape(-1)

    def unpack(pair, r) -> None:
        inp[r[0]:r[0] + r[2], r[1]:r[1] + r[3]] = pair[0].reshape(r[2], r[3])

    jl0, il0 = t.jlo - t.jstart + R, t.ilo - t.istart + R
    nj, ni = t.jhi - t.jlo + 1, t.ihi - t.ilo + 1
    t0 = 0.0
    for it in range(iterations + 1):
        if it == 1:
            comm.Barrier()
            t0 = MPI.Wtime()
        exchange(comm, t, pack, unpack, bufs)
        if nj > 0 and ni > 0:
            o = out[jl0 - R:jl0 - R + nj, il0 - R:il0 - R + ni]
            for k in range(-R, R + 1):
                if k:
                    o += w[R + k] * inp[jl0 + k:jl0 + k + nj, il0:il0 + ni]
                    o += w[R + k] * inp[jl0:jl0 + nj, il0 + k:il0 + k + ni]
        inp[R:-R, R:-R] += 1.0
    return out, MPI.Wtime() - t0


def run_sycl(q, comm, tile: Tile, iterations: int) -> tuple[np.ndarray, float]:
    """The pysycl version: OUT and the timed seconds."""
    import pysycl as sycl

    t = tile
    W, width, height = t.W, t.width, t.height
    inp = sycl.malloc_device((height + 2 * R) * W, q, dtype=np.float64)
    out = sycl.malloc_device(height * width, q, dtype=np.float64)
    w = sycl.malloc_device(2 * R + 1, q, dtype=np.float64)
    q.memcpy(w, weights(), (2 * R + 1) * 8)
    q.memset(inp, 0, (height + 2 * R) * W * 8)
    q.memset(out, 0, height * width * 8)
    istart, jstart = np.float64(t.istart), np.float64(t.jstart)

    def init(it: sycl.item) -> None:  # in = i + j on the tile
        jj, ii = it[0], it[1]
        inp[(jj + R) * W + ii + R] = istart + ii + jstart + jj

    q.parallel_for(sycl.range(height, width), init)
    host_usm = q.get_device().has(sycl.aspect.usm_host_allocations)

    def halo(n: int):  # (what the kernels write or read, what MPI sends or receives)
        if host_usm:  # one memory: mpi4py reads host USM in place
            p = sycl.malloc_host(n, q, dtype=np.float64)
            return p, p
        return sycl.malloc_device(n, q, dtype=np.float64), np.empty(n)  # staged (NVIDIA's OpenCL)

    bufs = [(halo(s[2] * s[3]), halo(r[2] * r[3])) for _, _, s, r, _, _ in t.halos]

    def pack(pair, s) -> None:
        buf, j0, i0, ni = pair[0], s[0], s[1], s[3]

        def pack_halo(it: sycl.item) -> None:
            buf[it[0] * ni + it[1]] = inp[(j0 + it[0]) * W + i0 + it[1]]

        q.parallel_for(sycl.range(s[2], s[3]), pack_halo).wait()  # MPI reads it next
        if pair[1] is not buf:
            q.memcpy(pair[1], buf, pair[1].nbytes).wait()

    def unpack(pair, r) -> None:
        buf, j0, i0, ni = pair[0], r[0], r[1], r[3]
        if pair[1] is not buf:
            q.memcpy(buf, pair[1], pair[1].nbytes)

        def unpack_halo(it: sycl.item) -> None:
            inp[(j0 + it[0]) * W + i0 + it[1]] = buf[it[0] * ni + it[1]]

        q.parallel_for(sycl.range(r[2], r[3]), unpack_halo)

    jl0, il0 = t.jlo - t.jstart + R, t.ilo - t.istart + R
    nj, ni = t.jhi - t.jlo + 1, t.ihi - t.ilo + 1

    def star(it: sycl.item) -> None:
        jl, il = jl0 + it[0], il0 + it[1]
        acc = 0.0
        for k in range(1, R + 1):
            acc += w[R + k] * (inp[(jl + k) * W + il] + inp[jl * W + il + k])
            acc += w[R - k] * (inp[(jl - k) * W + il] + inp[jl * W + il - k])
        out[(jl - R) * width + il - R] += acc

    def add_one(it: sycl.item) -> None:
        inp[(it[0] + R) * W + it[1] + R] += 1.0

    t0 = 0.0
    for it in range(iterations + 1):
        if it == 1:
            q.wait()
            comm.Barrier()
            t0 = MPI.Wtime()
        exchange(comm, t, pack, unpack, bufs)  # host USM goes to mpi4py in place
        if nj > 0 and ni > 0:
            q.parallel_for(sycl.range(nj, ni), star)
        q.parallel_for(sycl.range(height, width), add_one)
    q.wait()
    elapsed = MPI.Wtime() - t0
    h_out = np.empty((height, width))
    q.memcpy(h_out, out, h_out.nbytes).wait()
    for p in (inp, out, w, *(b[0] for pair in bufs for b in pair)):
        sycl.free(p, q)
    return h_out, elapsed


def main() -> None:
    comm, (iterations, n), q = setup("<# iterations> <array dimension>", 2)
    nprocs, me, root = comm.size, comm.rank, 0
    error = 0
    if me == root:
        print("Parallel Research Kernels: MPI stencil execution on 2D grid")
        if iterations < 1:
            print(f"ERROR: iterations must be >= 1 : {iterations}")
            error = 1
        elif n * n < nprocs or 2 * R + 1 > n:
            print(f"ERROR: grid size {n} too small for {nprocs} ranks and radius {R}")
            error = 1
    bail_out(comm, error)
    tile = Tile(comm, n)
    if tile.width < R or tile.height < R:
        print(f"ERROR: rank {me} has work tile smaller then stencil radius")
        error = 1
    bail_out(comm, error)
    name = device_name(comm, q)
    if me == root:
        print(f"Number of ranks        = {nprocs}\nGrid size              = {n}\n"
              f"Radius of stencil      = {R}\nTiles in x/y-direction = {tile.px}/{tile.py}\n"
              f"Type of stencil        = star\nData type              = double precision\n"
              f"Number of iterations   = {iterations}\nDevice                 = {name}")
    if q is None:
        out, local_time = run_numpy(comm, tile, iterations)
    else:
        out, local_time = run_sycl(q, comm, tile, iterations)
    stencil_time = comm.reduce(local_time, op=MPI.MAX, root=root)
    t = tile
    active = out[t.jlo - t.jstart:t.jhi - t.jstart + 1, t.ilo - t.istart:t.ihi - t.istart + 1]
    norm = comm.reduce(float(np.abs(active).sum()), op=MPI.SUM, root=root)
    if me == root:
        f_active_points = float(n - 2 * R) ** 2
        norm /= f_active_points
        reference_norm = (iterations + 1) * 2.0
        if abs(norm - reference_norm) > 1e-8:
            print(f"ERROR: L1 norm = {norm:f}, Reference L1 norm = {reference_norm:f}")
            error = 1
        else:
            print("Solution validates")
            flops = (2 * (4 * R + 1) + 1) * f_active_points
            avgtime = stencil_time / iterations
            print(f"Rate (MFlops/s): {1e-6 * flops / avgtime:f}  Avg time (s): {avgtime:f}")
    bail_out(comm, error)


if __name__ == "__main__":
    main()

"""A 2-D five-point Jacobi sweep split across devices by rows, with halo exchange.

Device ``d`` owns rows ``[lo, hi)`` of an ``n x n`` grid and keeps them with one halo row
above and below in its own USM device memory. A step: every device computes its rows from
its current grid (all devices at once), then the rows next to each boundary between two
devices go to the neighbour's halo. Two ways, chosen by ``--exchange`` (``auto``: ``device``
where the devices can share a context and its USM -- CUDA GPUs, or one device -- else
``host``):

* ``device``: one ``sycl.context`` holds every device; each halo row is a ``q.memcpy``
  from one device's allocation into the other's, on the receiving device's queue, after
  the event of the sending device's kernel (GPU to GPU: peer to peer where the GPUs have
  peer access, else the driver stages it). Nothing waits on the host between steps.
* ``host``: a context per device (devices of different contexts share no memory): every
  device's step is waited for, then each row goes through a host row (``q.memcpy`` to the
  host, then into the other device's memory).

The grid's own border stays fixed. The result is compared with the same sweeps in numpy.

    python examples/multi_device/stencil.py [steps] [n] [--with-host] [--devices N]
                                            [--backend cuda|opencl] [--exchange auto|device|host]
"""

from __future__ import annotations

import itertools
import os
import sys
import time

import numpy as np

import pysycl as sycl

sys.path.insert(0, os.path.dirname(__file__))
from nstream import devices, parser


def _sweep(src, dst, n, first, last):  # type: ignore[no-untyped-def]
    """``dst`` = one Jacobi sweep of ``src`` (rows with a halo row above and below; ``first``/
    ``last``: this block holds the grid's top/bottom row, which stays fixed)."""
    def k(it):  # type: ignore[no-untyped-def]
        r = it[0] + 1  # row in the block, past the halo
        j = it[1]
        at = r * n + j
        if j == 0 or j == n - 1 or (first and r == 1) or (last and r == it.get_range(0)):
            dst[at] = src[at]
        else:
            dst[at] = np.float32(0.25) * (src[at - n] + src[at + n] + src[at - 1] + src[at + 1])
    return k


def reference(grid: np.ndarray, steps: int) -> np.ndarray:
    g = grid.copy()
    for _ in range(steps):
        nxt = g.copy()
        nxt[1:-1, 1:-1] = np.float32(0.25) * (g[:-2, 1:-1] + g[2:, 1:-1]
                                              + g[1:-1, :-2] + g[1:-1, 2:])
        g = nxt
    return g


def check_rows(grid: np.ndarray, out: np.ndarray, steps: int, lo: int, hi: int,
               c0: int = 0, c1: int | None = None) -> None:
    """Rows ``[lo, hi)`` (columns ``[c0, c1)``) of ``out``, ``grid`` after ``steps`` sweeps,
    against numpy's sweeps of a window around them (a point depends on the points up to
    ``steps`` rows and columns away only)."""
    n = grid.shape[0]
    c1 = n if c1 is None else c1
    a, b = max(lo - steps - 1, 0), min(hi + steps + 1, n)
    ca, cb = max(c0 - steps - 1, 0), min(c1 + steps + 1, n)
    want = reference(grid[a:b, ca:cb], steps)[lo - a:hi - a, c0 - ca:c1 - ca]
    np.testing.assert_allclose(out[lo:hi, c0:c1], want, rtol=1e-5, atol=1e-6,
                               err_msg=f"rows {lo}..{hi}, columns {c0}..{c1} after {steps} steps")


def exchange_of(devs: list[sycl.device], exchange: str) -> str:
    """``auto``: ``device`` for one device or GPUs of the CUDA backend (one context holds
    them, USM of each device included), else ``host``."""
    if exchange != "auto":
        return exchange
    one = len(devs) == 1 or all(d.get_backend() is sycl.backend.ext_oneapi_cuda
                                and d.get_platform() == devs[0].get_platform() for d in devs)
    return "device" if one else "host"


class Stencil:
    """``grid`` split by rows across ``devs``: :meth:`run` sweeps, :meth:`result` gathers it."""

    def __init__(self, grid: np.ndarray, devs: list[sycl.device], exchange: str = "auto") -> None:
        n = self.n = grid.shape[0]
        self.exchange = exchange_of(devs, exchange)
        self.done = 0
        ctx = sycl.context(devs) if self.exchange == "device" else None
        bounds = np.linspace(0, n, len(devs) + 1).astype(int)
        self.blocks = []
        for i, d in enumerate(devs):
            q = (sycl.queue(ctx, d, properties=[sycl.property.queue.in_order()]) if ctx
                 else sycl.queue(d, properties=[sycl.property.queue.in_order()]))
            lo, hi = int(bounds[i]), int(bounds[i + 1])
            rows = hi - lo
            a, b = (sycl.malloc_device((rows + 2) * n, q, dtype=np.float32) for _ in range(2))
            init = np.zeros((rows + 2, n), np.float32)  # block row r is grid row lo - 1 + r
            top, bot = max(lo - 1, 0), min(hi + 1, n)
            init[(top - (lo - 1)):(bot - (lo - 1))] = grid[top:bot]
            q.memcpy(a, init, init.nbytes).wait()
            q.memcpy(b, init, init.nbytes).wait()
            first, last = i == 0, i == len(devs) - 1
            sweeps = [_sweep(a, b, n, first, last), _sweep(b, a, n, first, last)]
            self.blocks.append({"q": q, "lo": lo, "rows": rows, "bufs": [a, b],
                                "sweeps": sweeps})
        self.pairs = [(u, dn) for u, dn in itertools.pairwise(self.blocks)
                      if u["rows"] and dn["rows"]]
        self.row = np.empty(n, np.float32)

    def step(self) -> None:
        n, s = self.n, self.done
        dst = (s + 1) % 2
        evs = {}
        for blk in self.blocks:  # every device at once
            if blk["rows"]:
                evs[id(blk)] = blk["q"].parallel_for(sycl.range(blk["rows"], n),
                                                     blk["sweeps"][s % 2])
        for up, down in self.pairs:  # halo exchange: up's last row down, down's first row up
            ru = up["rows"]
            u, dn = up["bufs"][dst], down["bufs"][dst]
            if self.exchange == "device":
                down["q"].memcpy(dn, u + ru * n, n * 4, evs[id(up)])
                up["q"].memcpy(u + (ru + 1) * n, dn + n, n * 4, evs[id(down)])
            else:
                up["q"].wait()
                down["q"].wait()
                row = self.row
                up["q"].memcpy(row, u + ru * n, n * 4).wait()
                down["q"].memcpy(dn, row, n * 4).wait()
                down["q"].memcpy(row, dn + n, n * 4).wait()
                up["q"].memcpy(u + (ru + 1) * n, row, n * 4).wait()
        self.done += 1

    def wait(self) -> None:
        for blk in self.blocks:
            blk["q"].wait()

    def run(self, steps: int) -> float:
        """``steps`` sweeps; the seconds they took (every queue waited for)."""
        self.wait()
        t0 = time.perf_counter()
        for _ in range(steps):
            self.step()
        self.wait()
        return time.perf_counter() - t0

    def result(self) -> np.ndarray:
        """The grid after the sweeps so far, gathered on the host."""
        out = np.empty((self.n, self.n), np.float32)
        for blk in self.blocks:
            rows = blk["rows"]
            if rows:
                tmp = np.empty((rows + 2, self.n), np.float32)
                blk["q"].memcpy(tmp, blk["bufs"][self.done % 2], tmp.nbytes).wait()
                out[blk["lo"]:blk["lo"] + rows] = tmp[1:rows + 1]
        return out

    def free(self) -> None:
        for blk in self.blocks:
            for p in blk["bufs"]:
                sycl.free(p, blk["q"])
        self.blocks = []


def main(steps: int, n: int, devs: list[sycl.device], exchange: str = "auto") -> float:
    """Run the sweeps; returns seconds per step (asserts the result equals numpy's)."""
    grid = np.random.default_rng(5).random((n, n), np.float32)
    st = Stencil(grid, devs, exchange)
    elapsed = st.run(steps)
    out = st.result()
    st.free()
    np.testing.assert_allclose(out, reference(grid, steps), rtol=1e-5, atol=1e-6)
    per_step = elapsed / max(steps, 1)
    print(f"Jacobi {n}x{n}, {steps} steps across {len(devs)} device(s), {st.exchange} "
          f"exchange: validates; {per_step * 1e3:.3f} ms per step")
    return per_step


if __name__ == "__main__":
    ap = parser("steps", 20, "n", 1024)
    ap.add_argument("--exchange", choices=["auto", "device", "host"], default="auto")
    a = ap.parse_args()
    main(a.steps, a.n, devices(a.with_host, a.devices, a.backend), a.exchange)

"""A 2-D five-point Jacobi sweep split across devices by rows, with halo exchange.

Device ``d`` owns rows ``[lo, hi)`` of an ``n x n`` grid and keeps them with one halo row
above and below in its own USM device memory. A step: every device computes its rows from
its current grid (all devices at once), then the rows next to each boundary between two
devices go to the neighbour's halo through the host (``q.memcpy`` to a host row, then into
the other device's memory: devices of different contexts share no memory). The grid's own
border stays fixed. The result is compared with the same sweeps in numpy.

    python examples/multi_device/stencil.py [steps] [n] [--with-host] [--devices N]
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time

import numpy as np

import pysycl as sycl

sys.path.insert(0, os.path.dirname(__file__))
from nstream import devices


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


# long: set-up, the stepping loop with its exchange, and the check, in order.
def main(steps: int, n: int, devs: list[sycl.device]) -> float:
    """Run the sweeps; returns seconds per step (asserts the result equals numpy's)."""
    grid = np.random.default_rng(5).random((n, n), np.float32)
    bounds = np.linspace(0, n, len(devs) + 1).astype(int)
    blocks = []
    for i, d in enumerate(devs):
        q = sycl.queue(d, properties=[sycl.property.queue.in_order()])
        lo, hi = int(bounds[i]), int(bounds[i + 1])
        rows = hi - lo
        a, b = (sycl.malloc_device((rows + 2) * n, q, dtype=np.float32) for _ in range(2))
        init = np.zeros((rows + 2, n), np.float32)  # block row r is grid row lo - 1 + r
        top, bot = max(lo - 1, 0), min(hi + 1, n)
        init[(top - (lo - 1)):(bot - (lo - 1))] = grid[top:bot]
        q.memcpy(a, init, init.nbytes)
        q.memcpy(b, init, init.nbytes)
        blocks.append({"q": q, "lo": lo, "rows": rows, "bufs": [a, b]})
    for blk in blocks:
        blk["q"].wait()
    row = np.empty(n, np.float32)
    t0 = time.perf_counter()
    for s in range(steps):
        src, dst = s % 2, (s + 1) % 2
        for i, blk in enumerate(blocks):  # every device at once
            if blk["rows"]:
                k = _sweep(blk["bufs"][src], blk["bufs"][dst], n, i == 0, i == len(blocks) - 1)
                blk["q"].parallel_for(sycl.range(blk["rows"], n), k)
        for blk in blocks:
            blk["q"].wait()
        for up, down in itertools.pairwise(blocks):  # halo exchange
            ru, rd = up["rows"], down["rows"]
            if not (ru and rd):
                continue
            u, dn = up["bufs"][dst], down["bufs"][dst]
            up["q"].memcpy(row, _at(u, ru * n), n * 4).wait()
            down["q"].memcpy(_at(dn, 0), row, n * 4).wait()
            down["q"].memcpy(row, _at(dn, n), n * 4).wait()
            up["q"].memcpy(_at(u, (ru + 1) * n), row, n * 4).wait()
    elapsed = time.perf_counter() - t0
    out = np.empty((n, n), np.float32)
    final = steps % 2
    for blk in blocks:
        rows = blk["rows"]
        if rows:
            tmp = np.empty((rows + 2, n), np.float32)
            blk["q"].memcpy(tmp, blk["bufs"][final], tmp.nbytes).wait()
            out[blk["lo"]:blk["lo"] + rows] = tmp[1:rows + 1]
        for p in blk["bufs"]:
            sycl.free(p, blk["q"])
    want = reference(grid, steps)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    per_step = elapsed / max(steps, 1)
    print(f"Jacobi {n}x{n}, {steps} steps across {len(devs)} device(s): validates; "
          f"{per_step * 1e3:.3f} ms per step")
    return per_step


def _at(p: sycl.usm_pointer, offset: int) -> sycl.usm_pointer:
    """``p + offset`` elements (a pointer into the same allocation)."""
    return p + offset


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("steps", type=int, nargs="?", default=20)
    ap.add_argument("n", type=int, nargs="?", default=1024)
    ap.add_argument("--with-host", action="store_true")
    ap.add_argument("--devices", type=int, default=None)
    a = ap.parse_args()
    main(a.steps, a.n, devices(a.with_host, a.devices))

"""Issue 27's launch-bound reductions: host time per repeated ``sycl.reduction`` launch.

    python benchmarks/bench_reduce_launch.py [--device cpu|gpu|cuda] [--n 256] [--rounds 9]
                                             [--launches 500] [--write]

Rows, interleaved round by round (each sample: ``--launches`` back-to-back launches, the time
until the last one is issued, then a wait outside the timing; medians over rounds), every
result checked first:

* ``reduction``: ``q.parallel_for(sycl.range(n), sycl.reduction(out, sycl.plus(),
  properties=[initialize_to_identity()]), k)`` with ``k = lambda i, s: s.combine(x[i])`` over
  USM float32 -- the reduction object made at each launch, as a loop does;
* ``reduction, one object``: the same ``sycl.reduction`` object every launch;
* ``command group``: ``q.submit(cg)`` recording the same reduction in a command group;
* ``plain``: ``q.parallel_for(sycl.range(n), k2)``, a remembered launch of a kernel that
  writes ``x`` (one kernel; a reduction is two);

and the ratio of each to ``plain`` (issue 27's target: the first <= 3x on the CPU device).
``--write`` puts the table into docs/performance.md between the ``bench_reduce_launch``
markers.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import pysycl as sycl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import write_section

INIT = [sycl.property.reduction.initialize_to_identity()]


def _queue(which: str) -> sycl.queue:
    if which == "cuda":
        devs = [d for d in sycl.device.get_devices()
                if d.get_backend() is sycl.backend.ext_oneapi_cuda]
    else:
        kind = sycl.info.device_type.cpu if which == "cpu" else sycl.info.device_type.gpu
        devs = [d for d in sycl.device.get_devices(kind)
                if d.image_targets and d.get_backend() is sycl.backend.opencl]
    if not devs:
        sys.exit(f"no {which} device that runs Python kernels")
    return sycl.queue(devs[0])


# long: the four peers built over one set of allocations, then checked, in one frame.
def _peers(q: sycl.queue, n: int) -> dict[str, Callable[[], Any]]:
    x = sycl.malloc_device(n, q, dtype=np.float32)
    q.memcpy(x, np.ones(n, np.float32), n * 4).wait()
    out = sycl.malloc_device(1, q, dtype=np.float32)
    total = np.zeros(1, np.float32)
    buf = sycl.buffer(total)

    def k(i: sycl.id, s: sycl.reducer) -> None:
        s.combine(x[i])

    def k2(i: sycl.id) -> None:
        x[i] = x[i] * 1.0

    one = sycl.reduction(out, sycl.plus(), properties=INIT)

    def cg(h: sycl.handler) -> None:
        h.parallel_for(sycl.range(n), sycl.reduction(buf, h, sycl.plus(), properties=INIT),
                       lambda i, s: s.combine(x[i]))

    peers = {
        "reduction": lambda: q.parallel_for(sycl.range(n), sycl.reduction(
            out, sycl.plus(), properties=INIT), k),
        "reduction, one object": lambda: q.parallel_for(sycl.range(n), one, k),
        "command group": lambda: q.submit(cg),
        "plain": lambda: q.parallel_for(sycl.range(n), k2),
    }
    for name in ("reduction", "reduction, one object"):
        q.memset(out, 0, 4).wait()
        peers[name]().wait()
        got = np.zeros(1, np.float32)
        q.memcpy(got, out, 4).wait()
        assert got[0] == n, (name, got)
    peers["command group"]().wait()
    with buf.get_host_access() as h:
        assert h[0] == n, h[0]
    peers["plain"]().wait()
    peers["keep"] = lambda: (x, out, buf)  # (alive while the peers run)
    return peers


def _time(q: sycl.queue, f: Callable[[], Any], launches: int) -> float:
    q.wait()
    t = time.perf_counter()
    for _ in range(launches):
        f()
    dt = time.perf_counter() - t
    q.wait()
    return dt / launches * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cpu", choices=("cpu", "gpu", "cuda"))
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--launches", type=int, default=500)
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args()
    q = _queue(a.device)
    peers = _peers(q, a.n)
    names = [p for p in peers if p != "keep"]
    res: dict[str, list[float]] = {p: [] for p in names}
    for _ in range(a.rounds):
        for p in names:
            res[p].append(_time(q, peers[p], a.launches))
    med = {p: statistics.median(v) for p, v in res.items()}
    dev = q.get_device().get_info(sycl.info.device.name)
    lines = [f"Measured {datetime.date.today()} on `{platform.node() or '?'}` "
             f"({os.cpu_count()} CPU cores), device **{dev}**: host time to issue one launch "
             f"over `sycl.range({a.n})`, medians of {a.rounds} rounds of {a.launches} "
             "back-to-back launches, peers interleaved round by round, results checked first; "
             "`benchmarks/bench_reduce_launch.py`.", "",
             "| launch | µs per launch | / plain |", "|---|---:|---:|"]
    for p in names:
        lines.append(f"| {p} | {med[p]:.1f} | {med[p] / med['plain']:.2f}x |")
    text = "\n".join(lines)
    print(text)
    if a.write:
        write_section("bench_reduce_launch", text)


if __name__ == "__main__":
    main()

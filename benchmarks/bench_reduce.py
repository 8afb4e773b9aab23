"""Issue 27's reduction rows: ``sycl.reduction`` sums on an NVIDIA GPU beside ``cupy.sum``.

    python benchmarks/bench_reduce.py [--sizes 20,24,28] [--rounds 7] [--write]

Rows: the sum of ``2^k`` float32 for each ``k`` of ``--sizes``, and of ``2^(k-1)`` float64
for the largest (the same bytes), GB/s of the input.

Columns, interleaved round by round (each peer runs 5 back-to-back reductions and one wait
per sample, twice in a row, the first not kept; medians over rounds), every result checked
against float64 numpy first. The unkept sample takes what switching from the previous peer
costs: the GPU's switch from NVIDIA's OpenCL context to the CUDA context halved the next
sample of either CUDA side at 2^20-2^24 (H100, 2026-11-28: pysycl 182 GB/s alone, 106 right
after an OpenCL sample; ``cupy.sum`` 106 alone, 85 right after pysycl):

* ``cuda`` / ``opencl``: pysycl ``q.parallel_for(sycl.range(n), sycl.reduction(s, sycl.plus(),
  [initialize_to_identity()]), lambda i, r: r.combine(x[i]))`` on USM device memory, through
  the CUDA backend and through NVIDIA's OpenCL (the same PTX);
* ``cuda x+1``: the same over ``x + 1`` (4 bytes off 16-byte alignment: the scalar steps);
* ``cuda buffer``: through a buffer and accessor (bench_gpu.py's and bench_cuda.py's kernel);
* ``cupy``: ``cupy.sum(x, out=s)`` into a preallocated scalar;

and, in the float32 rows, the other forms issue 27 names, in a second table:

* ``cuda nd_range`` / ``cuda nd_range buffer``: the sum as an ``nd_range`` reduction
  (work-groups of 256, one item a work-item) on USM and through a buffer, against ``cupy``;
* ``cuda nd_range loop``: an ``nd_range`` of 8 work-groups of 256 a compute unit whose
  work-items loop over the items by a grid stride, on USM;
* ``cuda sum+max``: two reductions of one range kernel (the sum and the maximum) on USM,
  against ``cupy sum+max``: ``cupy.sum`` then ``cupy.max``.

Then the ``cuda`` column of the largest float32 row over the work-groups per SM of a 1-D range
reduction on PTX (``pysycl._kernels.reduction_plan._GROUPS_PER_UNIT_PTX_MAX``), to choose it.
``--write`` puts the tables into docs/performance.md between the ``bench_reduce`` markers.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import pysycl as sycl
from pysycl._kernels import reduction_plan as _plan

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import gpu_queue, rate, write_section

REPS = 5
PEERS = ("cuda", "opencl", "cuda x+1", "cuda buffer", "cupy")
#: the other forms issue 27 names (float32 rows): nd_range (USM, buffer), two reductions
FORMS = ("cuda nd_range", "cuda nd_range buffer", "cuda nd_range loop", "cuda sum+max",
         "cupy sum+max")
INIT = [sycl.property.reduction.initialize_to_identity()]




def _check(name: str, got: float, want: float) -> None:
    if not abs(got - want) <= 2e-4 * abs(want):
        raise AssertionError(f"{name}: sum {got!r}, float64 numpy {want!r}")


def _on_device(q: sycl.queue, x: np.ndarray, offset: int = 0, outs: int = 1
               ) -> tuple[sycl.usm_pointer, sycl.usm_pointer]:
    """``x`` in device memory at ``offset`` elements past an allocation's start, and
    ``outs`` device elements for the results."""
    p = sycl.malloc_device(x.size + offset, q, dtype=x.dtype)
    q.memcpy(p + offset, x, x.nbytes).wait()
    return p + offset, sycl.malloc_device(outs, q, dtype=x.dtype)


def _checked(q: sycl.queue, go: Callable[[], Any], out: sycl.usm_pointer, x: np.ndarray,
             wants: dict[str, float]) -> Callable[[], float]:
    """Run ``go`` once, check the results in ``out`` (one per name in ``wants``), then its
    rate over ``x``."""
    go().wait()
    got = np.empty(len(wants), x.dtype)
    q.memcpy(got, out, got.nbytes).wait()
    for (name, want), v in zip(wants.items(), got, strict=True):
        _check(name, float(v), want)
    return rate(x.nbytes, go, q.wait, REPS)


def _usm(q: sycl.queue, x: np.ndarray, offset: int, want: float) -> Callable[[], float]:
    src, out = _on_device(q, x, offset)
    n = x.size

    def go() -> Any:
        return q.parallel_for(sycl.range(n), sycl.reduction(out, sycl.plus(), INIT),
                              lambda i, r: r.combine(src[i]))

    return _checked(q, go, out, x, {f"{q.get_backend().value} +{offset}": want})


def _buffer(q: sycl.queue, x: np.ndarray, want: float, nd: bool = False) -> Callable[[], float]:
    """The sum through a buffer and accessor: a range, or (``nd``) an nd_range of
    work-groups of 256 with one item a work-item."""
    X, S = sycl.buffer(x), sycl.buffer(np.zeros(1, x.dtype))
    S.set_write_back(False)
    n = x.size

    def cg(h: sycl.handler) -> None:
        a = X.get_access(h, sycl.access_mode.read)
        red = sycl.reduction(S, h, sycl.plus(), properties=INIT)
        if nd:
            h.parallel_for(sycl.nd_range(sycl.range(n), sycl.range(256)), red,
                           lambda it, r: r.combine(a[it.get_global_id(0)]))
        else:
            h.parallel_for(sycl.range(n), red, lambda i, r: r.combine(a[i]))

    q.submit(cg).wait()
    with sycl.host_accessor(S, sycl.access_mode.read) as h:
        _check("nd_range buffer" if nd else "buffer", float(h[0]), want)
    return rate(x.nbytes, lambda: q.submit(cg), q.wait, REPS)


def _nd_range(q: sycl.queue, x: np.ndarray, want: float) -> Callable[[], float]:
    """An nd_range sum (work-groups of 256, one item per work-item) on USM."""
    p, out = _on_device(q, x)
    space = sycl.nd_range(sycl.range(x.size), sycl.range(256))

    def go() -> Any:
        return q.parallel_for(space, sycl.reduction(out, sycl.plus(), INIT),
                              lambda it, r: r.combine(p[it.get_global_id(0)]))

    return _checked(q, go, out, x, {"nd_range": want})


def _nd_range_loop(q: sycl.queue, x: np.ndarray, want: float) -> Callable[[], float]:
    """An nd_range sum whose work-items loop over the items by a grid stride (work-groups
    of 256, 8 a compute unit: the form a GPU reduction takes) on USM."""
    n = x.size
    groups = q.get_device().get_info(sycl.info.device.max_compute_units) * 8
    space = sycl.nd_range(sycl.range(groups * 256), sycl.range(256))
    p, out = _on_device(q, x)

    def k(it: sycl.nd_item, r: sycl.reducer) -> None:
        i = it.get_global_id(0)
        stride = it.get_global_range(0)
        while i < n:
            r.combine(p[i])
            i += stride

    def go() -> Any:
        return q.parallel_for(space, sycl.reduction(out, sycl.plus(), INIT), k)

    return _checked(q, go, out, x, {"nd_range loop": want})


def _two(q: sycl.queue, x: np.ndarray, want: float) -> Callable[[], float]:
    """Two reductions of one range kernel over USM: the sum and the maximum."""
    n = x.size
    p, out = _on_device(q, x, outs=2)

    def both(i: sycl.id, s: sycl.reducer, m: sycl.reducer) -> None:
        v = p[i]
        s.combine(v)
        m.combine(v)

    def go() -> Any:
        return q.parallel_for(sycl.range(n), sycl.reduction(out, sycl.plus(), INIT),
                              sycl.reduction(out + 1, sycl.maximum(), INIT), both)

    return _checked(q, go, out, x, {"sum+max sum": want, "sum+max max": float(x.max())})


def _cupy_two(x: np.ndarray, want: float) -> Callable[[], float]:
    import cupy as cp

    cx, cs, cm = cp.asarray(x), cp.zeros((), x.dtype), cp.zeros((), x.dtype)

    def go() -> None:
        cp.sum(cx, out=cs)
        cp.max(cx, out=cm)

    go()
    _check("cupy sum+max", float(cs), want)
    _check("cupy sum+max max", float(cm), float(x.max()))
    return rate(x.nbytes, go, cp.cuda.Device().synchronize, REPS)


def _cupy(x: np.ndarray, want: float) -> Callable[[], float]:
    import cupy as cp

    cx, cs = cp.asarray(x), cp.zeros((), x.dtype)
    cp.sum(cx, out=cs)
    _check("cupy", float(cs), want)
    return rate(x.nbytes, lambda: cp.sum(cx, out=cs), cp.cuda.Device().synchronize, REPS)


def _row(x: np.ndarray, cuda: sycl.queue | None, ocl: sycl.queue | None,
         forms: bool = False) -> dict[str, Callable[[], float]]:
    want = float(x.sum(dtype=np.float64))
    row: dict[str, Callable[[], float]] = {}
    if cuda is not None:
        row["cuda"] = _usm(cuda, x, 0, want)
        row["cuda x+1"] = _usm(cuda, x, 1, want)
        row["cuda buffer"] = _buffer(cuda, x, want)
        if forms:
            row["cuda nd_range"] = _nd_range(cuda, x, want)
            row["cuda nd_range buffer"] = _buffer(cuda, x, want, nd=True)
            row["cuda nd_range loop"] = _nd_range_loop(cuda, x, want)
            row["cuda sum+max"] = _two(cuda, x, want)
    if ocl is not None:
        row["opencl"] = _usm(ocl, x, 0, want)
    try:
        row["cupy"] = _cupy(x, want)
        if forms:
            row["cupy sum+max"] = _cupy_two(x, want)
    except ImportError as e:
        print(f"cupy: n/a ({e})", file=sys.stderr)
    return row


def _sweep(run: Callable[[], float], q: sycl.queue, rounds: int) -> dict[int, float]:
    """GB/s of ``run`` (on queue ``q``) per work-groups-per-SM setting (the queue's reduction
    plans, which keep their launch sizes, are dropped at each setting)."""
    res: dict[int, list[float]] = {}
    old = _plan._GROUPS_PER_UNIT_PTX, _plan._GROUPS_PER_UNIT_PTX_MAX
    try:
        for _ in range(rounds):
            for per in (1, 2, 3, 4, 6, 8, 16):  # (through CUDA: at most what the SM holds)
                _plan._GROUPS_PER_UNIT_PTX = _plan._GROUPS_PER_UNIT_PTX_MAX = per
                q.executor.launches.clear()
                run()
                res.setdefault(per, []).append(run())
    finally:
        _plan._GROUPS_PER_UNIT_PTX, _plan._GROUPS_PER_UNIT_PTX_MAX = old
        q.executor.launches.clear()
    return {per: statistics.median(v) for per, v in res.items()}


# long: one benchmark driver, rows in order, peers interleaved, then the tables.
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="20,24,28", help="log2 of the float32 element counts")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args()
    cuda, ocl = gpu_queue(sycl.backend.ext_oneapi_cuda), gpu_queue(sycl.backend.opencl)
    if cuda is None and ocl is None:
        sys.exit("no NVIDIA GPU (CUDA or NVIDIA's OpenCL)")
    rng = np.random.default_rng(7)
    logs = sorted(int(k) for k in a.sizes.split(","))
    rows: dict[str, dict[str, Callable[[], float]]] = {}
    for k in logs:
        rows[f"sum 2^{k} float32"] = _row(rng.random(1 << k, np.float32), cuda, ocl, True)
    rows[f"sum 2^{logs[-1] - 1} float64"] = _row(rng.random(1 << (logs[-1] - 1)), cuda, ocl)
    res: dict[str, dict[str, list[float]]] = {r: {} for r in rows}
    for _ in range(a.rounds):
        for r, peers in rows.items():
            for name in (*PEERS, *FORMS):
                if name in peers:  # a sample after one unkept (see the module docstring)
                    peers[name]()
                    res[r].setdefault(name, []).append(peers[name]())
    cols = [p for p in PEERS if any(p in peers for peers in rows.values())]
    lines = [f"| row (GB/s) | {' | '.join(cols)} | cuda / cupy | cuda buffer / cupy |",
             "|---" * (len(cols) + 3) + "|"]
    for r, cells in res.items():
        m = {k: statistics.median(v) for k, v in cells.items()}
        ratio = [f"{m[c] / m['cupy']:.3f}x" if c in m and "cupy" in m else "n/a"
                 for c in ("cuda", "cuda buffer")]
        lines.append(f"| {r} | " + " | ".join(f"{m[c]:.0f}" if c in m else "n/a" for c in cols)
                     + f" | {ratio[0]} | {ratio[1]} |")
    forms = [r for r, cells in res.items() if "cuda nd_range" in cells]
    if forms:
        lines += ["", "The other forms (GB/s of the input; two reductions: the sum and the maximum "
                  "in one kernel, against `cupy.sum` then `cupy.max`):", "",
                  "| row (GB/s) | " + " | ".join(FORMS) + " | nd_range / cupy | nd_range buffer "
                  "/ cupy | nd_range loop / cupy | sum+max / cupy sum+max |",
                  "|---" * (len(FORMS) + 5) + "|"]
        for r in forms:
            m = {k: statistics.median(v) for k, v in res[r].items()}
            lines.append(f"| {r} | " + " | ".join(f"{m[c]:.0f}" for c in FORMS)
                         + f" | {m['cuda nd_range'] / m['cupy']:.3f}x"
                         f" | {m['cuda nd_range buffer'] / m['cupy']:.3f}x"
                         f" | {m['cuda nd_range loop'] / m['cupy']:.3f}x"
                         f" | {m['cuda sum+max'] / m['cupy sum+max']:.3f}x |")
    text = "\n".join(lines)
    big = rows[f"sum 2^{logs[-1]} float32"].get("cuda")
    if big is not None and cuda is not None:
        sw = _sweep(big, cuda, max(1, a.rounds // 2))
        text += ("\n\npysycl CUDA sum of 2^" f"{logs[-1]} float32 by work-groups (of 256) per SM "
                 "(at most what the SM holds; `reduction_plan._GROUPS_PER_UNIT_PTX_MAX`, now "
                 f"{_plan._GROUPS_PER_UNIT_PTX_MAX} through CUDA, "
                 f"{_plan._GROUPS_PER_UNIT_PTX} through OpenCL):\n\n| per SM | "
                 + " | ".join(str(p) for p in sw) + " |\n" + "|---" * (len(sw) + 1) + "|\n"
                 "| GB/s | " + " | ".join(f"{v:.0f}" for v in sw.values()) + " |")
    q = cuda or ocl
    assert q is not None
    head = (f"Measured {datetime.date.today()} on **{q.get_device().get_info(sycl.info.device.name)}**: "
            f"one process, peers interleaved round by round ({a.rounds} rounds, medians of "
            f"{REPS} back-to-back reductions and a wait, each after one such sample not kept), "
            "every result checked first; "
            "`benchmarks/bench_reduce.py`.\n\n")
    print(head + text)
    if a.write:
        write_section("bench_reduce", head + text)


if __name__ == "__main__":
    main()

"""Issue 27's bandwidth rows: range kernels at the copy bandwidth of an NVIDIA GPU.

    python benchmarks/bench_bandwidth.py [--log2 28] [--rounds 5] [--write]

Rows (float32, ``--log2`` elements, 12 bytes moved per element):

* ``triad``: ``a[i] = b[i] + s * c[i]``; ``vadd``: ``a[i] = b[i] + c[i]``.

Columns, interleaved round by round (each peer runs 10 back-to-back launches and one wait
per sample; medians over rounds), every result checked against numpy first:

* ``cuda`` / ``opencl``: pysycl ``q.parallel_for(sycl.range(n), k)`` on USM device memory,
  through the CUDA backend and through NVIDIA's OpenCL (the same PTX);
* ``cupy``: a CuPy ``ElementwiseKernel``;
* ``triton``: a ``@triton.jit`` kernel, ``BLOCK=1024`` elements per program (128-bit loads,
  eight elements per thread with 4 warps), on torch tensors;
* ``copy``: the device-to-device copy bandwidth (CuPy ``a[:] = b``, 8 bytes per element;
  else torch ``copy_``): the reference.

Then a sweep of pysycl CUDA triad over the work-groups per SM of a range launch
(:data:`pysycl._kernels.rangesize.GROUPS_PER_UNIT_GPU`), to choose it. ``--write`` puts
the tables into docs/performance.md between the ``bench_bandwidth`` markers.
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
from pysycl._kernels import rangesize

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import gpu_queue, rate, write_section

REPS = 10
PEERS = ("cuda", "opencl", "cupy", "triton")




def _pysycl(q: sycl.queue, n: int, b_h: np.ndarray, c_h: np.ndarray, s: np.float32,
            want: dict[str, np.ndarray]) -> dict[str, Callable[[], float]]:
    a, b, c = (sycl.malloc_device(n, q, dtype=np.float32) for _ in range(3))
    q.memcpy(b, b_h, b_h.nbytes).wait()
    q.memcpy(c, c_h, c_h.nbytes).wait()

    def triad(i):  # type: ignore[no-untyped-def]
        a[i] = b[i] + s * c[i]

    def vadd(i):  # type: ignore[no-untyped-def]
        a[i] = b[i] + c[i]

    out = {}
    for name, k in (("triad", triad), ("vadd", vadd)):
        q.parallel_for(sycl.range(n), k).wait()
        got = np.empty(n, np.float32)
        q.memcpy(got, a, got.nbytes).wait()
        np.testing.assert_allclose(got, want[name], rtol=1e-6)
        out[name] = rate(12 * n, lambda k=k: q.parallel_for(sycl.range(n), k), q.wait, REPS)
    out["_q"] = q  # type: ignore[assignment]
    out["_triad"] = triad  # type: ignore[assignment]
    return out


def _cupy(n: int, b_h: np.ndarray, c_h: np.ndarray, s: np.float32,
          want: dict[str, np.ndarray]) -> tuple[dict[str, Callable[[], float]], Any]:
    import cupy as cp
    ek = {"triad": cp.ElementwiseKernel("float32 b, float32 c, float32 s", "float32 a",
                                        "a = b + s * c", "triad"),
          "vadd": cp.ElementwiseKernel("float32 b, float32 c", "float32 a", "a = b + c", "vadd")}
    cb, cc = cp.asarray(b_h), cp.asarray(c_h)
    ca = cp.empty_like(cb)
    sync = cp.cuda.Device().synchronize
    calls = {"triad": lambda: ek["triad"](cb, cc, s, ca), "vadd": lambda: ek["vadd"](cb, cc, ca)}
    out = {}
    for name, go in calls.items():
        go()
        np.testing.assert_allclose(cp.asnumpy(ca), want[name], rtol=1e-6)
        out[name] = rate(12 * n, go, sync, REPS)

    def copy() -> None:
        ca[:] = cb
    copy()
    assert np.array_equal(cp.asnumpy(ca), b_h)
    return out, rate(8 * n, copy, sync, REPS)


def _triton(n: int, b_h: np.ndarray, c_h: np.ndarray, s: np.float32,
            want: dict[str, np.ndarray]) -> tuple[dict[str, Callable[[], float]], Any]:
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def triad_k(a_ptr, b_ptr, c_ptr, s, n, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(a_ptr + offs, tl.load(b_ptr + offs, mask=m) + s * tl.load(c_ptr + offs, mask=m),
                 mask=m)

    @triton.jit
    def vadd_k(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(a_ptr + offs, tl.load(b_ptr + offs, mask=m) + tl.load(c_ptr + offs, mask=m),
                 mask=m)

    tb, tc = torch.from_numpy(b_h).cuda(), torch.from_numpy(c_h).cuda()
    ta = torch.empty_like(tb)
    grid = (triton.cdiv(n, 1024),)
    calls = {"triad": lambda: triad_k[grid](ta, tb, tc, float(s), n, BLOCK=1024, num_warps=4),
             "vadd": lambda: vadd_k[grid](ta, tb, tc, n, BLOCK=1024, num_warps=4)}
    out = {}
    for name, go in calls.items():
        go()
        np.testing.assert_allclose(ta.cpu().numpy(), want[name], rtol=1e-6)
        out[name] = rate(12 * n, go, torch.cuda.synchronize, REPS)

    def copy() -> None:
        ta.copy_(tb)
    return out, rate(8 * n, copy, torch.cuda.synchronize, REPS)


def _peers(n: int) -> tuple[dict[str, dict[str, Callable[[], float]]], Any, Any]:
    s = np.float32(3.0)
    rng = np.random.default_rng(1)
    b_h, c_h = rng.random(n, np.float32), rng.random(n, np.float32)
    want = {"triad": b_h + s * c_h, "vadd": b_h + c_h}
    peers: dict[str, dict[str, Callable[[], float]]] = {}
    copy = cuda_q = None
    for name, be in (("cuda", sycl.backend.ext_oneapi_cuda), ("opencl", sycl.backend.opencl)):
        q = gpu_queue(be)
        if q is not None:
            peers[name] = _pysycl(q, n, b_h, c_h, s, want)
            if name == "cuda":
                cuda_q = peers[name]
    for name, make in (("cupy", _cupy), ("triton", _triton)):
        try:
            peers[name], cp_copy = make(n, b_h, c_h, s, want)
            copy = copy or cp_copy
        except ImportError as e:
            print(f"{name}: n/a ({e})", file=sys.stderr)
    return peers, copy, cuda_q


def _sweep(cuda: dict[str, Any], n: int, rounds: int) -> dict[int, float]:
    """pysycl CUDA triad GB/s per work-groups-per-SM setting (launches made afresh)."""
    q, k = cuda["_q"], cuda["_triad"]
    res: dict[int, list[float]] = {}
    old = rangesize.GROUPS_PER_UNIT_GPU
    try:
        for _ in range(rounds):
            for per in (2, 4, 8, 16, 32, 64):
                rangesize.GROUPS_PER_UNIT_GPU = per
                q.executor.launches.clear()  # the next launch is sized again
                run = rate(12 * n, lambda: q.parallel_for(sycl.range(n), k), q.wait, REPS)
                run()
                res.setdefault(per, []).append(run())
    finally:
        rangesize.GROUPS_PER_UNIT_GPU = old
        q.executor.launches.clear()
    return {per: statistics.median(v) for per, v in res.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--log2", type=int, default=28)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--no-sweep", action="store_true", help="no work-groups-per-SM sweep")
    a = ap.parse_args()
    n = 1 << a.log2
    peers, copy, cuda = _peers(n)
    res: dict[str, dict[str, list[float]]] = {"triad": {}, "vadd": {}, "copy": {"copy": []}}
    for _ in range(a.rounds):
        for row in ("triad", "vadd"):
            for name in PEERS:
                if name in peers:
                    res[row].setdefault(name, []).append(peers[name][row]())
        if copy is not None:
            res["copy"]["copy"].append(copy())
    med = {row: {k: statistics.median(v) for k, v in cols.items() if v} for row, cols in res.items()}
    ref = med["copy"].get("copy")
    cols = [p for p in PEERS if p in peers]
    lines = [f"| row (GB/s) | {' | '.join(cols)} | copy | cuda / triton | cuda / copy |",
             "|---" * (len(cols) + 4) + "|"]
    for row in ("triad", "vadd"):
        m = med[row]
        tri = (f"{m['cuda'] / m['triton']:.2f}x" if "cuda" in m and "triton" in m else "")
        cop = f"{m['cuda'] / ref:.0%}" if "cuda" in m and ref else ""
        lines.append(f"| {row} 2^{a.log2} float32 | " + " | ".join(f"{m[c]:.0f}" for c in cols)
                     + f" | {ref or 0:.0f} | {tri} | {cop} |")
    text = "\n".join(lines)
    if cuda is not None and not a.no_sweep:
        sw = _sweep(cuda, n, max(1, a.rounds // 2))
        text += ("\n\npysycl CUDA triad by work-groups (of 256) per SM of a range launch "
                 "(`rangesize.GROUPS_PER_UNIT_GPU`, now "
                 f"{rangesize.GROUPS_PER_UNIT_GPU}):\n\n| per SM | "
                 + " | ".join(str(p) for p in sw) + " |\n" + "|---" * (len(sw) + 1) + "|\n"
                 "| GB/s | " + " | ".join(f"{v:.0f}" for v in sw.values()) + " |")
    dev = (cuda or {}).get("_q") or next((p["_q"] for p in peers.values() if "_q" in p), None)
    name = dev.get_device().get_info(sycl.info.device.name) if dev is not None else "?"
    head = (f"Measured {datetime.date.today()} on **{name}**: one process, peers interleaved "
            f"round by round ({a.rounds} rounds, medians of {REPS} back-to-back launches and "
            "a wait), every result checked first; `benchmarks/bench_bandwidth.py`.\n\n")
    print(head + text)
    if a.write:
        write_section("bench_bandwidth", head + text)


if __name__ == "__main__":
    main()

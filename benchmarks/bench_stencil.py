"""Issue 27's Jacobi row: a 5-point sweep on an NVIDIA GPU, pysycl beside the best peers.

    python benchmarks/bench_stencil.py [--n 8192,16384] [--rounds 7] [--write] [--no-sweep]
                                       [--tiles 1x1,2x1,4x1]

``out[i, j] = 0.25 * (in[i-1, j] + in[i+1, j] + in[i, j-1] + in[i, j+1])`` over the interior
of an ``N x N`` float32 grid (the border is not written), in device memory. GB/s count the
compulsory traffic: one read and one write of each interior point (8 bytes).

Rows, every result checked against numpy first, then interleaved round by round (each
sample 10 back-to-back launches and a wait; medians over the rounds):

* pysycl ``range``: ``q.parallel_for(sycl.range(N - 2, N - 2), k)`` on USM device memory,
  ``i, j = it[0] + 1, it[1] + 1``, as a user writes it -- through the CUDA backend and
  through NVIDIA's OpenCL (the same PTX); the launch is the runtime's
  (``pysycl/_kernels/rangesize.py``);
* pysycl ``nd_range``: work-groups of 32 x 8 and 16 x 16 over the interior rounded up,
  the body guarded;
* CuPy ``RawKernel`` in CUDA C, ``const float *__restrict__`` input: blocks of 32 x 8
  threads, one point each; and blocks of 32 x 8 threads each running 8 consecutive rows
  of its column (the rows above and below kept in registers: 3 loads a point);
* CuPy slicing, ``0.25 * (a[:-2, 1:-1] + ...)`` (temporaries: the reference of the
  array way, no peer of a kernel);
* Triton: programs of 16 x 128 points (4 warps), masked loads;
* copy: the device's copy bandwidth (CuPy ``a[:] = b``, 8 bytes an element).

The best peer is the fastest non-pysycl row; each pysycl row shows its ratio to it. Then
(``--no-sweep`` skips it) the variants of the ``range`` kernel's entry point: for each
tile ``RxS`` in ``--tiles`` (``abi.RANGE_BLOCK``: the rows x columns a work-item of a large
range runs; compiled into the entry point, which the compile caches do not key
on) a process of its own with a fresh ``PYSYCL_CACHE_DIR`` measures pysycl's CUDA
``range`` row beside CuPy's point-a-thread ``RawKernel`` and Triton, interleaved, at every
size, each row checked against numpy first; the table gives each variant's GB/s and its
ratio to the best peer of its own process. ``--write`` puts the tables into
docs/performance.md between the ``bench_stencil`` markers. Without an NVIDIA GPU the
pysycl rows run on the default device at ``--n`` (a smoke test, 514 unless given;
``--write`` refused; the variants run there too).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import pysycl as sycl
from pysycl._core import abi

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import rate, write_section

REPS = 10
Runner = Callable[[], float]

CUDA_C = r"""
extern "C" __global__ void jacobi(const float *__restrict__ a, float *__restrict__ o, int n) {
    int j = blockIdx.x * blockDim.x + threadIdx.x + 1;
    int i = blockIdx.y * blockDim.y + threadIdx.y + 1;
    if (i < n - 1 && j < n - 1) {
        size_t c = (size_t)i * n + j;
        o[c] = 0.25f * (a[c - n] + a[c + n] + a[c - 1] + a[c + 1]);
    }
}
extern "C" __global__ void jacobi_rows(const float *__restrict__ a, float *__restrict__ o,
                                       int n) {
    int j = blockIdx.x * blockDim.x + threadIdx.x + 1;
    int i0 = (blockIdx.y * blockDim.y + threadIdx.y) * ROWS + 1;
    if (j >= n - 1 || i0 >= n - 1) return;
    int end = min(i0 + ROWS, n - 1);
    size_t c = (size_t)i0 * n + j;
    float up = a[c - n], mid = a[c];
    for (int i = i0; i < end; ++i, c += n) {
        float down = a[c + n];
        o[c] = 0.25f * (up + down + a[c - 1] + a[c + 1]);
        up = mid;
        mid = down;
    }
}
"""
CUPY_ROWS = 8  # rows a thread of jacobi_rows runs



def _check(name: str, got: np.ndarray, want: np.ndarray) -> None:
    """``got`` equals numpy's sweep (float32 sums in the same order: to rounding)."""
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=0, err_msg=name)


def _queues() -> dict[str, sycl.queue]:
    """pysycl's queues on NVIDIA GPUs (PTX images): CUDA's and NVIDIA OpenCL's view."""
    out = {}
    for d in sycl.device.get_devices(sycl.info.device_type.gpu):
        if d.image_targets and d.image_targets[0][0] == "ptx":
            name = "cuda" if d.get_backend() is sycl.backend.ext_oneapi_cuda else "opencl"
            out.setdefault(name, sycl.queue(d))
    return out


def _jacobi_range(a: Any, o: Any, n: int) -> Callable[..., None]:
    quarter = np.float32(0.25)

    def jacobi(it):  # type: ignore[no-untyped-def]
        i, j = it[0] + 1, it[1] + 1
        o[i * n + j] = quarter * (a[(i - 1) * n + j] + a[(i + 1) * n + j]
                                  + a[i * n + j - 1] + a[i * n + j + 1])
    return jacobi


def _jacobi_nd(a: Any, o: Any, n: int) -> Callable[..., None]:
    quarter = np.float32(0.25)

    def jacobi_nd(it):  # type: ignore[no-untyped-def]
        i, j = it.get_global_id(0) + 1, it.get_global_id(1) + 1
        if i < n - 1 and j < n - 1:
            o[i * n + j] = quarter * (a[(i - 1) * n + j] + a[(i + 1) * n + j]
                                      + a[i * n + j - 1] + a[i * n + j + 1])
    return jacobi_nd


def _pysycl(q: sycl.queue, src: np.ndarray, want: np.ndarray, tag: str,
            groups: tuple[tuple[int, int], ...]) -> tuple[dict[str, Runner], Callable[[], None]]:
    """pysycl's rows on queue ``q`` (``range``, then ``nd_range`` per work-group in
    ``groups``, (rows, columns)); and the function that frees their memory."""
    n = src.shape[0]
    a = sycl.malloc_device(src.size, q, dtype=np.float32)
    o = sycl.malloc_device(src.size, q, dtype=np.float32)
    q.memcpy(a, src, src.nbytes).wait()
    inner = sycl.range(n - 2, n - 2)
    launches: dict[str, Callable[[], Any]] = {}
    k = _jacobi_range(a, o, n)
    launches[f"pysycl `range` ({tag})"] = lambda: q.parallel_for(inner, k)
    knd = _jacobi_nd(a, o, n)
    for gy, gx in groups:
        nd = sycl.nd_range(sycl.range(-(-(n - 2) // gy) * gy, -(-(n - 2) // gx) * gx),
                           sycl.range(gy, gx))
        launches[f"pysycl `nd_range` {gx}x{gy} ({tag})"] = lambda nd=nd: q.parallel_for(nd, knd)
    out: dict[str, Runner] = {}
    got = np.empty_like(src)
    for name, go in launches.items():
        q.memset(o, 0, src.nbytes).wait()
        go()
        q.wait()
        q.memcpy(got, o, got.nbytes).wait()
        _check(name, got, want)
        out[name] = rate(8 * (n - 2) ** 2, go, q.wait, REPS)

    def free() -> None:
        sycl.free(a, q)
        sycl.free(o, q)
    return out, free


def _cupy(src: np.ndarray, want: np.ndarray) -> tuple[dict[str, Runner], Runner]:
    """CuPy's rows (RawKernel one point a thread, RawKernel 8 rows a thread, slicing) and
    the copy bandwidth."""
    import cupy as cp

    n = src.shape[0]
    mod = cp.RawModule(code=CUDA_C, options=(f"-DROWS={CUPY_ROWS}",))
    one, rows = mod.get_function("jacobi"), mod.get_function("jacobi_rows")
    a, o = cp.asarray(src), cp.zeros(src.shape, cp.float32)
    sync = cp.cuda.Device().synchronize
    grid1 = (-(-(n - 2) // 32), -(-(n - 2) // 8))
    grid_rows = (-(-(n - 2) // 32), -(-(n - 2) // (8 * CUPY_ROWS)))
    nn = np.int32(n)

    def sliced() -> None:
        o[1:-1, 1:-1] = 0.25 * (a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:])

    calls = {"CuPy `RawKernel` 32x8, a point a thread": lambda: one(grid1, (32, 8), (a, o, nn)),
             f"CuPy `RawKernel` 32x8, {CUPY_ROWS} rows a thread":
                 lambda: rows(grid_rows, (32, 8), (a, o, nn)),
             "CuPy slicing": sliced}
    out = {}
    for name, go in calls.items():
        o[:] = 0
        go()
        _check(name, cp.asnumpy(o), want)
        out[name] = rate(8 * (n - 2) ** 2, go, sync, REPS)
    b = cp.empty_like(a)

    def copy() -> None:
        b[:] = a
    copy()
    assert bool((b == a).all())
    return out, rate(8 * src.size, copy, sync, REPS)


def _triton(src: np.ndarray, want: np.ndarray) -> dict[str, Runner]:
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def jacobi_k(a_ptr, o_ptr, n, BM: tl.constexpr, BN: tl.constexpr):  # type: ignore[no-untyped-def]
        i = 1 + tl.program_id(1) * BM + tl.arange(0, BM)[:, None]
        j = 1 + tl.program_id(0) * BN + tl.arange(0, BN)[None, :]
        m = (i < n - 1) & (j < n - 1)
        c = i * n + j
        s = (tl.load(a_ptr + c - n, mask=m) + tl.load(a_ptr + c + n, mask=m)
             + tl.load(a_ptr + c - 1, mask=m) + tl.load(a_ptr + c + 1, mask=m))
        tl.store(o_ptr + c, 0.25 * s, mask=m)

    n = src.shape[0]
    a = torch.from_numpy(src).cuda()
    o = torch.zeros_like(a)
    grid = (triton.cdiv(n - 2, 128), triton.cdiv(n - 2, 16))

    def go() -> None:
        jacobi_k[grid](a, o, n, BM=16, BN=128, num_warps=4)
    go()
    _check("triton", o.cpu().numpy(), want)
    return {"Triton 16x128 a program": rate(8 * (n - 2) ** 2, go, torch.cuda.synchronize, REPS)}


def _variants(sizes: list[int], rounds: int, columns: list[str],
              ) -> dict[str, dict[int, tuple[float, float | None]]]:
    """Each tile's (``abi.RANGE_BLOCK``, ``RxS``) (pysycl CUDA ``range`` GB/s, best peer's
    GB/s in the same process) by size: a process each (``--variant``), a fresh compile
    cache each."""
    out: dict[str, dict[int, tuple[float, float | None]]] = {}
    for c in columns:
        with tempfile.TemporaryDirectory(prefix="bench-stencil-") as cache:
            r = subprocess.run([sys.executable, __file__, "--variant", str(c), "--n",
                                ",".join(map(str, sizes)), "--rounds", str(rounds)],
                               env={**os.environ, "PYSYCL_CACHE_DIR": cache},
                               capture_output=True, text=True, check=False)
        if r.returncode != 0:
            raise RuntimeError(f"bench_stencil --variant {c} failed:\n{r.stderr}")
        got = json.loads(r.stdout.strip().splitlines()[-1])
        out[c] = {int(n): (v[0], v[1]) for n, v in got.items()}
    return out


def _variant(tile: str, sizes: list[int], rounds: int) -> None:
    """A ``--variant`` process: ``abi.RANGE_BLOCK`` = the tile ``RxS`` before anything
    compiles, then the CUDA (or this device's) ``range`` row and the peers; one JSON line
    out."""
    r, c = (int(v) for v in tile.split("x"))
    abi.RANGE_BLOCK = (r, c)
    queues = _queues()
    tag = "cuda" if "cuda" in queues else next(iter(queues), "this device")
    q = queues.get(tag) or sycl.queue()
    res = {}
    for n in sizes:
        med, _copy, _missing = _measure(n, {tag: q}, rounds, nd_groups=False)
        best = max((v for k, v in med.items() if not k.startswith("pysycl")), default=None)
        res[n] = (med[f"pysycl `range` ({tag})"], best)
    print(json.dumps(res))


def _variant_table(var: dict[str, dict[int, tuple[float, float | None]]]) -> str:
    sizes = list(next(iter(var.values())))
    head = ("The `range` row's entry-point variants, each in a process of its own (a fresh "
            "compile cache) beside CuPy's point-a-thread `RawKernel` and Triton there, "
            "interleaved; GB/s (x: / the best peer of that process). `pysycl._core.abi.RANGE_BLOCK`: "
            "the tile (rows x columns) a work-item of a large range runs (1x1: an item), now "
            f"{abi.RANGE_BLOCK[0]}x{abi.RANGE_BLOCK[1]}.\n\n")
    lines = ["| tile (`abi.RANGE_BLOCK`) | " + " | ".join(f"{n}²" for n in sizes) + " |",
             "|---" * (len(sizes) + 1) + "|"]
    for c, per in var.items():
        cells = [f"{v:.0f} ({v / b:.2f}x)" if b else f"{v:.0f}" for v, b in per.values()]
        lines.append(f"| {c} | " + " | ".join(cells) + " |")
    return head + "\n".join(lines)


def _measure(n: int, queues: dict[str, sycl.queue], rounds: int, nd_groups: bool = True,
             ) -> tuple[dict[str, float], float | None, dict[str, str]]:
    """Every row's median GB/s at size ``n``, the copy bandwidth, and the rows that could
    not run (why); ``nd_groups`` False: pysycl's ``range`` rows only, and of the peers
    CuPy's point-a-thread ``RawKernel`` and Triton (``--variant``)."""
    src = np.random.default_rng(n).random((n, n), dtype=np.float32)
    want = np.zeros_like(src)
    want[1:-1, 1:-1] = np.float32(0.25) * (src[:-2, 1:-1] + src[2:, 1:-1] + src[1:-1, :-2]
                                           + src[1:-1, 2:])
    runners: dict[str, Runner] = {}
    frees = []
    for tag, q in queues.items():
        groups = ((8, 32), (16, 16)) if tag == "cuda" else ((8, 32),)
        runs, free = _pysycl(q, src, want, tag, groups if nd_groups else ())
        runners.update(runs)
        frees.append(free)
    missing: dict[str, str] = {}
    copy = None
    for name, make in (("cupy", _cupy), ("triton", _triton)):
        try:
            got = make(src, want)
        except ImportError as e:
            missing[name] = str(e)
            continue
        if isinstance(got, tuple):
            got, copy = got
        if not nd_groups:
            got = {k: v for k, v in got.items() if "a point a thread" in k or "Triton" in k}
            copy = None
        runners.update(got)
    samples: dict[str, list[float]] = {name: [] for name in runners}
    copies: list[float] = []
    for _ in range(rounds):
        for name, run in runners.items():
            samples[name].append(run())
        if copy is not None:
            copies.append(copy())
    for free in frees:
        free()
    med = {name: statistics.median(v) for name, v in samples.items()}
    return med, statistics.median(copies) if copies else None, missing


def _table(res: dict[int, tuple[dict[str, float], float | None, dict[str, str]]]) -> str:
    sizes = list(res)
    names = list(next(iter(res.values()))[0])
    best = {n: max((v for k, v in res[n][0].items() if not k.startswith("pysycl")), default=None)
            for n in sizes}
    lines = ["| kernel (GB/s: read + write of the interior; x: / the best peer) | "
             + " | ".join(f"{n}²" for n in sizes) + " |", "|---" * (len(sizes) + 1) + "|"]
    for name in names:
        cells = []
        for n in sizes:
            v = res[n][0][name]
            ratio = f" ({v / best[n]:.2f}x)" if best[n] else ""
            cells.append(f"**{v:.0f}**{ratio}" if v == best[n] else f"{v:.0f}{ratio}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append("| copy (CuPy `a[:] = b`, 8 bytes an element) | "
                 + " | ".join(f"{res[n][1]:.0f}" if res[n][1] else "n/a" for n in sizes) + " |")
    for why in {w for n in sizes for w in res[n][2].items()}:
        lines.append(f"\n{why[0]}: n/a ({why[1]})")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", default=None, help="grid sizes, comma-separated (8192,16384)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--no-sweep", action="store_true")
    ap.add_argument("--tiles", default="1x1,2x1,4x1",
                    help="abi.RANGE_BLOCK tiles (rows x columns) of the variants' table")
    ap.add_argument("--variant", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.variant is not None:  # a process of the variants' table (_variants)
        _variant(a.variant, [int(s) for s in (a.n or "514").split(",")], a.rounds)
        return
    queues = _queues()
    if not queues:
        dev = sycl.queue().get_device()
        print(f"bench_stencil: no NVIDIA GPU among {[str(d) for d in sycl.device.get_devices()]}: "
              f"the pysycl rows only, on {dev.get_info(sycl.info.device.name)} (a smoke test)",
              file=sys.stderr)
        queues = {"this device": sycl.queue(dev)}
    gpu = "this device" not in queues
    sizes = [int(s) for s in (a.n or ("8192,16384" if gpu else "514")).split(",")]
    res = {n: _measure(n, queues, a.rounds) for n in sizes}
    text = _table(res)
    if not a.no_sweep:
        text += "\n\n" + _variant_table(_variants(sizes, a.rounds, a.tiles.split(",")))
    dev = next(iter(queues.values())).get_device().get_info(sycl.info.device.name)
    head = (f"Measured {datetime.date.today()} on **{dev}**: one process, rows interleaved "
            f"round by round ({a.rounds} rounds, medians of {REPS} back-to-back launches and "
            "a wait), every result checked against numpy first; "
            "`benchmarks/bench_stencil.py`.\n\n")
    print(head + text)
    if a.write and gpu:
        write_section("bench_stencil", head + text)
    elif a.write:
        print("bench_stencil: --write needs an NVIDIA GPU (nothing written)", file=sys.stderr)


if __name__ == "__main__":
    main()

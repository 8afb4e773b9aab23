"""Command graphs on an NVIDIA GPU (issue 27): a 100-kernel sequence replayed as a graph.

One process, the sides interleaved round by round, medians; every result checked once
before timing. The sequence: ``K`` = 100 kernels, kernel ``j`` computing
``y[i] = y[i] * 0.5 + c_j`` over ``N`` float32 (each after the previous), on the CUDA
backend's GPU:

* **pysycl graph** -- ``q.ext_oneapi_graph(exec_g)`` of the graph recorded from the 100
  launches (on the CUDA backend: one CUDA graph, captured at the first replay);
* **CuPy graph** -- the same 100 ``RawKernel`` launches captured by CuPy's stream capture
  (``stream.begin_capture()`` .. ``end_capture()``), replayed with ``graph.launch()``;
* **pysycl eager** -- the 100 ``q.parallel_for(range(N), k_j)`` (informational);
* **PyTorch graph** -- where torch is installed: ``torch.cuda.CUDAGraph`` of 100
  ``y.mul_(0.5).add_(c_j)`` pairs (200 kernels: informational, not the same sequence).

A round runs the sequence ``R`` = 10 times and waits once. Per kernel: the time to issue
the work, and to completion (issue + wait). Target: pysycl's replay <= 1.2x CuPy's graph.

    python benchmarks/bench_graph_cuda.py [--quick] [--write]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import time

import numpy as np
from _common import write_section

import pysycl as sycl
import pysycl.ext.oneapi.experimental as syclex

K = 100
R = 10
_SRC = r'''extern "C" __global__ void step(float *y, float c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = y[i] * 0.5f + c;
}'''


def _expected(cs: list[float], n: int) -> np.ndarray:
    y = np.zeros(n, np.float32)
    for _ in range(R):
        for c in cs:
            y = y * np.float32(0.5) + np.float32(c)
    return y


def _pysycl(q: sycl.queue, n: int, cs: list[float]) -> dict:
    y = sycl.malloc_device(n, q, dtype=np.float32)
    r = sycl.range(n)

    def make(c: float):  # type: ignore[no-untyped-def]
        c32 = np.float32(c)
        return lambda i: y.__setitem__(i, y[i] * np.float32(0.5) + c32)
    ks = [make(c) for c in cs]
    g = syclex.command_graph(q.get_context(), q.get_device())
    g.begin_recording(q)
    for k in ks:
        q.parallel_for(r, k)
    g.end_recording()
    exec_g = g.finalize()

    def replay() -> None:
        for _ in range(R):
            q.ext_oneapi_graph(exec_g)

    def eager() -> None:
        for _ in range(R):
            for k in ks:
                q.parallel_for(r, k)

    def reset() -> None:
        q.memset(y, 0, n * 4).wait()

    def read() -> np.ndarray:
        out = np.empty(n, np.float32)
        q.memcpy(out, y, n * 4).wait()
        return out
    return {"replay": replay, "eager": eager, "wait": q.wait, "reset": reset, "read": read}


def _cupy(n: int, cs: list[float]) -> dict | None:
    try:
        import cupy
    except ImportError:
        return None
    k = cupy.RawKernel(_SRC, "step")
    y = cupy.zeros(n, cupy.float32)
    s = cupy.cuda.Stream(non_blocking=True)
    grid, block = ((n + 255) // 256,), (256,)
    with s:
        s.begin_capture()
        for c in cs:
            k(grid, block, (y, np.float32(c), np.int32(n)))
        graph = s.end_capture()

    def replay() -> None:
        for _ in range(R):
            graph.launch(s)

    def reset() -> None:
        y.fill(0)
        cupy.cuda.Device().synchronize()
    return {"replay": replay, "wait": s.synchronize, "reset": reset, "read": lambda: y.get()}


def _torch(n: int, cs: list[float]) -> dict | None:
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    y = torch.zeros(n, dtype=torch.float32, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm-up outside the capture, as torch asks
        for c in cs[:2]:
            y.mul_(0.5).add_(c)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for c in cs:
            y.mul_(0.5).add_(c)

    def replay() -> None:
        for _ in range(R):
            g.replay()

    def reset() -> None:
        y.zero_()
        torch.cuda.synchronize()
    return {"replay": replay, "wait": torch.cuda.synchronize, "reset": reset,
            "read": lambda: y.cpu().numpy()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--n", type=int, default=1 << 12, help="items per kernel")
    args = ap.parse_args()
    cuda = [d for d in sycl.device.get_devices()
            if d.get_backend() is sycl.backend.ext_oneapi_cuda]
    if not cuda:
        raise SystemExit("no CUDA device: this benchmark needs the CUDA backend")
    q = sycl.queue(cuda[0])
    n = args.n
    cs = [float(j % 7) for j in range(K)]
    want = _expected(cs, n)
    py = _pysycl(q, n, cs)
    sides = {"pysycl graph": (py["replay"], py), "pysycl eager": (py["eager"], py)}
    cp = _cupy(n, cs)
    if cp is not None:
        sides["CuPy graph"] = (cp["replay"], cp)
    th = _torch(n, cs)
    for name, (run, s) in sides.items():  # every result checked first
        s["reset"]()
        run()
        s["wait"]()
        np.testing.assert_allclose(s["read"](), want, rtol=1e-5, err_msg=name)
    if th is not None:
        sides["PyTorch graph (200 kernels)"] = (th["replay"], th)
    rounds = 5 if args.quick else 30
    issue: dict[str, list[float]] = {k: [] for k in sides}
    total: dict[str, list[float]] = {k: [] for k in sides}
    for _ in range(rounds + 2):
        for name, (run, s) in sides.items():
            s["wait"]()
            t0 = time.perf_counter()
            run()
            t1 = time.perf_counter()
            s["wait"]()
            t2 = time.perf_counter()
            issue[name].append(t1 - t0)
            total[name].append(t2 - t0)
    per = K * R
    med = {k: (statistics.median(issue[k][2:]) / per * 1e6,
               statistics.median(total[k][2:]) / per * 1e6) for k in sides}
    base = med.get("CuPy graph")
    dev = q.get_device().get_info(sycl.info.device.name)
    lines = [f"Measured {datetime.date.today()} on `{platform.node()}` ({os.cpu_count()} CPU "
             f"cores): {dev} (CUDA backend). {K} kernels of {n} float32, each after the "
             f"previous, the sequence run {R} times a round, {rounds} rounds interleaved, "
             "medians; results checked first (`benchmarks/bench_graph_cuda.py`).", "",
             "| side | issue, µs per kernel | to completion, µs per kernel | "
             "issue / CuPy graph | completion / CuPy graph |",
             "| --- | ---: | ---: | ---: | ---: |"]
    for k, (i, t) in med.items():
        ri = f"{i / base[0]:.2f}x" if base else ""
        rt = f"{t / base[1]:.2f}x" if base else ""
        lines.append(f"| {k} | {i:.3f} | {t:.3f} | {ri} | {rt} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.write:
        write_section("bench_graph_cuda", text)


if __name__ == "__main__":
    main()

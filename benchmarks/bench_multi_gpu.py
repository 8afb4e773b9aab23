"""Issue 26: one process on every GPU of a machine -- 2 GPUs against 1, the examples of
``examples/multi_device/`` (their ``NStream`` and ``Stencil`` classes) timed round by round.

    python benchmarks/bench_multi_gpu.py [--backend cuda] [--write]
    python benchmarks/bench_multi_gpu.py --quick        # a smoke test on any machine

Rows:

* **nstream** (PRK's triad ``A += B + 3 C`` in float64): ``--length`` doubles per vector
  (default 2^28, 2 GiB: 6 GiB of vectors on the one GPU, 3 GiB on each of two), split in
  halves on 2 GPUs; aggregate bandwidth (32 bytes per element and iteration) over
  ``--iterations`` iterations. Target: 2 GPUs >= 1.9x one.
* **stencil** (a five-point Jacobi sweep in float32 of an ``n x n`` grid, rows split in
  halves with a halo row each side, ``--stencil-n`` sizes): time per step over ``--steps``
  steps, halos exchanged GPU to GPU (one context of both GPUs, ``q.memcpy`` between their
  USM after the other GPU's kernel event, no host wait) and, for comparison, through the
  host (a context each, every step waited for). Target: 2 GPUs <= 0.55x one GPU's time,
  which needs a grid whose sweep takes much longer than the exchange's latency (tens of
  microseconds per step): the sizes show where that holds.

Every configuration is set up once; each round runs each of them in turn (the order
alternating from round to round); the medians are reported. Results are checked at the
end: nstream's every element (PRK's closed form); the stencil's grids equal bit for bit
between the configurations (the same float operations per point), and patches of them --
at the boundary between the GPUs, the corners, the middle -- against numpy's sweeps of a
window around each.

With fewer than two devices (this machine's CPU device), ``--quick`` runs the same code on
two sub-devices of one device: a smoke test, whose numbers mean nothing; ``--write`` needs
two GPUs.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

import pysycl as sycl

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples" / "multi_device"))
from _common import write_section
from nstream import NStream, devices
from stencil import Stencil, check_rows


def _args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", choices=["cuda", "opencl"], default=None)
    ap.add_argument("--length", type=int, default=1 << 28)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--stencil-n", default="8192,16384,24576")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="small sizes, few rounds")
    ap.add_argument("--write", action="store_true", help="update docs/performance.md")
    a = ap.parse_args()
    if a.quick:
        a.length, a.iterations, a.stencil_n, a.steps, a.rounds = 1 << 20, 3, "130", 4, 2
    return a


def _two_devices(a: argparse.Namespace) -> tuple[list[sycl.device], bool]:
    """Two devices, and whether they are real (else two sub-devices of one, ``--quick``)."""
    devs = devices(backend=a.backend)
    if len(devs) >= 2:
        return devs[:2], True
    if not a.quick:
        raise SystemExit(f"two devices needed, found {[d.display_name for d in devs]} "
                         "(--quick tries two sub-devices of one)")
    pp = sycl.info.partition_property
    cus = devs[0].get_info(sycl.info.device.max_compute_units)
    return devs[0].create_sub_devices(pp.partition_equally, max(cus // 2, 1))[:2], False


def _rounds(fns: dict[str, Callable[[], float]], rounds: int) -> dict[str, float]:
    """Each of ``fns`` once per round (alternating the order), after one warm-up round;
    the median of each one's returned time."""
    for f in fns.values():
        f()
    times: dict[str, list[float]] = {k: [] for k in fns}
    names = list(fns)
    for r in range(rounds):
        for k in (names if r % 2 == 0 else names[::-1]):
            times[k].append(fns[k]())
    return {k: statistics.median(v) for k, v in times.items()}


def bench_nstream(a: argparse.Namespace, devs: list[sycl.device]) -> dict[str, float]:
    """Aggregate bandwidth (GB/s) of nstream on one device and on two."""
    runs = {"1": NStream(a.length, devs[:1]), "2": NStream(a.length, devs)}
    t = _rounds({k: (lambda ns=ns: ns.run(a.iterations)) for k, ns in runs.items()}, a.rounds)
    for ns in runs.values():
        ns.check()
        ns.free()
    return {k: 32.0 * a.length * a.iterations / v / 1e9 for k, v in t.items()}


def bench_stencil(a: argparse.Namespace, devs: list[sycl.device], n: int) -> dict[str, float]:
    """Seconds per step on one device, two (device exchange), two (host exchange)."""
    grid = np.random.default_rng(n).random((n, n), np.float32)
    runs = {"1": Stencil(grid, devs[:1]), "2 device": Stencil(grid, devs, "device"),
            "2 host": Stencil(grid, devs, "host")}
    t = _rounds({k: (lambda st=st: st.run(a.steps)) for k, st in runs.items()}, a.rounds)
    outs = {k: st.result() for k, st in runs.items()}
    steps = runs["1"].done
    for k, st in runs.items():
        st.free()
        assert st.done == steps
        if k != "1":
            bad = np.argwhere(outs[k] != outs["1"])
            assert not bad.size, f"stencil {k}: differs from one device at {bad[0]}"
    m, w = n // 2, 4
    for r0, c0 in ((0, 0), (m - w, 0), (m - w, m - w), (m - w, n - 2 * w), (n - 2 * w, n - 2 * w)):
        check_rows(grid, outs["1"], steps, r0, r0 + 2 * w, c0, c0 + 2 * w)
    return {k: v / a.steps for k, v in t.items()}


def _label(devs: list[sycl.device]) -> str:
    d = devs[0]
    return (f"{len(devs)} x {d.get_info(sycl.info.device.name)} "
            f"({d.get_backend().name}, driver {d.get_info(sycl.info.device.driver_version)})")


def main() -> None:
    a = _args()
    devs, real = _two_devices(a)
    if a.write and not real:
        raise SystemExit("--write needs two GPUs")
    print(f"devices: {[d.display_name for d in devs]}", file=sys.stderr)
    ns = bench_nstream(a, devs)
    lines = [f"Measured {datetime.date.today().isoformat()} on `{platform.node() or '?'}` "
             f"({os.cpu_count()} CPU cores): {_label(devs)}"
             + ("" if real else " -- two sub-devices of one device: a smoke test") + ". "
             f"Medians of {a.rounds} rounds, the configurations interleaved round by round; "
             "results checked (`benchmarks/bench_multi_gpu.py`).", "",
             "| program | size | 1 device | 2 devices | ratio (target) |",
             "| --- | --- | ---: | ---: | ---: |",
             f"| nstream, aggregate GB/s | {a.length} doubles x 3 vectors, {a.iterations} "
             f"iterations | {ns['1']:.0f} | {ns['2']:.0f} | **{ns['2'] / ns['1']:.2f}x** "
             "(>= 1.9x) |"]
    for n in (int(s) for s in a.stencil_n.split(",")):
        st = bench_stencil(a, devs, n)
        for how, way in (("device", "device to device"), ("host", "through the host")):
            k = f"2 {how}"
            lines.append(f"| stencil, ms per step, halos {way} "
                         f"| {n}^2 float32 ({4 * n * n / 2**30:.2f} GiB a grid), {a.steps} steps "
                         f"| {st['1'] * 1e3:.3f} | {st[k] * 1e3:.3f} | "
                         f"**{st[k] / st['1']:.2f}x** (<= 0.55x) |")
    text = "\n".join(lines)
    print(text)
    if a.write:
        write_section("bench_multi_gpu", text)


if __name__ == "__main__":
    main()

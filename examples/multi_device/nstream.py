"""PRK nstream split across devices: ``A[i] += B[i] + scalar * C[i]`` with each device taking a
contiguous share of the vectors, in one process.

Every device that runs compiled Python kernels gets a queue of its own and its share in its
own USM device memory; the devices work at the same time (each queue is submitted to before
any is waited for), and the checksum is PRK's. ``--with-host`` adds the host_debuggable device
(slow: for trying the split on a machine with one device); ``--devices N`` uses the first N.

    python examples/multi_device/nstream.py [iterations] [length] [--with-host] [--devices N]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import pysycl as sycl


def devices(with_host: bool, limit: int | None) -> list[sycl.device]:
    """The devices the vectors are split across: those that run compiled Python kernels
    (GPUs first), then the host_debuggable one if asked."""
    devs = [d for d in sycl.device.get_devices() if d.image_targets]
    devs.sort(key=lambda d: not d.is_gpu())
    if with_host:
        devs += [d for d in sycl.device.get_devices() if d.has(sycl.aspect.host_debuggable)]
    if limit:
        devs = devs[:limit]
    if not devs:
        raise SystemExit("no device runs Python kernels here")
    return devs


def _kernel(a, b, c, scalar):  # type: ignore[no-untyped-def]
    def nstream(i):  # type: ignore[no-untyped-def]
        a[i] += b[i] + scalar * c[i]
    return nstream


def main(iterations: int, length: int, devs: list[sycl.device]) -> float:
    """Run nstream; returns the aggregate bandwidth in MB/s (asserts PRK's checksum)."""
    print(f"Parallel Research Kernels: STREAM triad across {len(devs)} device(s): "
          + ", ".join(d.display_name for d in devs))
    scalar = np.float64(3)
    bounds = np.linspace(0, length, len(devs) + 1).astype(int)
    queues = [sycl.queue(d, properties=[sycl.property.queue.in_order()]) for d in devs]
    parts = []
    for q, lo, hi in zip(queues, bounds[:-1], bounds[1:], strict=True):
        n = int(hi - lo)
        a, b, c = (sycl.malloc_device(max(n, 1), q, dtype=np.float64) for _ in range(3))
        q.memset(a, 0, n * 8)
        q.fill(b, np.float64(2), n)
        q.fill(c, np.float64(2), n)
        parts.append((q, n, a, b, c, _kernel(a, b, c, scalar)))
    for q, *_ in parts:
        q.wait()
    t0 = 0.0
    for it in range(iterations + 1):
        if it == 1:  # the first iteration compiles: not timed, as PRK skips it
            for q, *_ in parts:
                q.wait()
            t0 = time.perf_counter()
        for q, n, _a, _b, _c, k in parts:  # every device at once
            if n:
                q.parallel_for(sycl.range(n), k)
    for q, *_ in parts:
        q.wait()
    elapsed = time.perf_counter() - t0
    h_a = np.empty(length)
    for (q, n, a, b, c, _k), lo in zip(parts, bounds, strict=False):
        if n:
            q.memcpy(h_a[lo:lo + n], a, n * 8).wait()
        for p in (a, b, c):
            sycl.free(p, q)
    # PRK's validation: every element is the same closed form
    ar = 0.0
    for _ in range(iterations + 1):
        ar += 2.0 + 3.0 * 2.0
    asum = float(np.abs(h_a).sum())
    ref = ar * length
    assert abs(ref - asum) / ref < 1e-8, f"Failed Validation on output array: {asum} != {ref}"
    nbytes = 4.0 * length * 8
    rate = 1e-6 * nbytes / (elapsed / iterations) if iterations else 0.0
    print(f"Solution validates\nRate (MB/s): {rate:.1f} Avg time (s): "
          f"{elapsed / max(iterations, 1):.6f}")
    return rate


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("iterations", type=int, nargs="?", default=10)
    ap.add_argument("length", type=int, nargs="?", default=1 << 22)
    ap.add_argument("--with-host", action="store_true")
    ap.add_argument("--devices", type=int, default=None)
    a = ap.parse_args()
    main(a.iterations, a.length, devices(a.with_host, a.devices))

"""PRK nstream split across devices: ``A[i] += B[i] + scalar * C[i]`` with each device taking a
contiguous share of the vectors, in one process.

Every device that runs compiled Python kernels gets a queue of its own and its share in its
own USM device memory; the devices work at the same time (each queue is submitted to before
any is waited for), and the checksum is PRK's. On a machine with GPUs the vectors are split
across its GPUs, each GPU once: the GPUs of one backend (CUDA where pysycl has it, which
lists each GPU before NVIDIA's OpenCL does; ``--backend opencl`` picks the other view).
``--with-host`` adds the host_debuggable device (slow: for trying the split on a machine
with one device); ``--devices N`` uses the first N.

    python examples/multi_device/nstream.py [iterations] [length] [--with-host] [--devices N]
                                            [--backend cuda|opencl]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import pysycl as sycl

BACKENDS = {"cuda": sycl.backend.ext_oneapi_cuda, "opencl": sycl.backend.opencl}


def devices(with_host: bool = False, limit: int | None = None,
            backend: str | None = None) -> list[sycl.device]:
    """The devices the work is split across: the GPUs that run compiled Python kernels, of
    one backend (``backend``, else the first GPU's), each physical GPU once; without GPUs,
    the devices that run compiled Python kernels; then the host_debuggable one if asked."""
    devs = [d for d in sycl.device.get_devices() if d.image_targets]
    if backend is not None:
        devs = [d for d in devs if d.get_backend() is BACKENDS[backend]]
    gpus = [d for d in devs if d.is_gpu()]
    if gpus:  # each GPU is one device per backend (CUDA's view and OpenCL's): one backend
        devs = [d for d in gpus if d.get_backend() is gpus[0].get_backend()]
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


class NStream:
    """The three vectors of ``length`` doubles split across ``devs`` (a queue and USM device
    memory each): :meth:`run` iterates, :meth:`check` validates, :meth:`free` releases."""

    def __init__(self, length: int, devs: list[sycl.device]) -> None:
        self.length, self.devs, self.done = length, devs, 0
        self.bounds = np.linspace(0, length, len(devs) + 1).astype(int)
        scalar = np.float64(3)
        self.parts = []
        for d, lo, hi in zip(devs, self.bounds[:-1], self.bounds[1:], strict=True):
            q = sycl.queue(d, properties=[sycl.property.queue.in_order()])
            n = int(hi - lo)
            a, b, c = (sycl.malloc_device(max(n, 1), q, dtype=np.float64) for _ in range(3))
            q.memset(a, 0, n * 8)
            q.fill(b, np.float64(2), n)
            q.fill(c, np.float64(2), n)
            self.parts.append((q, n, (a, b, c), _kernel(a, b, c, scalar)))
        self.wait()

    def wait(self) -> None:
        for q, *_ in self.parts:
            q.wait()

    def run(self, iterations: int) -> float:
        """``iterations`` sweeps on every device at once; the seconds they took."""
        self.wait()
        t0 = time.perf_counter()
        for _ in range(iterations):
            for q, n, _mem, k in self.parts:  # every device at once
                if n:
                    q.parallel_for(sycl.range(n), k)
        self.wait()
        self.done += iterations
        return time.perf_counter() - t0

    def check(self) -> None:
        """PRK's validation (the sum of |A| against its closed form), and every element."""
        h_a = np.empty(self.length)
        for (q, n, (a, _b, _c), _k), lo in zip(self.parts, self.bounds, strict=False):
            if n:
                q.memcpy(h_a[lo:lo + n], a, n * 8).wait()
        ar = 0.0
        for _ in range(self.done):
            ar += 2.0 + 3.0 * 2.0
        asum = float(np.abs(h_a).sum())
        ref = ar * self.length
        assert abs(ref - asum) / max(ref, 1.0) < 1e-8, \
            f"Failed Validation on output array: {asum} != {ref}"
        bad = np.flatnonzero(h_a != ar)
        assert not bad.size, f"Failed Validation: A[{bad[0]}] = {h_a[bad[0]]} != {ar}"

    def free(self) -> None:
        for q, _n, mem, _k in self.parts:
            for p in mem:
                sycl.free(p, q)
        self.parts = []


def main(iterations: int, length: int, devs: list[sycl.device]) -> float:
    """Run nstream; returns the aggregate bandwidth in MB/s (asserts PRK's checksum)."""
    print(f"Parallel Research Kernels: STREAM triad across {len(devs)} device(s): "
          + ", ".join(d.display_name for d in devs))
    ns = NStream(length, devs)
    ns.run(1)  # the first iteration compiles: not timed, as PRK skips it
    elapsed = ns.run(iterations)
    ns.check()
    ns.free()
    nbytes = 4.0 * length * 8
    rate = 1e-6 * nbytes / (elapsed / iterations) if iterations else 0.0
    print(f"Solution validates\nRate (MB/s): {rate:.1f} Avg time (s): "
          f"{elapsed / max(iterations, 1):.6f}")
    return rate


def parser(steps_name: str, steps: int, size_name: str, size: int) -> argparse.ArgumentParser:
    """The command line of both examples."""
    ap = argparse.ArgumentParser()
    ap.add_argument(steps_name, type=int, nargs="?", default=steps)
    ap.add_argument(size_name, type=int, nargs="?", default=size)
    ap.add_argument("--with-host", action="store_true")
    ap.add_argument("--devices", type=int, default=None)
    ap.add_argument("--backend", choices=sorted(BACKENDS), default=None)
    return ap


if __name__ == "__main__":
    a = parser("iterations", 10, "length", 1 << 22).parse_args()
    main(a.iterations, a.length, devices(a.with_host, a.devices, a.backend))

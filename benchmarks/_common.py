"""Helpers shared by the benchmark scripts: timing and writing docs/performance.md."""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

import pysycl as sycl

ROOT = Path(__file__).resolve().parent.parent


def median_time(fn: Callable[[], object], reps: int, warmup: int = 2) -> float:
    """Median wall time of ``fn`` over ``reps`` calls, after ``warmup`` calls."""
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def paired(fa: Callable[[], object], fb: Callable[[], object], reps: int,
           warmup: int = 2) -> tuple[float, float]:
    """Median times of ``fa`` and ``fb``, measured alternately so drift hits both alike."""
    ta, tb = interleaved([fa, fb], reps, warmup)
    return ta, tb


def interleaved(fns: Sequence[Callable[[], object]], reps: int, warmup: int = 2) -> list[float]:
    """Median times of each of ``fns``, called round by round (each once per round, in
    order) so that drift hits all alike."""
    for _ in range(warmup):
        for f in fns:
            f()
    times: list[list[float]] = [[] for _ in fns]
    now = time.perf_counter
    for _ in range(reps):
        for f, ts in zip(fns, times, strict=True):
            t0 = now()
            f()
            ts.append(now() - t0)
    return [statistics.median(ts) for ts in times]


def write_section(marker: str, text: str) -> None:
    """Replace the text between ``<!-- marker:begin -->`` and ``<!-- marker:end -->``."""
    doc = ROOT / "docs" / "performance.md"
    begin, end = f"<!-- {marker}:begin -->", f"<!-- {marker}:end -->"
    cur = doc.read_text()
    pre, rest = cur.split(begin, 1)
    _, post = rest.split(end, 1)
    doc.write_text(pre + begin + "\n" + text + "\n" + end + post)


def paired_table(rows: list[dict[str, object]], dev: str, how: str, columns: tuple[str, str, str]
                 ) -> str:
    """The Markdown of paired timings: each row ``{"name", "unit", "t": (t0, t1)}`` (and
    ``"work"`` in the unit's numerator for rates); ``how`` says what was measured,
    ``columns`` names the two timings and their ratio."""
    import datetime
    import os
    import platform

    lines = [f"Measured {datetime.date.today().isoformat()} on `{platform.node() or '?'}`: "
             f"{os.cpu_count()} CPU cores, device **{dev}**, Python "
             f"{platform.python_version()}. {how}", "",
             f"| kernel | unit | {columns[0]} | {columns[1]} | {columns[2]} |",
             "| --- | --- | ---: | ---: | ---: |"]
    for r in rows:
        t0, t1 = r["t"]  # type: ignore[misc]
        if r["unit"] == "µs":
            v0, v1 = t0 * 1e6, t1 * 1e6
        else:
            v0, v1 = r["work"] / t0, r["work"] / t1  # type: ignore[operator]
        lines.append(f"| {r['name']} | {r['unit']} | {v0:.1f} | {v1:.1f} | "
                     f"**{t1 / t0:.2f}×** |")  # noqa: RUF001
    return "\n".join(lines)


def setup(runs: int | None = None, device: bool = False
          ) -> tuple[argparse.Namespace, sycl.queue, str]:
    """Parse ``--quick``/``--write`` (and ``--runs``, defaulting to ``runs``, where the
    script repeats its measurement; ``--device NAME`` where ``device``: a queue on the
    first device whose platform name, vendor or device name contains NAME, any case); the
    default queue (or that one) and a "platform / device" label."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="small sizes, few repetitions")
    ap.add_argument("--write", action="store_true", help="update docs/performance.md")
    if runs is not None:
        ap.add_argument("--runs", type=int, default=runs, help="repeat the measurement")
    if device:
        ap.add_argument("--device", default="", help="a substring of the device's platform "
                        "or name (e.g. pocl)")
    args = ap.parse_args()
    q = sycl.queue()
    if getattr(args, "device", ""):
        want = args.device.lower()
        found = [d for d in sycl.device.get_devices() if want in " ".join((
            d.get_platform().get_info(sycl.info.platform.name),
            d.get_platform().get_info(sycl.info.platform.vendor),
            d.get_info(sycl.info.device.name))).lower()]
        if not found:
            ap.error(f"no device matches {args.device!r}")
        q = sycl.queue(found[0])
    dev = q.get_device().get_platform().get_info(sycl.info.platform.name) + " / " + \
        q.get_device().get_info(sycl.info.device.name)
    return args, q, dev


class OpenCLPeer:
    """Hand-written OpenCL C through pyopencl, on the pysycl queue's device.

    Args:
        q: the pysycl queue whose context and device the peer uses.
        source: the OpenCL C program.
        arg_dtypes: kernel name -> scalar argument dtypes (``None`` for buffers);
            every kernel named here gets a ``cl.Kernel`` in ``self.k``.
        options: OpenCL C build options (``-cl-std=CL3.0`` for work-group functions).
    """

    def __init__(self, q: sycl.queue, source: str,
                 arg_dtypes: dict[str, Sequence[Any] | None],
                 options: Sequence[str] = ()) -> None:
        import pyopencl as cl

        self.cl = cl
        self.ctx = q.get_context().native
        self.q = cl.CommandQueue(self.ctx, q.get_device().native)
        self.prg = cl.Program(self.ctx, source).build(options=list(options))
        self.k = {name: cl.Kernel(self.prg, name) for name in arg_dtypes}
        for name, dts in arg_dtypes.items():
            if dts is not None:
                self.k[name].set_scalar_arg_dtypes(list(dts))

    def buf(self, arr: np.ndarray) -> object:
        """A device buffer initialised from ``arr``."""
        mf = self.cl.mem_flags
        return self.cl.Buffer(self.ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=arr)

    def read(self, arr: np.ndarray, buf: object) -> np.ndarray:
        """Copy ``buf`` into ``arr`` and return it."""
        self.cl.enqueue_copy(self.q, arr, buf).wait()
        return arr

    def run(self, name: str, gsize: tuple[int, ...], *args: object) -> None:
        """Launch kernel ``name`` over ``gsize`` and wait."""
        self.k[name](self.q, gsize, None, *args).wait()


def gpu_queue(backend: sycl.backend) -> sycl.queue | None:
    """A queue on the first GPU of ``backend`` (None: no such GPU)."""
    for d in sycl.device.get_devices(sycl.info.device_type.gpu):
        if d.get_backend() is backend:
            return sycl.queue(d)
    return None


def rate(nbytes: int, go: Callable[[], Any], sync: Callable[[], Any], reps: int
         ) -> Callable[[], float]:
    """A sample: GB/s of ``reps`` back-to-back ``go()`` moving ``nbytes`` each, between two
    ``sync()``."""
    def run() -> float:
        sync()
        t = time.perf_counter()
        for _ in range(reps):
            go()
        sync()
        return nbytes * reps / (time.perf_counter() - t) / 1e9
    return run

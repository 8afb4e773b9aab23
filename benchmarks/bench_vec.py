"""Vector types: a ``sycl.float4`` streaming kernel vs the scalar kernel vs OpenCL C ``float4``.

``y = a * x + y`` followed by ``y = y * y`` (a streaming SAXPY-like kernel) over
2^24 float32, each work-item handling four elements: with ``sycl.float4.load/store``
(one ``<4 x float>`` load and store), with four scalar accesses, and as hand-written
OpenCL C with ``vload4``/``vstore4``. pysycl and OpenCL C are timed alternately
(``paired``); the scalar pysycl kernel is paired with the vec4 one.

Run: ``.venv/bin/python benchmarks/bench_vec.py [--quick] [--write]``; ``--write``
replaces the ``bench_vec`` section of ``docs/performance.md``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

import pysycl as sycl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import OpenCLPeer, paired, setup, write_section

OPENCL_C = """
__kernel void vec4(__global float *y, __global const float *x, float a) {
    size_t i = get_global_id(0);
    float4 v = a * vload4(i, x) + vload4(i, y);
    vstore4(v * v, i, y);
}
"""


def _vec_cg(X: sycl.buffer, Y: sycl.buffer, a: np.float32, n4: int) -> Callable[..., None]:
    def cg(h: sycl.handler) -> None:
        x = X.get_access(h, sycl.access_mode.read)
        y = Y.get_access(h, sycl.access_mode.read_write)

        def vec4(i: sycl.item) -> None:
            v = a * sycl.float4.load(i, x) + sycl.float4.load(i, y)
            (v * v).store(i, y)

        h.parallel_for(sycl.range(n4), vec4)
    return cg


def _scalar_cg(X: sycl.buffer, Y: sycl.buffer, a: np.float32, n4: int) -> Callable[..., None]:
    def cg(h: sycl.handler) -> None:
        x = X.get_access(h, sycl.access_mode.read)
        y = Y.get_access(h, sycl.access_mode.read_write)

        def scalar4(i: sycl.item) -> None:
            for k in range(4):
                v = a * x[4 * i + k] + y[4 * i + k]
                y[4 * i + k] = v * v

        h.parallel_for(sycl.range(n4), scalar4)
    return cg


def bench(q: sycl.queue, quick: bool) -> list[tuple[str, float, float]]:
    n = 1 << (20 if quick else 24)
    reps = 5 if quick else 20
    n4 = n // 4
    a = np.float32(0.5)
    x = np.random.default_rng(0).uniform(-1, 1, n).astype(np.float32)
    y0 = np.random.default_rng(1).uniform(-1, 1, n).astype(np.float32)
    ref = (a * x + y0) ** 2
    peer = OpenCLPeer(q, OPENCL_C, {"vec4": [None, None, np.float32]})
    X, Yv, Ys = sycl.buffer(x), sycl.buffer(y0.copy()), sycl.buffer(y0.copy())
    vec_cg, scalar_cg = _vec_cg(X, Yv, a, n4), _scalar_cg(X, Ys, a, n4)
    dx, dy = peer.buf(x), peer.buf(y0.copy())
    k = peer.k["vec4"]
    # correctness of one run of each
    for Y, cg in ((Yv, vec_cg), (Ys, scalar_cg)):
        q.submit(cg).wait()
        with Y.get_host_access() as hy:
            np.testing.assert_allclose(hy, ref, rtol=1e-5)
    k(peer.q, (n4,), None, dy, dx, a).wait()
    np.testing.assert_allclose(peer.read(np.empty_like(y0), dy), ref, rtol=1e-5)
    t_vec, t_cl = paired(lambda: q.submit(vec_cg).wait(),
                         lambda: k(peer.q, (n4,), None, dy, dx, a).wait(), reps)
    t_vec2, t_scalar = paired(lambda: q.submit(vec_cg).wait(),
                              lambda: q.submit(scalar_cg).wait(), reps)
    gb = 3 * n * 4 / 1e9  # x read, y read and written
    return [("pysycl `sycl.float4` load/store", t_vec, gb),
            ("pysycl scalar (4 elements per work-item)", t_scalar, gb),
            ("OpenCL C `float4` (`vload4`/`vstore4`)", t_cl, gb),
            ("pysycl `sycl.float4` (paired with scalar)", t_vec2, gb)]


def render(rows: list[tuple[str, float, float]], dev: str, n_note: str) -> str:
    base = rows[2][1]
    lines = [f"Device: {dev}. {n_note}; medians, each call including `wait()`.", "",
             "| kernel | ms | GB/s | time / OpenCL C float4 |", "| --- | ---: | ---: | ---: |"]
    for name, t, gb in rows:
        lines.append(f"| {name} | {t * 1e3:.2f} | {gb / t:.1f} | {t / base:.2f}× |")  # noqa: RUF001
    return "\n".join(lines)


def main() -> None:
    args, q, dev = setup()
    text = render(bench(q, args.quick), dev,
                  f"y = (a·x + y)² over 2^{20 if args.quick else 24} float32")
    print(text)
    if args.write:
        write_section("bench_vec", text)


if __name__ == "__main__":
    main()

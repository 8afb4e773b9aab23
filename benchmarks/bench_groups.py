"""Group algorithms (SYCL 2020 §4.17) vs hand-written OpenCL C's ``sub_group_*`` built-ins.

Both sides on the same device, timed alternately (``_paired``), results checked:

* sub-group reduction of 2^24 float32: ``reduce_over_group(sg, x, plus)`` vs
  ``sub_group_reduce_add``, lane 0 of each sub-group writes its sum;
* sub-group inclusive scan of 2^24 int32: ``inclusive_scan_over_group(sg, x, plus)`` vs
  ``sub_group_scan_inclusive_add``;
* work-group inclusive scan of 2^24 int32 (groups of 256): pysycl's
  ``inclusive_scan_over_group(g, x, plus)`` vs ``work_group_scan_inclusive_add``;
* sub-group inclusive scan with ``multiplies`` (no OpenCL 2.0 built-in: pysycl's
  shuffle scan) vs ``sub_group_non_uniform_scan_inclusive_mul``.

Run: ``.venv/bin/python benchmarks/bench_groups.py [--quick] [--write]``; ``--write``
replaces the ``bench_groups`` section of ``docs/performance.md``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

import pysycl as sycl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import OpenCLPeer, paired, setup, write_section

WG = 256

OPENCL_C = """
#pragma OPENCL EXTENSION cl_khr_subgroup_non_uniform_arithmetic : enable
__kernel void sg_reduce(__global const float *x, __global float *out) {
    size_t i = get_global_id(0);
    float s = sub_group_reduce_add(x[i]);
    if (get_sub_group_local_id() == 0) out[i] = s;
}
__kernel void sg_scan(__global const int *x, __global int *out) {
    size_t i = get_global_id(0);
    out[i] = sub_group_scan_inclusive_add(x[i]);
}
__kernel void wg_scan(__global const int *x, __global int *out) {
    size_t i = get_global_id(0);
    out[i] = work_group_scan_inclusive_add(x[i]);
}
__kernel void sg_scan_mul(__global const int *x, __global int *out) {
    size_t i = get_global_id(0);
    out[i] = sub_group_non_uniform_scan_inclusive_mul(x[i]);
}
"""


def _cg(X: sycl.buffer, OUT: sycl.buffer, n: int, kind: str) -> Callable[..., None]:
    def cg(h: sycl.handler) -> None:
        x = X.get_access(h, sycl.access_mode.read)
        o = OUT.get_access(h, sycl.access_mode.write)

        def sg_reduce(it: sycl.nd_item) -> None:
            sg = it.get_sub_group()
            i = it.get_global_id(0)
            s = sycl.reduce_over_group(sg, x[i], sycl.plus())
            if sg.leader():
                o[i] = s

        def sg_scan(it: sycl.nd_item) -> None:
            i = it.get_global_id(0)
            o[i] = sycl.inclusive_scan_over_group(it.get_sub_group(), x[i], sycl.plus())

        def wg_scan(it: sycl.nd_item) -> None:
            i = it.get_global_id(0)
            o[i] = sycl.inclusive_scan_over_group(it.get_group(), x[i], sycl.plus())

        def sg_scan_mul(it: sycl.nd_item) -> None:
            i = it.get_global_id(0)
            o[i] = sycl.inclusive_scan_over_group(it.get_sub_group(), x[i], sycl.multiplies())

        k = {"sg_reduce": sg_reduce, "sg_scan": sg_scan, "wg_scan": wg_scan,
             "sg_scan_mul": sg_scan_mul}[kind]
        h.parallel_for(sycl.nd_range(sycl.range(n), sycl.range(WG)), k)

    return cg


_CASES = [("sg_reduce", "sub-group reduce_over_group plus", np.float32),
          ("sg_scan", "sub-group inclusive_scan_over_group plus", np.int32),
          ("wg_scan", "work-group inclusive_scan_over_group plus", np.int32),
          ("sg_scan_mul", "sub-group inclusive_scan_over_group multiplies", np.int32)]


def bench(q: sycl.queue, peer: OpenCLPeer, quick: bool) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    n = 1 << (20 if quick else 24)
    reps = 7 if quick else 25
    rng = np.random.default_rng(0)
    for kind, name, dt in _CASES:
        x = rng.integers(-3, 4, n).astype(dt) if kind != "sg_scan_mul" else \
            rng.choice([1, -1], n).astype(dt)
        out, ref = np.zeros_like(x), np.zeros_like(x)
        X, OUT = sycl.buffer(x), sycl.buffer(out)
        cg = _cg(X, OUT, n, kind)
        dx, do = peer.buf(x), peer.buf(ref)
        k = peer.k[kind]
        t_sycl, t_cl = paired(lambda: q.submit(cg).wait(),
                              lambda: k(peer.q, (n,), (WG,), dx, do).wait(), reps)
        with sycl.host_accessor(OUT, sycl.access_mode.read) as ho:
            np.testing.assert_array_equal(np.asarray(ho), peer.read(ref, do))
        gb = 2 * x.nbytes
        rows.append({"name": f"{name} 2^{n.bit_length() - 1} {np.dtype(dt).name}",
                     "sycl": gb / t_sycl / 1e9, "cl": gb / t_cl / 1e9, "ratio": t_cl / t_sycl})
    return rows


def render(rows: list[dict[str, object]], dev: str) -> str:
    lines = [f"Device: {dev}. Medians; work-groups of {WG}; pysycl and OpenCL C timed "
             "alternately, each call including `wait()`; GB/s of input read plus output "
             "written.", "",
             "| kernel | pysycl GB/s | OpenCL C GB/s | pysycl / OpenCL C |",
             "| --- | ---: | ---: | ---: |"]
    for r in rows:
        lines.append(f"| {r['name']} | {r['sycl']:.1f} | {r['cl']:.1f} | {r['ratio']:.2f}× |")  # noqa: RUF001
    return "\n".join(lines)


def main() -> None:
    args, q, dev = setup()
    peer = OpenCLPeer(q, OPENCL_C, {c[0]: None for c in _CASES}, ["-cl-std=CL3.0"])
    text = render(bench(q, peer, args.quick), dev)
    print(text)
    if args.write:
        write_section("bench_groups", text)


if __name__ == "__main__":
    main()

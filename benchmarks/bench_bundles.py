"""Kernel bundle benchmark: time of ``sycl.build`` for N=10 kernels, in fresh processes.

Three cache states, each measured in a new Python process (median of repeats):

* **cold**: empty cache folder: Numba + LLVM SPIR-V for every kernel, then the
  OpenCL runtime compiles and links;
* **warm SPIR-V cache**: the SPIR-V modules are on disk (no Numba), the device
  binaries are not: ``clCompileProgram`` + ``clLinkProgram``;
* **warm binary cache**: the linked device binary is on disk:
  ``clCreateProgramWithBinary`` only.

Run: ``.venv/bin/python benchmarks/bench_bundles.py [--reps 3] [--write]``;
``--write`` replaces the kernel-bundle section of ``docs/performance.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform as _platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
N = 10

CHILD = textwrap.dedent("""
    import json, sys, time
    t0 = time.perf_counter()
    import numpy as np
    import pysycl as sycl
    for n in range({n}):   # N kernels with different code (a constant differs)
        g = {{"math": __import__("math")}}
        exec(f"def fac(x, y):\\n    def kern(i):\\n        y[i] = x[i] * {{n}}.5 + "
             f"math.sin(x[i]) * {{n}}\\n    return kern", g)
        sycl.ext.declare_kernel(g["fac"], kernel_name=f"bench.k{{n}}", index_space=sycl.range(1),
            captures={{"x": sycl.ext.accessor_type(np.float32, 1, "read"),
                       "y": sycl.ext.accessor_type(np.float32, 1, "write")}})
    q = sycl.queue(sycl.aspect_selector(sycl.aspect.ext_pysycl_spirv))
    ctx = q.get_context()
    t1 = time.perf_counter()
    kb_in = sycl.get_kernel_bundle(ctx, state=sycl.bundle_state.input)
    t2 = time.perf_counter()
    kb = sycl.build(kb_in)
    t3 = time.perf_counter()
    assert len(kb.get_kernel_ids()) == {n}
    s = sycl.ext.kernel_cache_stats()
    print(json.dumps({{"input": t2 - t1, "build": t3 - t2, "total": t3 - t0,
                      "numba": "numba" in sys.modules, **s}}))
""")


def _child(cache: Path) -> dict:
    env = dict(os.environ, PYSYCL_CACHE_DIR=str(cache))
    r = subprocess.run([sys.executable, "-c", CHILD.format(n=N)], env=env, capture_output=True,
                       text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def measure(reps: int) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {"cold": [], "spirv": [], "binary": []}
    for _ in range(reps):
        with tempfile.TemporaryDirectory(prefix="pysycl-bench-") as d:
            cache = Path(d)
            out["cold"].append(_child(cache))
            shutil.rmtree(cache / "kernels" / "binaries")
            out["spirv"].append(_child(cache))
            out["binary"].append(_child(cache))
    return out


def _med(rows: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def table(res: dict[str, list[dict]], device: str) -> str:
    names = {"cold": "cold (empty cache: Numba + LLVM SPIR-V + OpenCL compile/link)",
             "spirv": "warm SPIR-V cache (no Numba; OpenCL compile + link)",
             "binary": "warm binary cache (no Numba, no OpenCL compiler)"}
    lines = [
        f"Measured {time.strftime('%Y-%m-%d')} on `{_platform.node()}`: {os.cpu_count()} CPU "
        f"cores, device **{device}**, Python {_platform.python_version()}. Each row: a fresh "
        f"process declares {N} kernels (each `y[i] = x[i] * c + sin(x[i]) * c`), then "
        "`sycl.get_kernel_bundle(ctx, state=input)` and `sycl.build(kb)`; medians of "
        f"{len(res['cold'])} runs of `benchmarks/bench_bundles.py`.",
        "",
        f"| cache state (N={N} kernels) | `get_kernel_bundle(input)` s | `build` s | process total s "
        "| Numba runs | clCompileProgram | binary hits |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for k, label in names.items():
        rows = res[k]
        lines.append(f"| {label} | {_med(rows, 'input'):.3f} | {_med(rows, 'build'):.3f} | "
                     f"{_med(rows, 'total'):.3f} | {rows[0]['compiles']} | "
                     f"{rows[0]['cl_compiles']} | {rows[0]['binary_hits']} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    import pysycl as sycl

    q = sycl.queue(sycl.aspect_selector(sycl.aspect.ext_pysycl_spirv))
    dev = q.get_device()
    device = (f"{dev.get_platform().get_info(sycl.info.platform.name)} / "
              f"{dev.get_info(sycl.info.device.name)}")
    md = table(measure(args.reps), device)
    print(md)
    if args.write:
        doc = ROOT / "docs" / "performance.md"
        text = doc.read_text()
        begin, end = "<!-- bench_bundles:begin -->", "<!-- bench_bundles:end -->"
        if begin not in text:
            text = text.rstrip() + ("\n\n## Kernel bundles: build of N kernels, cold and cached\n\n"
                                    f"{begin}\n{end}\n")
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        doc.write_text(f"{head}{begin}\n{md}\n{end}{tail}")


if __name__ == "__main__":
    main()

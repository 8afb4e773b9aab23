"""Issue 24: a fresh process to its first checked result, cold (empty kernel cache) and warm.

    python benchmarks/bench_startup.py [--device cpu|gpu] [--filter cuda:gpu] [--rounds 5]
                                       [--bytecode cached,source] [--json out.json]

Each round makes an empty ``PYSYCL_CACHE_DIR`` and runs two child processes in it: the
cold one (Numba compiles the kernel) and then the warm one (the kernel comes from the disk
cache; no Numba). A child imports numpy and pysycl, makes a queue on the chosen device,
runs ``p[i] = i * 2.0`` over 1024 work-items on shared USM (``bench_cuda.py``'s ``fresh``
row) and checks the result; it reports its phases (``perf_counter`` spans) and the parent
times the whole process (interpreter start and exit included).

``--bytecode`` chooses how Python finds the modules' bytecode, per variant, interleaved
round by round:

* ``cached``: as a ``pip install`` has it (``.pyc`` files present): ``PYTHONDONTWRITEBYTECODE``
  is dropped from the children's environment and a first, untimed child writes the caches.
* ``source``: no bytecode cache at all (``PYTHONPYCACHEPREFIX`` an empty folder, nothing
  written): every module -- numpy, Numba, pysycl -- is compiled from source in every
  process, as in an environment with ``PYTHONDONTWRITEBYTECODE=1`` and an editable or
  copied source tree (the GPU machines' benchmark runs).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

CHILD = """
    import time; t0 = time.perf_counter()
    import json, sys
    import numpy as np; t1 = time.perf_counter()
    import pysycl as sycl; t2 = time.perf_counter()
    q = sycl.queue(sycl.gpu_selector_v if sys.argv[1] == "gpu" else sycl.cpu_selector_v)
    t3 = time.perf_counter()
    p = sycl.malloc_shared(1024, q, dtype=np.float32)
    q.parallel_for(sycl.range(1024), lambda i: p.__setitem__(i, i * 2.0)).wait()
    assert (np.asarray(p) == np.arange(1024) * 2.0).all()
    t4 = time.perf_counter()
    print(json.dumps({"import numpy": t1 - t0, "import pysycl": t2 - t1, "first queue": t3 - t2,
                      "first kernel": t4 - t3, "numba imported": "numba" in sys.modules,
                      "device": q.get_device().get_info(sycl.info.device.name),
                      "backend": str(q.get_backend()), "pysycl": sycl.__file__}))
"""

PHASES = ("import numpy", "import pysycl", "first queue", "first kernel", "process")


def _env(cache: str, bytecode: str, filt: str) -> dict[str, str]:
    env = {**os.environ, "PYSYCL_CACHE_DIR": cache}
    if filt:
        env["PYSYCL_DEVICE_FILTER"] = filt
    if bytecode == "cached":
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.pop("PYTHONPYCACHEPREFIX", None)
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(prefix="pysycl-no-pyc-")
    return env


def tree() -> str:
    """The folder holding the ``pysycl`` this interpreter imports (not importing it)."""
    spec = importlib.util.find_spec("pysycl")
    assert spec is not None and spec.origin is not None, "pysycl is not importable"
    return os.path.dirname(os.path.dirname(spec.origin))


def child(device: str, cache: str, bytecode: str, filt: str, root: str | None = None) -> dict:
    """One fresh process running the pysycl of folder ``root`` (default: :func:`tree`):
    its phases (s) and the whole process's wall time."""
    env = _env(cache, bytecode, filt)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root or tree(), env.get("PYTHONPATH")) if p)
    t = time.perf_counter()
    # cwd: the empty cache folder, so that `-c`'s sys.path[0] (the working directory)
    # cannot put another tree's pysycl first
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(CHILD), device], env=env,
                       cwd=cache, capture_output=True, text=True, timeout=300)
    dt = time.perf_counter() - t
    if r.returncode:
        raise RuntimeError(f"the child failed:\n{r.stderr[-2000:]}")
    out = json.loads(r.stdout.strip().splitlines()[-1])
    want = os.path.join(root or tree(), "pysycl")
    assert os.path.dirname(out["pysycl"]) == want, (out["pysycl"], want)
    out["process"] = dt
    return out


def measure(device: str, rounds: int, variants: list[str], filt: str) -> dict[str, list[dict]]:
    """``{"<variant> cold": [...], "<variant> warm": [...]}``, variants interleaved by round."""
    if "cached" in variants:  # write the bytecode caches once, untimed
        with tempfile.TemporaryDirectory(prefix="pysycl-startup-") as d:
            child(device, d, "cached", filt)
    res: dict[str, list[dict]] = {f"{v} {s}": [] for v in variants for s in ("cold", "warm")}
    for _ in range(rounds):
        for v in variants:
            with tempfile.TemporaryDirectory(prefix="pysycl-startup-") as d:
                cold = child(device, d, v, filt)
                assert cold["numba imported"], "the cold child found its kernel cached"
                warm = child(device, d, v, filt)
                assert not warm["numba imported"], "the warm child compiled its kernel"
                res[f"{v} cold"].append(cold)
                res[f"{v} warm"].append(warm)
    return res


def table(res: dict[str, list[dict]]) -> str:
    """A markdown table of the medians (s) per phase."""
    lines = ["| process | " + " | ".join(PHASES) + " |",
             "|---|" + "---:|" * len(PHASES)]
    for name, rows in res.items():
        meds = [statistics.median(r[p] for r in rows) for p in PHASES]
        lines.append(f"| {name} | " + " | ".join(f"{m:.3f}" for m in meds) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    ap.add_argument("--filter", default="", help="PYSYCL_DEVICE_FILTER for the children")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--bytecode", default="cached,source")
    ap.add_argument("--json")
    a = ap.parse_args()
    variants = [v for v in a.bytecode.split(",") if v]
    if not variants or set(variants) - {"cached", "source"}:
        ap.error("--bytecode takes cached and/or source")
    res = measure(a.device, a.rounds, variants, a.filter)
    first = next(iter(res.values()))[0]
    print(f"device: {first['device']} ({first['backend']}); Python {sys.version.split()[0]}; "
          f"{os.cpu_count()} CPUs; pysycl from {tree()}; medians of {a.rounds} rounds")
    print(table(res))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()

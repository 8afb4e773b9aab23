"""One child process that imports pysycl and runs a kernel, for the cache suites.

State at import matters (the ICD vendors folder, the cache folder), so every
scenario runs ``sys.executable -c CHILD`` with ``PYSYCL_CACHE_DIR`` set and
reports, as JSON on its last line: the default device, whether the kernel's
result was right, the cache counters, every warning raised (import included)
and the ``OCL_ICD_VENDORS`` folder it used.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

CHILD = textwrap.dedent("""
    import json, os, sys, warnings
    warnings.simplefilter("always")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(os.environ.get("CHILD_BEFORE", ""))
        import numpy as np
        import pysycl as sycl
        exec(os.environ.get("CHILD_AFTER_IMPORT", ""))
        q = sycl.queue()
        dev = q.get_device()
        scale = float(os.environ.get("CHILD_SCALE", "2"))
        results = []
        for variant in range(int(os.environ.get("CHILD_KERNELS", "1"))):
            a = np.arange(64, dtype=np.float32)
            c = np.zeros_like(a)
            ns = {"sycl": sycl}
            # Distinct code per variant: distinct kernels (a constant is code).
            exec(f"def make(A, C):\\n"
                 f"    def cg(h):\\n"
                 f"        ra = A.get_access(h, sycl.access_mode.read)\\n"
                 f"        wc = C.get_access(h, sycl.access_mode.write)\\n"
                 f"        h.parallel_for(sycl.range(64), "
                 f"lambda i: wc.__setitem__(i, ra[i] * {scale} + {variant}))\\n"
                 f"    return cg\\n", ns)
            with sycl.buffer(a) as A, sycl.buffer(c) as C:
                q.submit(ns["make"](A, C))
            results.append(bool(np.array_equal(c, a * scale + variant)))
            exec(os.environ.get("CHILD_BETWEEN", ""))
        stats = sycl.ext.kernel_cache_stats()
    plat = dev.get_platform().get_info(sycl.info.platform.name)
    print(json.dumps({
        "platform": plat,
        "device": dev.get_info(sycl.info.device.name),
        "kernels": bool(dev.image_targets),
        "ok": all(results),
        "compiles": stats["compiles"], "disk_hits": stats["disk_hits"],
        "disk_writes": stats["disk_writes"],
        "warnings": [f"{w.category.__name__}: {w.message}" for w in caught],
        "icd": os.environ.get("OCL_ICD_VENDORS"),
        "cache_dir": str(sycl.ext.kernel_cache_dir()),
    }))
""")


def run_child(cache: Path | str | None, *, cwd: Path | None = None, timeout: float = 240,
              **env_extra: str) -> dict[str, Any]:
    """Run :data:`CHILD` with ``PYSYCL_CACHE_DIR=cache``; its report (asserting it exited 0)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYSYCL_DISABLE_CACHE", "OCL_ICD_VENDORS", "PYSYCL_ICD_VENDORS_SET",
                        "PYSYCL_ICD_VENDORS_ORIGINAL")}
    if cache is not None:
        env["PYSYCL_CACHE_DIR"] = str(cache)
    env.update(env_extra)
    r = subprocess.run([sys.executable, "-c", CHILD], env=env, cwd=cwd, capture_output=True,
                       text=True, timeout=timeout)
    assert r.returncode == 0, f"child failed ({r.returncode}):\n{r.stderr[-4000:]}"
    return json.loads(r.stdout.strip().splitlines()[-1])


def assert_healthy(report: dict[str, Any], *, max_warnings: int = 0) -> None:
    """The kernel ran right on the default device (Intel's CPU runtime in CI, an NVIDIA GPU
    where there is one), with few warnings."""
    assert report["ok"], report
    assert report["kernels"], report
    assert len(report["warnings"]) <= max_warnings, report["warnings"]


def entries(cache: Path, pattern: str = "*.spvk") -> list[Path]:
    """The cache entries below ``cache`` matching ``pattern``."""
    return sorted((cache / "kernels").rglob(pattern))

"""The per-device binary cache: a fresh process builds known kernels with neither Numba
nor the OpenCL compiler (proved by statistics in subprocesses)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    import pysycl as sycl

    facs = []
    for n in range(3):  # three kernels with different code (constants are code)
        ns = {}
        exec(f"def fac(x):\\n    def kern(i):\\n        x[i] = x[i] * {n} + i\\n    return kern", ns)
        facs.append(ns["fac"])
        sycl.ext.declare_kernel(ns["fac"], kernel_name=f"bincache.k{n}", index_space=sycl.range(1),
                                captures={"x": sycl.ext.accessor_type(np.float32, 1, "read_write")})
    make = lambda n: facs[n]
    q = sycl.queue()  # the device Python kernels run on (SPIR-V or PTX)
    kb = sycl.build(sycl.get_kernel_bundle(q.get_context(), state=sycl.bundle_state.input))
    x = np.ones(4, np.float32)
    with sycl.buffer(x) as X:
        def cg(h):
            h.use_kernel_bundle(kb)
            h.parallel_for(sycl.range(4), make(2)(X.get_access(h, sycl.access_mode.read_write)))
        q.submit(cg)
    out = sycl.ext.kernel_cache_stats()
    out["numba_imported"] = "numba" in sys.modules
    out["result"] = x.tolist()
    out["format"] = q.get_device().image_targets[0][0]
    print(json.dumps(out))
""")


def _run(tmp: Path, env_extra: dict[str, str] | None = None) -> dict:
    env = dict(os.environ, PYSYCL_CACHE_DIR=str(tmp), **(env_extra or {}))
    script = tmp / "prog.py"
    script.write_text(SCRIPT)
    r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                       timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_fresh_process_build_uses_binaries(tmp_path: Path) -> None:
    cold = _run(tmp_path)
    # SPIR-V: three clCompileProgram and one clLinkProgram; PTX: the three modules
    # merged by text and built once (NVIDIA's OpenCL links no PTX).
    builds, links = (3, 1) if cold["format"] == "spirv" else (1, 0)
    assert cold["compiles"] == 3 and cold["cl_compiles"] == builds and cold["binary_writes"] == 1
    assert cold["cl_links"] == links
    assert cold["result"] == [2.0, 3.0, 4.0, 5.0]
    warm = _run(tmp_path)
    assert warm["compiles"] == 0 and not warm["numba_imported"]   # no Numba
    assert warm["cl_compiles"] == 0 and warm["cl_links"] == 0     # no OpenCL compiler
    assert warm["binary_hits"] == 1 and warm["cl_builds"] == 0
    assert warm["result"] == [2.0, 3.0, 4.0, 5.0]


def test_corrupt_binary_is_rebuilt(tmp_path: Path) -> None:
    _run(tmp_path)
    for p in (tmp_path / "kernels" / "binaries").rglob("*.bin"):
        p.write_bytes(b"garbage")
    again = _run(tmp_path, {"PYTHONWARNINGS": "ignore"})
    rebuilt = again["cl_links"] if again["format"] == "spirv" else again["cl_compiles"]
    assert again["binary_hits"] == 0 and rebuilt == 1 and again["binary_writes"] == 1
    assert again["result"] == [2.0, 3.0, 4.0, 5.0]


SUBMIT = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    import pysycl as sycl

    q = sycl.queue()
    x = np.arange(8, dtype=np.float32)
    t0 = time.perf_counter()
    with sycl.buffer(x) as X:
        def cg(h):
            a = X.get_access(h, sycl.access_mode.read_write)
            h.parallel_for(sycl.range(8), lambda i: a.__setitem__(i, a[i] * 3.0 + 1.0))
        q.submit(cg)
    out = sycl.ext.kernel_cache_stats()
    out["first_submit_s"] = time.perf_counter() - t0
    out["numba_imported"] = "numba" in sys.modules
    out["result"] = x.tolist()
    print(json.dumps(out))
""")


def test_a_warm_process_submits_without_numba_or_the_device_compiler(tmp_path: Path) -> None:
    # The kernel cache keeps the image (SPIR-V/PTX) and, per device, the driver's binary.
    env = dict(os.environ, PYSYCL_CACHE_DIR=str(tmp_path))
    runs = []
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", SUBMIT], env=env, capture_output=True,
                           text=True, timeout=120, check=False)
        assert r.returncode == 0, r.stderr
        runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
    cold, warm = runs
    want = [v * 3 + 1 for v in range(8)]
    assert cold["result"] == warm["result"] == want
    assert cold["compiles"] == 1 and cold["native_writes"] == 1 and cold["native_hits"] == 0
    assert warm["compiles"] == 0 and warm["disk_hits"] == 1 and not warm["numba_imported"]
    assert warm["native_hits"] == 1 and warm["native_writes"] == 0

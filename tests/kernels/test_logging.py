"""PYSYCL_LOG attaches a stderr handler to pysycl's loggers (never the root logger), in a
fresh process; INFO reports the first compile and OpenCL builds with timings."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = """
import logging, numpy as np, pysycl as sycl
assert logging.getLogger().handlers == [], "the root logger was configured"
x = np.zeros(8, np.float32)
with sycl.buffer(x) as X:
    sycl.queue().submit(lambda h: h.parallel_for(
        sycl.range(8), (lambda a: lambda i: a.__setitem__(i, 1.0))(
            X.get_access(h, sycl.access_mode.write))))
assert (x == 1).all()
print("handlers", [type(h).__name__ for h in logging.getLogger("pysycl").handlers])
"""


def _run(tmp_path: Path, log: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYSYCL_LOG"}
    env["PYSYCL_CACHE_DIR"] = str(tmp_path)  # a cold cache: the kernel really compiles
    if log is not None:
        env["PYSYCL_LOG"] = log
    r = subprocess.run([sys.executable, "-W", "error", "-c", SCRIPT], capture_output=True,
                       text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    return r


@pytest.mark.slow
def test_info_logs_compile_and_build_with_timings(tmp_path: Path) -> None:
    r = _run(tmp_path, "info")
    assert re.search(r"pysycl\.kernel INFO: compiled kernel .*<string>:\d+\) in [\d.]+ ms",
                     r.stderr), r.stderr
    assert re.search(r"pysycl\.kernel INFO: built kernel .* in [\d.]+ ms", r.stderr), r.stderr
    assert " DEBUG: " not in r.stderr
    assert "handlers ['_EnvHandler']" in r.stdout


def test_debug_adds_cache_and_selector_details(tmp_path: Path) -> None:
    r = _run(tmp_path, "DEBUG")
    assert "pysycl.selector DEBUG: select_device" in r.stderr, r.stderr
    assert "compiled kernel" in r.stderr


@pytest.mark.parametrize("log", [None, "", "warning"])
def test_quiet_without_pysycl_log(tmp_path: Path, log: str | None) -> None:
    r = _run(tmp_path, log)
    assert r.stderr == ""
    expect = "[]" if not log else "['_EnvHandler']"
    assert f"handlers {expect}" in r.stdout


def test_unknown_value_warns(tmp_path: Path) -> None:
    env = dict(os.environ, PYSYCL_LOG="loud")
    r = subprocess.run([sys.executable, "-c", "import pysycl"], capture_output=True, text=True,
                       timeout=60, env=env)
    assert r.returncode == 0
    assert "RuntimeWarning: PYSYCL_LOG='loud' is not one of debug, info, warning, error" in r.stderr

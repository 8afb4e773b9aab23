"""examples/multi_device/ (issue 26): nstream and a Jacobi stencil split across devices in one
process, each validating its own result. Here the devices are the Intel CPU device and the
host_debuggable device (``--with-host``: two contexts, the halos crossing through the host);
on a machine with several GPUs, every GPU."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import pysycl as sycl

DIR = Path(__file__).resolve().parent.parent.parent / "examples" / "multi_device"
COMPILED = [d for d in sycl.device.get_devices() if d.image_targets]


def _run(script: str, *args: str) -> str:
    r = subprocess.run([sys.executable, "-W", "error", str(DIR / script), *args],
                       capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


@pytest.mark.skipif(not COMPILED, reason="no device runs compiled Python kernels")
def test_nstream_across_two_devices_validates() -> None:
    out = _run("nstream.py", "3", "20000", "--with-host", "--devices", "2")
    assert "across 2 device(s)" in out and "Solution validates" in out


@pytest.mark.skipif(not COMPILED, reason="no device runs compiled Python kernels")
@pytest.mark.parametrize("n", [17, 40])  # rows that split unevenly, and evenly
def test_stencil_across_two_devices_matches_numpy(n: int) -> None:
    out = _run("stencil.py", "4", str(n), "--with-host", "--devices", "2")
    assert "across 2 device(s): validates" in out


@pytest.mark.skipif(not COMPILED, reason="no device runs compiled Python kernels")
def test_on_the_compiled_devices_alone() -> None:
    out = _run("stencil.py", "5", "256")
    assert f"across {len(COMPILED)} device(s): validates" in out
    out = _run("nstream.py", "2", "100000")
    assert "Solution validates" in out

"""examples/multi_device/ (issue 26): nstream and a Jacobi stencil split across devices in one
process, each validating its own result. Here the devices are the Intel CPU device and the
host_debuggable device (``--with-host``: two contexts, the halos crossing through the host),
and two sub-devices of the CPU device in one context (the halos device to device, as
between the GPUs of the CUDA backend); on a machine with several GPUs, every GPU."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import pysycl as sycl

DIR = Path(__file__).resolve().parent.parent.parent / "examples" / "multi_device"
sys.path.insert(0, str(DIR))
from nstream import NStream, devices  # noqa: E402
from stencil import Stencil, check_rows, reference  # noqa: E402

COMPILED = [d for d in sycl.device.get_devices() if d.image_targets]
ROOT = DIR.parent.parent


def _run(script: str, *args: str) -> str:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-W", "error", str(DIR / script), *args],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


@pytest.mark.skipif(not COMPILED, reason="no device runs compiled Python kernels")
def test_nstream_across_two_devices_validates() -> None:
    out = _run("nstream.py", "3", "20000", "--with-host", "--devices", "2")
    assert "across 2 device(s)" in out and "Solution validates" in out


@pytest.mark.skipif(not COMPILED, reason="no device runs compiled Python kernels")
@pytest.mark.parametrize("n", [17, 40])  # rows that split unevenly, and evenly
def test_stencil_across_two_devices_matches_numpy(n: int) -> None:
    out = _run("stencil.py", "4", str(n), "--with-host", "--devices", "2", "--exchange", "host")
    assert "across 2 device(s), host exchange: validates" in out


@pytest.mark.skipif(not COMPILED, reason="no device runs compiled Python kernels")
def test_on_the_compiled_devices_alone() -> None:
    """Without options: every GPU of one backend (each physical GPU once), else the
    devices that run compiled kernels; the halos device to device where one context
    holds them (CUDA GPUs)."""
    devs = devices()
    assert devs and all(d.image_targets for d in devs)
    assert len({d.get_backend() for d in devs if d.is_gpu()}) <= 1
    out = _run("stencil.py", "5", "256")
    m = re.search(r"across (\d+) device\(s\), (\w+) exchange: validates", out)
    assert m and int(m.group(1)) == len(devs), out
    cuda = all(d.get_backend() is sycl.backend.ext_oneapi_cuda for d in devs)
    assert m.group(2) == ("device" if len(devs) == 1 or cuda else "host")
    out = _run("nstream.py", "2", "100000")
    assert f"across {len(devs)} device(s)" in out and "Solution validates" in out


def _two_sub_devices() -> list[sycl.device]:
    pp = sycl.info.partition_property
    for d in COMPILED:
        if pp.partition_equally in d.get_info(sycl.info.device.partition_properties):
            cus = d.get_info(sycl.info.device.max_compute_units)
            if cus >= 2:
                return d.create_sub_devices(pp.partition_equally, cus // 2)[:2]
    pytest.skip("no device that runs compiled kernels splits into two sub-devices")


@pytest.mark.parametrize("n", [17, 40, 65])
def test_stencil_halos_device_to_device_in_one_context(n: int) -> None:
    """The device exchange (one context, each halo row a memcpy between the two devices'
    allocations after the other device's kernel event, no host wait between steps) over
    two sub-devices of the CPU device: equal to numpy's sweeps, run in two batches."""
    subs = _two_sub_devices()
    grid = np.random.default_rng(n).random((n, n), np.float32)
    st = Stencil(grid, subs, "device")
    assert st.exchange == "device" and len(st.pairs) == 1
    st.run(3)
    st.run(4)
    out = st.result()
    st.free()
    np.testing.assert_allclose(out, reference(grid, 7), rtol=1e-5, atol=1e-6)
    check_rows(grid, out, 7, n // 2 - 3, n // 2 + 3)  # the windowed check agrees


def test_the_windowed_check_finds_a_wrong_row() -> None:
    grid = np.random.default_rng(0).random((30, 30), np.float32)
    out = reference(grid, 5)
    check_rows(grid, out, 5, 10, 20)
    out[15, 7] += 1e-3
    with pytest.raises(AssertionError):
        check_rows(grid, out, 5, 10, 20)


@pytest.mark.skipif(not COMPILED, reason="no device runs compiled Python kernels")
def test_nstream_class_checks_every_element() -> None:
    ns = NStream(1000, COMPILED[:1])
    ns.run(3)
    ns.check()
    q, _n, (a, _b, _c), _k = ns.parts[0]
    q.fill(a + 10, np.float64(0), 1).wait()  # one wrong element
    with pytest.raises(AssertionError, match="Validation"):
        ns.check()
    ns.free()

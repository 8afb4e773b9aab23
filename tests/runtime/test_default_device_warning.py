"""``PYSYCL_DEVICE_FILTER=pocl`` makes a device that cannot run Python kernels the default:
the default queue warns once (``pysycl.ext.DeviceWarning``), naming the filter and the
devices that can -- instead of letting the first Python kernel fail far from the cause."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import pysycl as sycl
from pysycl._commands import queue as queue_module
from pysycl.testing import devices

ROOT = Path(__file__).resolve().parents[2]


def _expected(dev: sycl.device, can: list[sycl.device], filt: str) -> str:
    return (f"pysycl: the default device {dev!r} cannot run Python kernels (it loads neither "
            f"SPIR-V nor PTX; OpenCL C kernels and memory commands run); "
            f"PYSYCL_DEVICE_FILTER={filt!r} hides the devices that can: "
            f"{', '.join(repr(d) for d in can)}. Change PYSYCL_DEVICE_FILTER, or pass a device "
            "or selector to sycl.queue(...) (docs/devices.md)")


def test_a_default_device_that_runs_no_python_kernels_warns_once(
        pocl_device: sycl.device, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYSYCL_DEVICE_FILTER", raising=False)  # the suite's own filter too
    can = devices()  # before the filter: the devices that run Python kernels here
    assert pocl_device not in can and can
    monkeypatch.setattr(queue_module, "_default_warned", [False])
    monkeypatch.setenv("PYSYCL_DEVICE_FILTER", "pocl")
    with pytest.warns(sycl.ext.DeviceWarning) as rec:
        q = sycl.queue()
    (w,) = rec
    assert q.get_device() == pocl_device
    assert str(w.message) == _expected(pocl_device, can, "pocl")
    assert w.filename == __file__  # the user's line, not pysycl's
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once a process
        sycl.queue()
        sycl.queue(sycl.default_selector_v)


def test_a_chosen_device_or_a_default_that_runs_python_kernels_does_not_warn(
        pocl_device: sycl.device, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(queue_module, "_default_warned", [False])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert sycl.queue().get_device() in devices()  # the default here runs them
        sycl.queue(pocl_device)  # asked for by name: the user knows
        sycl.queue(sycl.cpu_selector_v)
    assert queue_module._default_warned == [False]


def test_the_environment_variable_warns_in_a_fresh_program(
        pocl_device: sycl.device, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYSYCL_DEVICE_FILTER", raising=False)  # the suite's own filter too
    can = devices()  # every device that runs Python kernels: the warning names those hidden
    script = tmp_path / "user.py"
    script.write_text("import pysycl as sycl\n\nq = sycl.queue()\nq = sycl.queue()\n")
    env = {**os.environ, "PYSYCL_DEVICE_FILTER": "POCL", "PYSYCL_CACHE_DIR": str(tmp_path),
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH"))
                                         if p)}
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                       timeout=120, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines() == [
        f"{script}:3: DeviceWarning: {_expected(pocl_device, can, 'POCL')}",
        "  q = sycl.queue()"], r.stderr

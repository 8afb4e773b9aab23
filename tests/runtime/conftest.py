"""Fixtures for runtime tests (OpenCL only, no Numba).

``device``: parametrized over every real device pysycl sees. ``PYSYCL_TEST_DEVICES``
(comma-separated, case-insensitive substrings of the platform or device name)
keeps only matching devices, e.g. ``PYSYCL_TEST_DEVICES=intel``.
"""

from __future__ import annotations

import os

import pytest

import pysycl as sycl


def _test_devices() -> list[sycl.device]:
    tokens = [t.strip().lower() for t in os.environ.get("PYSYCL_TEST_DEVICES", "").split(",")
              if t.strip()]
    devices = sycl.device.get_devices()
    if not tokens:
        return devices
    out = []
    for d in devices:
        names = (d.get_platform().get_info(sycl.info.platform.name).lower(),
                 d.get_info(sycl.info.device.name).lower())
        if any(t in n for t in tokens for n in names):
            out.append(d)
    return out


def _device_id(d: sycl.device) -> str:
    plat = d.get_platform().get_info(sycl.info.platform.name)
    return f"{plat}:{d.get_info(sycl.info.device.name)}".replace(" ", "_")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "device" in metafunc.fixturenames:
        devices = _test_devices()
        metafunc.parametrize("device", devices, ids=[_device_id(d) for d in devices])

"""Fixtures for runtime tests (OpenCL only, no Numba).

``device`` is every real device in turn: an alias of ``cl_device`` from
``tests/conftest.py``, so ``PYSYCL_TEST_DEVICES`` (comma-separated substrings of
platform or device names, e.g. ``PYSYCL_TEST_DEVICES=intel``) filters it too.
"""

from __future__ import annotations

import pytest

import pysycl as sycl


@pytest.fixture
def device(cl_device: sycl.device) -> sycl.device:
    """Every real device in turn (the spec's name for what the tests exercise)."""
    return cl_device

"""Fixtures for kernel-bundle tests: kernels declared once per session, real devices only."""

from __future__ import annotations

import numpy as np
import pytest

import pysycl as sycl
from bundles._decl import RD, WR, optional, scale_factory, vadd_factory


@pytest.fixture(scope="session")
def declared(kernel_device: sycl.device) -> dict[str, sycl.kernel_id]:
    """Three declared kernels: float32 vadd, float32 scale, and "half", which needs an
    optional aspect: float16 halve (fp16), or float64 on a device without fp16."""
    dt, _asp, factory = optional(kernel_device)
    return {
        "vadd": sycl.ext.declare_kernel(vadd_factory, kernel_name="bundles.vadd",
                                        index_space=sycl.range(1),
                                        captures={"a": RD, "b": RD, "c": WR}),
        "scale": sycl.ext.declare_kernel(
            scale_factory, kernel_name="bundles.scale", index_space=sycl.range(1),
            captures={"x": sycl.ext.accessor_type(np.float32, 1, sycl.access_mode.read_write),
                      "f": np.float32}),
        "half": sycl.ext.declare_kernel(
            factory, kernel_name="bundles.half", index_space=sycl.range(1),
            captures={"h": sycl.ext.accessor_type(dt, 1, sycl.access_mode.read_write)}),
    }


@pytest.fixture
def kctx(kq: sycl.queue) -> sycl.context:
    """The context of the SPIR-V capable queue."""
    return kq.get_context()

"""Kernel factories declared by the bundle tests."""

from __future__ import annotations

import numpy as np

import pysycl as sycl

RD = sycl.ext.accessor_type(np.float32, 1, sycl.access_mode.read)
WR = sycl.ext.accessor_type(np.float32, 1, sycl.access_mode.write)
RW16 = sycl.ext.accessor_type(np.float16, 1, sycl.access_mode.read_write)


def vadd_factory(a, b, c):
    """Kernel factory: the declared captures are its parameters."""
    return lambda i: c.__setitem__(i, a[i] + b[i])


def scale_factory(x, f):
    def scale(i):
        x[i] = x[i] * f
    return scale


def half_factory(h):
    def halve(i):
        h[i] = h[i] * np.float16(0.5)
    return halve


def half64_factory(h):
    """``half_factory`` for devices without fp16 (an NVIDIA GPU): needs fp64 instead."""
    def halve(i):
        h[i] = h[i] * 0.5
    return halve


def optional(dev: sycl.device) -> tuple[type, sycl.aspect, object]:
    """(dtype, aspect, factory) of the bundle tests' kernel that needs an optional aspect:
    fp16 where ``dev`` has it, else fp64."""
    if dev.has(sycl.aspect.fp16):
        return np.float16, sycl.aspect.fp16, half_factory
    return np.float64, sycl.aspect.fp64, half64_factory

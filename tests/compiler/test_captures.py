"""Capture lifting: captured values are kernel arguments, never constants."""

from __future__ import annotations

import struct

import numpy as np

from pysycl._core.abi import AccessorType, Capture, IndexSpace, flat_arg_count

from . import conftest
from .conftest import R, W, compile_for, make_captures

GLOBAL_SCALE = np.float32(2.5)


def test_scalar_value_not_embedded(device):
    from pysycl_numba import compile_kernel

    x = np.arange(8, dtype=np.float64)
    out = np.zeros_like(x)
    rx, wo = R(x), W(out)
    magic = 123456.789

    def kern(i):
        wo[i] = rx[i] * magic

    ck = compile_for(kern, 1)
    assert struct.pack("<d", magic) not in ck.binary
    # Other values run through the same binary, passed as arguments.
    caps, _ = make_captures(kern)
    for value in (1.5, -3.0, magic):
        vals = {"rx": rx, "wo": wo, "magic": value}
        device.launch(ck, [vals[c.name] for c in ck.captures], (8,))
        np.testing.assert_array_equal(out, x * value)
    # Recompiling is deterministic: same code, same capture types, same binary.
    fmt, arch = conftest.TARGET
    assert compile_kernel(kern, IndexSpace("range", 1), caps, entry_name=ck.entry,
                          image_format=fmt, arch=arch).binary == ck.binary


def test_same_code_other_capture_types_compiles_differently():
    from pysycl_numba import compile_kernel

    def make():
        a = b = None
        return lambda i: b.__setitem__(i, a[i] + 1)

    fn = make()
    kinds = [np.float32, np.int16, np.float64]
    binaries = set()
    for dt in kinds:
        caps = (
            Capture("a", "freevar", AccessorType(np.dtype(dt), 1, "read")),
            Capture("b", "freevar", AccessorType(np.dtype(dt), 1, "write")),
        )
        ck = compile_kernel(fn, IndexSpace("range", 1), caps, entry_name="k")
        binaries.add(ck.binary)
        assert ck.captures == caps
    assert len(binaries) == len(kinds)


def test_global_capture_and_many_buffers(device):
    x = np.arange(16, dtype=np.float32)
    out = np.zeros_like(x)
    rx, wo = R(x), W(out)

    def kern(i):
        wo[i] = rx[i] * GLOBAL_SCALE

    ck = compile_for(kern, 1)
    assert sorted(c.source for c in ck.captures) == ["freevar", "freevar", "global"]
    assert flat_arg_count(ck.captures) == 3 + 3 + 1  # base, offset, range0; scalar
    for k in range(3):
        y = x + k
        vals = {"rx": R(y), "wo": wo, "GLOBAL_SCALE": np.float32(k)}
        device.launch(ck, [vals[c.name] for c in ck.captures], (16,))
        np.testing.assert_array_equal(out, y * k)


def test_flat_args_match_abi_for_3d_accessor_and_scalars(device):
    a = np.arange(2 * 3 * 4, dtype=np.int32).reshape(2, 3, 4)
    out = np.zeros_like(a)
    ra, wo = R(a), W(out)
    f, b, u = np.float32(2), True, np.uint16(7)

    def kern(it):
        v = ra[it] * f
        if b:
            v += u
        wo[it] = int(v)

    ck = compile_for(kern, 3)
    vals = {"ra": ra, "wo": wo, "f": f, "b": b, "u": u}
    assert sorted(type(c.type).__name__ for c in ck.captures) == ["AccessorType"] * 2 + ["ScalarType"] * 3
    assert flat_arg_count(ck.captures) == 2 * (2 + 3 + 2) + 3
    device.launch(ck, [vals[c.name] for c in ck.captures], (2, 3, 4))
    np.testing.assert_array_equal(out, a * 2 + 7)

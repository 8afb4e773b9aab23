"""The CUDA backend's pure-Python parts, on any machine (no driver needed): the PTX rewrite
of local accessors into dynamic shared memory, the block of range launches, the
argument packing codes, and that a machine without a driver has no CUDA platform."""

from __future__ import annotations

import re
import struct
import subprocess
import sys

import numpy as np
import pytest

import pysycl as sycl
from pysycl._backends.cuda.build import DYN, for_driver
from pysycl._backends.cuda.launch import _char, block_for, local_offset

PTX = b"""//
.version 7.8
.target sm_90
.address_size 64

.visible .entry k(
\t.param .u64 .ptr .shared .align 16 k_param_0,
\t.param .u64 k_param_1,
\t.param .u64 .ptr .global .align 1 k_param_2
)
{
\tld.param.b64 \t%rd1, [k_param_0];
\tld.param.b64 \t%rd4, [k_param_2];
\tret;
}
"""


def test_local_accessor_parameters_become_offsets_into_dynamic_shared_memory() -> None:
    out = for_driver(PTX).decode()
    assert ".ptr .shared" not in out
    assert f".extern .shared .align 1024 .b8 {DYN}[];" in out  # (work-group matrices' swizzle)
    assert out.index(DYN) < out.index(".entry k(")
    # the shared parameter's load adds the block's address; the global one is untouched
    assert re.search(r"ld\.param\.b64\s+%rd1, \[k_param_0\];\n\t\{ .reg .b64 %dyn; mov.u64 "
                     rf"%dyn, {DYN}; add.s64 %rd1, %rd1, %dyn; }}", out)
    assert out.count("add.s64") == 1
    assert ".param .u64 .ptr .global .align 1 k_param_2" in out


def test_local_buffers_of_a_kibibyte_start_at_multiples_of_1024_bytes() -> None:
    """Small local buffers pack at 16 bytes; from 1 KiB up at 1024 (wgmma's swizzle repeats
    every 1024 bytes from a buffer's start)."""
    assert [local_offset(s, 100) for s in (0, 16, 100, 112)] == [0, 16, 112, 112]
    assert [local_offset(s, 1024) for s in (0, 16, 1024, 1040)] == [0, 1024, 1024, 2048]
    assert local_offset(5000, 65536) == 5120


def test_ptx_without_local_accessors_is_unchanged() -> None:
    plain = PTX.replace(b".ptr .shared .align 16 ", b"")
    assert for_driver(plain) is plain


@pytest.mark.parametrize(("gsize", "block"), [
    ((1000,), (250,)), ((4096,), (256,)), ((1009,), (1,)), ((64, 64), (64, 4)),
    ((30, 20, 10), (30, 5, 1)), ((1,), (1,)), ((7, 3), (7, 3)),
])
def test_range_blocks_divide_the_range(gsize: tuple[int, ...], block: tuple[int, ...]) -> None:
    got = block_for(gsize)
    assert got == block
    assert all(g % b == 0 for g, b in zip(gsize, got, strict=True))
    assert np.prod(got) <= 256


def test_argument_codes_pack_numpy_values() -> None:
    dts = [None, np.dtype(np.int32), np.dtype(np.float32), np.dtype(np.float64),
           np.dtype(np.int64), np.dtype(np.bool_), np.dtype(np.float16)]
    fmt = "@" + "".join(_char(t) for t in dts)
    assert fmt == "@Qifdq?e"
    packed = struct.pack(fmt, 1 << 40, np.int32(-3), np.float32(1.5), np.float64(2.5),
                         np.int64(-(1 << 40)), np.bool_(True), np.float16(0.5))
    assert struct.unpack(fmt, packed) == (1 << 40, -3, 1.5, 2.5, -(1 << 40), True, 0.5)
    assert _char(np.dtype([("x", np.float32), ("y", np.float32)])) == "8s"


def test_no_driver_no_cuda_platform_and_no_warning() -> None:
    """Where ``cuInit`` finds no driver (or ``PYSYCL_DISABLE_CUDA`` is set) the backend lists
    nothing and says nothing."""
    code = ("import warnings, logging; warnings.simplefilter('error');"
            "import pysycl as s; print([p.get_backend().value for p in s.platform.get_platforms()])")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**__import__("os").environ, "PYSYCL_DISABLE_CUDA": "1"}, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "ext_oneapi_cuda" not in r.stdout
    assert r.stderr == ""


def test_the_backend_name() -> None:
    assert sycl.backend.ext_oneapi_cuda.value == "ext_oneapi_cuda"


def test_the_executors_slots_hold_what_its_constructor_sets() -> None:
    """Every ``self.x = ...`` in the CUDA executor and launch classes has a slot (read from
    the source: their constructors need a GPU to run)."""
    import ast
    import inspect

    from pysycl._backends.cuda import executor, launch

    for cls in (executor.CUDAExecutor, launch.CUDALaunch):
        tree = ast.parse(inspect.getsource(cls))
        targets = [t for node in ast.walk(tree) if isinstance(node, ast.Assign | ast.AnnAssign)
                   for t in (node.targets if isinstance(node, ast.Assign) else [node.target])]
        flat = [e for t in targets for e in (t.elts if isinstance(t, ast.Tuple) else [t])]
        assigned = {t.attr for t in flat if isinstance(t, ast.Attribute)
                    and isinstance(t.value, ast.Name) and t.value.id == "self"}
        slots = {s for c in cls.__mro__ for s in getattr(c, "__slots__", ())}
        assert assigned <= slots, (cls.__name__, assigned - slots)

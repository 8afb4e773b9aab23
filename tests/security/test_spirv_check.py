"""Malformed SPIR-V never reaches the OpenCL driver (it hangs on a word count of 0 and
calls exit() on one past the module's end): sycl.exception(errc.build) instead."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pysycl as sycl
from pysycl._core import spirv_check as _spirv_check
from pysycl._core.abi import AccessorType, Capture, IndexSpace

syclex = sycl.ext.oneapi.experimental


@pytest.fixture(scope="module")
def spirv_device() -> sycl.device:
    """A device that loads SPIR-V (the SPIR-V check guards what reaches its driver)."""
    devs = [d for d in sycl.device.get_devices() if d.has(sycl.aspect.ext_pysycl_spirv)]
    if not devs:
        pytest.skip("no device loads SPIR-V here (an NVIDIA GPU machine)")
    return devs[0]


@pytest.fixture(scope="module")
def module() -> bytes:
    """A real SPIR-V module, compiled by pysycl's compiler (no kernel id is registered)."""
    from pysycl_numba import compile_kernel

    def fac(x):
        def kern(i):
            x[i] = x[i] * 2.0 + 1.0
        return kern
    acc = AccessorType(np.dtype(np.float32), 1, "read_write")
    k = compile_kernel(fac(None), IndexSpace("range", 1), (Capture("x", "freevar", acc),),
                       entry_name="spirv_check_kern")
    assert _spirv_check.problem(k.binary) is None
    return k.binary


def _starts(il: bytes) -> list[int]:
    w = struct.unpack(f"<{len(il) // 4}I", il)
    out, pos = [], 5
    while pos < len(w):
        out.append(pos)
        pos += w[pos] >> 16
    return out


def _build(ctx: sycl.context, il: bytes) -> sycl.kernel_bundle:
    return syclex.build(syclex.create_kernel_bundle_from_source(ctx, syclex.source_language.spirv,
                                                                il))


@pytest.mark.parametrize(("count", "what"), [(0, "word count 0"),
                                             (0xFFFF, "past the module's end")])
def test_bad_word_count_raises_build_error_without_reaching_the_driver(
        module: bytes, spirv_device: sycl.device, count: int, what: str) -> None:
    bad = bytearray(module)
    struct.pack_into("<H", bad, 4 * 5 + 2, count)
    with pytest.raises(sycl.exception) as ei:
        _build(sycl.context(spirv_device), bytes(bad))
    assert ei.value.code() == sycl.errc.build
    assert what in str(ei.value) and "at word 5, byte offset 20" in str(ei.value)
    assert "not handed to the OpenCL driver" in str(ei.value)


def test_header_problems_are_named() -> None:
    assert "shorter than the 5-word" in _spirv_check.problem(b"\x03\x02\x23\x07")[1]
    hdr = [0x07230203, 0x00010200, 0, 10, 0]
    assert "big-endian" in _spirv_check.problem(struct.pack(">5I", *hdr))[1]
    assert _spirv_check.problem(struct.pack("<5I", *hdr[:1], 0x00020000, *hdr[2:]))[0] == 1
    assert "bound" in _spirv_check.problem(struct.pack("<5I", *hdr[:3], 0, 0))[1]
    assert "whole number" in _spirv_check.problem(struct.pack("<5I", *hdr) + b"\0")[1]
    assert "no OpCapability" in _spirv_check.problem(struct.pack("<5I", *hdr))[1]


@st.composite
def _mutations(draw: st.DrawFn, il: bytes) -> bytes:
    """Truncations, word counts, header words and appended words of a real module."""
    kind = draw(st.sampled_from(["truncate", "count", "header", "append"]))
    b = bytearray(il)
    if kind == "truncate":
        return bytes(b[:draw(st.integers(0, len(b) - 1))])
    if kind == "count":
        pos = draw(st.sampled_from(_starts(il)))
        struct.pack_into("<H", b, 4 * pos + 2, draw(st.integers(0, 0xFFFF) | st.integers(0, 12)))
        return bytes(b)
    if kind == "header":
        word = draw(st.integers(0, 4))
        struct.pack_into("<I", b, 4 * word, draw(st.integers(0, 2**32 - 1)))
        return bytes(b)
    return bytes(b) + struct.pack("<I", draw(st.integers(0, 2**32 - 1)))


DRIVER = textwrap.dedent("""
    import json, sys, pysycl as sycl
    syclex = sycl.ext.oneapi.experimental
    ctx = sycl.context(sycl.device(sycl.aspect_selector(sycl.aspect.ext_pysycl_spirv)))
    out = []
    for hexed in json.load(sys.stdin):
        try:
            syclex.build(syclex.create_kernel_bundle_from_source(
                ctx, syclex.source_language.spirv, bytes.fromhex(hexed)))
            out.append("built")
        except sycl.exception as e:
            out.append(e.code().name)
    print(json.dumps(out))
""")


def test_mutated_modules_never_reach_the_driver_unless_well_formed(
        module: bytes, spirv_device: sycl.device) -> None:
    ctx = sycl.context(spirv_device)
    accepted: list[bytes] = []

    @settings(max_examples=300, database=None)
    @given(_mutations(module))
    def check(il: bytes) -> None:
        if _spirv_check.problem(il) is None:
            accepted.append(il)     # well-formed: to the driver, in a child process below
            return
        with pytest.raises(sycl.exception) as ei:
            _build(ctx, il)         # in this process: it must not get near the driver
        assert ei.value.code() == sycl.errc.build
        assert "malformed SPIR-V" in str(ei.value)

    check()
    assert accepted, "no mutation was well-formed: the driver half never ran"
    # Well-formed mutants go to the real driver, in a child: no hang, no crash.
    env = {k: v for k, v in os.environ.items() if k not in ("OCL_ICD_VENDORS",
                                                          "PYSYCL_ICD_VENDORS_SET")}
    r = subprocess.run([sys.executable, "-c", DRIVER], input=json.dumps([m.hex() for m in
                       accepted[:40]]), env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    results = json.loads(r.stdout.strip().splitlines()[-1])
    assert set(results) <= {"built", "build", "invalid"}, results


def test_spec_constant_op_takes_its_operands(monkeypatch: pytest.MonkeyPatch) -> None:
    """``OpSpecConstantOp`` (opcode 52) has a variable number of operand ids after its opcode
    literal: LLVM writes ``ConvertPtrToU`` of a null pointer (a span reducer's null check,
    where the backend's loop strength reduction runs: range reductions now emit without it,
    so the test turns it back on)."""
    from pysycl._core.abi import ReductionType
    from pysycl_numba import compile_kernel
    from pysycl_numba.targets.spirv import codegen

    monkeypatch.setattr(codegen, "INDEX_LOOP_FLAGS", ())

    def plus(a, b):
        return a + b

    def kern(i, r):
        r[i - 5].combine(1)

    k = compile_kernel(kern, IndexSpace("range", 1), (), entry_name="spec_constant_op_kern",
                       reductions=((ReductionType(np.dtype(np.int32), "plus", True), plus),))
    w = struct.unpack(f"<{len(k.binary) // 4}I", k.binary)
    counts = [w[p] >> 16 for p in _starts(k.binary) if w[p] & 0xFFFF == 52]
    assert 5 in counts, counts  # result type, result id, the opcode, one operand id
    assert _spirv_check.problem(k.binary) is None
    bad = list(w)
    pos = next(p for p in _starts(k.binary) if w[p] & 0xFFFF == 52)
    bad[pos + 4] = 0x3FFFFF  # its operand: an id past the module's bound
    assert _spirv_check.problem(struct.pack(f"<{len(bad)}I", *bad)) is not None

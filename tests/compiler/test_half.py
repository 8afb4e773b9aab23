"""float16 arithmetic compiles to ``half`` instructions; Python literals stay weak (NEP 50)."""

from __future__ import annotations

import math
import operator
import subprocess

import numpy as np
import pytest

from pysycl_numba._numba_compat import types
from pysycl_numba.overloads.half import WeakFloatLiteral, half_signature
from tests.compiler.conftest import SPIRV_VAL, R, W, compile_for, spirv_validate


def _spirv_text(binary: bytes, tmp_path) -> str:
    if SPIRV_VAL is None:
        pytest.skip("no spirv-dis")
    f = tmp_path / "k.spv"
    f.write_bytes(binary)
    return subprocess.run(["spirv-dis", str(f)], capture_output=True, text=True, check=True).stdout


def test_half_arithmetic_is_half_instructions(tmp_path) -> None:
    a = np.ones(8, np.float16)
    out = np.zeros_like(a)
    ra, wo = R(a), W(out)

    def kern(i):
        x = ra[i]
        wo[i] = math.sqrt(x * x + x / 3.0 - 1) if x < 0.5 else -abs(x)

    ck = compile_for(kern, 1)
    assert "fp16" in ck.required_aspects and "fp64" not in ck.required_aspects
    spirv_validate(ck.binary, tmp_path, "spv1.2")
    text = _spirv_text(ck.binary, tmp_path)
    assert "OpCapability Float16" in text
    for op in ("OpFMul %half", "OpFAdd %half", "OpFDiv %half", "OpFOrdLessThan"):
        assert op in text, op
    assert "OpFConvert" not in text  # nothing widened to float
    assert "sqrt" in text  # OpenCL.std sqrt on half


@pytest.mark.parametrize(("args", "ret"), [
    ((types.float16, types.float16), types.float16),
    ((types.float16, WeakFloatLiteral(2.0)), types.float16),
    ((types.IntegerLiteral(3), types.float16), types.float16),
    ((types.float16, types.int8), types.float16),
    ((types.float16, types.uint8), types.float16),
    ((types.float16, types.boolean), types.float16),
    ((types.float16, types.int16), None),    # numpy: float32
    ((types.float16, types.float32), None),  # float32
    ((types.float16, types.float64), None),  # a float64 value (not a literal): float64
    ((types.float32, WeakFloatLiteral(2.0)), None),  # not float16: Numba's rules
])
def test_numpy_promotion_rules(args, ret) -> None:
    sig = half_signature(args)
    assert (sig.return_type if sig is not None else None) == ret
    assert np.result_type(np.float16, np.float16(2) * 2.0) == np.float16  # NEP 50


def test_float16_with_float64_value_widens(tmp_path) -> None:
    a = np.ones(8, np.float16)
    out = np.zeros(8, np.float64)
    ra, wo = R(a), W(out)
    s = np.float64(1.5)

    def kern(i):
        wo[i] = ra[i] * s  # a float64 value is strong: float64, as numpy

    ck = compile_for(kern, 1)
    assert "fp64" in ck.required_aspects


def test_half_kernel_compiles_to_ptx() -> None:
    """PTX: ``add.rn.f16`` per operation; math in float rounded to half (no half libdevice)."""
    from pysycl._core.abi import IndexSpace
    from pysycl_numba import compile_kernel
    from tests.compiler.conftest import make_captures
    from tests.conftest import ptxas_check

    a = np.ones(8, np.float16)
    out = np.zeros_like(a)
    ra, wo = R(a), W(out)

    def kern(i):
        x = ra[i]
        wo[i] = math.sqrt(x * x + x) + abs(x) + math.exp(x)

    caps, _ = make_captures(kern)
    ck = compile_kernel(kern, IndexSpace("range", 1), caps, entry_name="k_half",
                        image_format="ptx", arch="sm_90")
    text = ck.binary.decode()
    assert "mul.rn.f16" in text and "add.rn.f16" in text
    assert "sqrt.rn.f32" in text and "call" not in text.split(".entry", 1)[1]
    assert "fp16" in ck.required_aspects
    ptxas_check(ck.binary)


@pytest.mark.parametrize("op", ["//", "%", "**"])
def test_floordiv_mod_pow_are_float16(op: str) -> None:
    from pysycl_numba.target import sycl_target

    ctx = sycl_target.typing_context
    fn = {"//": operator.floordiv, "%": operator.mod, "**": operator.pow}[op]
    for args in ((types.float16, types.float16), (types.float16, types.IntegerLiteral(2)),
                 (WeakFloatLiteral(1.0), types.float16), (types.float16, types.int8)):
        sig = ctx.resolve_function_type(fn, args, {})
        assert sig is not None and sig.return_type == types.float16, (op, args, sig)
    sig = ctx.resolve_function_type(fn, (types.float16, types.float32), {})
    assert sig.return_type == types.float32  # numpy: float32 is strong


def test_floordiv_mod_pow_compile_to_spirv_and_ptx(tmp_path) -> None:
    from pysycl._core.abi import IndexSpace
    from pysycl_numba import compile_kernel
    from tests.compiler.conftest import make_captures
    from tests.conftest import ptxas_check

    a = np.ones(8, np.float16)
    ra, wo = R(a), W(np.zeros_like(a))

    def divmod_only(i):
        wo[i] = ra[i] // 3 + ra[i] % 0.5

    def with_power(i):
        wo[i] = ra[i] ** ra[i]

    ck = compile_for(divmod_only, 1)
    assert "fp16" in ck.required_aspects and "fp64" not in ck.required_aspects
    spirv_validate(ck.binary, tmp_path, "spv1.2")
    ck = compile_for(with_power, 1)
    # float64 pow rounded to float, then to half: the kernel needs fp64 too
    assert {"fp16", "fp64"} <= ck.required_aspects
    spirv_validate(ck.binary, tmp_path, "spv1.2")
    for kern in (divmod_only, with_power):
        caps, _ = make_captures(kern)
        ptx = compile_kernel(kern, IndexSpace("range", 1), caps, entry_name="k_" + kern.__name__,
                             image_format="ptx", arch="sm_90")
        ptxas_check(ptx.binary)


def test_numpy_math_with_a_float_literal_on_float32_needs_no_fp64():
    """``np.minimum(x, 0.7)`` of a float32 is numpy's float32 (a weak literal): no double."""
    a, o = R(np.ones(4, np.float32)), W(np.zeros(4, np.float32))

    def k(i):
        o[i] = np.minimum(a[i], 0.7) + np.hypot(a[i], 2) + np.power(a[i], 2)

    ck = compile_for(k, 1)
    assert "fp64" not in ck.required_aspects


def test_float32_with_literals_needs_no_fp64() -> None:
    """``x * 1.1 + 2``, ``max(x, 0.5)``, ``x > 0.1`` of a float32: float32 throughout
    (numpy 2's weak literals, overloads/float32.py), so the kernel needs no fp64."""
    a = np.ones(8, np.float32)
    out = np.zeros_like(a)
    ra, wo = R(a), W(out)

    def kern(i):
        x = ra[i]
        wo[i] = max(x * 1.1 + 2, 0.5) if x > 0.1 else x // 0.3 - x % 0.7

    ck = compile_for(kern, 1)
    assert "fp64" not in ck.required_aspects

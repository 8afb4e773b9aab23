"""The disk cache's plain form of a compiled kernel keeps every field (no pickle, nothing lost)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pysycl._core.abi import (
    AccessorType,
    Capture,
    CompiledKernel,
    IndexSpace,
    ReductionType,
    ScalarType,
    SpecConstantType,
    TupleType,
)
from pysycl._core.abi_plain import kernel_from_plain, kernel_to_plain


def _kernel() -> CompiledKernel:
    return CompiledKernel(
        binary=b"\x03\x02\x23\x07" + bytes(16),
        format="spirv",
        entry="pysycl_0123",
        captures=(
            Capture("acc", "freevar", AccessorType(np.dtype(np.float32), 2, "read_write", "global")),
            Capture("z", "freevar", ScalarType(np.dtype(np.complex128))),
            Capture("t", "global", TupleType((ScalarType(np.dtype(np.int64)),
                                              TupleType((ScalarType(np.dtype(np.float32)),))))),
            Capture("SCALE", "global", ScalarType(np.dtype(np.float64)), 2),
            Capture("sid", "global", SpecConstantType(np.dtype(np.int32), 7)),
        ),
        index=IndexSpace("nd_range", 2),
        required_aspects=frozenset({"fp64"}),
        source_location="/x/prog.py:12",
        reductions=(ReductionType(np.dtype(np.float32), "plus"),
                    ReductionType(np.dtype(np.int64), "custom", span=True)),
        direct_index=((0, 0, 0, 0, 0), (0, 1, 1, 1, 1)),
        bounds_checked=True,
        sites=((0, 12, ""), (-1, 13, "/x/lib.py")),
    )


def test_compiled_kernel_round_trips_through_json() -> None:
    k = _kernel()
    back = kernel_from_plain(json.loads(json.dumps(kernel_to_plain(k))), k.binary)
    assert back == k


def test_a_span_reduction_round_trips_and_a_bad_span_flag_is_rejected() -> None:
    d = kernel_to_plain(_kernel())
    assert [r["span"] for r in d["reductions"]] == [False, True]
    assert kernel_from_plain(d, b"").reductions[1].span
    d["reductions"][1]["span"] = "yes"
    with pytest.raises(ValueError, match="span"):
        kernel_from_plain(d, b"")


@pytest.mark.parametrize("field", ["captures", "direct_index", "bounds_checked", "schema"])
def test_missing_or_foreign_fields_are_rejected(field: str) -> None:
    d = kernel_to_plain(_kernel())
    del d[field]
    with pytest.raises(ValueError):
        kernel_from_plain(d, b"")
    d = kernel_to_plain(_kernel())
    d["__reduce__"] = "os.system"
    with pytest.raises(ValueError):
        kernel_from_plain(d, b"")


def test_unknown_capture_type_is_rejected_not_looked_up() -> None:
    d = kernel_to_plain(_kernel())
    d["captures"][0]["type"] = {"kind": "os.system", "dtype": "<f4"}  # type: ignore[index]
    with pytest.raises(ValueError, match="unknown capture type"):
        kernel_from_plain(d, b"")

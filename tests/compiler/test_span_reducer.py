"""Span reducers in the compiler: ``r[i].combine(x)`` / ``r[i] += x`` become a compare-exchange
loop on the work-group's row (SPIR-V and PTX, compiled only), and their misuse is named."""

from __future__ import annotations

import re
import subprocess
from typing import Any

import numpy as np
import pytest

import pysycl
from pysycl._core.abi import IndexSpace, ReductionType
from pysycl_numba import compile_kernel
from tests.conftest import ptxas_check

from .conftest import Ptr, make_captures, spirv_validate


def _plus(a: Any, b: Any) -> Any:
    return a + b


def _compile(fn: Any, index: IndexSpace, dtype: Any, fmt: str, arch: str, op: str = "plus"
             ) -> Any:
    reds = ((ReductionType(np.dtype(dtype), op, True), _plus),)
    return compile_kernel(fn, index, make_captures(fn)[0], entry_name="k_span",
                          reductions=reds, image_format=fmt, arch=arch)


@pytest.mark.parametrize("dtype, op", [(np.int32, "plus"), (np.uint64, "plus"),
                                       (np.int32, "custom"), (np.float32, "plus"),
                                       (np.float64, "plus")])
@pytest.mark.parametrize("fmt, arch", [("spirv", ""), ("ptx", "sm_90")])
def test_span_reducer_compiles_to_atomics(dtype: Any, op: str, fmt: str, arch: str,
                                          tmp_path: Any) -> None:
    """Integers with a known operator: one atomic add; floats and custom combiners: a
    compare-exchange loop."""
    cas = np.dtype(dtype).kind == "f" or op == "custom"
    p = Ptr(np.zeros(64, np.int32))

    def by_item(i: Any, r: Any) -> None:
        r[p[i]] += 1  # for sycl.plus() only

    def by_item_custom(i: Any, r: Any) -> None:
        r[p[i]].combine(1)

    def by_nd_item(it: Any, r: Any) -> None:
        r[p[it.get_global_id(0)]].combine(2)

    first = by_item_custom if op == "custom" else by_item
    for fn, index in ((first, IndexSpace("range", 1)), (by_nd_item, IndexSpace("nd_range", 1))):
        ck = _compile(fn, index, dtype, fmt, arch, op)
        assert ck.reductions[0].span
        if fmt == "ptx":
            text = ck.binary.decode()
            want = r"\.global\.cas\.b(32|64)" if cas else r"\.global\.add\.[us](32|64)"
            assert re.search(r"atom(\.\w+)*" + want, text), text[-2000:]
            ptxas_check(ck.binary)
            continue
        wide = np.dtype(dtype).itemsize == 8  # Int64Atomics: an extension of OpenCL 2.2
        assert ("atomic64" in ck.required_aspects) == wide, ck.required_aspects
        spirv_validate(ck.binary, tmp_path, "spv1.2" if wide else "opencl2.2")
        path = tmp_path / "k.spv"
        path.write_bytes(ck.binary)
        dis = subprocess.run(["spirv-dis", str(path)], capture_output=True, text=True).stdout
        if dis:  # spirv-dis installed
            assert ("OpAtomicCompareExchange" if cas else "OpAtomicIAdd") in dis


def test_span_reducer_misuse_is_named() -> None:
    def whole(i: Any, r: Any) -> None:
        r.combine(1)  # a span reducer has elements, no combine

    with pytest.raises(pysycl.kernel_compile_error) as info:
        _compile(whole, IndexSpace("range", 1), np.int32, "spirv", "")
    msg = str(info.value)
    assert "span reducer" in msg and "r[i].combine(x)" in msg, msg

    def float_index(i: Any, r: Any) -> None:
        r[i * 0.5] += 1

    with pytest.raises(pysycl.kernel_compile_error) as info:
        _compile(float_index, IndexSpace("range", 1), np.int32, "spirv", "")
    msg = str(info.value)
    assert "span reducer" in msg and "integer" in msg, msg

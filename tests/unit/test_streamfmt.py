"""``sycl.stream`` formatting and flushing rules (pure Python: no Numba, no OpenCL needed).

Numbers must print as ``std::ostream`` prints them: the oracle is the C library's
own ``snprintf`` (through ctypes), never pysycl's code.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pysycl as sycl
from pysycl._core.streamfmt import Format, StreamOutput, format_array, format_number

_libc = ctypes.CDLL(ctypes.util.find_library("c"))
_INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


def _printf(fmt: str, *args: object) -> str:
    """C's ``snprintf(fmt, args...)``."""
    buf = ctypes.create_string_buffer(8192)
    _libc.snprintf(buf, len(buf), fmt.encode(), *args)
    return buf.value.decode()


def _c_int(v: np.integer) -> tuple[str, object]:
    """The printf length modifier and ctypes value of an integer (its bits for %x/%o)."""
    bits = int(v) & ((1 << (8 * v.dtype.itemsize)) - 1)
    return "ll", ctypes.c_ulonglong(bits)


@settings(max_examples=200)
@given(st.sampled_from(_INTS), st.integers(-(1 << 64), 1 << 64), st.sampled_from([10, 16, 8]),
       st.booleans(), st.booleans(), st.integers(0, 12))
def test_integers_print_as_printf(dt: type, i: int, base: int, showbase: bool, showpos: bool,
                                  width: int) -> None:
    info = np.iinfo(dt)
    v = dt(i % (int(info.max) - int(info.min) + 1) + int(info.min))
    fmt = Format(base=base, showbase=showbase, showpos=showpos, width=width)
    if base == 10:
        if info.min < 0:
            want = _printf(f"%{'+' if showpos else ''}{width}lld", ctypes.c_longlong(int(v)))
        elif showpos:  # "+" of non-negative values, unsigned ones too (printf's %u has none)
            want = ("+" + _printf("%llu", ctypes.c_ulonglong(int(v)))).rjust(width)
        else:
            want = _printf(f"%{width}llu", ctypes.c_ulonglong(int(v)))
    else:
        mod, bits = _c_int(v)
        want = _printf(f"%{'#' if showbase else ''}{width}{mod}{'x' if base == 16 else 'o'}", bits)
    assert format_number(fmt, v) == want


_FLOATFIELD = {"": "g", "fixed": "f", "scientific": "e", "hexfloat": "a"}


@settings(max_examples=300)
@given(st.sampled_from([np.float16, np.float32, np.float64]),
       st.floats(allow_nan=False, width=64), st.sampled_from(list(_FLOATFIELD)),
       st.integers(0, 17), st.booleans(), st.integers(0, 30))
def test_floats_print_as_printf(dt: type, f: float, field: str, precision: int, showpos: bool,
                                width: int) -> None:
    with np.errstate(over="ignore"):
        v = dt(f)
    fmt = Format(floatfield=field, precision=precision, showpos=showpos, width=width)
    conv = _FLOATFIELD[field]
    prec = "" if conv == "a" else f".{precision}"  # std::hexfloat ignores the precision
    want = _printf(f"%{'+' if showpos else ''}{width}{prec}{conv}", ctypes.c_double(float(v)))
    assert format_number(fmt, v) == want


def test_special_values_and_bools() -> None:
    f = Format()
    assert format_number(f, np.float32(np.nan)) == "nan"
    assert format_number(f, np.float64(-np.inf)) == "-inf"
    assert format_number(f, np.float64(-0.0)) == "-0"
    assert format_number(f, np.bool_(True)) == "true"  # as DPC++ prints bool
    assert format_number(Format(width=6), np.bool_(False)) == " false"
    assert format_array([1, 2, 3]) == "{1, 2, 3}"


def test_flushes_keep_work_items_apart_and_honour_the_limits() -> None:
    written: list[str] = []
    out = StreamOutput(total=12, per_item=6, write=written.append)
    for wid in (0, 1):
        out.statement(wid)
    out.text(0, "ab")
    out.text(1, "xy")
    fmt = out.statement(0)
    out.text(0, "cd")
    out.manipulator(0, fmt, sycl.endl)  # work-item 0's line, whole
    assert written == ["abcd\n"]
    out.text(1, "z123456789")  # cut at 6 bytes between flushes
    out.manipulator(1, out.statement(1), sycl.endl)  # the newline survives the cut
    assert written == ["abcd\n", "xyz123\n"]
    out.text(0, "more")  # 5 + 7 bytes written: 4 more do not fit the total of 12
    out.finish()
    assert written == ["abcd\n", "xyz123\n"]
    notes = out.notes("kernel k")
    assert "6 byte(s) beyond the work-item buffer size (6 bytes" in notes
    assert "1 flush(es), 4 byte(s), were dropped: the total buffer size (12 bytes)" in notes


def test_a_cut_never_splits_a_character() -> None:
    written: list[str] = []
    out = StreamOutput(total=100, per_item=3, write=written.append)
    out.statement(0)
    out.text(0, "aé€")  # 1 + 2 + 3 bytes: "aé" fits in 3
    out.end(0)
    assert written == ["aé"] and out.cut == 3


@pytest.mark.parametrize("m", list(sycl.stream_manipulator))
def test_manipulators_are_the_specs(m: sycl.stream_manipulator) -> None:
    assert getattr(sycl, m.name) is m
    assert repr(m) == f"sycl.{m.name}"
    assert not math.isnan(m.value)

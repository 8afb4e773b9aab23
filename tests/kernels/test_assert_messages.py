"""``assert`` messages a kernel cannot have: compile errors naming the assert's line and what
a message may hold (a string literal or an f-string of numbers)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import pysycl as sycl
from pysycl._core.abi import ASSERT_MAX_VALUES

HERE = __file__
W = sycl.access_mode.write


def _line(fn: object, text: str) -> int:
    """The line of ``fn``'s source holding ``text``."""
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, ln in enumerate(lines) if text in ln)


def _compile_error(kq: sycl.queue, k: object) -> str:
    buf = sycl.buffer(np.zeros(4, np.int32))
    with pytest.raises(sycl.exception) as ei:
        kq.submit(lambda h: h.parallel_for(sycl.range(4), k(buf.get_access(h, W))))  # type: ignore[operator]
    assert ei.value.code() == sycl.errc.kernel
    return str(ei.value)


def test_a_message_that_is_no_literal_is_a_compile_error(kq: sycl.queue) -> None:
    def make(o: object) -> object:
        def k(i: sycl.item) -> None:
            m = "x" if i[0] else "y"
            assert i[0] < 2, m
            o[i] = 1  # type: ignore[index]

        return k

    text = _compile_error(kq, make)
    assert f"{HERE}:{_line(make, 'assert i[0] < 2, m')}" in text
    assert "string literal or an f-string of numbers" in text


def test_a_format_spec_is_a_compile_error(kq: sycl.queue) -> None:
    def make(o: object) -> object:
        def k(i: sycl.item) -> None:
            x = i[0] * 0.5
            assert x < 1, f"x = {x:.3f}"
            o[i] = 1  # type: ignore[index]

        return k

    text = _compile_error(kq, make)
    assert f"{HERE}:{_line(make, 'x = {x:.3f}')}" in text and "format spec" in text


def test_a_message_of_a_tuple_is_a_compile_error(kq: sycl.queue) -> None:
    def make(o: object) -> object:
        def k(i: sycl.item) -> None:
            t = (i[0], 2)
            assert i[0] < 1, f"t = {t}"
            o[i] = 1  # type: ignore[index]

        return k

    text = _compile_error(kq, make)
    assert f"{HERE}:{_line(make, 't = {t}')}" in text and "shows numbers" in text


def test_too_many_numbers_is_a_compile_error(kq: sycl.queue) -> None:
    def make(o: object) -> object:
        def k(i: sycl.item) -> None:
            a = i[0]
            assert a < 1, f"{a}{a}{a}{a}{a}{a}{a}{a}{a}{a}{a}{a}{a}{a}{a}"
            o[i] = 1  # type: ignore[index]

        return k

    assert f"at most {ASSERT_MAX_VALUES}" in _compile_error(kq, make)


def test_other_exceptions_stay_compile_errors(kq: sycl.queue) -> None:
    def make(o: object) -> object:
        def k(i: sycl.item) -> None:
            if i[0] > 2:
                raise ValueError("no")
            o[i] = 1  # type: ignore[index]

        return k

    assert "exceptions other than AssertionError" in _compile_error(kq, make)

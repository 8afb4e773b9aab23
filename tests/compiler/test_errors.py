"""Kernel compile errors: errc, kernel name, file:line, what to do instead."""

from __future__ import annotations

import numpy as np
import pytest

import pysycl
from pysycl._core.abi import Capture, IndexSpace, ScalarType

from .conftest import R, W, compile_for

A = np.zeros(4)


def _line_of(fn, offset):
    return f"{fn.__code__.co_filename}:{fn.__code__.co_firstlineno + offset}"


def _expect_error(fn, offset, *fragments, ndim=1, code=pysycl.errc.kernel):
    with pytest.raises(pysycl.kernel_compile_error) as info:
        compile_for(fn, ndim)
    err = info.value
    msg = str(err)
    assert err.code() == code, msg
    assert isinstance(err, TypeError)
    assert fn.__qualname__ in msg, msg
    assert _line_of(fn, offset) in msg, msg
    for f in fragments:
        assert f in msg, msg
    assert err.__cause__ is not None
    return msg


def test_write_through_read_accessor():
    ra = R(np.zeros(4))

    def kern(i):
        x = 1.0
        ra[i] = x

    _expect_error(kern, 2, "read-only accessor", "access_mode.write")


def test_setitem_method_on_read_accessor():
    ra = R(np.zeros(4))
    kern = lambda i: ra.__setitem__(i, 1.0)  # noqa: E731
    _expect_error(kern, 0, "read-only accessor")


def test_raise_is_an_error_and_assert_compiles():
    wo = W(np.zeros(4))

    def kern(i):
        if i > 2:
            raise ValueError("no")
        wo[i] = 1

    _expect_error(kern, 2, "exceptions other than AssertionError cannot be raised")

    # exec: an assert without pytest's rewriting (tests/kernels/test_assert.py has more)
    ns = {"wo": wo}
    exec("def kern2(i):\n    assert i < 10\n    wo[i] = 1\n", ns)
    ck = compile_for(ns["kern2"], 1)
    assert len(ck.asserts) == 1 and ck.asserts[0][1] is None  # no message: the source shows


def test_list_and_dict():
    wo = W(np.zeros(4))

    def kern(i):
        xs = [1, 2]
        wo[i] = xs[0]

    _expect_error(kern, 1, "lists cannot be created", "tuple")

    def kern2(i):
        d = {1: 2}
        wo[i] = d[1]

    _expect_error(kern2, 1, "dicts")


def test_numpy_array_used_directly():
    wo = W(np.zeros(4))

    def kern(i):
        wo[i] = A[i]

    _expect_error(kern, 1, "sycl.buffer")


def helper_recursive(n):
    if n <= 0:
        return 0
    return n + helper_recursive(n - 1)


def test_recursion():
    wo = W(np.zeros(4, np.int64))

    def kern(i):
        wo[i] = helper_recursive(3)

    # The error points at the recursive call inside the helper.
    with pytest.raises(pysycl.kernel_compile_error) as info:
        compile_for(kern, 1)
    msg = str(info.value)
    assert "recursion" in msg and kern.__qualname__ in msg
    assert _line_of(helper_recursive, 3) in msg


def test_non_compilable_call():
    import time

    wo = W(np.zeros(4))

    def kern(i):
        wo[i] = time.time()

    _expect_error(kern, 1)


def test_generator_and_print():
    wo = W(np.zeros(4))

    def kern(i):
        print(i)
        wo[i] = 1

    _expect_error(kern, 1, "print")


def test_exec_kernel_without_file():
    ns = {"wo": W(np.zeros(4))}
    exec("def kern(i):\n    x = 1\n    raise ValueError(x)\n", ns)
    kern = ns["kern"]
    msg = _expect_error(kern, 2, "exceptions")
    assert "<string>:3" in msg


def test_nd_range_of_four_dimensions():
    from pysycl_numba import compile_kernel

    with pytest.raises(pysycl.exception) as info:
        compile_kernel(lambda it: None, IndexSpace("nd_range", 4), (), entry_name="k")
    assert info.value.code() == pysycl.errc.nd_range


def test_group_barrier_in_range_kernel():
    wo = W(np.zeros(4))

    def kern(i):
        wo[i] = 1
        pysycl.group_barrier(i.get_group())

    with pytest.raises(pysycl.kernel_compile_error) as info:
        compile_for(kern, 1)
    msg = str(info.value)
    assert info.value.code() == pysycl.errc.kernel and isinstance(info.value, TypeError)
    assert "nd_range" in msg and "range kernel" in msg
    assert _line_of(kern, 2) in msg, msg


def test_wrong_arity():
    from pysycl_numba import compile_kernel

    with pytest.raises(pysycl.kernel_compile_error) as info:
        compile_kernel(lambda: None, IndexSpace("range", 1), (), entry_name="k")
    assert "takes one parameter" in str(info.value)


def test_scalar_type_mismatch_message_names_line():
    from pysycl_numba import compile_kernel

    wo = W(np.zeros(4))

    def kern(i):
        wo[i] = s.nonexistent

    s = 1.0
    caps = (
        Capture("s", "freevar", ScalarType(np.dtype(np.float64))),
    )
    with pytest.raises(pysycl.kernel_compile_error) as info:
        compile_kernel(kern, IndexSpace("range", 1), caps, entry_name="k")
    assert _line_of(kern, 1) in str(info.value)

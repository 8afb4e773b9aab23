"""Numba's wording never reaches users (issue 25): a float index, an operator on types that
do not combine, a variable of two types, any call without an implementation for its
arguments -- each a pysycl sentence naming the user's line and the argument types as
Python names them, checked word for word."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pysycl as sycl

from .conftest import RW, Ptr, W
from .test_error_messages import _check, _error

#: What Numba says and a user must never read in a compile error's message.
NUMBA_WORDS = ("No implementation of function", "Invalid use of", "BoundFunction", "Literal[",
               "Tuple(", "Cannot unify", "WeakLiteral", "sycl.accessor<", "numpy.add")

F32 = np.float32


def _said(fn, ndim: int = 1, offset: int = 1) -> str:
    """The sentence the compile error of ``fn`` says after its file:line (``offset`` lines
    below the def), with the file:line and Numba-free checks of ``_check``."""
    msg = _check(_error(fn, ndim), fn, offset)
    head = msg.split("\n")[0]
    for w in NUMBA_WORDS:
        assert w not in head, head
    code = fn.__code__
    return head.partition(f"{code.co_filename}:{code.co_firstlineno + offset}: ")[2]


INTEGER_DIVISION = "(integer division; / gives a float in Python)"
CONVERT = ("compute it with integers (// instead of /) or convert it: int(x) (a float index "
           "would be truncated silently in C++; Python refuses it)")


def test_a_float_index_says_use_integer_division() -> None:
    a = RW(np.zeros(8, F32))
    b = W(np.zeros((4, 4), F32))
    p = Ptr(np.zeros(8, F32))

    def store(i):
        a[i / 2] = 1.0

    def load(i):
        a[i] = a[i / 2]

    def ptr(i):
        p[i / 2] = 1.0

    def two_d(i):
        b[i[0] / 2, i[1]] = 1.0

    def computed(i):
        j = i * 0.5
        a[j] = 1.0

    method = lambda i: a.__setitem__(i / 2, 1.0)  # noqa: E731 - Numba's BoundFunction path

    want = f"an index must be an integer, not a float64 -- use i // 2 {INTEGER_DIVISION}"
    assert _said(store) == want
    assert _said(load) == want
    assert _said(ptr) == want
    assert _said(method, offset=0) == want
    assert _said(two_d, ndim=2) == ("an index must be an integer, not a float64 -- use "
                                    f"i[0] // 2 {INTEGER_DIVISION}")
    assert _said(computed, offset=2) == f"an index must be an integer, not a float64 -- {CONVERT}"


def test_a_float_index_of_a_tuple_or_an_item_and_other_indices_are_named() -> None:
    a = W(np.zeros(8, F32))
    t = (1.0, 2.0, 3.0)

    def tup(i):
        a[i] = t[i[0] / 2]

    def item(i):
        a[i] = i[1.5]

    def by_accessor(i):
        a[i] = t[a]

    want = f"an index must be an integer, not a float64 -- use i[0] // 2 {INTEGER_DIVISION}"
    assert _said(tup) == want
    assert _said(item) == f"an index must be an integer, not a float64 -- {CONVERT}"
    assert _said(by_accessor) == (
        "indexing a tuple with a sycl.accessor is not supported in kernels -- kernels index "
        "accessors, local accessors, USM pointers, private arrays and tuples with integers (a "
        "constant index for a tuple of mixed types)")


INDEX_OPS = ("ids, ranges and items combine with one another when they have the same "
             "dimensions, and with an integer, elementwise (docs/kernels.md); use a component "
             "(it[0]) or give both the same dimensions")
TUPLE_OPS = ("a tuple has no arithmetic or order in kernels: compute on its elements (t[0] + x, "
             "t[0] < x), or make it a sycl.id or sycl.range")
POINTER_OPS = ("an accessor or USM pointer is no number: index it (a[i]) and compute on the "
               "elements")
NO_IMPL = ("there is no device implementation for these arguments; kernels can call the math "
           "module, numpy's math functions on numbers, abs/min/max/int/float/round, SYCL "
           "functions and plain Python functions (docs/kernels.md)")


def test_an_operator_on_types_that_do_not_combine_is_named_as_written() -> None:
    a = W(np.zeros(8, F32))
    b = W(np.zeros((4, 4), F32))

    def ids(i):
        b[i + sycl.id(1)] = 1.0

    def tup(i):
        a[i] = (1, 2) + 1.0

    def order(i):
        if (1, 2) < 3:
            a[i] = 1.0

    def acc(i):
        a[i] = a * 2

    def neg(i):
        a[i] = -a

    assert _said(ids, ndim=2) == (f"the operator + on a sycl.item<2> and a sycl.id<1> is not "
                                  f"supported in kernels -- {INDEX_OPS}")
    assert _said(tup) == ("the operator + on a tuple and a float is not supported in kernels -- "
                          + TUPLE_OPS)
    assert _said(order) == ("the operator < on a tuple and an int is not supported in "
                            f"kernels -- {TUPLE_OPS}")
    assert _said(acc) == (f"the operator * on a sycl.accessor and an int is not supported in "
                          f"kernels -- {POINTER_OPS}")
    assert _said(neg) == ("the operator - on a sycl.accessor is not supported in kernels -- "
                          + POINTER_OPS)


def test_a_call_without_an_implementation_names_the_argument_types() -> None:
    a = W(np.zeros(8, F32))

    def sqrt(i):
        a[i] = math.sqrt(i, 2)

    def smaller(i):
        a[i] = min(a, 1)

    assert _said(sqrt) == ("math.sqrt() with the arguments (sycl.item<1>, int) is not "
                           f"supported in kernels -- {NO_IMPL}")
    assert _said(smaller) == ("min() with the arguments (sycl.accessor, int) is not supported "
                              f"in kernels -- {NO_IMPL}")


def test_a_variable_of_two_types_is_named() -> None:
    a = W(np.zeros(8, F32))

    def two(i):
        v = 1
        if i[0] > 2:
            v = (1, 2)
        a[i] = v[0]

    said = _said(two, offset=4)
    assert said == ("the variable v holding an int in one place and a tuple in another is not "
                    "supported in kernels -- a variable of a kernel has one type: use two "
                    "variables, or convert both values to one type (float(x), np.float32(x))")


@pytest.mark.parametrize(("numba", "user"), [
    ("Literal[int](2)", "int"), ("WeakLiteral[float](1.0)", "float"), ("float32", "float32"),
    ("UniTuple(int64 x 2)", "tuple"), ("Tuple(float64, int64)", "tuple"), ("none", "None"),
    ("sycl.item<2, True>", "sycl.item<2>"), ("sycl.id<3>", "sycl.id<3>"),
    ("sycl.accessor<float32, 1, read_write, global>", "sycl.accessor"),
    ("sycl.usm_pointer<uint16, readonly>", "sycl.usm_pointer"), ("unicode_type", "str"),
])
def test_numba_type_names_become_python_names(numba: str, user: str) -> None:
    from pysycl_numba.explain_types import user_type

    assert user_type(numba) == user

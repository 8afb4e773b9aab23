"""Python a kernel cannot run is named at the user's line with what to write instead.

The constructs a Python or Numba user reaches for first (an assignment expression, a
class or import statement in the kernel, ``del``) -- never Numba's own text
(``Use of unsupported opcode``, ``Illegal IR``), never a raw compiler exception.
"""

from __future__ import annotations

import math

import numpy as np

from .conftest import Ptr, W
from .test_error_messages import _check, _error


def test_walrus_operator_names_the_line_and_says_assign_first():
    wo = W(np.zeros(4))

    def kern(i):
        if (n := i * 2) > 1:
            wo[i] = n

    _check(_error(kern), kern, 1, "walrus operator (:=)", "statement of its own")


def test_class_statement_in_a_kernel_says_define_it_on_the_host():
    wo = W(np.zeros(4))

    def kern(i):
        class Point:
            pass
        wo[i] = 1.0

    msg = _check(_error(kern), kern, 1, "a class statement", "define classes on the host")
    assert "opcode" not in msg


def test_import_in_a_kernel_says_import_at_the_top_of_the_file():
    wo = W(np.zeros(4))

    def kern(i):
        import math
        wo[i] = math.sqrt(4.0)

    msg = _check(_error(kern), kern, 1, "an import statement", "top of the file")
    assert "opcode" not in msg


def test_del_in_a_kernel_is_named():
    wo = W(np.zeros(4))

    def kern(i):
        x = 2.0
        del x
        wo[i] = 1.0

    msg = _check(_error(kern), kern, 2, "a del statement")
    assert "Illegal IR" not in msg


def test_walrus_in_a_lambda_is_a_compile_error_not_a_compiler_crash():
    """A lambda has no statements to read; the weak-literal pass once let Numba's
    ``GuardException`` escape from the compiler on the assignment expression."""
    wo = W(np.zeros(4))
    kern = lambda i: wo.__setitem__(i, (n := i * 2) + n)  # noqa: E731
    err = _error(kern)
    assert f"{kern.__code__.co_filename}:{kern.__code__.co_firstlineno}" in str(err)


def test_numpy_linalg_is_a_compile_error_not_an_import_error():
    """Numba's typing of np.linalg imports scipy: in some sequences of compiles its
    ImportError ('scipy 0.16+ is required') escaped the compiler raw. The driver catches
    it; the message names numpy.linalg (errc.kernel)."""
    import pysycl
    from pysycl_numba.errors import from_numba_error

    err = from_numba_error("k", "f.py:1", ImportError("scipy 0.16+ is required for linear "
                                                      "algebra"))
    assert err.code() == pysycl.errc.kernel and "numpy.linalg is not supported" in str(err)
    wo, ra = W(np.zeros(4)), Ptr(np.zeros(4))

    def kern(i):
        wo[i] = np.linalg.norm(ra)

    _check(_error(kern), kern, 1, "numpy.linalg", "is not supported", "sycl.buffer")


def test_numpy_submodules_are_named_at_the_line_in_any_order():
    """np.linalg/np.random/np.fft are found before typing (whose np.linalg error depended
    on what had been compiled before), so the message is the same in every process."""
    wo = W(np.zeros(4))

    def k_random(i):
        wo[i] = np.random.random()  # noqa: NPY002 - the legacy call a user would write

    def k_fft(i):
        wo[i] = np.fft.fft(0.0)

    def k_linalg(i):
        wo[i] = np.linalg.norm(1.0)

    for k, name in ((k_random, "numpy.random.random"), (k_fft, "numpy.fft.fft"),
                    (k_linalg, "numpy.linalg.norm")):
        _check(_error(k), k, 1, f"{name} is not supported", "sycl.buffer")


def test_a_library_call_that_raises_is_named_at_the_users_line():
    """tuple.index and hash() are implemented in Numba with a raise statement (ValueError,
    TypeError), which a device cannot run: the message named that line of Numba's file."""
    wo = W(np.zeros(4))
    tup = (1, 2, 3)

    def k_index(i):
        wo[i] = tup.index(2)

    def k_hash(i):
        x = i * 2
        wo[i] = hash(x)

    msg = _check(_error(k_index), k_index, 1, "tuple.index() is not supported", "for j in range")
    assert "tupleobj" not in msg and "other than AssertionError" not in msg
    _check(_error(k_hash), k_hash, 2, "hash() is not supported", "2654435761")


def test_a_library_raise_in_a_helper_names_the_helpers_line():
    wo = W(np.zeros(4))
    tup = (4.0, 5.0)

    def find(x):
        return tup.index(x)

    def kern(i):
        wo[i] = find(5.0)

    err = _error(kern)
    code = find.__code__
    assert f"{code.co_filename}:{code.co_firstlineno + 1}" in str(err)
    assert "tuple.index() is not supported" in str(err)


def test_raise_in_the_users_code_is_still_named_as_a_raise():
    wo = W(np.zeros(4))

    def kern(i):
        if i > 10:
            raise ValueError("no")
        wo[i] = 1.0

    _check(_error(kern), kern, 2, "exceptions other than AssertionError cannot be raised in a "
           "kernel")


class _Pt:
    K = 3

    def __init__(self, x: float) -> None:
        self.x = x


def test_a_class_in_a_kernel_says_read_its_attribute_before_the_kernel():
    wo = W(np.zeros(4))

    def k_new(i):
        wo[i] = _Pt(1.0).x

    def k_attr(i):
        wo[i] = _Pt.K

    for k in (k_new, k_attr):
        msg = _check(_error(k), k, 1, "the class _Pt cannot be used in kernels", "k = _Pt.K")
        assert "Untyped global" not in msg and "<class 'type'>" not in msg


def test_an_untyped_builtin_is_named_with_what_to_write():
    wo = W(np.zeros(4))

    def k_any(i):
        wo[i] = any((i[0] > 1, i[0] < 0))

    def k_id(i):
        wo[i] = id(i)

    def k_input(i):
        wo[i] = float(input())

    for k, fragments in ((k_any, ("the builtin any()", "a or b or c")),
                         (k_id, ("the builtin id()",)), (k_input, ("the builtin input()", "host"))):
        msg = _check(_error(k), k, 1, *fragments)
        assert "Untyped global" not in msg and "builtin_function_or_method" not in msg


def test_float_of_a_string_suggests_math_inf():
    wo = W(np.zeros(4))

    def k_inf(i):
        wo[i] = float("inf")

    def k_minus(i):
        x = 1.0
        wo[i] = max(x, float("-inf"))

    def k_int(i):
        wo[i] = int("3")

    _check(_error(k_inf), k_inf, 1, "float('inf') is not supported", "math.inf", "np.inf")
    _check(_error(k_minus), k_minus, 2, "float('-inf')", "-math.inf")
    _check(_error(k_int), k_int, 1, "int('3') is not supported", "the number itself")


def test_a_tables_size_and_shape_say_capture_it_separately():
    wo = W(np.zeros(4))
    table = Ptr(np.arange(5.0), readonly=True)

    def k_size(i):
        wo[i] = table.size

    def k_shape(i):
        n = table.shape[0]
        wo[i] = n

    msg = _check(_error(k_size), k_size, 1, "table.size of a captured numpy array",
                 "n = table.size before the kernel")
    assert "sycl.usm_pointer.size" not in msg
    _check(_error(k_shape), k_shape, 1, "table.shape of a captured numpy array", "n = table.shape")


def test_pow_with_a_modulus_and_math_functions_are_named_as_written():
    wo = W(np.zeros(4))

    def k_pow(i):
        wo[i] = pow(i[0], 2, 3)

    def k_sqrt(i):
        wo[i] = math.sqrt(complex(1.0, 2.0)).real

    def k_log(i):
        wo[i] = math.log(1.0, 2.0, 3.0)

    def k_np(i):
        wo[i] = np.int64(i)

    for k, fragment in ((k_pow, "pow() with a modulus"), (k_sqrt, "math.sqrt of complex"),
                        (k_log, "math.log() with the arguments (float64, float64, float64)"),
                        (k_np, "np.int64(sycl.item<1>)")):
        msg = _check(_error(k), k, 1, fragment)
        assert "numpy.pow" not in msg and "numpy.log" not in msg and "numpy.sqrt" not in msg


def test_the_truth_value_of_a_vector_says_compare_components():
    import pysycl as sycl

    wo = W(np.zeros(4))

    def k_cmp(i):
        v = sycl.float4(1.0)
        if v == 1.0:
            wo[i] = 1.0

    def k_vec(i):
        v = sycl.int4(1)
        wo[i] = 1.0 if v else 0.0

    for k, offset in ((k_cmp, 2), (k_vec, 2)):
        msg = _check(_error(k), k, offset, "the truth value of a vector", "elementwise",
                     "(v == 1.0)[k]")
        assert "numpy.bool" not in msg

"""Python a kernel cannot run is named at the user's line with what to write instead.

The constructs a Python or Numba user reaches for first (an assignment expression, a
class or import statement in the kernel, ``del``) -- never Numba's own text
(``Use of unsupported opcode``, ``Illegal IR``), never a raw compiler exception.
"""

from __future__ import annotations

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

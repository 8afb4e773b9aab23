"""Compile errors name the user's construct, the user's file:line and what to write instead.

Never a Numba temporary (``$6load_deref.0``), never a line inside Numba, never
Numba's raw text as the message; Numba's text stays available as
``e.__cause__.text`` (a frameless :class:`CompilerDiagnostic`) and in the debug log.
"""

from __future__ import annotations

import logging
import math
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import pysycl
from pysycl._core.abi import Capture, IndexSpace, ScalarType
from pysycl_numba import compile_kernel
from pysycl_numba.errors import CompilerDiagnostic

from .conftest import R, W, compile_for

NUMBA_DIR = os.path.dirname(__import__("numba").__file__)


def _error(fn, ndim=1) -> pysycl.kernel_compile_error:
    with pytest.raises(pysycl.kernel_compile_error) as info:
        compile_for(fn, ndim)
    return info.value


def _check(err: pysycl.kernel_compile_error, fn, offset: int, *fragments: str) -> str:
    """The message names fn's file:line (+offset), every fragment, and nothing of Numba's."""
    msg = str(err)
    code = fn.__code__
    assert f"{code.co_filename}:{code.co_firstlineno + offset}" in msg, msg
    for f in fragments:
        assert f in msg, msg
    assert "$" not in msg.split("\n")[0], msg  # no compiler temporary
    assert NUMBA_DIR not in msg and "site-packages" not in msg, msg
    assert isinstance(err, TypeError) and err.code() == pysycl.errc.kernel
    assert isinstance(err.__cause__, CompilerDiagnostic)
    assert err.__cause__.__traceback__ is None  # Numba's frames are not shown
    return msg


def test_write_through_read_accessor_names_variable():
    ra = R(np.zeros(4))

    def kern(i):
        ra[i] = 1.0

    msg = _check(_error(kern), kern, 1, "read-only accessor 'ra'", "access_mode.write")
    assert "load_deref" not in msg


def test_write_through_read_accessor_names_variable_in_lambda_and_augmented_assignment():
    ra = R(np.zeros(4))
    kern = lambda i: ra.__setitem__(i, 1.0)  # noqa: E731
    _check(_error(kern), kern, 0, "read-only accessor 'ra'")

    def kern2(i):
        x = 2.0
        ra[i] += x

    _check(_error(kern2), kern2, 2, "read-only accessor 'ra'")


def test_write_through_read_accessor_in_helper_names_parameter():
    ra = R(np.zeros(4))

    def store(acc, i):
        acc[i] = 3.0

    def kern(i):
        store(ra, i)

    msg = str(_error(kern))
    assert "read-only accessor 'acc'" in msg, msg
    assert f"{__file__}:{store.__code__.co_firstlineno + 1}" in msg, msg


def test_fstring_in_kernel_reports_user_line():
    wo = W(np.zeros(4))

    def kern(i):
        s = f"item {i}"
        wo[i] = len(s)

    _check(_error(kern), kern, 1, "f-strings", "inside print()")


def test_str_in_kernel_reports_user_line():
    wo = W(np.zeros(4))

    def kern(i):
        wo[i] = len(str(i))

    _check(_error(kern), kern, 1, "str()", "no strings")


def test_time_time_names_construct_line_and_what_to_write_instead():
    wo = W(np.zeros(4))

    def kern(i):
        wo[i] = time.time()

    _check(_error(kern), kern, 1, "time.time is not supported in kernels",
           "call time.time on the host", "capture the result")


def test_len_of_accessor_says_get_range():
    ra, wo = R(np.zeros(4)), W(np.zeros(4))

    def kern(i):
        wo[i] = len(ra)

    _check(_error(kern), kern, 1, "len() of an accessor", "acc.get_range()[0]", "acc.size()")


def test_iterating_an_accessor_says_loop_over_indices():
    ra, wo = R(np.zeros(4)), W(np.zeros(4))

    def kern(i):
        s = 0.0
        for x in ra:
            s += x
        wo[i] = s

    _check(_error(kern), kern, 2, "iterating over an accessor",
           "for j in range(acc.get_range()[0])")


def test_numpy_array_function_says_arrays_live_in_buffers():
    wo = W(np.zeros(4))

    def kern(i):
        wo[i] = np.zeros(3)[0]

    _check(_error(kern), kern, 1, "numpy.zeros", "np.sqrt", "sycl.buffer")


def test_numpy_power_of_integers_says_use_pow_operator():
    wo = W(np.zeros(4))

    def kern(i):
        wo[i] = np.power(2, 3)

    _check(_error(kern), kern, 1, "numpy.power of integers", "x ** y")


def test_numpy_math_of_complex_is_named():
    ra, wo = R(np.zeros(4, np.complex128)), W(np.zeros(4, np.complex128))

    def kern(i):
        wo[i] = np.sqrt(ra[i])

    _check(_error(kern), kern, 1, "numpy.sqrt of complex numbers", "abs(z)")


def test_math_function_without_device_implementation_is_named():
    wo = W(np.zeros(4))

    def kern(i):
        wo[i] = math.factorial(3)

    msg = str(_error(kern))
    assert f"{__file__}:{kern.__code__.co_firstlineno + 1}" in msg, msg


def test_numbas_full_text_is_kept_and_logged_at_debug(caplog: pytest.LogCaptureFixture):
    ra, wo = R(np.zeros(4)), W(np.zeros(4))

    def kern(i):
        wo[i] = len(ra)

    with caplog.at_level(logging.DEBUG, logger="pysycl_numba.compiler"):
        err = _error(kern)
    assert "No implementation of function" in err.__cause__.text
    # a traceback shows the cause: it says where the compiler's words are, not the words
    assert str(err.__cause__) == ("the compiler's own message is e.__cause__.text of the error "
                                  "below (PYSYCL_LOG=debug logs it)")
    assert "No implementation of function" not in str(err)
    assert any("No implementation of function" in r.getMessage() for r in caplog.records)


def test_failed_compile_kept_in_a_cycle_does_not_crash_the_next_compile():
    # A compile that failed after LLVM modules existed (here: the IR guard),
    # whose error a program keeps in a reference cycle: the cyclic GC used to
    # finalise the LLVM context before its modules and the process died
    # (segfault) in the next compile. In a child process: a regression must not
    # kill the test run.
    script = textwrap.dedent("""
        import gc
        import numpy as np
        import pysycl
        from pysycl._core.abi import AccessorType
        from pysycl._core.abi import Capture
        from pysycl._core.abi import IndexSpace
        from pysycl_numba import compile_kernel

        caps = (Capture("a", "freevar", AccessorType(np.dtype(np.complex128), 1,
                                                     "read_write")),)

        def make(bad):
            a = None
            if bad:  # complex ** complex calls a host runtime function: the IR guard says no
                return lambda i: a.__setitem__(i, a[i] ** a[i])
            return lambda i: a.__setitem__(i, a[i] * 2)

        for _ in range(3):
            try:
                compile_kernel(make(True), IndexSpace("range", 1), caps, entry_name="bad")
            except pysycl.kernel_compile_error as e:
                assert e.code() == pysycl.errc.build, e
                keep = [e, e.__cause__]
                keep.append(keep)
            del keep
            gc.collect()
            compile_kernel(make(False), IndexSpace("range", 1), caps, entry_name="good")
        print("ok")
    """)
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.strip() == "ok"


def test_storing_complex_in_real_accessor_says_what_to_store():
    wo = W(np.zeros(4))
    c = 1 + 2j

    def kern(i):
        wo[i] = c

    _check(_error(kern), kern, 1, "storing a complex128 in a float64 accessor", "z.real")


def test_wrong_accessor_index_is_named():
    wo = W(np.zeros(4))

    def kern(i):
        wo[i, 0] = 1.0

    _check(_error(kern), kern, 1, "indexing a 1-D accessor", "sycl.item")


def test_helper_reading_globals_passed_as_a_value_is_named():
    from pysycl._kernels.captures import call_graph

    wo = W(np.zeros(4))

    def apply(f, x):
        return f(x)

    def scaled(x):
        return x * wo_scale

    def kern(i):
        wo[i] = apply(scaled, i)

    wo_scale = 2.0
    caps = (*_caps_of(kern), Capture("wo_scale", "freevar", ScalarType(np.dtype(np.float64)), 2))
    with pytest.raises(pysycl.kernel_compile_error) as info:
        compile_kernel(kern, IndexSpace("range", 1), caps, entry_name="k",
                       helpers=call_graph(kern))
    _check(info.value, kern, 1, "function", "scaled", "only call it directly")


def _caps_of(fn):
    from .conftest import make_captures

    return make_captures(fn)[0]


def test_helper_with_keyword_only_parameters_is_named():
    wo = W(np.zeros(4))

    def helper(x, *, scale=2.0):
        return x * scale

    def kern(i):
        wo[i] = helper(i, scale=3.0)

    _check(_error(kern), kern, 1, "keyword-only parameters", "ordinary parameters")


_COUNTER = 0


def test_global_write_is_a_kernel_error_naming_the_line():
    # Numba's UnsupportedBytecodeError is no NumbaError: it used to escape as itself.
    w = W(np.zeros(4))

    def kern(i):
        global _COUNTER
        _COUNTER = 1
        w[i] = 1.0

    _check(_error(kern), kern, 2, "assigning a global or enclosing variable",
           "read-only kernel arguments", "write results to an accessor")


def test_list_comprehension_says_use_a_loop():
    w = W(np.zeros(4))

    def kern(i):
        w[i] = sum([j for j in range(3)])

    _check(_error(kern), kern, 1, "a list comprehension is not supported", "for loop")


def test_numba_colour_codes_never_reach_the_message() -> None:
    """Numba highlights its messages where termcolor is installed (the GPU machine):
    the user's error is plain text either way."""
    from pysycl_numba import errors as perr
    from pysycl_numba._numba_compat import errors as nb_errors

    exc = nb_errors.TypingError("\x1b[1m\x1b[1mUnknown attribute 'append' of type list\x1b[0m")
    err = perr.from_numba_error("k", "f.py:1", exc)
    assert "\x1b" not in str(err)
    assert "a list comprehension" in str(err)


# ------------------------------------------------ try/except/finally and with
TRY_ADVICE = ("check conditions with if-statements", "write an error flag to an accessor")


def test_try_except_names_the_construct_its_line_and_the_alternative():
    w = W(np.zeros(4))

    def kern(i):
        x = 1.0
        try:
            x = 1.0 / i
        except ZeroDivisionError:
            x = 0.0
        w[i] = x

    msg = _check(_error(kern), kern, 2, "try/except is not supported in kernels",
                 "a device has no exceptions", *TRY_ADVICE)
    assert "cannot be raised" not in msg  # not the message of a raise statement


@pytest.mark.parametrize("variant", ["finally", "else", "as"])
def test_every_form_of_try_is_named_as_written(variant: str):
    w = W(np.zeros(4))

    def kern_finally(i):
        try:
            w[i] = 1.0
        finally:
            w[i] = 2.0

    def kern_else(i):
        try:
            w[i] = 1.0
        except (ValueError, TypeError):
            pass
        else:
            w[i] = 3.0
        finally:
            w[i] += 1.0

    def kern_as(i):
        if i > 0:
            try:
                w[i] = 1.0
            except Exception as e:  # noqa: F841 - what the user wrote
                return

    kern, offset, what = {"finally": (kern_finally, 1, "try/finally"),
                          "else": (kern_else, 1, "try/except/else/finally"),
                          "as": (kern_as, 2, "try/except")}[variant]
    msg = _check(_error(kern), kern, offset, f"{what} is not supported in kernels", *TRY_ADVICE)
    if what.endswith("finally"):
        assert "the code of a finally block can simply follow" in msg


def test_with_statement_names_the_construct_and_says_no_context_managers():
    import contextlib
    import threading

    w = W(np.zeros(4))
    lock = threading.Lock()

    def kern(i):
        with contextlib.nullcontext():     # a host module's context manager
            w[i] = 1.0

    def kern2(i):
        x = 2.0
        with lock:                         # a captured object
            w[i] = x

    for k, offset in ((kern, 1), (kern2, 2)):
        _check(_error(k), k, offset, "with statements are not supported in kernels",
               "a kernel has no context managers", "around q.submit")


def test_the_first_statement_in_source_order_is_reported():
    w = W(np.zeros(4))

    def kern(i):
        with open("x"):
            try:
                w[i] = 1.0
            except OSError:
                pass

    _check(_error(kern), kern, 1, "with statements")


def test_try_in_a_helper_names_the_helpers_line():
    from pysycl._kernels.captures import call_graph

    wo = W(np.zeros(4))

    def safe_div(a, b):
        try:
            return a / b
        except ZeroDivisionError:
            return 0.0

    def kern(i):
        wo[i] = safe_div(1.0, i)

    with pytest.raises(pysycl.kernel_compile_error) as info:
        compile_kernel(kern, IndexSpace("range", 1), _caps_of(kern), entry_name="k",
                       helpers=call_graph(kern))
    _check(info.value, safe_div, 1, "try/except is not supported in kernels", *TRY_ADVICE)


def test_without_source_the_bytecode_names_try_and_with():
    # exec'd code has no source file: the bytecode is looked at (any Python version).
    ns = {"w": W(np.zeros(4))}
    exec("def kern(i):\n    x = 1.0\n    try:\n        x = 2.0\n    finally:\n"
         "        w[i] = x\n", ns)
    msg = _check(_error(ns["kern"]), ns["kern"], 3, "try/except/finally is not supported",
                 *TRY_ADVICE)
    assert "): <string>:4: try/except/finally" in msg  # the first line the try guards
    exec("def kern2(i):\n    with w:\n        w[i] = 1.0\n", ns)
    msg = _check(_error(ns["kern2"]), ns["kern2"], 1, "with statements are not supported")
    assert "): <string>:2: with statements" in msg


def test_statement_error_reads_source_and_bytecode_alike():
    import linecache

    from pysycl_numba.reject import statement_error

    def plain(i):
        return i + 1

    assert statement_error(plain) is None
    assert statement_error(lambda i: i) is None
    src = ("def f(i):\n"
           "    y = [j for j in range(i)]\n"          # 3.12 inlines it: an exception-table entry
           "    try:\n"
           "        y = 1\n"
           "    except* ValueError:\n"
           "        y = 0\n"
           "    return y\n")
    notebook_cell = "<pysycl-test-cell-1>"  # how IPython gives cells a source: linecache
    linecache.cache[notebook_cell] = (len(src), None, src.splitlines(True), notebook_cell)
    stale = "<pysycl-test-stale>"  # a file whose text is not the code's any more
    linecache.cache[stale] = (1, None, ["def f(i):\n", "    return 0\n"], stale)
    try:
        for where, what in (("<no file>", "try/except/finally"), (notebook_cell, "try/except*"),
                            (stale, "try/except/finally")):
            ns: dict = {}
            exec(compile(src, where, "exec"), ns)
            err = statement_error(ns["f"])
            assert err is not None and err.loc.filename == where, where
            assert err.message.startswith(f"{what} is not supported"), (where, err.message)
            # the source names the try line; the bytecode the first line it guards
            assert err.loc.line == (4 if what.endswith("finally") else 3), (where, err.loc)
            assert TRY_ADVICE[0] in err.message
        ns = {}
        exec(compile("def g(i):\n    return [j for j in range(i)]\n", "<no file>", "exec"), ns)
        assert statement_error(ns["g"]) is None
    finally:
        del linecache.cache[notebook_cell], linecache.cache[stale]

"""What helper functions read: kernel arguments like the kernel's own captures.

A helper's module globals and closure cells that hold numbers, tuples of numbers
or accessors are passed down from the kernel's arguments (hidden parameters), so a
changed value is seen by the cached kernel without a recompile, however deep the
helper sits. Functions, modules and classes are compile-time constants; attributes
read off a user's module are constants whose value is part of the key.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest

import pysycl as sycl
from tests.conftest import fill

SCALE = 2.0
OFFSET = np.float32(0.5)
COEFFS = (1.0, 2.0, 3.0)
TABLE = np.arange(4.0)
TABLE_2D = np.arange(4.0).reshape(2, 2)


def scaled(x):
    return x * SCALE


def scaled_twice(x):  # a helper of a helper
    return scaled(x) + scaled(x)


def with_offset(x):
    return x + OFFSET


def poly(x):
    return COEFFS[0] + COEFFS[1] * x + COEFFS[2] * x * x


def from_table(i):
    return TABLE[i]


def from_table_2d(i):
    return TABLE_2D[i // 2, i % 2]


def _one_compile() -> None:
    s = sycl.ext.kernel_cache_stats()
    assert s["compiles"] + s["disk_hits"] == 1, s
    assert s["memory_hits"] >= 1, s


def test_helper_global_change_is_seen_by_cached_kernel(any_kernel_queue: sycl.queue,
                                                       fresh_stats: None) -> None:
    global SCALE
    try:
        for value in (2.0, 3.0, -1.5):
            SCALE = value
            out = fill(any_kernel_queue, lambda o: lambda i: o.__setitem__(i, scaled(i)))
            np.testing.assert_array_equal(out, value * np.arange(4))
    finally:
        SCALE = 2.0
    if any_kernel_queue.get_device().image_targets:
        _one_compile()


def test_helper_of_helper_global_change_is_seen_by_cached_kernel(kq: sycl.queue,
                                                                 fresh_stats: None) -> None:
    global SCALE
    try:
        for value in (2.0, 5.0):
            SCALE = value
            out = fill(kq, lambda o: lambda i: o.__setitem__(i, scaled_twice(i)))
            np.testing.assert_array_equal(out, 2 * value * np.arange(4))
    finally:
        SCALE = 2.0
    _one_compile()


def test_helper_numpy_scalar_and_tuple_globals_are_arguments(kq: sycl.queue,
                                                             fresh_stats: None) -> None:
    global OFFSET, COEFFS
    x = np.arange(4.0)
    try:
        for off, coeffs in ((np.float32(0.5), (1.0, 2.0, 3.0)),
                            (np.float32(-2.0), (0.0, -1.0, 0.5))):
            OFFSET, COEFFS = off, coeffs
            out = fill(kq, lambda o: lambda i: o.__setitem__(i, poly(i) + with_offset(0.0)))
            expect = coeffs[0] + coeffs[1] * x + coeffs[2] * x * x + np.float64(off)
            np.testing.assert_array_equal(out, expect)
    finally:
        OFFSET, COEFFS = np.float32(0.5), (1.0, 2.0, 3.0)
    _one_compile()


def test_helper_global_of_another_type_compiles_again(kq: sycl.queue, fresh_stats: None) -> None:
    global SCALE
    try:
        SCALE = 3  # an int: another capture type, another kernel
        out = fill(kq, lambda o: lambda i: o.__setitem__(i, scaled(i)), dtype=np.int64)
        np.testing.assert_array_equal(out, 3 * np.arange(4))
        SCALE = 2.5
        out = fill(kq, lambda o: lambda i: o.__setitem__(i, scaled(i)), dtype=np.int64)
        np.testing.assert_array_equal(out, (2.5 * np.arange(4)).astype(np.int64))
    finally:
        SCALE = 2.0
    s = sycl.ext.kernel_cache_stats()
    assert s["compiles"] + s["disk_hits"] == 2, s


def test_helper_global_numpy_array_is_rejected_at_the_helpers_line(kq: sycl.queue) -> None:
    """A 2-D array is no kernel argument anywhere; the error names the helper's line."""
    with pytest.raises(sycl.exception) as info:
        fill(kq, lambda o: lambda i: o.__setitem__(i, from_table_2d(i)))
    msg = str(info.value)
    assert info.value.code() in (sycl.errc.kernel, sycl.errc.invalid)
    assert f"{__file__}:{from_table_2d.__code__.co_firstlineno + 1}" in msg, msg
    assert "from_table_2d" in msg and "'TABLE_2D'" in msg and "sycl.buffer" in msg, msg


def test_helper_global_numpy_table_is_an_argument(any_kernel_queue: sycl.queue) -> None:
    """A 1-D lookup table a helper reads is a pointer argument: the array's memory where
    the device uses host memory directly, else a read-only copy (tests/kernels/test_tables.py)."""
    out = fill(any_kernel_queue, lambda o: lambda i: o.__setitem__(i, from_table(3 - i)))
    np.testing.assert_array_equal(out, TABLE[::-1])


def test_helper_closure_cells_are_arguments(any_kernel_queue: sycl.queue,
                                            fresh_stats: None) -> None:
    def make(k):
        def times_k(x):
            return x * k

        return times_k

    for k2, k3 in ((2, 3), (5, 7)):
        f2, f3 = make(k2), make(k3)  # one code, two closures: each keeps its own cell
        out = fill(any_kernel_queue, lambda o: lambda i: o.__setitem__(i, f2(i) + 10 * f3(i)),
                    dtype=np.int64)
        np.testing.assert_array_equal(out, (k2 + 10 * k3) * np.arange(4))
    if any_kernel_queue.get_device().image_targets:
        _one_compile()


def test_helper_closure_may_capture_an_accessor(any_kernel_queue: sycl.queue) -> None:
    src = np.arange(6.0)
    out = np.zeros(6)
    with sycl.buffer(src) as S, sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            s = S.get_access(h, sycl.access_mode.read)
            o = O.get_access(h, sycl.access_mode.write)

            def load(i):
                return s[i] * SCALE

            def store(i, v):
                o[i] = v

            h.parallel_for(sycl.range(6), lambda i: store(i, load(i) + 1.0))

        any_kernel_queue.submit(cg)
    np.testing.assert_array_equal(out, src * SCALE + 1.0)


def test_helper_reached_through_a_module_attribute(kq: sycl.queue, fresh_stats: None) -> None:
    mod = types.ModuleType("pysycl_test_user_helpers")
    exec("K = 4\nBIAS = 1.0\ndef f(x):\n    return x * K + BIAS\n", mod.__dict__)
    ns = {"mod": mod}
    exec("def kernel_of(o):\n    return lambda i: o.__setitem__(i, mod.f(i) + mod.K)\n",
         ns)
    for k, bias in ((4, 1.0), (6, -1.0)):
        mod.K, mod.BIAS = k, bias
        out = fill(kq, ns["kernel_of"])
        np.testing.assert_array_equal(out, np.arange(4) * k + bias + k)
    s = sycl.ext.kernel_cache_stats()
    # mod.K read off the module is a compile-time constant (part of the key); the
    # helper's own globals K and BIAS are arguments.
    assert s["compiles"] + s["disk_hits"] == 2, s


def test_helper_globals_in_reduction_kernels(kq: sycl.queue) -> None:
    global SCALE
    x = np.arange(10, dtype=np.float64)
    try:
        for value in (2.0, 4.0):
            SCALE = value
            total = np.zeros(1)
            with sycl.buffer(x) as X, sycl.buffer(total) as T:
                def cg(h: sycl.handler) -> None:
                    rx = X.get_access(h, sycl.access_mode.read)
                    s = sycl.reduction(T, h, sycl.plus())
                    h.parallel_for(sycl.range(x.size), s, lambda i, s: s.combine(scaled(rx[i])))

                kq.submit(cg)
            assert total[0] == value * x.sum()
    finally:
        SCALE = 2.0


@pytest.mark.slow
def test_helper_global_change_reuses_the_disk_cache_in_another_process(tmp_path) -> None:
    # One rule for both caches: a helper's global is an argument, so a process
    # with another value finds the first process's kernel on disk, and runs it
    # with its own value.
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent("""
        import sys
        import numpy as np
        import pysycl as sycl

        SCALE = float(sys.argv[1])

        def scaled(x):
            return x * SCALE

        out = np.zeros(4)
        with sycl.buffer(out) as O:
            def cg(h):
                o = O.get_access(h, sycl.access_mode.write)
                h.parallel_for(sycl.range(4), lambda i: o.__setitem__(i, scaled(i)))
            sycl.queue().submit(cg)
        s = sycl.ext.kernel_cache_stats()
        print(out.tolist(), s["compiles"], s["disk_hits"])
    """))
    env = {**os.environ, "PYSYCL_CACHE_DIR": str(tmp_path / "cache")}
    runs = []
    for value in ("2", "3"):
        p = subprocess.run([sys.executable, str(prog), value], capture_output=True, text=True,
                           timeout=300, env=env, cwd=tmp_path)
        assert p.returncode == 0, p.stdout + p.stderr
        runs.append(p.stdout.strip())
    assert runs[0] == "[0.0, 2.0, 4.0, 6.0] 1 0", runs
    assert runs[1] == "[0.0, 3.0, 6.0, 9.0] 0 1", runs


FACTOR = sycl.specialization_id(np.int32, 3)


def times_factor(kh, x):
    return kh.get_specialization_constant(FACTOR) * x


def test_helper_reads_a_specialization_constant(any_kernel_queue: sycl.queue) -> None:
    for value in (None, 5):
        out = np.zeros(4, np.int32)
        with sycl.buffer(out) as O:
            def cg(h: sycl.handler) -> None:
                o = O.get_access(h, sycl.access_mode.write)
                if value is not None:
                    h.set_specialization_constant(FACTOR, value)
                h.parallel_for(sycl.range(4),
                               lambda i, kh: o.__setitem__(i, times_factor(kh, i[0])))

            any_kernel_queue.submit(cg)
        np.testing.assert_array_equal(out, (value or 3) * np.arange(4))


def with_defaults(x, y=1.0):
    return x * SCALE + y


def with_varargs(*xs):
    return xs[0] * SCALE + xs[1]


def recursive(n):
    return recursive(n - 1) * SCALE if n > 0 else 1.0


def test_helper_globals_with_keyword_defaults_and_varargs(kq: sycl.queue) -> None:
    global SCALE
    try:
        for value in (2.0, 3.0):
            SCALE = value
            out = fill(kq, lambda o: lambda i: o.__setitem__(
                i, with_defaults(i, y=0.5) + with_defaults(i) + with_varargs(i, 1.0)))
            x = np.arange(4)
            np.testing.assert_array_equal(out, (x * value + 0.5) + (x * value + 1.0)
                                          + (x * value + 1.0))
    finally:
        SCALE = 2.0


def test_njit_helper_global_change_is_seen(kq: sycl.queue) -> None:
    numba = pytest.importorskip("numba")
    jitted = numba.njit(scaled)
    global SCALE
    try:
        for value in (2.0, 7.0):
            SCALE = value
            out = fill(kq, lambda o: lambda i: o.__setitem__(i, jitted(i)))
            np.testing.assert_array_equal(out, value * np.arange(4))
    finally:
        SCALE = 2.0


def test_recursive_helper_reading_a_global_is_reported_as_recursion(kq: sycl.queue) -> None:
    with pytest.raises(sycl.kernel_compile_error, match="recursion is not supported"):
        fill(kq, lambda o: lambda i: o.__setitem__(i, recursive(2)))


def test_helpers_compile_after_numba_first_class_functions_load(kq: sycl.queue) -> None:
    """numba.experimental.function_type (which some of numba's own overloads import)
    lowers a dispatcher constant as a host address; a helper is a callee, never that."""
    import numba.experimental.function_type  # noqa: F401

    out = np.zeros(4, np.int64)

    def twice(v: int) -> int:
        return 2 * v

    with sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            o = O.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.range(4), lambda i: o.__setitem__(i, twice(i[0]) + 1))

        kq.submit(cg)
    np.testing.assert_array_equal(out, 2 * np.arange(4) + 1)

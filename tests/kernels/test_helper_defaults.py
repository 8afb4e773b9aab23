"""What a helper reads through its parameters' default values: the rule of a closure cell.

``g = lambda v, fn=fn: fn(v)`` binds a function, ``def g(v, c=c)`` a number: a call
that leaves the parameter out reads the default. A function default is a helper
(part of the kernel's code: another function, another kernel); a number default is
a kernel argument (another value, the same compiled kernel). Both caches key on
them -- the memory cache, the disk cache of another process and the launch plans
of ``q.parallel_for``.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pysycl as sycl
from pysycl._core.abi import IndexSpace
from pysycl._kernels.captures import call_graph, defaults_of
from pysycl._kernels.digest import stable_digest
from tests.conftest import fill


def plus_one(x):
    return x + 1.0


def times_ten(x):
    return x * 10.0


def _compiles() -> int:
    s = sycl.ext.kernel_cache_stats()
    return s["compiles"] + s["disk_hits"]


def _compiled(q: sycl.queue) -> bool:
    return not q.get_device().has(sycl.aspect.host_debuggable)


def _apply_lambda(fn):
    """The kernel of the report: a lambda binding ``fn`` as a default, called by the kernel."""
    g = lambda v, fn=fn: fn(v)  # noqa: E731
    return lambda o: lambda i: o.__setitem__(i, g(float(i[0])))


def test_a_default_function_is_part_of_the_kernel(any_kernel_queue: sycl.queue,
                                                  fresh_stats: None) -> None:
    x = np.arange(4.0)
    for fn, want in ((plus_one, x + 1), (times_ten, x * 10), (plus_one, x + 1)):
        np.testing.assert_array_equal(fill(any_kernel_queue, _apply_lambda(fn)), want)
    if _compiled(any_kernel_queue):
        assert _compiles() == 2  # one kernel per default function, the third launch a hit


def test_a_default_function_of_a_nested_def_and_of_a_helper_of_a_helper(
        any_kernel_queue: sycl.queue) -> None:
    def kernel_of(fn, scale):
        def inner(v, fn=fn):
            return fn(v) * scale             # scale: a closure cell of the default's caller

        def outer(v, g=inner):               # a default function whose default is a function
            return g(v) + 0.5

        return lambda o: lambda i: o.__setitem__(i, outer(float(i[0])))

    x = np.arange(4.0)
    for fn, scale, want in ((plus_one, 2.0, (x + 1) * 2), (times_ten, 2.0, x * 20),
                            (times_ten, 3.0, x * 30), (math.sqrt, 1.0, np.sqrt(x))):
        np.testing.assert_allclose(fill(any_kernel_queue, kernel_of(fn, scale)), want + 0.5)


def test_a_default_function_that_reads_captures_gets_them(any_kernel_queue: sycl.queue) -> None:
    # The default function reads a number of its own closure: lifted like any helper's.
    def kernel_of(k):
        def add_k(v):
            return v + k

        def g(v, fn=add_k):
            return fn(v)

        return lambda o: lambda i: o.__setitem__(i, g(float(i[0])))

    for k in (1.0, -7.0):
        np.testing.assert_array_equal(fill(any_kernel_queue, kernel_of(k)), np.arange(4.0) + k)


def test_default_numbers_are_arguments_of_one_kernel(any_kernel_queue: sycl.queue,
                                                     fresh_stats: None) -> None:
    def kernel_of(c, lo):
        def g(v, c=c, lo=lo):
            return max(v * c, lo)

        return lambda o: lambda i: o.__setitem__(i, g(float(i[0])))

    x = np.arange(4.0)
    for c, lo in ((2.0, 0.0), (-1.5, -2.0), (100.0, 150.0)):
        np.testing.assert_array_equal(fill(any_kernel_queue, kernel_of(c, lo)),
                                      np.maximum(x * c, lo))
    if _compiled(any_kernel_queue):
        assert _compiles() == 1  # another value of the same type: the same kernel
    np.testing.assert_array_equal(fill(any_kernel_queue, kernel_of(3, 1)),  # int defaults
                                  np.maximum(x * 3, 1))
    if _compiled(any_kernel_queue):
        assert _compiles() == 2  # another type: another kernel


@settings(max_examples=25)
@given(c=st.one_of(st.integers(-(2 ** 31), 2 ** 31), st.floats(-1e6, 1e6), st.booleans()))
def test_default_numbers_of_any_value_are_seen(kernel_device: sycl.device, c) -> None:
    def g(v, c=c):
        return v + c

    got = fill(sycl.queue(kernel_device), lambda o: lambda i: o.__setitem__(i, g(i[0])))
    np.testing.assert_array_equal(got, np.arange(4) + c)


def test_keyword_only_defaults_and_explicit_arguments(any_kernel_queue: sycl.queue) -> None:
    def kernel_of(c, fn):
        def g(v, *, c=c, fn=fn, d=2.0):
            return fn(v) * c + d

        return lambda o: lambda i: o.__setitem__(
            i, g(float(i[0])) + g(1.0, c=1.0) + g(1.0, fn=times_ten, d=0.0))

    x = np.arange(4.0)
    for c, fn in ((3.0, plus_one), (5.0, plus_one), (3.0, times_ten)):
        want = (fn(x) * c + 2.0) + (fn(1.0) + 2.0) + 10.0 * c
        np.testing.assert_array_equal(fill(any_kernel_queue, kernel_of(c, fn)), want)


def test_an_accessor_and_a_tuple_as_defaults(any_kernel_queue: sycl.queue) -> None:
    src = np.arange(4.0) * 3
    for coeffs in ((1.0, 2.0), (0.5, -1.0)):
        out = np.zeros(4)
        with sycl.buffer(src) as S, sycl.buffer(out) as O:
            def cg(h: sycl.handler, coeffs=coeffs) -> None:
                s = S.get_access(h, sycl.access_mode.read)
                o = O.get_access(h, sycl.access_mode.write)

                def g(j, acc=s, c=coeffs):
                    return c[0] + c[1] * acc[j]

                h.parallel_for(sycl.range(4), lambda i: o.__setitem__(i, g(i[0])))

            any_kernel_queue.submit(cg)
        np.testing.assert_array_equal(out, coeffs[0] + coeffs[1] * src)


def test_none_default_is_a_constant(any_kernel_queue: sycl.queue, fresh_stats: None) -> None:
    def kernel_of(y):
        def g(v, y=y):
            return v if y is None else v + y

        return lambda o: lambda i: o.__setitem__(i, g(float(i[0])))

    x = np.arange(4.0)
    np.testing.assert_array_equal(fill(any_kernel_queue, kernel_of(None)), x)
    np.testing.assert_array_equal(fill(any_kernel_queue, kernel_of(5.0)), x + 5)
    np.testing.assert_array_equal(fill(any_kernel_queue, kernel_of(None)), x)


def test_a_default_that_cannot_be_an_argument_names_the_parameter(kq: sycl.queue) -> None:
    def g(v, scratch=[0.0]):  # noqa: B006 - the mistake under test
        return v

    with pytest.raises(sycl.kernel_compile_error,
                       match=r"test_helper_defaults.py:\d+: the default value of parameter "
                             r"'scratch' of function .*g \(called by the kernel\): a list cannot "
                             r"be a kernel argument"):
        fill(kq, lambda o: lambda i: o.__setitem__(i, g(1.0)))


def test_a_kernel_binding_a_default_is_told_to_capture_instead(
        any_kernel_queue: sycl.queue) -> None:
    c = 5.0
    with pytest.raises(sycl.kernel_signature_error,
                       match=r"test_helper_defaults.py:\d+: kernel .*: parameter 'c' has a "
                             r"default value.*sycl.kernel_handler; read 'c' from the enclosing "
                             r"scope") as e:
        fill(any_kernel_queue, lambda o: lambda i, c=c: o.__setitem__(i, i[0] + c))
    assert e.value.code() == sycl.errc.invalid


def test_launch_plans_see_a_changed_default(kq: sycl.queue) -> None:
    # q.parallel_for(range, kernel) remembers launches; a kernel whose helper's
    # default changes must not be launched from the old plan.
    p = sycl.malloc_device(4, kq, dtype=np.float64)
    try:
        for fn, c, want in ((plus_one, 1.0, np.arange(4.0) + 2), (times_ten, 1.0,
                            np.arange(4.0) * 10 + 1), (times_ten, 2.0, np.arange(4.0) * 10 + 2)):
            g = lambda v, fn=fn, c=c: fn(v) + c  # noqa: E731
            for _ in range(3):
                kq.parallel_for(sycl.range(4), lambda i: p.__setitem__(i, g(float(i[0])))).wait()
            out = np.empty(4)
            kq.memcpy(out, p, out.nbytes).wait()
            np.testing.assert_array_equal(out, want)
    finally:
        sycl.free(p, kq)


def test_defaults_of_lists_positional_then_keyword_only() -> None:
    def f(a, b=1, c=plus_one, *args, d, e=2.5, **kw):
        return a

    assert defaults_of(f) == [("b", 1), ("c", plus_one), ("e", 2.5)]
    assert defaults_of(plus_one) == []


def test_the_disk_digest_follows_default_functions_not_default_values() -> None:
    def kernel(fn, c):
        g = lambda v, fn=fn, c=c: fn(v) + c  # noqa: E731
        return lambda i: g(i)

    def digest(k) -> str:
        # The capture walk gives the captures; here by hand: one float default.
        from pysycl._core.abi import Capture, ScalarType
        caps = (Capture("c", "default", ScalarType(np.dtype(np.float64)), 1),)
        return stable_digest(k, caps, IndexSpace("range", 1))

    a, b, c = kernel(plus_one, 1.0), kernel(plus_one, 2.0), kernel(times_ten, 1.0)
    assert digest(a) == digest(b)
    assert digest(a) != digest(c)
    assert [f for f, _ in call_graph(a)][2] is plus_one
    assert [f for f, _ in call_graph(c)][2] is times_ten


@pytest.mark.slow
def test_the_disk_cache_of_another_process_keys_on_defaults(tmp_path) -> None:
    # Another process with another default *function* compiles; with another default
    # *number* it finds the kernel on disk and runs it with its own value.
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent("""
        import sys
        import numpy as np
        import pysycl as sycl

        def plus_one(x):
            return x + 1.0

        def times_ten(x):
            return x * 10.0

        fn = {"plus_one": plus_one, "times_ten": times_ten}[sys.argv[1]]
        c = float(sys.argv[2])
        g = lambda v, fn=fn, c=c: fn(v) + c

        out = np.zeros(4)
        with sycl.buffer(out) as O:
            def cg(h):
                o = O.get_access(h, sycl.access_mode.write)
                h.parallel_for(sycl.range(4), lambda i: o.__setitem__(i, g(float(i[0]))))
            sycl.queue().submit(cg)
        s = sycl.ext.kernel_cache_stats()
        print(out.tolist(), s["compiles"], s["disk_hits"])
    """))
    env = {**os.environ, "PYSYCL_CACHE_DIR": str(tmp_path / "cache")}
    runs = []
    for args in (("plus_one", "0"), ("times_ten", "0"), ("plus_one", "5"), ("times_ten", "7")):
        p = subprocess.run([sys.executable, str(prog), *args], capture_output=True, text=True,
                           timeout=300, env=env, cwd=tmp_path)
        assert p.returncode == 0, p.stdout + p.stderr
        runs.append(p.stdout.strip())
    assert runs == ["[1.0, 2.0, 3.0, 4.0] 1 0", "[0.0, 10.0, 20.0, 30.0] 1 0",
                    "[6.0, 7.0, 8.0, 9.0] 0 1", "[7.0, 17.0, 27.0, 37.0] 0 1"], runs

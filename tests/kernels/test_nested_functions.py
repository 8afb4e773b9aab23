"""Functions defined inside a kernel (nested ``def`` and ``lambda``): issue 21, item 6.

SYCL-CTS writes group predicates and small helpers as lambdas inside the kernel. A nested
function is an ordinary closure over the kernel's variables -- its captured accessors and
numbers (kernel arguments) and the kernel's locals. Called directly, it is compiled in place
(inlined) with every store it makes; used as a value (passed on, stored) it may read only
constants, and anything else is a compile error at its line. A kernel that drops a store is
never run. Every result is compared with numpy, on the compiled device and on the
host_debuggable device (the oracle).
"""

from __future__ import annotations

import numpy as np
import pytest

import pysycl as sycl

R, W = sycl.access_mode.read, sycl.access_mode.write
N = 8
SCALE = 2


def scaled(x):
    return x * SCALE


def apply(f, x):
    return f(x)


def _run(q: sycl.queue, make, n: int = N, nd: tuple[int, int] | None = None) -> np.ndarray:
    """Run ``make(a, o)`` over ``n`` items (or an nd_range); a = arange(n), the output."""
    inp = np.arange(n, dtype=np.int32)
    out = np.full(n, -1, np.int32)
    with sycl.buffer(inp) as I, sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            a, o = I.get_access(h, R), O.get_access(h, W)
            space = sycl.range(n) if nd is None else sycl.nd_range(sycl.range(nd[0]),
                                                                   sycl.range(nd[1]))
            h.parallel_for(space, make(a, o))

        q.submit(cg)
    return out


def test_a_called_nested_lambda_keeps_the_kernels_stores(any_kernel_queue: sycl.queue) -> None:
    # The kernel: on main it ran and stored nothing (Numba's dead-code elimination
    # after inlining the lambda dropped `o[i] = ...`, o being a lifted capture).
    def make(a, o):
        def k(i):
            pred = lambda x: x > 3  # noqa: E731
            o[i] = 1 if pred(a[i]) else 0

        return k

    np.testing.assert_array_equal(_run(any_kernel_queue, make), (np.arange(N) > 3).astype(np.int32))


def test_annotated_nested_functions_under_postponed_annotations(
        any_kernel_queue: sycl.queue) -> None:
    # This module has `from __future__ import annotations`: a nested function's annotations
    # are strings in the kernel's code ("strings cannot be used in kernels" before).
    def make(a, o):
        def k(i: sycl.item) -> None:
            def twice(x: float, y: int = 1) -> float:
                return 2.0 * x + y

            o[i] = int(twice(a[i]))

        return k

    np.testing.assert_array_equal(_run(any_kernel_queue, make), 2 * np.arange(N) + 1)


def test_a_nested_def_closes_over_kernel_locals_and_captured_accessors(
        any_kernel_queue: sycl.queue) -> None:
    def make(a, o):
        def k(i):
            t = 3
            if a[i] > 5:
                t = 4                       # a local assigned twice: read where called

            def f(x):
                return x * t + a[0] + a[1]  # a kernel local and a captured accessor

            o[i] = f(a[i])

        return k

    x = np.arange(N)
    np.testing.assert_array_equal(_run(any_kernel_queue, make), x * np.where(x > 5, 4, 3) + 1)


def test_a_nested_def_that_stores_through_a_captured_accessor(any_kernel_queue: sycl.queue) -> None:
    def make(a, o):
        def k(i):
            def store(j, v):
                o[j] = v

            for r in range(2):              # called in a loop, through an alias
                s = store
                s(i, a[i] * 3 + r)

        return k

    np.testing.assert_array_equal(_run(any_kernel_queue, make), np.arange(N) * 3 + 1)


def test_nested_functions_with_defaults_and_calling_each_other(
        any_kernel_queue: sycl.queue) -> None:
    def make(a, o):
        def k(i):
            def f(x, y=10):
                return x + y

            g = lambda x: f(x) * 2  # noqa: E731
            o[i] = g(a[i])

        return k

    np.testing.assert_array_equal(_run(any_kernel_queue, make), (np.arange(N) + 10) * 2)


def test_a_function_defined_inside_a_nested_function(any_kernel_queue: sycl.queue) -> None:
    def make(a, o):
        def k(i):
            def outer(j):
                def inner(v):
                    o[j] = v                # through the kernel's closure cell, two deep

                inner(a[j] * 2)

            outer(i)

        return k

    np.testing.assert_array_equal(_run(any_kernel_queue, make), np.arange(N) * 2)


def test_a_nested_function_reading_a_global_sees_its_new_value(any_kernel_queue: sycl.queue,
                                                               fresh_stats: None) -> None:
    """A global read by a nested function is a kernel argument, like one the kernel reads
    (on main it was frozen into the first compile: the second launch gave 2 * x again)."""
    global SCALE

    def make(a, o):
        def k(i):
            f = lambda x: x * SCALE + scaled(1)  # noqa: E731 - a global and a helper reading one
            o[i] = f(a[i])

        return k

    try:
        for value in (2, 5):
            SCALE = value
            np.testing.assert_array_equal(_run(any_kernel_queue, make),
                                          np.arange(N) * value + value)
    finally:
        SCALE = 2
    if not any_kernel_queue.get_device().has(sycl.aspect.host_debuggable):
        s = sycl.ext.kernel_cache_stats()
        assert s["compiles"] + s["disk_hits"] == 1 and s["memory_hits"] == 1, s


def test_a_vote_with_a_nested_predicate_reading_a_kernel_variable(
        any_kernel_queue: sycl.queue) -> None:
    """SYCL 2020 §4.17.4: any_of_group(g, x, pred) is any_of_group(g, pred(x)); the
    SYCL-CTS form, a lambda closing over a value the kernel computed."""
    def make(a, o):
        def k(it):
            g, i = it.get_group(), it.get_global_id(0)
            limit = a[it.get_group(0) * 4]      # a kernel variable: group 0 -> 0, group 1 -> 4
            hit = sycl.any_of_group(g, a[i], lambda v: v > limit + 2)
            every = sycl.all_of_group(g, a[i], lambda v: v >= limit)
            o[i] = int(hit) + 10 * int(every)

        return k

    # group 0 holds 0..3 (3 > 2: hit), group 1 holds 4..7 (7 > 6: hit); all >= their limit
    np.testing.assert_array_equal(_run(any_kernel_queue, make, nd=(8, 4)), np.full(8, 11))


def test_print_and_stream_in_a_nested_function(any_kernel_queue: sycl.queue,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    def cg(h: sycl.handler) -> None:
        out = sycl.stream(1024, 64, h)

        def k(i):
            def show(v):
                print("print", v)
                out << "stream " << v << sycl.endl

            show(i[0] * 10)

        h.parallel_for(sycl.range(3), k)

    any_kernel_queue.submit(cg).wait()
    lines = sorted(capsys.readouterr().out.splitlines())
    assert lines == sorted([f"{w} {v}" for w in ("print", "stream") for v in (0, 10, 20)])


def test_a_nested_lambda_in_a_function_object_and_in_a_helper(any_kernel_queue: sycl.queue) -> None:
    def helper(x):
        twice = lambda y: y * SCALE  # noqa: E731 - SCALE: a kernel argument of the helper
        return twice(x) + 1

    class Kernel:
        def __init__(self, a, o):
            self.a, self.o = a, o

        def __call__(self, i):
            f = lambda j: self.a[j] * 4  # noqa: E731 - reads self.a: the functor's capture
            self.o[i] = f(i[0]) + helper(0)

    np.testing.assert_array_equal(_run(any_kernel_queue, Kernel), np.arange(N) * 4 + 1)


def test_a_nested_function_used_as_a_value_may_read_constants(any_kernel_queue: sycl.queue) -> None:
    def make(a, o):
        def k(i):
            t = 3
            o[i] = apply(lambda x: x + t, a[i])  # passed on: compiled on its own

        return k

    np.testing.assert_array_equal(_run(any_kernel_queue, make), np.arange(N) + 3)


def _escaping_accessor(a, o):
    def k(i):
        f = lambda j: a[j] + 1  # noqa: E731
        o[i] = apply(f, i[0])

    return k


def _escaping_local(a, o):
    def k(i):
        t = a[i]
        o[i] = apply(lambda x: x + t, 1)

    return k


def _escaping_global(a, o):
    def k(i):
        o[i] = apply(lambda x: x * SCALE, a[i])

    return k


@pytest.mark.parametrize(("make", "what"), [
    (_escaping_accessor, "'a', a variable the kernel captures"),
    (_escaping_local, "'t', a variable of the kernel computed when it runs"),
    (_escaping_global, "'SCALE', which the kernel receives as an argument"),
])
def test_a_nested_function_used_as_a_value_reading_a_kernel_value_is_refused(
        kq: sycl.queue, make, what: str) -> None:
    with pytest.raises(sycl.kernel_compile_error) as e:
        _run(kq, make)
    msg = str(e.value)
    line = make.__code__.co_firstlineno + (3 if make is _escaping_local else 2)
    assert f"{__file__}:{line}: the function '<lambda>' defined here is used as a value" in msg
    assert what in msg and "Call it directly in the kernel" in msg, msg
    assert e.value.code() == sycl.errc.kernel


def _recursive(a, o):
    def k(i):
        def f(x):
            return f(x - 1) if x > 0 else 0

        o[i] = f(a[i])

    return k


def _chosen_at_run_time(a, o):
    def k(i):
        f = (lambda x: x + 1) if a[i] > 3 else (lambda x: x + 2)
        o[i] = f(a[i])

    return k


def _lost_store_two_deep(a, o):
    def k(i):
        def outer(j):
            t = o
            f = lambda: 1  # noqa: E731
            t[j] = f() + a[j]

        outer(i)

    return k


@pytest.mark.parametrize(("make", "what"), [
    (_recursive, "calls itself"),
    (_chosen_at_run_time, "call each function in its own branch"),
    (_lost_store_two_deep, "would be lost"),
])
def test_what_a_nested_function_cannot_do_is_a_compile_error_at_its_line(
        kq: sycl.queue, make, what: str) -> None:
    """Never run a kernel that drops its stores: the case Numba's inliner would lose is
    refused, naming the store's line."""
    with pytest.raises(sycl.kernel_compile_error, match=what) as e:
        _run(kq, make)
    assert e.value.code() == sycl.errc.kernel
    assert f"{__file__}:" in str(e.value)
    if make is _lost_store_two_deep:
        assert f"{__file__}:{make.__code__.co_firstlineno + 5}: this store" in str(e.value)


def test_a_predicate_passed_to_a_joint_algorithm_reading_a_kernel_variable_is_refused(
        kq: sycl.queue) -> None:
    """joint_any_of takes ``pred`` as a value (its loop calls it): only constants there."""
    def make(a, o):
        def k(it):
            t = a[it.get_global_id(0)]
            o[it.get_global_id(0)] = sycl.joint_any_of(it.get_group(), a, 0, 4,
                                                       lambda v: v > t)

        return k

    with pytest.raises(sycl.kernel_compile_error, match="'t', a variable of the kernel computed"):
        _run(kq, make, nd=(8, 4))

    def constant(a, o):
        def k(it):
            o[it.get_global_id(0)] = sycl.joint_any_of(it.get_group(), a, 0, 4, lambda v: v > 2)

        return k

    np.testing.assert_array_equal(_run(kq, constant, nd=(8, 4)), np.ones(8))

"""Functions defined inside a kernel (nested ``def`` and ``lambda``): issue 21, item 6.

SYCL-CTS writes group predicates and small helpers as lambdas inside the kernel. A nested
function is an ordinary closure over the kernel's variables -- its captured accessors and
numbers (kernel arguments) and the kernel's locals. Called directly, it is compiled in place
(inlined) with every store it makes; used as a value (passed on, stored) it may read only
constants unless it is only called (passed to a helper or a joint vote that calls it), and
anything else is a compile error at its line. A kernel that drops a store is
never run. Every result is compared with numpy, on the compiled device and on the
host_debuggable device (the oracle).
"""

from __future__ import annotations

import numpy as np
import pytest

import pysycl as sycl
from tests.conftest import ptxas_check

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


def _passed_accessor(a, o):
    def k(i):
        f = lambda j: a[j] + 1  # noqa: E731
        o[i] = apply(f, i[0])

    return k


def _passed_local(a, o):
    def k(i):
        t = a[i]
        o[i] = apply(lambda x: x + t, 1)

    return k


def _passed_global(a, o):
    def k(i):
        o[i] = apply(lambda x: x * SCALE, a[i])

    return k


@pytest.mark.parametrize(("make", "want"), [
    (_passed_accessor, np.arange(N) + 1),
    (_passed_local, np.arange(N) + 1),
    (_passed_global, np.arange(N) * SCALE),
])
def test_a_closure_passed_to_a_helper_that_calls_it_reads_kernel_values(
        any_kernel_queue: sycl.queue, make, want: np.ndarray) -> None:
    """Issue 25: a nested function reading a captured accessor, a kernel variable or a
    captured global, passed to a plain helper that only calls it, compiles (the helper is
    inlined at the call, so its call of the closure is compiled in place)."""
    np.testing.assert_array_equal(_run(any_kernel_queue, make), want)


def twice_applied(f, x):
    return apply(f, x) + apply(f, 1)


def test_closures_passed_on_through_helpers_and_defined_two_deep(
        any_kernel_queue: sycl.queue) -> None:
    def make(a, o):
        def k(i):
            s = a[i] * 2                          # a kernel variable

            def outer(x):                         # a nested def passed on ...
                return twice_applied(lambda v: v + s, x) + 1  # ... defining one passed on

            o[i] = apply(outer, 10)

        return k

    x = np.arange(N)
    np.testing.assert_array_equal(_run(any_kernel_queue, make), (10 + 2 * x) + (1 + 2 * x) + 1)


def tripled_plus_one(x):
    t = x * 3                                     # a local of the helper
    return apply(lambda v: v + t, 1)


def test_a_closure_defined_in_a_helper_passed_to_another(any_kernel_queue: sycl.queue) -> None:
    def make(a, o):
        def k(i):
            o[i] = tripled_plus_one(a[i])

        return k

    np.testing.assert_array_equal(_run(any_kernel_queue, make), 3 * np.arange(N) + 1)


def test_a_closure_returned_by_a_nested_function_or_a_helper_and_called(
        any_kernel_queue: sycl.queue) -> None:
    def make(a, o):
        def k(i):
            t = a[i]

            def mk():
                return lambda x: x + t

            g = apply(lambda f: f, lambda x: x * t)   # handed back by a helper
            o[i] = mk()(1) + g(3)

        return k

    x = np.arange(N)
    np.testing.assert_array_equal(_run(any_kernel_queue, make), x + 1 + 3 * x)


def _stored(a, o):
    def k(i):
        t = a[i]
        fs = (lambda x: x + t, lambda x: x - t)
        o[i] = fs[0](1)

    return k


def apply_scaled(f, x):
    return f(x) * SCALE


def _to_a_helper_reading_captures(a, o):
    def k(i):
        t = a[i]
        o[i] = apply_scaled(lambda x: x + t, 1)

    return k


@pytest.mark.parametrize(("make", "line", "what"), [
    (_stored, 3, "'t', a variable of the kernel computed when it runs"),
    (_to_a_helper_reading_captures, 3, "'t', a variable of the kernel computed when it runs"),
])
def test_a_closure_that_escapes_is_refused_word_for_word(kq: sycl.queue, make, line: int,
                                                        what: str) -> None:
    """A closure stored (in a tuple), or passed to a helper that reads kernel arguments of its
    own (compiled on its own, it cannot be inlined), stays a value: refused at its line."""
    with pytest.raises(sycl.kernel_compile_error) as e:
        _run(kq, make)
    where = f"{__file__}:{make.__code__.co_firstlineno + line}"
    assert (f"{where}: the function '<lambda>' defined here is used as a value (passed to a "
            "function, stored or returned), not called: such a function is compiled on its "
            f"own and can read only constants, but it reads {what}. Call it directly in the "
            "kernel (the call is then compiled in place), or pass what it reads as an "
            "argument") in str(e.value)
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


def test_joint_votes_with_a_predicate_reading_kernel_variables(
        any_kernel_queue: sycl.queue) -> None:
    """joint_any_of/all_of/none_of take ``pred`` as a value and call it in their loop; one
    reading a kernel variable compiles (each work-item tests the range with its own pred)."""
    def make(a, o):
        def k(it):
            i = it.get_global_id(0)
            g, t = it.get_group(), a[i]
            some = sycl.joint_any_of(g, a, 0, 4, lambda v: v > t)
            every = sycl.joint_all_of(g, a, 0, 4, lambda v: v <= t)
            none = sycl.joint_none_of(g, a, 4, 8, lambda v: v < t)
            const = sycl.joint_any_of(g, a, 0, 4, lambda v: v > 2)
            o[i] = int(some) + 2 * int(every) + 4 * int(none) + 8 * int(const)

        return k

    x, head, tail = np.arange(8), np.arange(4), np.arange(4, 8)
    want = np.array([int((head > t).any()) + 2 * int((head <= t).all())
                     + 4 * int(not (tail < t).any()) + 8 for t in x])
    np.testing.assert_array_equal(_run(any_kernel_queue, make, nd=(8, 4)), want)


def test_group_votes_with_lambdas_reading_a_captured_number_and_a_kernel_variable(
        any_kernel_queue: sycl.queue) -> None:
    n = 5  # captured: a kernel argument

    def make(a, o):
        def k(it):
            g, i = it.get_group(), it.get_global_id(0)
            lim = a[it.get_group(0) * 4] + 1
            o[i] = (int(sycl.any_of_group(g, a[i], lambda v: v > n))
                    + 2 * int(sycl.all_of_group(g, a[i], lambda v: v < lim + 3))
                    + 4 * int(sycl.none_of_group(g, a[i], lambda v: v == n + lim)))

        return k

    x = np.arange(8)
    want = np.empty(8, np.int64)
    for grp in (0, 1):
        v = x[grp * 4:grp * 4 + 4]
        lim = v[0] + 1
        want[grp * 4:grp * 4 + 4] = (int((v > n).any()) + 2 * int((v < lim + 3).all())
                                     + 4 * int(not (v == n + lim).any()))
    np.testing.assert_array_equal(_run(any_kernel_queue, make, nd=(8, 4)), want)


def test_a_lambda_combiner_for_reduce_over_group_is_refused_on_every_device(
        any_kernel_queue: sycl.queue) -> None:
    """SYCL 2020 §4.17.4.5: the group reductions take a SYCL function object (sycl.plus())."""
    def make(a, o):
        def k(it):
            o[it.get_global_id(0)] = sycl.reduce_over_group(it.get_group(), a[it.get_global_id(0)],
                                                            lambda x, y: x + y)

        return k

    with pytest.raises(sycl.exception) as e:
        _run(any_kernel_queue, make, nd=(8, 4))
    assert e.value.code() == sycl.errc.kernel
    assert "SYCL function object" in str(e.value), str(e.value)


def test_closures_passed_to_helpers_and_joint_votes_compile_to_ptx(
        kq: sycl.queue, ptx_images: list) -> None:
    """The same closure conversion on the PTX target: the kernel runs (SPIR-V) and its PTX
    image assembles, with the closures inlined (no call left)."""
    def make(a, o):
        def k(it):
            i = it.get_global_id(0)
            t = a[i]
            o[i] = apply(lambda x: x + t, 1) + 10 * int(
                sycl.joint_any_of(it.get_group(), a, 0, 4, lambda v: v > t))

        return k

    x = np.arange(8)
    np.testing.assert_array_equal(_run(kq, make, nd=(8, 4)), x + 1 + 10 * (x < 3))
    (img,) = ptx_images
    ptx = img.binary.decode()
    assert f".visible .entry {img.entry}(" in ptx and "bar.sync" in ptx
    ptxas_check(img.binary)

"""Repeated reductions reuse what their first launch prepared (issue 27): the queue's
:class:`~pysycl._kernels.reduction_plan.ReductionPlan` (built kernels, sizes, partials, the
final kernels' arguments) for every command group, and for ``q.parallel_for(r, red, k)``
with no dependencies a remembered launch (pysycl/_backends/reductions.py) that refreshes the
captures and checks the reductions instead of taking the whole way. Every launch still
equals numpy while the captures, the reduction variable, its identity and
``initialize_to_identity``, the operator and the range change between launches; what a
remembered launch cannot check goes the whole way and says what the whole way says.

Whole-way launches are counted by wrapping :func:`pysycl._kernels.reduction_launch.prepare` (the
reduction launch's whole way) and ``_plan`` (a plan being made); the devices are real.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pysycl as sycl
import pysycl.ext.oneapi.experimental as syclex
from pysycl._backends import reductions as _reductions
from pysycl._kernels import reduction_launch as _reduction

INIT = sycl.property.reduction.initialize_to_identity


class Counted:
    """Calls of a wrapped function."""

    def __init__(self, fn: Any) -> None:
        self.fn, self.calls = fn, 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.fn(*args, **kwargs)


@pytest.fixture
def whole(monkeypatch: pytest.MonkeyPatch) -> Counted:
    """Counts the handler-less reduction launches that take the whole way."""
    c = Counted(_reductions._prepare)
    monkeypatch.setattr(_reductions, "_prepare", c)
    return c


@pytest.fixture
def plans(monkeypatch: pytest.MonkeyPatch) -> Counted:
    """Counts the reduction plans made (a queue's kernels built, sizes chosen, partials)."""
    c = Counted(_reduction._plan)
    monkeypatch.setattr(_reduction, "_plan", c)
    return c


def _usm(q: sycl.queue, a: np.ndarray) -> Any:
    p = sycl.malloc_device(max(a.size, 1), q, dtype=a.dtype)
    if a.size:
        q.memcpy(p, np.ascontiguousarray(a), a.nbytes).wait()
    return p


def _read(q: sycl.queue, p: Any, n: int = 1) -> np.ndarray:
    out = np.empty(n, p.dtype)
    q.memcpy(out, p, out.nbytes).wait()
    return out


def _set(q: sycl.queue, p: Any, v: Any) -> None:
    q.memcpy(p, np.asarray([v], p.dtype), p.dtype.itemsize).wait()


def test_a_repeated_reduction_is_remembered_while_what_changes_is_checked(
        kq: sycl.queue, whole: Counted) -> None:
    """Captures (a number, a pointer), the variable, the identity and the property change
    between launches: each launch equals numpy, and only the first takes the whole way."""
    n = 1000
    rng = np.random.default_rng(3)
    xs = [rng.integers(-50, 50, n).astype(np.int32) for _ in range(2)]
    ps = [_usm(kq, x) for x in xs]
    outs = [sycl.malloc_device(1, kq, dtype=np.int32) for _ in range(2)]
    src, scale = ps[0], np.int32(1)

    def k(i: sycl.id, r: sycl.reducer) -> None:
        r.combine(src[i] * scale)

    r = sycl.range(n)
    kq.parallel_for(r, sycl.reduction(outs[0], sycl.plus(), [INIT()]), k).wait()
    assert _read(kq, outs[0])[0] == xs[0].sum()
    assert whole.calls == 1
    assert isinstance(kq.executor.launches[(_reductions.KEY, k.__code__)],
                      _reductions.RememberedReductions)
    for step in range(12):
        src, scale = ps[step % 2], np.int32(step - 3)      # same types, new values
        out = outs[(step // 2) % 2]                         # another variable of the same type
        _set(kq, out, 7 * step)
        init = step % 3 == 0                                # with and without the property
        red = sycl.reduction(out, sycl.plus(), [INIT()] if init else [])
        kq.parallel_for(sycl.range(n), red, k).wait()       # (a new range of the same extent)
        want = (0 if init else 7 * step) + int(xs[step % 2].sum()) * (step - 3)
        assert _read(kq, out)[0] == want, step
    assert whole.calls == 1
    for p in ps + outs:
        sycl.free(p, kq)


def test_the_identity_is_a_launch_argument(kq: sycl.queue, whole: Counted) -> None:
    """maximum with an identity above every value yields the identity: the identity given to
    each launch is the one that launch uses, on the remembered path too."""
    x = np.arange(-40, 60, dtype=np.int64)
    p, out = _usm(kq, x), sycl.malloc_device(1, kq, dtype=np.int64)

    def k(i: sycl.id, r: sycl.reducer) -> None:
        r.combine(p[i])

    for ident in (None, 1000, 70, None, -(2 ** 62), 123):
        red = (sycl.reduction(out, sycl.maximum(), [INIT()]) if ident is None
               else sycl.reduction(out, ident, sycl.maximum(), [INIT()]))
        kq.parallel_for(sycl.range(x.size), red, k).wait()
        assert _read(kq, out)[0] == max(59, ident if ident is not None else 59), ident
    assert whole.calls == 1
    sycl.free(p, kq)
    sycl.free(out, kq)


def test_what_a_remembered_launch_cannot_check_goes_the_whole_way(
        kq: sycl.queue, whole: Counted) -> None:
    """Another range, operator, variable type, capture type, kernel name, or a combiner the
    kernel was not compiled for: the whole way (a new plan or kernel), results still right;
    back to a remembered shape: remembered again."""
    x = np.arange(1, 301, dtype=np.float64)
    p = _usm(kq, x)
    out64, out32 = (sycl.malloc_device(1, kq, dtype=t) for t in (np.float64, np.float32))
    scale: Any = 1.0

    def k(i: sycl.id, r: sycl.reducer) -> None:
        r.combine(p[i] * scale)

    def run(n: int, out: Any, op: Any, name: str | None = None) -> float:
        kq.parallel_for(sycl.range(n), sycl.reduction(out, op, [INIT()]), k,
                        kernel_name=name).wait()
        return float(_read(kq, out)[0])

    assert run(300, out64, sycl.plus()) == x.sum()
    assert run(300, out64, sycl.plus()) == x.sum()
    assert whole.calls == 1
    assert run(200, out64, sycl.plus()) == x[:200].sum()          # another range
    assert run(200, out64, sycl.maximum()) == 200                 # another operator
    assert run(200, out32, sycl.maximum()) == 200                 # another variable type
    scale = 2                                                     # another capture type
    assert run(200, out32, sycl.maximum()) == 400
    assert run(200, out32, sycl.maximum(), "named_max") == 400    # a kernel name
    assert whole.calls == 6
    assert run(200, out32, sycl.maximum()) == 400                 # remembered again
    assert whole.calls == 6
    sycl.free(p, kq)
    sycl.free(out64, kq)
    sycl.free(out32, kq)


def test_custom_combiners_are_remembered_per_combiner(kq: sycl.queue, whole: Counted) -> None:
    """A custom combiner (identity given) is remembered with its cache key: the same function
    again is remembered, another one goes the whole way (its own kernels)."""
    x = np.arange(1, 65, dtype=np.int32)
    p, out = _usm(kq, x), sycl.malloc_device(1, kq, dtype=np.int32)

    def k(i: sycl.id, r: sycl.reducer) -> None:
        r.combine(p[i])

    def add(a: Any, b: Any) -> Any:
        return a + b

    def bigger(a: Any, b: Any) -> Any:
        return a if a > b else b

    for comb, want in ((add, x.sum()), (add, x.sum()), (bigger, 64), (bigger, 64),
                       (add, x.sum())):
        kq.parallel_for(sycl.range(64), sycl.reduction(out, 0, comb, [INIT()]), k).wait()
        assert _read(kq, out)[0] == want
    assert whole.calls == 3
    sycl.free(p, kq)
    sycl.free(out, kq)


def test_several_reductions_and_spans_repeat(kq: sycl.queue, whole: Counted) -> None:
    """A sum, a maximum and a 16-bin span histogram in one kernel, repeated over new data and
    alternating properties: numpy's results every time, one whole-way launch."""
    n, bins = 777, 16
    s, m = sycl.malloc_device(1, kq, dtype=np.int64), sycl.malloc_device(1, kq, dtype=np.int32)
    hist = sycl.malloc_device(bins, kq, dtype=np.int32)
    kq.memset(hist, 0, hist.nbytes).wait()
    total = np.zeros(bins, np.int64)
    rng = np.random.default_rng(11)
    src: Any = None

    def k(i: sycl.id, rs: sycl.reducer, rm: sycl.reducer, rh: sycl.reducer) -> None:
        v = src[i]
        rs += v
        rm.combine(v)
        rh[v % 16] += 1

    for step in range(5):
        x = rng.integers(0, 1000, n).astype(np.int32)
        src = _usm(kq, x)
        keep = step % 2 == 1
        _set(kq, s, 5)
        kq.parallel_for(sycl.range(n),
                        sycl.reduction(s, sycl.plus(), [] if keep else [INIT()]),
                        sycl.reduction(m, sycl.maximum(), [INIT()]),
                        sycl.reduction(sycl.span(hist, bins), sycl.plus()), k).wait()
        total += np.bincount(x % 16, minlength=bins)
        assert _read(kq, s)[0] == x.sum() + (5 if keep else 0)
        assert _read(kq, m)[0] == x.max()
        np.testing.assert_array_equal(_read(kq, hist, bins), total)
        sycl.free(src, kq)
    assert whole.calls == 1
    for p in (s, m, hist):
        sycl.free(p, kq)


def test_errors_on_the_remembered_path_are_the_whole_ways(kq: sycl.queue) -> None:
    """A freed variable, and two reductions into overlapping memory, after remembered
    launches: ``errc.invalid`` naming the user's line, as the first launch would say."""
    x = np.ones(64, np.float32)
    p = _usm(kq, x)
    a = sycl.malloc_device(4, kq, dtype=np.float32)

    def k(i: sycl.id, r1: sycl.reducer, r2: sycl.reducer) -> None:
        r1 += p[i]
        r2 += p[i]

    for _ in range(2):
        kq.parallel_for(sycl.range(64), sycl.reduction(a, sycl.plus(), [INIT()]),
                        sycl.reduction(a + 1, sycl.plus(), [INIT()]), k).wait()
    np.testing.assert_array_equal(_read(kq, a, 2), [64, 64])
    with pytest.raises(sycl.exception, match=r"test_reduction_relaunch.py:\d+.*overlaps") as e:
        kq.parallel_for(sycl.range(64), sycl.reduction(a, sycl.plus()),
                        sycl.reduction(a, sycl.plus()), k)
    assert e.value.code() == sycl.errc.invalid
    b = sycl.malloc_device(2, kq, dtype=np.float32)
    r1, r2 = sycl.reduction(b, sycl.plus(), [INIT()]), sycl.reduction(b + 1, sycl.plus(), [INIT()])
    kq.parallel_for(sycl.range(64), r1, r2, k).wait()
    sycl.free(b, kq)
    with pytest.raises(sycl.exception, match=r"test_reduction_relaunch.py:\d+.*freed") as e:
        kq.parallel_for(sycl.range(64), r1, r2, k)
    assert e.value.code() == sycl.errc.invalid
    kq.parallel_for(sycl.range(64), sycl.reduction(a, sycl.plus(), [INIT()]),
                    sycl.reduction(a + 2, sycl.plus(), [INIT()]), k).wait()
    np.testing.assert_array_equal(_read(kq, a, 3), [64, 64, 64])
    sycl.free(p, kq)
    sycl.free(a, kq)


def test_a_loop_of_reductions_holds_one_entry(kq: sycl.queue) -> None:
    """200 launches without a wait hold their memory in one entry of the queue's in-flight
    list (replaced launch after launch), and the last result is right."""
    x = np.arange(512, dtype=np.int32)
    p, out = _usm(kq, x), sycl.malloc_device(1, kq, dtype=np.int32)

    def k(i: sycl.id, r: sycl.reducer) -> None:
        r += p[i]

    kq.parallel_for(sycl.range(512), sycl.reduction(out, sycl.plus(), [INIT()]), k).wait()
    kq.wait()
    for _ in range(200):
        kq.parallel_for(sycl.range(512), sycl.reduction(out, sycl.plus(), [INIT()]), k)
    assert len(kq.executor.inflight) <= 2
    kq.wait()
    assert _read(kq, out)[0] == x.sum()
    sycl.free(p, kq)
    sycl.free(out, kq)


def test_nd_range_reductions_repeat_and_the_local_range_matters(
        kq: sycl.queue, whole: Counted) -> None:
    """nd_range reductions: a repeat is remembered; another local range is another launch."""
    n = 1024
    x = np.random.default_rng(5).integers(-9, 9, n).astype(np.int64)
    p, out = _usm(kq, x), sycl.malloc_device(1, kq, dtype=np.int64)

    def k(it: sycl.nd_item, r: sycl.reducer) -> None:
        r += p[it.get_global_id(0)]

    for local in (64, 64, 32, 32, 64):
        kq.parallel_for(sycl.nd_range(sycl.range(n), sycl.range(local)),
                        sycl.reduction(out, sycl.plus(), [INIT()]), k).wait()
        assert _read(kq, out)[0] == x.sum()
    assert whole.calls == 3
    sycl.free(p, kq)
    sycl.free(out, kq)


def test_buffer_reductions_reuse_the_plan_and_keep_their_dependencies(
        kq: sycl.queue, plans: Counted) -> None:
    """Command groups with a buffer reduction, repeated over other buffers and captures: one
    plan; each result reaches the host through the buffer (the dependency recorded), a later
    kernel reading the variable sees it, and without the property the old value counts."""
    n = 500
    rng = np.random.default_rng(8)
    for step in range(6):
        x = rng.integers(-100, 100, n).astype(np.int32)
        total = np.array([3 * step], np.int32)
        twice = np.zeros(1, np.int32)
        init = step % 2 == 0
        with sycl.buffer(x) as X, sycl.buffer(total) as T, sycl.buffer(twice) as W:
            def cg(h: sycl.handler) -> None:
                a = X.get_access(h, sycl.access_mode.read)
                red = sycl.reduction(T, h, sycl.plus(), properties=[INIT()] if init else [])
                h.parallel_for(sycl.range(n), red, lambda i, r: r.combine(a[i] * (step + 1)))

            kq.submit(cg)

            def after(h: sycl.handler) -> None:
                t = T.get_access(h, sycl.access_mode.read)
                w = W.get_access(h, sycl.access_mode.write)
                h.single_task(lambda: w.__setitem__(0, t[0] * 2))

            kq.submit(after)
            with T.get_host_access() as seen:
                want = (0 if init else 3 * step) + int(x.sum()) * (step + 1)
                assert seen[0] == want, step
        assert twice[0] == 2 * want
    assert plans.calls == 1


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.tuples(st.sampled_from([1, 7, 256, 1000, 4099]),
                                st.booleans(), st.sampled_from(["plus", "maximum"]),
                                st.integers(-5, 5), st.booleans()),
                      min_size=1, max_size=8))
def test_any_sequence_of_launches_matches_numpy(kq: sycl.queue, steps: list[Any]) -> None:
    """Any sequence of (range, property, operator, captured factor, which variable): each
    launch's result is numpy's, whichever way it took."""
    x = np.random.default_rng(len(steps)).integers(-1000, 1000, 4099).astype(np.int64)
    p = _usm(kq, x)
    outs = [sycl.malloc_device(1, kq, dtype=np.int64) for _ in range(2)]
    factor = np.int64(1)

    def k(i: sycl.id, r: sycl.reducer) -> None:
        r.combine(p[i] * factor)

    for n, init, op, f, which in steps:
        factor = np.int64(f)
        out = outs[which]
        _set(kq, out, 11)
        kq.parallel_for(sycl.range(n), sycl.reduction(out, getattr(sycl, op)(),
                                                      [INIT()] if init else []), k).wait()
        vals = x[:n] * f
        got = vals.sum() if op == "plus" else vals.max()
        if not init:
            got = got + 11 if op == "plus" else max(got, 11)
        assert _read(kq, out)[0] == got, (n, init, op, f)
    for q in [p, *outs]:
        sycl.free(q, kq)


def test_one_kernel_code_reduces_into_a_pointer_then_a_buffer(kq: sycl.queue) -> None:
    """The same command-group code with a USM variable, then a buffer, then USM again (a
    single-pass kernel takes the variable as an argument: NVIDIA's OpenCL refused a kernel
    whose argument had been an SVM pointer and then a buffer, CL_INVALID_KERNEL_ARGS):
    every result is numpy's."""
    x = np.arange(-500, 3000, dtype=np.int64)
    usm = sycl.malloc_device(1, kq, dtype=np.int64)

    def submit(var: Any, h_var: bool) -> None:
        with sycl.buffer(x) as X:
            def cg(h: sycl.handler) -> None:
                a = X.get_access(h, sycl.access_mode.read)
                red = (sycl.reduction(var, h, sycl.plus(), [INIT()]) if h_var
                       else sycl.reduction(var, sycl.plus(), [INIT()]))
                h.parallel_for(sycl.range(x.size), red, lambda i, r: r.combine(a[i] * 3))

            kq.submit(cg).wait()

    for step in range(3):
        out = np.zeros(1, np.int64)
        _set(kq, usm, 7)
        if step == 1:
            with sycl.buffer(out) as B:
                submit(B, True)
            assert out[0] == 3 * x.sum(), step
        else:
            submit(usm, False)
            assert _read(kq, usm)[0] == 3 * x.sum(), step
    sycl.free(usm, kq)


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.tuples(st.sampled_from([1, 300, 4099]), st.booleans(),
                                st.sampled_from(["plus", "maximum"]),
                                st.sampled_from(["int64", "float64"]),
                                st.sampled_from(["buffer", "usm"]), st.integers(-3, 3)),
                      min_size=1, max_size=8))
def test_command_groups_find_their_plan_by_what_they_submit(
        kq: sycl.queue, monkeypatch: pytest.MonkeyPatch, steps: list[Any]) -> None:
    """The same command-group code submitted over other ranges, operators, variable types and
    kinds, with other captured values: each result is numpy's, and a command group takes the
    first submit's way (the kernel cache, the plan) once per range, operator, variable type
    and kind -- a repeat finds its plan (pysycl._kernels.reduction_launch.MEMO)."""
    firsts = Counted(_reduction._kernel_and_plan)
    monkeypatch.setattr(_reduction, "_kernel_and_plan", firsts)
    x = np.random.default_rng(len(steps)).integers(-1000, 1000, 4099).astype(np.int64)
    seen: set[tuple[Any, ...]] = set()
    with sycl.buffer(x) as X:
        for n, init, op, dt, kind, f in steps:
            factor = np.int64(f)
            old = np.array([11], dt)
            usm = sycl.malloc_device(1, kq, dtype=dt)
            _set(kq, usm, 11)
            with sycl.buffer(old) as V:
                def cg(h: sycl.handler) -> None:
                    a = X.get_access(h, sycl.access_mode.read)
                    props = [INIT()] if init else []
                    red = (sycl.reduction(V, h, getattr(sycl, op)(), props) if kind == "buffer"
                           else sycl.reduction(usm, getattr(sycl, op)(), props))
                    h.parallel_for(sycl.range(n), red, lambda i, r: r.combine(a[i] * factor))

                kq.submit(cg).wait()
            got = old[0] if kind == "buffer" else _read(kq, usm)[0]
            sycl.free(usm, kq)
            vals = x[:n] * f
            want = vals.sum() if op == "plus" else vals.max()
            if not init:
                want = want + 11 if op == "plus" else max(want, 11)
            assert got == want, (n, init, op, dt, kind, f)
            seen.add((n, op, dt, kind))
    assert firsts.calls <= len(seen)


def test_a_recording_queue_records_a_handler_less_reduction(kq: sycl.queue) -> None:
    """``q.parallel_for(r, red, k)`` while the queue records a command graph is a node, not a
    launch; replaying the graph reduces again (the same result as eager)."""
    x = np.arange(100, dtype=np.int32)
    p, out = _usm(kq, x), sycl.malloc_device(1, kq, dtype=np.int32)

    def k(i: sycl.id, r: sycl.reducer) -> None:
        r += p[i]

    kq.parallel_for(sycl.range(100), sycl.reduction(out, sycl.plus(), [INIT()]), k).wait()
    g = syclex.command_graph(kq.get_context(), kq.get_device())
    g.begin_recording(kq)
    kq.parallel_for(sycl.range(100), sycl.reduction(out, sycl.plus()), k)  # adds to out
    g.end_recording()
    assert _read(kq, out)[0] == 4950  # recording launched nothing
    exec_g = g.finalize()
    kq.ext_oneapi_graph(exec_g).wait()
    kq.ext_oneapi_graph(exec_g).wait()
    assert _read(kq, out)[0] == 3 * 4950
    sycl.free(p, kq)
    sycl.free(out, kq)

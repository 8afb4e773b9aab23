"""A command group submitted again takes its kept launch, and only when it may
(``pysycl._kernels.again``, issue 27): kernels with reductions and without.

The kept launch (:class:`~pysycl._kernels.again.Again`) replays the previous submit's kernel
arguments; any change of what they were made of -- the input buffer, the variable, its
range, ``initialize_to_identity``, the operator, the index space, the data moved to the
host and back, a USM pointer, a global -- must take the whole way. Random sequences of such
submits, none waited for until the end, must leave every buffer and variable with numpy's
values.
"""

from __future__ import annotations

import threading
import types

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pysycl as sycl
from pysycl._kernels.again import AGAIN, Again

INIT = sycl.property.reduction.initialize_to_identity


def _kept(q: sycl.queue) -> list[Again]:
    return [v for k, v in q.executor.launches.items()
            if type(k) is tuple and k and k[0] == AGAIN]


def test_the_same_group_again_takes_the_kept_launch(kq: sycl.queue) -> None:
    """The second submit keeps an Again; the third and later ones take it (the same object
    stays kept: a whole-way submit would keep a new one), and every result is right."""
    x = np.arange(1000, dtype=np.float32)
    with sycl.buffer(x) as X, sycl.buffer(np.zeros(1, np.float32)) as S:
        def cg(h: sycl.handler) -> None:
            a = X.get_access(h, sycl.access_mode.read)
            h.parallel_for(sycl.range(1000), sycl.reduction(S, h, sycl.plus(),
                                                            properties=[INIT()]),
                           lambda i, r: r.combine(a[i]))

        kq.submit(cg)
        kq.submit(cg)  # (the first one learns what the kernel reads)
        kept = _kept(kq)
        assert len(kept) == 1, kq.executor.launches.keys()
        for _ in range(5):
            kq.submit(cg)
            assert _kept(kq) == kept and _kept(kq)[0] is kept[0]
        assert S.get_host_access()[0] == x.sum()


def _twice(v):  # type: ignore[no-untyped-def]
    return v * 2


def test_a_group_that_cannot_keep_its_launch_keeps_none(kq: sycl.queue) -> None:
    """A kernel name, or a kernel calling a helper function (its captures are read through
    the call graph): no kept launch, the whole way each time, and the results stay right."""
    x = np.arange(64, dtype=np.int32)
    with sycl.buffer(x) as X, sycl.buffer(np.zeros(1, np.int32)) as S:
        def named(h: sycl.handler) -> None:
            a = X.get_access(h, sycl.access_mode.read)
            h.parallel_for(sycl.range(64), sycl.reduction(S, h, sycl.plus(), properties=[INIT()]),
                           lambda i, r: r.combine(a[i]), kernel_name="named_sum")

        def helper(h: sycl.handler) -> None:
            a = X.get_access(h, sycl.access_mode.read)
            h.parallel_for(sycl.range(64), sycl.reduction(S, h, sycl.plus(), properties=[INIT()]),
                           lambda i, r: r.combine(_twice(a[i])))

        for cg, want in ((named, x.sum()), (helper, 2 * x.sum())):
            for _ in range(3):
                kq.submit(cg)
            assert not _kept(kq)
            assert S.get_host_access()[0] == want


OPS = {"plus": (sycl.plus, np.sum), "max": (sycl.maximum, np.max)}


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 1), st.sampled_from([1, 5, 300, 1000]),
                          st.booleans(), st.sampled_from(sorted(OPS)), st.integers(0, 3)),
                min_size=1, max_size=12))
def test_random_submits_match_numpy(kq: sycl.queue,
                                    steps: list[tuple[int, int, int, bool, str, int]]) -> None:
    """Submits of one command-group code where each step picks the input buffer, the
    variable, the range, ``initialize_to_identity`` and the operator, and sometimes touches
    the input on the host (its data moves there and back) or rewrites it with a kernel
    first -- none waited for: each variable ends with numpy's value."""
    rng = np.random.default_rng(len(steps))
    xs = [rng.integers(-50, 50, 1000).astype(np.int64) for _ in range(3)]
    vals = [x.copy() for x in xs]
    want = [np.int64(3), np.int64(-4)]
    bufs = [sycl.buffer(x) for x in xs]
    outs = [sycl.buffer(np.array([w], np.int64)) for w in want]
    state: dict[str, object] = {}

    def cg(h: sycl.handler) -> None:
        a = state["X"].get_access(h, sycl.access_mode.read)  # type: ignore[attr-defined]
        props = [INIT()] if state["init"] else []
        red = sycl.reduction(state["S"], h, OPS[state["op"]][0](),  # type: ignore[index]
                             properties=props)
        h.parallel_for(sycl.range(state["n"]), red,  # type: ignore[arg-type]
                       lambda i, r: r.combine(a[i]))

    for xi, si, n, init, op, touch in steps:
        if touch == 1:  # the input's data to the host and back
            with bufs[xi].get_host_access() as acc:
                acc[0] += 1
            vals[xi][0] += 1
        elif touch == 2:  # rewritten by a kernel first
            def neg(h: sycl.handler, B: sycl.buffer = bufs[xi]) -> None:
                w = B.get_access(h, sycl.access_mode.read_write)
                h.parallel_for(sycl.range(1000), lambda i: w.__setitem__(i, -w[i]))
            kq.submit(neg)
            vals[xi] = -vals[xi]
        state.update(X=bufs[xi], S=outs[si], n=n, init=init, op=op)
        kq.submit(cg)
        part = OPS[op][1](vals[xi][:n])
        want[si] = part if init else OPS[op][1](np.array([want[si], part]))
    for S, w in zip(outs, want, strict=True):
        assert S.get_host_access()[0] == w
    for B, v in zip(bufs, vals, strict=True):
        assert np.array_equal(B.get_host_access()[:], v)


def test_a_new_buffer_in_place_of_a_destroyed_one(kq: sycl.queue) -> None:
    """The input buffer destroyed and a new one made (possibly at the same address) between
    submits of the same code: each sum is the new data's."""
    S = sycl.buffer(np.zeros(1, np.float64))
    for k in range(6):
        x = np.full(512, float(k + 1))
        with sycl.buffer(x) as X:
            def cg(h: sycl.handler) -> None:
                a = X.get_access(h, sycl.access_mode.read)
                h.parallel_for(sycl.range(512), sycl.reduction(S, h, sycl.plus(),
                                                                properties=[INIT()]),
                               lambda i, r: r.combine(a[i]))
            kq.submit(cg)
            kq.submit(cg)
        assert S.get_host_access()[0] == 512.0 * (k + 1)


def test_threads_submitting_the_same_code(kq: sycl.queue) -> None:
    """Threads submitting one command-group code over their own buffers on one queue: the
    kept launch never runs one thread's arguments for another's submit."""
    n, rounds, width = 2048, 20, 4
    xs = [np.full(n, i + 1, np.int64) for i in range(width)]
    bufs = [sycl.buffer(x) for x in xs]
    outs = [sycl.buffer(np.zeros(1, np.int64)) for _ in range(width)]
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            X, S = bufs[i], outs[i]

            def cg(h: sycl.handler) -> None:
                a = X.get_access(h, sycl.access_mode.read)
                h.parallel_for(sycl.range(n), sycl.reduction(S, h, sycl.plus()),
                               lambda j, r: r.combine(a[j]))
            for _ in range(rounds):
                kq.submit(cg)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(width)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for i, S in enumerate(outs):
        assert S.get_host_access()[0] == rounds * n * (i + 1), i


def test_usm_command_groups_keep_their_launch(kq: sycl.queue) -> None:
    """A command group over USM (a captured pointer, a pointer variable) keeps its launch
    too; another pointer takes the whole way; a freed pointer gets the whole way's error
    and the other variable keeps its value."""
    n = 3000
    xs = [np.arange(n, dtype=np.int64) * (k + 1) for k in range(2)]
    ps = [sycl.malloc_device(n, kq, dtype=np.int64) for _ in xs]
    out = sycl.malloc_device(1, kq, dtype=np.int64)
    try:
        for p, x in zip(ps, xs, strict=True):
            kq.memcpy(p, x, x.nbytes).wait()
        state = {"p": ps[0]}

        def cg(h: sycl.handler) -> None:
            p = state["p"]
            h.parallel_for(sycl.range(n), sycl.reduction(out, sycl.plus(), [INIT()]),
                           lambda i, r: r.combine(p[i]))

        got = np.zeros(1, np.int64)
        for k in (0, 0, 0, 1, 1, 0):
            state["p"] = ps[k]
            kq.submit(cg)
            if k == 0 and _kept(kq):
                kept = _kept(kq)[0]
            kq.memcpy(got, out, 8).wait()
            assert got[0] == xs[k].sum(), k
        assert _kept(kq) and _kept(kq)[0].holding
        sycl.free(ps[1], kq)
        state["p"] = ps[1]
        with pytest.raises(sycl.exception) as e:
            kq.submit(cg)
        assert e.value.code() == sycl.errc.invalid
        state["p"] = ps[0]
        kq.submit(cg)
        kq.memcpy(got, out, 8).wait()
        assert got[0] == xs[0].sum()
        assert kept is not None
    finally:
        sycl.free(ps[0], kq)
        sycl.free(out, kq)


SCALE = 2
params = types.ModuleType("params")
params.K = 3


def _global_kernel(i, r):  # type: ignore[no-untyped-def]
    r.combine(GP[i] * SCALE + params.K)


def test_globals_and_module_attributes_change_between_submits(kq: sycl.queue) -> None:
    """A kernel reading a global pointer, a global scalar and a module's attribute: a new
    value of any of them between submits of one command group is the next result's (the
    kept launch checks them; a scalar and a module attribute are compile-time constants)."""
    global GP, SCALE
    n = 500
    x = np.arange(n, dtype=np.int64)
    GP = sycl.malloc_device(n, kq, dtype=np.int64)
    try:
        kq.memcpy(GP, x, x.nbytes).wait()
        with sycl.buffer(np.zeros(1, np.int64)) as S:
            def cg(h: sycl.handler) -> None:
                h.parallel_for(sycl.range(n), sycl.reduction(S, h, sycl.plus(), properties=[INIT()]),
                               _global_kernel)

            for scale, k in ((2, 3), (2, 3), (2, 3), (5, 3), (5, 3), (5, 7), (5, 7), (2, 3)):
                SCALE, params.K = scale, k
                kq.submit(cg)
                assert S.get_host_access()[0] == (x * scale + k).sum(), (scale, k)
            assert _kept(kq)
    finally:
        sycl.free(GP, kq)
        SCALE, params.K = 2, 3


GP = None


# ------------------------------------------------------------- kernels without reductions
@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2), st.sampled_from([1, 7, 256, 600]),
                          st.booleans(), st.integers(0, 2)), min_size=1, max_size=12))
def test_plain_command_groups_again_match_numpy(kq: sycl.queue,
                                                steps: list[tuple[int, int, int, bool, int]]
                                                ) -> None:
    """``y[i] += x[i] * k`` as one command-group code where each step picks the input and the
    output buffer (the same one too: read and written), the range, a range or an nd_range,
    and sometimes touches the input on the host first -- none waited for: every buffer ends
    with numpy's values."""
    rng = np.random.default_rng(len(steps))
    hosts = [rng.integers(-9, 9, 600).astype(np.int64) for _ in range(3)]
    vals = [h.copy() for h in hosts]
    bufs = [sycl.buffer(h) for h in hosts]
    state: dict[str, object] = {}

    def cg(h: sycl.handler) -> None:
        a = state["X"].get_access(h, sycl.access_mode.read)  # type: ignore[attr-defined]
        b = state["Y"].get_access(h, sycl.access_mode.read_write)  # type: ignore[attr-defined]
        n = state["n"]
        if state["nd"]:
            h.parallel_for(sycl.nd_range(sycl.range(n), sycl.range(1)),  # type: ignore[arg-type]
                           lambda it: b.__setitem__(it.get_global_id(0),
                                                    b[it.get_global_id(0)] + a[it.get_global_id(0)] * 3))
        else:
            h.parallel_for(sycl.range(n), lambda i: b.__setitem__(i, b[i] + a[i] * 3))  # type: ignore[arg-type]

    for xi, yi, n, nd, touch in steps:
        if touch == 1:
            with bufs[xi].get_host_access() as acc:
                acc[0] -= 1
            vals[xi][0] -= 1
        state.update(X=bufs[xi], Y=bufs[yi], n=n, nd=nd)
        kq.submit(cg)
        if xi == yi:
            vals[yi][:n] = vals[yi][:n] * 4
        else:
            vals[yi][:n] += vals[xi][:n] * 3
    for B, v in zip(bufs, vals, strict=True):
        assert np.array_equal(B.get_host_access()[:], v)


def test_plain_usm_group_keeps_its_launch_and_a_graph_replays_it(kq: sycl.queue) -> None:
    """A USM command group submitted again takes its kept launch (the same one stays kept);
    the same group recorded into a command graph and replayed gives the same results; a
    freed pointer gets the whole way's error."""
    from pysycl.ext.oneapi import experimental as syclex

    n = 1024
    ps = [sycl.malloc_device(n, kq, dtype=np.float32) for _ in range(2)]
    try:
        for p in ps:
            kq.memset(p, 0, n * 4).wait()
        state = {"p": ps[0]}

        def cg(h: sycl.handler) -> None:
            p = state["p"]
            h.parallel_for(sycl.range(n), lambda i: p.__setitem__(i, p[i] + 1.0))

        kq.submit(cg)
        kq.submit(cg)
        kept = _kept(kq)
        assert len(kept) == 1
        kq.submit(cg)
        assert _kept(kq)[0] is kept[0]
        state["p"] = ps[1]
        kq.submit(cg)
        g = syclex.command_graph(kq.get_context(), kq.get_device())
        g.add(cg)
        ex = g.finalize()
        for _ in range(3):
            kq.ext_oneapi_graph(ex)
        kq.wait()
        got = [np.zeros(n, np.float32) for _ in ps]
        for p, out in zip(ps, got, strict=True):
            kq.memcpy(out, p, n * 4).wait()
        assert np.all(got[0] == 3.0) and np.all(got[1] == 4.0), (got[0][:3], got[1][:3])
        sycl.free(ps[1], kq)
        with pytest.raises(sycl.exception) as e:
            kq.submit(cg)
        assert e.value.code() == sycl.errc.invalid
    finally:
        sycl.free(ps[0], kq)


def test_kept_launch_keeps_dependencies_and_profiling(kq: sycl.queue) -> None:
    """A kept launch after ``depends_on`` runs after the event (a kernel that rewrites the
    input first), and on a profiling queue its events carry their times."""
    n = 256
    pq = sycl.queue(kq.get_device(), properties=[sycl.property.queue.enable_profiling()])
    with sycl.buffer(np.zeros(n, np.int64)) as X, sycl.buffer(np.zeros(1, np.int64)) as S:
        def cg(h: sycl.handler, dep: sycl.event | None) -> None:
            if dep is not None:
                h.depends_on(dep)
            a = X.get_access(h, sycl.access_mode.read)
            h.parallel_for(sycl.range(n), sycl.reduction(S, h, sycl.plus(), properties=[INIT()]),
                           lambda i, r: r.combine(a[i]))

        for k in range(1, 5):
            def fill(h: sycl.handler, k: int = k) -> None:
                w = X.get_access(h, sycl.access_mode.write)
                h.parallel_for(sycl.range(n), lambda i: w.__setitem__(i, k))

            ev = pq.submit(fill)
            done = pq.submit(lambda h, ev=ev: cg(h, ev))
            done.wait()
            assert S.get_host_access()[0] == n * k
            start = done.get_profiling_info(sycl.info.event_profiling.command_start)
            end = done.get_profiling_info(sycl.info.event_profiling.command_end)
            assert end >= start > 0
        assert _kept(pq)

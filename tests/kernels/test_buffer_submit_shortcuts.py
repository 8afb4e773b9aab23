"""The short ways of a buffer command group's submit (issue 27) keep its meaning.

A submit of ``X.get_access(h, mode)`` plus ``sycl.reduction(S, h, sycl.plus(), ...)`` plus
``h.parallel_for(sycl.range(n), red, k)`` takes short ways: the accessors are made without
the constructor's parsing (``accessor.bound``), the reduction's operator facts come from
one cache per (operator, type), a kernel code already checked for as many parameters skips
the check, a group's own reduction variables skip ``check_command``, and the plan's run
fills the final kernel's variable itself. Here the same command-group code is submitted
while the buffers, the access modes, the reduction variable and its property change, with
no wait between submits: every result and every dependency must be the general way's, and
bad input must still fail with the user's file:line.
"""

from __future__ import annotations

import numpy as np
import pytest

import pysycl as sycl
from pysycl._memory.accessor import access_mode

INIT = sycl.property.reduction.initialize_to_identity


def test_changing_buffers_modes_and_variables_between_submits(kq: sycl.queue) -> None:
    """One command-group code over two inputs and two variables, the input rewritten by a
    kernel between reductions and the property toggled, all submitted before one wait:
    each variable ends with numpy's value (every write-after-read and read-after-write
    dependency kept), and the host data stays as it was."""
    n = 777
    x1 = np.arange(n, dtype=np.int64)
    x2 = np.full(1000, 3, np.int64)
    host1, host2 = x1.copy(), x2.copy()
    s1, s2 = np.array([5], np.int64), np.array([7], np.int64)
    with sycl.buffer(x1) as X1, sycl.buffer(x2) as X2, sycl.buffer(s1) as S1, \
            sycl.buffer(s2) as S2:
        state = {"X": X1, "S": S1, "n": n, "init": True}

        def cg(h: sycl.handler) -> None:
            a = state["X"].get_access(h, sycl.access_mode.read)
            props = [INIT()] if state["init"] else []
            red = sycl.reduction(state["S"], h, sycl.plus(), properties=props)
            h.parallel_for(sycl.range(state["n"]), red, lambda i, r: r.combine(a[i]))

        def double(buf: sycl.buffer, m: int) -> None:
            def g(h: sycl.handler) -> None:
                w = buf.get_access(h, sycl.access_mode.read_write)
                h.parallel_for(sycl.range(m), lambda i: w.__setitem__(i, w[i] * 2))
            kq.submit(g)

        want1, want2 = 5, 7
        v1, v2 = x1.copy(), x2.copy()
        for step in range(6):
            state["init"] = step % 3 == 0
            kq.submit(cg)  # S1 from X1
            want1 = (0 if state["init"] else want1) + int(v1.sum())
            double(X1, n)  # after the read above, before the next one
            v1 *= 2
            state.update(X=X2, S=S2, n=1000)
            kq.submit(cg)  # the same code: another input, another variable
            want2 = (0 if state["init"] else want2) + int(v2.sum())
            state.update(X=X1, S=S1, n=n)
        kq.wait()
        with S1.get_host_access(sycl.access_mode.read) as g1, \
                S2.get_host_access(sycl.access_mode.read) as g2:
            assert (g1[0], g2[0]) == (want1, want2)
        with X1.get_host_access(sycl.access_mode.read) as xs:
            np.testing.assert_array_equal(np.asarray(xs), v1)
    np.testing.assert_array_equal(x2, host2)  # read only: written back as it was
    np.testing.assert_array_equal(x1, host1 * 2 ** 6)  # written back after the doublings


def test_a_reduction_of_another_group_names_the_users_line(kq: sycl.queue) -> None:
    """A buffer reduction made in one command group and used in another: errc.invalid with
    the line that made it; nothing ran, the variable's data is intact."""
    s = np.array([9], np.float32)
    x = np.ones(64, np.float32)
    with sycl.buffer(x) as X, sycl.buffer(s) as S:
        kept = []

        def first(h: sycl.handler) -> None:
            a = X.get_access(h, sycl.access_mode.read)
            kept.append(sycl.reduction(S, h, sycl.plus()))  # the reduction's line
            h.parallel_for(sycl.range(64), kept[0], lambda i, r: r.combine(a[i]))

        kq.submit(first).wait()
        line = first.__code__.co_firstlineno + 2

        def second(h: sycl.handler) -> None:
            a = X.get_access(h, sycl.access_mode.read)
            h.parallel_for(sycl.range(64), kept[0], lambda i, r: r.combine(a[i]))

        with pytest.raises(sycl.exception) as e:
            kq.submit(second)
        assert e.value.code() == sycl.errc.invalid
        assert f"{__file__.rsplit('/', 1)[-1]}:{line}" in str(e.value)
        assert "another command group" in str(e.value)
    assert s[0] == 9 + 64


def test_bad_buffer_reductions_and_closed_buffers_fail_as_before(kq: sycl.queue) -> None:
    """The short ways fall back to the general ones: a two-element variable is errc.invalid
    naming the user's line, a bitwise operator on floats a TypeError, and a closed buffer's
    accessor errc.invalid (from get_access, as the constructor says it)."""
    two = sycl.buffer(np.zeros(2, np.float32))
    x = np.ones(8, np.float32)
    with sycl.buffer(x) as X:
        def bad(h: sycl.handler) -> None:
            sycl.reduction(two, h, sycl.plus())  # line + 1

        with pytest.raises(sycl.exception) as e:
            kq.submit(bad)
        assert e.value.code() == sycl.errc.invalid
        assert f":{bad.__code__.co_firstlineno + 1}:" in str(e.value) + ":"
        assert "exactly one element" in str(e.value)

        def bitwise(h: sycl.handler) -> None:
            sycl.reduction(sycl.buffer(np.zeros(1, np.float32)), h, sycl.bit_or())

        with pytest.raises(TypeError, match="integer type"):
            kq.submit(bitwise)
    with pytest.raises(sycl.exception) as e:
        kq.submit(lambda h: X.get_access(h, sycl.access_mode.read))
    assert e.value.code() == sycl.errc.invalid and "closed" in str(e.value)


def test_a_checked_kernel_code_is_checked_again_for_another_parameter_count(
        kq: sycl.queue) -> None:
    """parallel_for skips the signature check only for a code checked for as many
    parameters: the same code without its reduction is a kernel_signature_error."""
    s = np.zeros(1, np.int32)
    with sycl.buffer(s) as S:
        def k(i: sycl.id, r: sycl.reducer) -> None:
            r.combine(1)

        kq.submit(lambda h: h.parallel_for(sycl.range(10), sycl.reduction(S, h, sycl.plus()),
                                           k)).wait()
        with pytest.raises(sycl.kernel_signature_error):
            kq.submit(lambda h: h.parallel_for(sycl.range(10), k))
    assert s[0] == 10


def test_access_modes_hash_by_identity() -> None:
    """access_mode members (hashed by identity for the submit path) stay dictionary keys
    equal only to themselves, found by name and value."""
    d = {m: m.value for m in access_mode}
    assert all(d[access_mode[m.name]] == m.value for m in access_mode)
    assert access_mode("read") is access_mode.read and access_mode.read != "read"
    assert len({*access_mode, *access_mode}) == len(access_mode)


def test_the_closure_read_follows_the_captures_between_submits(kq: sycl.queue) -> None:
    """The reduction submit reads a closure of the group's accessors without
    ``capture_values``: the same kernel code whose captured accessor changes type, length
    and buffer between submits (no wait), then captures a number too (the general way),
    gives numpy's sums each time."""
    xf = np.arange(50, dtype=np.float32)
    xi = np.arange(300, dtype=np.int64)
    sf, si = np.zeros(1, np.float32), np.zeros(1, np.int64)
    with sycl.buffer(xf) as XF, sycl.buffer(xi) as XI, sycl.buffer(sf) as SF, \
            sycl.buffer(si) as SI:
        state: dict = {"X": XF, "S": SF, "n": 50, "scale": None}
        got = []

        def cg(h: sycl.handler) -> None:
            a = state["X"].get_access(h, sycl.access_mode.read)
            red = sycl.reduction(state["S"], h, sycl.plus(), properties=[INIT()])
            scale = state["scale"]
            if scale is None:
                h.parallel_for(sycl.range(state["n"]), red, lambda i, r: r.combine(a[i]))
            else:
                h.parallel_for(sycl.range(state["n"]), red,
                               lambda i, r: r.combine(a[i] * scale))

        for step in range(4):
            state.update(X=XF, S=SF, n=50, scale=None if step < 2 else 2)
            kq.submit(cg)
            state.update(X=XI, S=SI, n=300 - step)
            kq.submit(cg)
            kq.wait()
            with SF.get_host_access() as f, SI.get_host_access() as i:
                got.append((float(f[0]), int(i[0])))
    for step, (f, i) in enumerate(got):
        k = 1 if step < 2 else 2
        assert f == k * float(xf.sum()) and i == k * int(xi[:300 - step].sum())
    assert (xf == np.arange(50)).all() and (xi == np.arange(300)).all()


def test_a_foreign_or_unassigned_capture_fails_as_before(kq: sycl.queue) -> None:
    """A kernel whose closure holds an accessor of an earlier command group, or a variable
    not assigned yet, takes ``capture_values``, which says what is wrong; nothing ran."""
    s = np.array([4], np.float32)
    x = np.ones(16, np.float32)
    with sycl.buffer(x) as X, sycl.buffer(s) as S:
        kept = []

        def first(h: sycl.handler) -> None:
            a = X.get_access(h, sycl.access_mode.read)
            kept.append(a)
            h.parallel_for(sycl.range(16), sycl.reduction(S, h, sycl.plus()),
                           lambda i, r: r.combine(a[i]))

        kq.submit(first).wait()

        def foreign(h: sycl.handler) -> None:
            X.get_access(h, sycl.access_mode.read)
            a = kept[0]
            h.parallel_for(sycl.range(16), sycl.reduction(S, h, sycl.plus()),
                           lambda i, r: r.combine(a[i]))

        with pytest.raises(sycl.exception) as e:
            kq.submit(foreign)
        assert e.value.code() == sycl.errc.invalid

        def unassigned(h: sycl.handler) -> None:
            a = X.get_access(h, sycl.access_mode.read)
            h.parallel_for(sycl.range(16), sycl.reduction(S, h, sycl.plus()),
                           lambda i, r: r.combine(a[i]))  # noqa: F821 - deleted below
            del a  # the kernel's cell is empty when the submit reads it

        with pytest.raises(Exception, match="'a'"):
            kq.submit(unassigned)
    assert s[0] == 4 + 16

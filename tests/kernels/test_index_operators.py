"""SYCL 2020 §4.9.1's ``id``/``range`` operators in kernels (issue 25 item 4).

Every operator with an id or range on both sides, a number on the right and a number on
the LEFT (``2 << i``, ``n - i``, ``10 // r``), the compound assignments, unary ``+``/``-``,
the spec's elementwise comparisons and ``&&``/``||`` (the ``elementwise_*`` methods,
docs/mapping.md), ``==``/``!=``, and ``sycl.id``/``sycl.range``/``sycl.nd_range`` built in
the kernel -- over 1 to 3 dimensions and random values (hypothesis), on the compiled
device and the host_debuggable device, each compared with C++'s arithmetic computed here
in plain Python (division truncates toward zero, ``%`` has the dividend's sign).
"""

from __future__ import annotations

import operator
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pysycl as sycl

HOST = sycl.aspect_selector(sycl.aspect.host_debuggable)
N = 4  # work-items; work-item w adds w to the first component of the left operand


def _cdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _cmod(a: int, b: int) -> int:
    return a - _cdiv(a, b) * b


#: The binary operators of §4.9.1 as C++ computes them on the components
BINARY: list[tuple[str, Callable[[int, int], int]]] = [
    ("+", operator.add), ("-", operator.sub), ("*", operator.mul), ("//", _cdiv),
    ("/", _cdiv), ("%", _cmod), ("<<", operator.lshift), (">>", operator.rshift),
    ("&", operator.and_), ("|", operator.or_), ("^", operator.xor)]
ELEMENTWISE: list[tuple[str, Callable[[int, int], int]]] = [
    ("lt", lambda a, b: int(a < b)), ("le", lambda a, b: int(a <= b)),
    ("gt", lambda a, b: int(a > b)), ("ge", lambda a, b: int(a >= b)),
    ("logical_and", lambda a, b: int(bool(a) and bool(b))),
    ("logical_or", lambda a, b: int(bool(a) or bool(b)))]


# Constructors by dimensions (a kernel's sycl.id(...) call has a fixed arity).
def _id1(x: int, y: int, z: int) -> sycl.id: return sycl.id(x)
def _id2(x: int, y: int, z: int) -> sycl.id: return sycl.id(x, y)
def _id3(x: int, y: int, z: int) -> sycl.id: return sycl.id(x, y, z)
def _range1(x: int, y: int, z: int) -> sycl.range: return sycl.range(x)
def _range2(x: int, y: int, z: int) -> sycl.range: return sycl.range(x, y)
def _range3(x: int, y: int, z: int) -> sycl.range: return sycl.range(x, y, z)


MAKE = {("id", 1): _id1, ("id", 2): _id2, ("id", 3): _id3,
        ("range", 1): _range1, ("range", 2): _range2, ("range", 3): _range3}


def _put(o, w, k, v, dims):  # type: ignore[no-untyped-def]
    for d in range(dims):
        o[w, k, d] = v[d]


def _binary_kernel(o, mk, dims, a0, a1, a2, b0, b1, b2, s, t):  # type: ignore[no-untyped-def]
    """Results 0-10: x OP y; 11-21: x OP s; 22-32: t OP y (t = s except for shifts: a
    shift count); 33-43: x OP= y; 44-49: x.elementwise_*(y); 50-55: x.elementwise_*(s);
    56: +x; 57: x == y, x != y, x == x."""
    def kern(it):  # type: ignore[no-untyped-def]
        w = it[0]
        x = mk(a0 + w, a1, a2)
        y = mk(b0, b1, b2)
        _put(o, w, 0, x + y, dims)
        _put(o, w, 1, x - y, dims)
        _put(o, w, 2, x * y, dims)
        _put(o, w, 3, x // y, dims)
        _put(o, w, 4, x / y, dims)
        _put(o, w, 5, x % y, dims)
        _put(o, w, 6, x << y, dims)
        _put(o, w, 7, x >> y, dims)
        _put(o, w, 8, x & y, dims)
        _put(o, w, 9, x | y, dims)
        _put(o, w, 10, x ^ y, dims)
        _put(o, w, 11, x + s, dims)
        _put(o, w, 12, x - s, dims)
        _put(o, w, 13, x * s, dims)
        _put(o, w, 14, x // s, dims)
        _put(o, w, 15, x / s, dims)
        _put(o, w, 16, x % s, dims)
        _put(o, w, 17, x << s, dims)
        _put(o, w, 18, x >> s, dims)
        _put(o, w, 19, x & s, dims)
        _put(o, w, 20, x | s, dims)
        _put(o, w, 21, x ^ s, dims)
        _put(o, w, 22, t + y, dims)
        _put(o, w, 23, t - y, dims)
        _put(o, w, 24, t * y, dims)
        _put(o, w, 25, t // y, dims)
        _put(o, w, 26, t / y, dims)
        _put(o, w, 27, t % y, dims)
        _put(o, w, 28, t << y, dims)
        _put(o, w, 29, t >> y, dims)
        _put(o, w, 30, t & y, dims)
        _put(o, w, 31, t | y, dims)
        _put(o, w, 32, t ^ y, dims)
        z = mk(a0 + w, a1, a2)
        z += y
        _put(o, w, 33, z, dims)
        z -= y
        _put(o, w, 34, z, dims)
        z *= y
        _put(o, w, 35, z, dims)
        z //= y
        _put(o, w, 36, z, dims)
        z /= y
        _put(o, w, 37, z, dims)
        z %= y
        _put(o, w, 38, z, dims)
        z <<= y
        _put(o, w, 39, z, dims)
        z >>= y
        _put(o, w, 40, z, dims)
        z &= y
        _put(o, w, 41, z, dims)
        z |= y
        _put(o, w, 42, z, dims)
        z ^= y
        _put(o, w, 43, z, dims)
        _put(o, w, 44, x.elementwise_lt(y), dims)
        _put(o, w, 45, x.elementwise_le(y), dims)
        _put(o, w, 46, x.elementwise_gt(y), dims)
        _put(o, w, 47, x.elementwise_ge(y), dims)
        _put(o, w, 48, x.elementwise_logical_and(y), dims)
        _put(o, w, 49, x.elementwise_logical_or(y), dims)
        _put(o, w, 50, x.elementwise_lt(s), dims)
        _put(o, w, 51, x.elementwise_le(s), dims)
        _put(o, w, 52, x.elementwise_gt(s), dims)
        _put(o, w, 53, x.elementwise_ge(s), dims)
        _put(o, w, 54, x.elementwise_logical_and(s), dims)
        _put(o, w, 55, x.elementwise_logical_or(s), dims)
        _put(o, w, 56, +x, dims)
        o[w, 57, 0] = (x == y) + 10 * (x != y) + 100 * (x == mk(a0 + w, a1, a2))
    return kern


def _expected(kind: str, dims: int, a: list[int], b: list[int], s: int, t: int) -> np.ndarray:
    out = np.zeros((N, 58, 3), np.int64)
    for w in range(N):
        x = [a[0] + w, *a[1:dims]][:dims]
        y = b[:dims]
        row = []
        row += [[f(p, q) for p, q in zip(x, y, strict=True)] for _, f in BINARY]
        row += [[f(p, s) for p in x] for _, f in BINARY]
        row += [[f(t, q) for q in y] for _, f in BINARY]
        z = list(x)
        for _, f in [(n, g) for n, g in BINARY]:
            z = [f(p, q) for p, q in zip(z, y, strict=True)]
            row.append(z)
        row += [[f(p, q) for p, q in zip(x, y, strict=True)] for _, f in ELEMENTWISE]
        row += [[f(p, s) for p in x] for _, f in ELEMENTWISE]
        row.append(list(x))
        for k, v in enumerate(row):
            out[w, k, :dims] = v
        out[w, 57, 0] = (x == y) + 10 * (x != y) + 100
    return out


def _run(q: sycl.queue, kind: str, dims: int, a: list[int], b: list[int], s: int,
         t: int) -> np.ndarray:
    out = np.zeros((N, 58, 3), np.int64)
    mk = MAKE[(kind, dims)]
    with sycl.buffer(out) as O:
        q.submit(lambda h: h.parallel_for(sycl.range(N), _binary_kernel(
            O.get_access(h, sycl.access_mode.write), mk, dims, *a, *b, s, t)))
    return out


def _values(kind: str, dims: int) -> st.SearchStrategy:
    """Left components, right components (non-zero divisors, shift counts 0-8), a scalar and a
    left scalar. A range's results must stay sizes (>= 0): its left components are at least
    the right ones plus the scalar, so that x - y, x - s, t - y are >= 0."""
    small = st.integers(1, 8)
    if kind == "range":
        return st.tuples(st.lists(st.integers(40, 300), min_size=3, max_size=3),
                         st.lists(small, min_size=3, max_size=3), small,
                         st.integers(9, 30))
    return st.tuples(st.lists(st.integers(-300, 300), min_size=3, max_size=3),
                     st.lists(small, min_size=3, max_size=3), small, st.integers(-30, 30))


@pytest.mark.parametrize("kind", ["id", "range"])
@pytest.mark.parametrize("dims", [1, 2, 3])
@settings(max_examples=6, deadline=None)
@given(data=st.data())
def test_every_operator_on_both_devices(kind: str, dims: int, data: st.DataObject) -> None:
    a, b, s, t = data.draw(_values(kind, dims))
    if kind == "range":  # the compound chain's z - y and t - y stay >= 0
        a = [x + 64 for x in a]
    want = _expected(kind, dims, a, b, s, t)
    host = _run(sycl.queue(HOST), kind, dims, a, b, s, t)
    np.testing.assert_array_equal(host, want)
    np.testing.assert_array_equal(_run(sycl.queue(), kind, dims, a, b, s, t), want)


def _put3(o, w, k, v):  # type: ignore[no-untyped-def]
    o[w, k, 0] = v[0]
    o[w, k, 1] = v[1] if len(v) > 1 else -1
    o[w, k, 2] = v[2] if len(v) > 2 else -1


def _unary_and_ctor(o, n):  # type: ignore[no-untyped-def]
    def kern(it):  # type: ignore[no-untyped-def]
        i = it.get_id()
        w = i[0] * 3 + i[1]
        x = sycl.id(i[0] - n, i[1], 7)
        r = sycl.range(it.get_range())
        _put3(o, w, 0, -x)
        _put3(o, w, 1, +x)
        nx = -x
        _put3(o, w, 2, -nx)
        _put3(o, w, 3, sycl.id(r))
        _put3(o, w, 4, sycl.id(it))
        _put3(o, w, 5, sycl.id())
        _put3(o, w, 6, sycl.id((i[1], i[0])))
        _put3(o, w, 7, sycl.range())
        _put3(o, w, 8, sycl.range(sycl.id(i[0], 2)))
        _put3(o, w, 9, sycl.range((n, i[1] + 1, 4)))
        _put3(o, w, 10, +r)
        nd = sycl.nd_range(sycl.range(n * 4, 6), sycl.range(n, 3))
        nd1 = sycl.nd_range(n * 2, n)
        g = nd.get_group_range()
        o[w, 11, 0] = g[0] * 10 + g[1]
        o[w, 11, 1] = nd.get_global_range().size() * 100 + nd.get_local_range().size()
        o[w, 11, 2] = nd.get_offset()[1] + nd1.get_global_range()[0] * 1000 \
            + nd1.get_group_range()[0] * 10
    return kern


@pytest.mark.parametrize("n", [1, 2, 5])
def test_unary_operators_and_constructors_in_kernels(n: int) -> None:
    """``-x``/``+x``; ``sycl.id``/``sycl.range`` from numbers, a tuple, another id or range,
    an item, and with no argument (SYCL 2020's default: one dimension of 0);
    ``sycl.nd_range`` from two ranges and from two integers, with its queries."""
    def run(q: sycl.queue) -> np.ndarray:
        out = np.zeros((6, 12, 3), np.int64)
        with sycl.buffer(out) as O:
            q.submit(lambda h: h.parallel_for(sycl.range(2, 3), _unary_and_ctor(
                O.get_access(h, sycl.access_mode.write), n)))
        return out

    want = np.zeros((6, 12, 3), np.int64)
    for i0 in range(2):
        for i1 in range(3):
            x = [i0 - n, i1, 7]
            rows = [[-c for c in x], x, x, [2, 3, -1], [i0, i1, -1], [0, -1, -1],
                    [i1, i0, -1], [0, -1, -1], [i0, 2, -1], [n, i1 + 1, 4], [2, 3, -1],
                    [4 * 10 + 2, n * 4 * 6 * 100 + n * 3, n * 2000 + 20]]
            want[i0 * 3 + i1] = rows
    host = run(sycl.queue(HOST))
    np.testing.assert_array_equal(host, want)
    np.testing.assert_array_equal(run(sycl.queue()), want)


def test_order_comparisons_of_ids_name_the_elementwise_methods(kq: sycl.queue) -> None:
    """``<`` of two 2-D ids: C++ gives an id of 0/1, Python needs a truth value; both
    devices say which method to write (a 1-D id compares as its number, as size_t)."""
    def kern(it):  # type: ignore[no-untyped-def]
        if sycl.id(it[0], 1) < sycl.id(1, 1):
            pass

    with pytest.raises(sycl.kernel_compile_error, match=r"< of ids or ranges is not supported "
                       r"in kernels -- comparisons of sycl.id and sycl.range are elementwise in "
                       r"SYCL \(an id or range of 0/1\): write x.elementwise_lt\(y\); a number "
                       r"on the left mirrors it: n < x is x.elementwise_gt\(n\)"):
        kq.parallel_for(sycl.range(2), kern).wait()
    with pytest.raises(sycl.exception, match=r"'<' of sycl.id values is elementwise in SYCL "
                       r"\(the result is a sycl.id of 0/1\): write x.elementwise_lt\(y\)"):
        sycl.queue(HOST).parallel_for(sycl.range(2), kern).wait()


def test_a_negative_range_is_invalid_on_the_host_device() -> None:
    """A range's components are sizes: ``-r`` of a non-zero range is ``errc.invalid`` on the
    host (compiled kernels compute ids and ranges in int64; docs/mapping.md)."""
    assert -sycl.range(0, 0) == sycl.range(0, 0) and +sycl.range(2, 3) == sycl.range(2, 3)
    with pytest.raises(sycl.exception, match=r"sycl.range components must be >= 0") as e:
        _ = -sycl.range(2, 3)
    assert e.value.code() == sycl.errc.invalid


def test_a_range_kernel_asking_work_group_sizes_is_still_told_to_use_an_nd_range(
        kq: sycl.queue) -> None:
    """A kernel that builds an nd_range may call its get_group_range(); an item's
    get_local_range() in a range kernel without one still gets the compiler's advice."""
    def kern(it):  # type: ignore[no-untyped-def]
        _ = it.get_local_range()

    with pytest.raises(sycl.kernel_compile_error, match=r"get_local_range needs work-groups, "
                       r"which only an nd_range kernel has; this is a range kernel"):
        kq.parallel_for(sycl.range(2), kern).wait()

"""SYCL 2020 integer (§4.17.7) and relational (§4.17.9) functions: the compiled device and the
host_debuggable oracle against Python big-int / numpy references (hypothesis over edge
values: each type's min and max, 0, -1, NaN, infinities, -0.0, subnormals)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pysycl as sycl

HOST = sycl.aspect_selector(sycl.aspect.host_debuggable)
INTS = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]
ALIAS = {np.int8: "char", np.uint8: "uchar", np.int16: "short", np.uint16: "ushort",
         np.int32: "int", np.uint32: "uint", np.int64: "long", np.uint64: "ulong"}


def _bits(dt: type) -> int:
    return np.dtype(dt).itemsize * 8


def _wrap(v: int, dt: type) -> int:
    b = _bits(dt)
    v &= (1 << b) - 1
    return v - (1 << b) if np.dtype(dt).kind == "i" and v >> (b - 1) else v


def _sat(v: int, dt: type) -> int:
    i = np.iinfo(dt)
    return min(max(v, int(i.min)), int(i.max))


def _u(v: int, dt: type) -> int:
    return v & ((1 << _bits(dt)) - 1)


#: name -> (arity, Python big-int reference(dt, *operands)), independent of pysycl's own.
REFS = {
    "abs": (1, lambda dt, a: abs(a)),
    "abs_diff": (2, lambda dt, a, b: abs(a - b)),
    "add_sat": (2, lambda dt, a, b: _sat(a + b, dt)),
    "sub_sat": (2, lambda dt, a, b: _sat(a - b, dt)),
    "hadd": (2, lambda dt, a, b: (a + b) // 2),
    "rhadd": (2, lambda dt, a, b: (a + b + 1) // 2),
    "mul_hi": (2, lambda dt, a, b: (a * b) // 2 ** _bits(dt)),
    "mad_hi": (3, lambda dt, a, b, c: (a * b) // 2 ** _bits(dt) + c),
    "mad_sat": (3, lambda dt, a, b, c: _sat(a * b + c, dt)),
    "rotate": (2, lambda dt, a, b: int(np.binary_repr(_u(a, dt), _bits(dt))[b % _bits(dt):]
                                       + np.binary_repr(_u(a, dt), _bits(dt))[:b % _bits(dt)],
                                       2)),
    "clz": (1, lambda dt, a: len(np.binary_repr(_u(a, dt), _bits(dt)).split("1")[0])),
    "ctz": (1, lambda dt, a: len(np.binary_repr(_u(a, dt), _bits(dt)).split("1")[-1])
            if a else _bits(dt)),
    "popcount": (1, lambda dt, a: np.binary_repr(_u(a, dt), _bits(dt)).count("1")),
}
NAMES = sorted(REFS)


def _edge_values(dt: type) -> st.SearchStrategy[int]:
    i = np.iinfo(dt)
    edges = [int(i.min), int(i.max), 0, 1, int(i.min) + 1, int(i.max) - 1]
    if i.min:
        edges.append(-1)
    return st.one_of(st.sampled_from(edges), st.integers(int(i.min), int(i.max)))


def _run(q: sycl.queue, k_of, srcs: list[np.ndarray], out: np.ndarray, items: int) -> np.ndarray:
    out = out.copy()
    bufs = [sycl.buffer(s) for s in srcs]
    with sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            accs = [b.get_access(h, sycl.access_mode.read) for b in bufs]
            o = O.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.range(items), k_of(o, *accs))
        q.submit(cg)
    for b in bufs:
        b.__exit__(None, None, None)
    return out


def _both(k_of, srcs: list[np.ndarray], out: np.ndarray, items: int,
          ) -> tuple[np.ndarray, np.ndarray]:
    return (_run(sycl.queue(), k_of, srcs, out, items),
            _run(sycl.queue(HOST), k_of, srcs, out, items))


def _scalar_kernel(o, a, b, c):  # type: ignore[no-untyped-def]
    def k(i):  # type: ignore[no-untyped-def]
        n = 13 * i
        o[n] = sycl.abs(a[i])
        o[n + 1] = sycl.abs_diff(a[i], b[i])
        o[n + 2] = sycl.add_sat(a[i], b[i])
        o[n + 3] = sycl.clz(a[i])
        o[n + 4] = sycl.ctz(a[i])
        o[n + 5] = sycl.hadd(a[i], b[i])
        o[n + 6] = sycl.mad_hi(a[i], b[i], c[i])
        o[n + 7] = sycl.mad_sat(a[i], b[i], c[i])
        o[n + 8] = sycl.mul_hi(a[i], b[i])
        o[n + 9] = sycl.popcount(a[i])
        o[n + 10] = sycl.rhadd(a[i], b[i])
        o[n + 11] = sycl.rotate(a[i], b[i])
        o[n + 12] = sycl.sub_sat(a[i], b[i])
    return k


@settings(max_examples=24, deadline=None)
@given(data=st.data(), dt=st.sampled_from(INTS))
def test_integer_functions_on_numbers(data: st.DataObject, dt: type) -> None:
    items = 4
    vals = [data.draw(st.lists(_edge_values(dt), min_size=items, max_size=items))
            for _ in range(3)]
    srcs = [np.array(v, dtype=object).astype(dt) for v in vals]
    dev, host = _both(_scalar_kernel, srcs, np.zeros(13 * items, dt), items)
    want = np.array([_wrap(REFS[name][1](dt, *[v[i] for v in vals][:REFS[name][0]]), dt)
                     for i in range(items) for name in NAMES], dtype=object).astype(dt)
    np.testing.assert_array_equal(host, want)
    np.testing.assert_array_equal(dev, want)


def _vec_kernel(vt):  # type: ignore[no-untyped-def]
    def make(o, x):  # type: ignore[no-untyped-def]
        def k(i):  # type: ignore[no-untyped-def]
            a, b, c = vt.load(3 * i, x), vt.load(3 * i + 1, x), vt.load(3 * i + 2, x)
            sycl.abs(a).store(13 * i, o)
            sycl.abs_diff(a, b).store(13 * i + 1, o)
            sycl.add_sat(a, b).store(13 * i + 2, o)
            sycl.clz(a).store(13 * i + 3, o)
            sycl.ctz(a).store(13 * i + 4, o)
            sycl.hadd(a, b).store(13 * i + 5, o)
            sycl.mad_hi(a, b, c).store(13 * i + 6, o)
            sycl.mad_sat(a, b, c).store(13 * i + 7, o)
            sycl.mul_hi(a, b).store(13 * i + 8, o)
            sycl.popcount(a).store(13 * i + 9, o)
            sycl.rhadd(a, b).store(13 * i + 10, o)
            sycl.rotate(a, b).store(13 * i + 11, o)
            sycl.sub_sat(a, b).store(13 * i + 12, o)
        return k
    return make


@pytest.mark.slow
@settings(max_examples=12, deadline=None)
@given(data=st.data(), dt=st.sampled_from(INTS), n=st.sampled_from([2, 3, 4, 8, 16]))
def test_integer_functions_on_vectors(data: st.DataObject, dt: type, n: int) -> None:
    vt = getattr(sycl, f"{ALIAS[dt]}{n}")
    src = data.draw(st.lists(_edge_values(dt), min_size=3 * n, max_size=3 * n))
    dev, host = _both(_vec_kernel(vt), [np.array(src, dtype=object).astype(dt)],
                      np.zeros(13 * n, dt), 1)
    a, b, c = src[:n], src[n:2 * n], src[2 * n:]
    want = np.array([_wrap(REFS[name][1](dt, *[v[e] for v in (a, b, c)][:REFS[name][0]]), dt)
                     for name in NAMES for e in range(n)], dtype=object).astype(dt)
    np.testing.assert_array_equal(host, want)
    np.testing.assert_array_equal(dev, want)


def test_literals_mul24_upsample_and_marray() -> None:
    src = np.array([-7, 1 << 20, 3, -(1 << 23)], np.int32)

    def make(o, x):  # type: ignore[no-untyped-def]
        def k(i):  # type: ignore[no-untyped-def]
            o[0] = sycl.add_sat(x[0], 2147483647)            # the literal takes x's type
            o[1] = sycl.mul24(x[1], x[2])
            o[2] = sycl.mad24(x[0], x[3], x[2])
            o[3] = sycl.upsample(np.int16(x[0]), np.uint16(x[2]))
            o[4] = sycl.upsample(np.int32(-1), np.uint32(5)) >> 32
            o[5] = sycl.popcount(np.uint8(x[0]))
            m = sycl.popcount(sycl.mint3(x[0], x[1], x[3]))
            o[6] = m[0] + 100 * m[1] + 10000 * m[2]
            v = sycl.upsample(sycl.char2(x[0], x[2]), sycl.uchar2(1, 255))
            o[7] = np.int32(v[0]) * 100000 + v[1]
        return k

    dev, host = _both(make, [src], np.zeros(8, np.int32), 1)
    want = [2147483640, (1 << 20) * 3, -7 * -(1 << 23) + 3, (-7 << 16) | 3, -1, 6,
            30 + 100 * 1 + 10000 * 9, (((-7) << 8) | 1) * 100000 + ((3 << 8) | 255)]
    np.testing.assert_array_equal(host, want)
    np.testing.assert_array_equal(dev, want)


FLOATS = [np.float32, np.float64]
REL2 = {"isequal": np.equal, "isnotequal": np.not_equal, "isgreater": np.greater,
        "isgreaterequal": np.greater_equal, "isless": np.less, "islessequal": np.less_equal,
        "islessgreater": lambda a, b: (a < b) | (a > b),
        "isordered": lambda a, b: ~np.isnan(a) & ~np.isnan(b),
        "isunordered": lambda a, b: np.isnan(a) | np.isnan(b)}
REL1 = {"isfinite": np.isfinite, "isinf": np.isinf, "isnan": np.isnan,
        "isnormal": lambda a: np.isfinite(a) & (np.abs(a) >= np.finfo(a.dtype).smallest_normal),
        "signbit": np.signbit}


def _floats(dt: type) -> st.SearchStrategy[float]:
    f = np.finfo(dt)
    edges = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, float(f.smallest_normal),
             float(f.smallest_subnormal), -float(f.smallest_subnormal), float(f.max), 1.0, -1.0]
    return st.one_of(st.sampled_from(edges), st.floats(width=np.dtype(dt).itemsize * 8))


@settings(max_examples=10, deadline=None)
@given(data=st.data(), dt=st.sampled_from(FLOATS))
def test_relational_functions(data: st.DataObject, dt: type) -> None:
    src = np.array(data.draw(st.lists(_floats(dt), min_size=8, max_size=8)), dt)
    vt = getattr(sycl, f"{'float' if dt is np.float32 else 'double'}4")
    mt = getattr(sycl, f"m{'float' if dt is np.float32 else 'double'}4")

    def make(o, x):  # type: ignore[no-untyped-def]
        def k(i):  # type: ignore[no-untyped-def]
            a, b = vt.load(0, x), vt.load(1, x)
            ma, mb = mt(a[0], a[1], a[2], a[3]), mt(b[0], b[1], b[2], b[3])
            vs = (sycl.isequal(a, b), sycl.isnotequal(a, b), sycl.isgreater(a, b),
                  sycl.isgreaterequal(a, b), sycl.isless(a, b), sycl.islessequal(a, b),
                  sycl.islessgreater(a, b), sycl.isordered(a, b), sycl.isunordered(a, b),
                  sycl.isfinite(a), sycl.isinf(a), sycl.isnan(a), sycl.isnormal(a),
                  sycl.signbit(a))
            ms = (sycl.isequal(ma, mb), sycl.isnotequal(ma, mb), sycl.isgreater(ma, mb),
                  sycl.isgreaterequal(ma, mb), sycl.isless(ma, mb), sycl.islessequal(ma, mb),
                  sycl.islessgreater(ma, mb), sycl.isordered(ma, mb), sycl.isunordered(ma, mb),
                  sycl.isfinite(ma), sycl.isinf(ma), sycl.isnan(ma), sycl.isnormal(ma),
                  sycl.signbit(ma))
            for j in range(14):
                for e in range(4):
                    o[j * 12 + e] = vs[j][e]
                    o[j * 12 + 4 + e] = ms[j][e]
            for e in range(4):
                o[j * 12 + 8 + e] = sycl.isless(a[e], b[e]) + 2 * sycl.signbit(a[e]) \
                    + 4 * sycl.isnotequal(a[e], 0.5)
        return k

    dev, host = _both(make, [src], np.zeros(14 * 12, np.int64), 1)
    a, b = src[:4], src[4:]
    want = np.zeros((14, 12), np.int64)
    with np.errstate(all="ignore"):
        for j, fn in enumerate([*REL2.values(), *REL1.values()]):
            r = fn(a, b) if j < len(REL2) else fn(a)
            want[j, :4], want[j, 4:8] = -r.astype(np.int64), r
        want[13, 8:] = (a < b) + 2 * np.signbit(a) + 4 * (a != dt(0.5))
    want[:13, 8:] = 0
    np.testing.assert_array_equal(host, want.ravel())
    np.testing.assert_array_equal(dev, want.ravel())


def test_any_all_select_bitselect() -> None:
    src = np.array([-1.5, 2.0, np.nan, -0.0], np.float32)

    def make(o, x):  # type: ignore[no-untyped-def]
        def k(i):  # type: ignore[no-untyped-def]
            v = sycl.float4.load(0, x)
            neg = v < 0.0
            o[0] = sycl.any(neg) + 10 * sycl.all(neg) + 100 * sycl.all(v == v)
            o[1] = sycl.any(sycl.isnan(v)) + 10 * sycl.all(sycl.isfinite(sycl.mfloat4(1.0)))
            o[2] = sycl.any(np.int32(-5)) + 10 * sycl.all(np.int8(5))
            s = sycl.select(v, sycl.float4(7.0), sycl.isnan(v))
            o[3] = s[2] + s[0]
            o[4] = sycl.select(np.float32(1.0), np.float32(2.0), x[0] < 0)
            o[5] = sycl.bitselect(np.float32(1.0), np.float32(-1.0), np.float32(-0.0))
            m = sycl.select(sycl.mint2(1, 2), sycl.mint2(3, 4), sycl.mbool2(True, False))
            o[6] = m[0] * 10 + m[1]
            o[7] = sycl.bitselect(np.uint8(0xF0), np.uint8(0x0F), np.uint8(0x3C))
        return k

    dev, host = _both(make, [src], np.zeros(8, np.float32), 1)
    want = [1 + 0 + 0, 1 + 10, 1 + 0, 7.0 - 1.5, 2.0, -1.0, 32, 0xCC]
    np.testing.assert_array_equal(host, want)
    np.testing.assert_array_equal(dev, want)


@pytest.mark.parametrize("call", ["sycl.add_sat(x[0], np.int64(1))",
                                  "sycl.popcount(sycl.float4(1.0))",
                                  "sycl.isnan(x[0])",
                                  "sycl.any(sycl.uint2(1))",
                                  "sycl.add_sat(sycl.int2(1), 1)",
                                  "sycl.select(x[0], x[1], 0.5)"])
def test_wrong_operands_are_errors_naming_the_line(call: str) -> None:
    src = np.zeros(2, np.int32)
    ns = {"sycl": sycl, "np": np}
    exec(compile("def make(o, x):\n    def k(i):\n"
                 f"        o[0] = {call}\n    return k\n", "user_kernel.py", "exec"), ns)
    with pytest.raises(sycl.exception, match=r"TypeError: sycl\.\w+.*user_kernel.py:3"):
        _run(sycl.queue(HOST), ns["make"], [src], src, 1)
    with pytest.raises(sycl.exception, match=re.escape("user_kernel.py:3")) as e:
        _run(sycl.queue(), ns["make"], [src], src, 1)
    name = call.split("(")[0]
    assert f"{name} takes" in str(e.value) and "No implementation" not in str(e.value)

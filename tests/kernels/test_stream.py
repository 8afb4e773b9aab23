"""``sycl.stream`` in kernels: ``out << ...`` reaches ``sys.stdout`` (capsys) at synchronization.

Compiled devices write one record per statement that the host decodes; the
host_debuggable device formats in the interpreter. Both must print the same
text, which the tests compare with what Python's (C's) formatting gives --
lines sorted where the order of work-items is unspecified.
"""

from __future__ import annotations

import io
import re
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pysycl as sycl
from tests.conftest import ptxas_check

R = sycl.access_mode.read


def _lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return sorted(capsys.readouterr().out.splitlines())


def test_statements_print_as_cpp_ostream_prints(any_kernel_queue: sycl.queue,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    a = np.array([0.5, 1.0, 2.25, -3.0], np.float32)
    with sycl.buffer(a) as A:
        def cg(h: sycl.handler) -> None:
            r = A.get_access(h, R)
            out = sycl.stream(4096, 256, h)

            def k(i: sycl.item) -> None:
                x = r[i]
                out << "item " << i[0] << ": x = " << x << ", x/3 = " << x / 3 << " " \
                    << (x > 1) << " hex " << sycl.hex << sycl.showbase << i[0] * 255 << sycl.endl

            h.parallel_for(sycl.range(a.size), k)

        any_kernel_queue.submit(cg).wait()
    want = sorted(f"item {k}: x = {x:g}, x/3 = {x / np.float32(3):g} {str(bool(x > 1)).lower()} "
                  f"hex {k * 255:#x}".replace(" 0x0", " 0")  # C's %#x of 0 is "0"
                  for k, x in enumerate(a))
    assert _lines(capsys) == want


def test_manipulators_last_for_their_statement(any_kernel_queue: sycl.queue,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    def cg(h: sycl.handler) -> None:
        out = sycl.stream(1024, 256, h)

        def k() -> None:
            out << sycl.hex << 255 << " " << sycl.setprecision(3) << sycl.fixed << 2.0 / 3
            out << " then " << 255 << " " << 2.0 / 3 << sycl.endl  # a new statement: defaults
            out << sycl.setw(5) << 7 << "|" << sycl.oct << sycl.showbase << 8 << "|" \
                << sycl.dec << sycl.showpos << 1 << "|" << sycl.scientific << 1234.5 << sycl.endl
            out << sycl.hexfloat << 1.5 << " " << sycl.defaultfloat << 1e20 << sycl.flush

        h.single_task(k)

    any_kernel_queue.submit(cg).wait()
    assert capsys.readouterr().out == ("ff 0.667 then 255 0.666667\n"
                                       "    7|  010|   +1|+1.234500e+03\n"
                                       "0x1.8p+0 1e+20")


def test_text_waits_for_a_flush_and_work_items_never_mix(any_kernel_queue: sycl.queue,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    n = 64

    def cg(h: sycl.handler) -> None:
        out = sycl.stream(1 << 16, 64, h)

        def k(it: sycl.nd_item) -> None:
            g = it.get_global_id(0)
            out << "<" << g
            sycl.group_barrier(it.get_group())  # the others write between the two halves
            out << ":" << g * g << ">" << sycl.endl
            out << "[" << g << "]"  # flushed when the work-item ends

        h.parallel_for(sycl.nd_range(sycl.range(n), sycl.range(16)), k)

    any_kernel_queue.submit(cg).wait()
    text = capsys.readouterr().out
    lines = sorted(line for line in text.replace("]", "]\n").splitlines() if line)
    assert lines == sorted([f"<{g}:{g * g}>" for g in range(n)] + [f"[{g}]" for g in range(n)])


def _show(s: sycl.stream, v: int) -> None:  # a helper given the stream as an argument
    s << "show " << v << sycl.endl


def test_helpers_ids_items_groups_and_fstrings(any_kernel_queue: sycl.queue,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    def cg(h: sycl.handler) -> None:
        out = sycl.stream(1 << 14, 512, h)

        def say(x: float) -> None:  # a helper that captures the stream
            out << "say " << x << sycl.endl

        def k(it: sycl.nd_item) -> None:
            _show(out, it.get_global_linear_id())
            say(np.float16(it.get_global_id(1)) / np.float16(3))
            out << it << " " << it.get_group() << " " << it.get_nd_range() << sycl.endl
            out << it.get_global_id() << sycl.range(2, 3) << sycl.id(1, 2) << sycl.endl
            out << f"f {it.get_local_id(1)}: {np.float32(0.1)}" << sycl.endl
            out << sycl.float2(0.5, 2) << ";" << (1 if it.get_local_id(0) else 2.5) << sycl.endl

        h.parallel_for(sycl.nd_range(sycl.range(2, 4), sycl.range(1, 2)), k)

    any_kernel_queue.submit(cg).wait()
    want = []
    for g0 in range(2):
        for g1 in range(4):
            want += [f"show {g0 * 4 + g1}", f"say {float(np.float16(g1) / np.float16(3)):g}",
                     f"nd_item(global_id: {{{g0}, {g1}}}, local_id: {{0, {g1 % 2}}}) "
                     f"group(id: {{{g0}, {g1 // 2}}}, global_range: {{2, 4}}, "
                     "local_range: {1, 2}, group_range: {2, 2}) nd_range(global_range: {2, 4}, "
                     "local_range: {1, 2}, offset: {0, 0})",
                     f"{{{g0}, {g1}}}{{2, 3}}{{1, 2}}", f"f {g1 % 2}: {np.float32(0.1)}",
                     "0.5, 2;2.5"]
    assert _lines(capsys) == sorted(want)


def test_items_and_the_range_kernel(any_kernel_queue: sycl.queue,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    def cg(h: sycl.handler) -> None:
        out = sycl.stream(4096, 128, h)
        h.parallel_for(sycl.range(2, 3), lambda i: out << i << " " << i.get_id() << sycl.endl)

    any_kernel_queue.submit(cg).wait()
    assert _lines(capsys) == sorted(
        f"item(range: {{2, 3}}, id: {{{a}, {b}}}, offset: {{0, 0}}) {{{a}, {b}}}"
        for a in range(2) for b in range(3))


_DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
           np.uint64, np.float16, np.float32, np.float64]


def _value(dt: type, i: int, f: float) -> np.generic:
    if dt is np.bool_:
        return np.bool_(i % 2)
    if np.dtype(dt).kind == "f":
        with np.errstate(over="ignore"):
            return dt(f)
    info = np.iinfo(dt)
    return dt(i % (int(info.max) - int(info.min) + 1) + int(info.min))


def _hexfloat(x: float) -> str:
    """C's ``%a`` (glibc) from Python's ``float.hex()``: trailing zero digits dropped."""
    if not np.isfinite(x):
        return "%g" % x  # noqa: UP031
    sign, (mant, exp) = ("-" if x < 0 or str(x).startswith("-") else ""), abs(x).hex().split("p")
    head, frac = mant.split(".")
    frac = frac.rstrip("0")
    return f"{sign}{head}{'.' + frac if frac else ''}p{exp}"


def _oracle(v: np.generic, p: int, w: int) -> str:
    """What :func:`_formats` prints, by printf's rules (Python's %-formatting is C's)."""
    kind = v.dtype.kind
    if kind == "b":
        b = "true" if v else "false"
        return f"{b} {b} {b} {b}\n{b} {b} {b} {b:>{w}}\n"
    if kind in "iu":
        n, bits = int(v), int(v) & ((1 << (8 * v.dtype.itemsize)) - 1)
        octal = f"0{bits:o}" if bits else "0"  # C's %#o (showpos: no sign in octal)
        return f"{n} {bits:x} {octal} {octal}\n{n} {n} {n} {n:>{w}}\n"
    x = float(v)
    first = "%g %g %g %+g" % (x, x, x, x)  # noqa: UP031
    second = "%.*f %.*e %s %*.*g" % (p, x, p, x, _hexfloat(x), w, p, x)  # noqa: UP031
    return f"{first}\n{second}\n"


def _formats(h: sycl.handler, v: np.generic, p: int, w: int) -> None:
    out = sycl.stream(4096, 1024, h)  # %f of 1e300 takes 300 bytes

    def k() -> None:
        out << v << " " << sycl.hex << v << " " << sycl.oct << sycl.showbase << v << " " \
            << sycl.showpos << v << sycl.endl
        out << sycl.setprecision(p) << sycl.fixed << v << " " << sycl.scientific << v << " " \
            << sycl.hexfloat << v << " " << sycl.setw(w) << sycl.defaultfloat << v << sycl.endl

    h.single_task(k)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(_DTYPES), st.integers(-(1 << 70), 1 << 70),
       st.floats(allow_nan=False), st.integers(0, 12), st.integers(0, 24))
def test_numbers_print_as_printf_on_both_devices(dt: type, i: int, f: float, p: int,
                                                 w: int) -> None:
    v = _value(dt, i, f)
    outs = []
    for q in (sycl.queue(), sycl.queue(sycl.aspect_selector(sycl.aspect.host_debuggable))):
        buf, old = io.StringIO(), sys.stdout
        sys.stdout = buf
        try:
            q.submit(lambda h: _formats(h, v, p, w)).wait()
        finally:
            sys.stdout = old
        outs.append(buf.getvalue())
    assert outs[0] == outs[1] == _oracle(v, p, w)


def test_the_limits_cut_and_drop_with_a_note(any_kernel_queue: sycl.queue,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    def cg(h: sycl.handler) -> None:
        out = sycl.stream(40, 8, h)  # 8 bytes per work-item between flushes, 40 in all

        def k(i: sycl.item) -> None:
            out << "0123456789" << sycl.endl  # cut to "01234567\n": 9 bytes
            out << "x" << i[0] << sycl.endl  # 3 bytes

        h.parallel_for(sycl.range(6), k)

    any_kernel_queue.submit(cg).wait()
    body, _, notes = capsys.readouterr().out.partition("[pysycl: ")
    lines = body.splitlines()
    assert all(line == "01234567" or re.fullmatch("x[0-5]", line) for line in lines)
    written = sum(len(line) + 1 for line in lines)
    assert 40 - 8 <= written <= 40  # a flush is dropped whole, only when it does not fit
    assert ("12 byte(s) beyond the work-item buffer size (8 bytes between flushes) were cut; "
            "flush more often") in notes
    m = re.search(r"(\d+) flush\(es\), (\d+) byte\(s\), were dropped: the total buffer size "
                  r"\(40 bytes\) was full", notes)
    assert m is not None and (int(m[1]), int(m[2])) == (12 - len(lines), 72 - written)


def test_a_full_record_buffer_drops_statements_with_a_note(kq: sycl.queue,
                                                          capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    def cg(h: sycl.handler) -> None:
        out = sycl.stream(16, 16, h)  # the smallest record buffer: 4096 words

        def k(i: sycl.item) -> None:
            for _ in range(8):
                out << sycl.hex  # 4 words, no text
            out << "x" << sycl.flush

        h.parallel_for(sycl.range(512), k)

    kq.submit(cg).wait()
    text = capsys.readouterr().out
    m = re.search(r"(\d+) statement\(s\) were dropped: the launch's record buffer \(16 KiB for "
                  r"a total_buffer_size of 16 bytes\) was full", text)
    assert m is not None and int(m[1]) >= 512 * 9 - 4096 // 4
    # Which statements landed depends on the device's schedule (a GPU runs every
    # work-item's hex statements first): whatever did is whole, at most 16 bytes.
    body = text.partition("[pysycl:")[0].rstrip("\n")
    assert set(body) <= {"x"} and len(body) <= 16
    if kq.get_device().is_cpu():  # work-items run one after another: the first 16 flushed
        assert body == "x" * 16


def test_stream_queries_and_errors_outside_kernels(kq: sycl.queue) -> None:
    seen = {}

    def cg(h: sycl.handler) -> None:
        out = sycl.stream(1024, 256, h)
        seen.update(size=out.size(), get_size=out.get_size(),
                    wi=out.get_work_item_buffer_size(), stmt=out.get_max_statement_size(),
                    prop=out.has_property(sycl.property.queue.enable_profiling), repr=repr(out))
        with pytest.raises(sycl.exception, match="only inside the kernel") as e:
            out << "in the command group"
        assert e.value.code() == sycl.errc.invalid
        h.single_task(lambda: out << "ok" << sycl.endl)

    kq.submit(cg).wait()
    assert seen == {"size": 1024, "get_size": 1024, "wi": 256, "stmt": 256, "prop": False,
                    "repr": "sycl.stream(total_buffer_size=1024, work_item_buffer_size=256)"}
    with pytest.raises(TypeError, match="non-negative integer"):
        kq.submit(lambda h: sycl.stream(-1, 8, h))
    with pytest.raises(TypeError, match="handler as third argument"):
        sycl.stream(8, 8, None)  # type: ignore[arg-type]


def test_a_stream_of_another_command_group_is_an_error(any_kernel_queue: sycl.queue) -> None:
    kept = []
    any_kernel_queue.submit(lambda h: kept.append(sycl.stream(64, 64, h)))
    other = kept[0]
    with pytest.raises(sycl.exception, match=r"test_stream.py:\d+: .*sycl.stream 'other' that "
                       "was not created in this command group") as e:
        any_kernel_queue.submit(lambda h: h.single_task(lambda: other << 1))
    assert e.value.code() == sycl.errc.invalid


def _kept(out: sycl.stream):  # type: ignore[no-untyped-def]
    def k() -> None:
        s = out << "a"
        s << "b"

    return k


def _runtime_text(out: sycl.stream, a: sycl.accessor):  # type: ignore[no-untyped-def]
    def k() -> None:
        t = "yes" if a[0] else "no"
        out << t << sycl.endl

    return k


def _runtime_manipulator(out: sycl.stream, a: sycl.accessor):  # type: ignore[no-untyped-def]
    def k() -> None:
        m = sycl.hex if a[0] else sycl.dec
        out << m << 255 << sycl.endl

    return k


@pytest.mark.parametrize(("body", "message"), [
    (lambda out, a: lambda: out << 1j, r"cannot write a complex128: .*\.real and \.imag"),
    (lambda out, a: lambda: out << a, r"cannot write a sycl.accessor"),
    (lambda out, a: lambda: out << sycl.setprecision(1.5), r"setprecision\(n\) takes an integer"),
    (lambda out, a: lambda: out << f"{a}", r"fields of an f-string .* must be numbers"),
    (_kept, r"value of a sycl.stream `<<` expression .* cannot be kept"),
    (_runtime_text, r"test_stream.py:\d+: strings cannot be used in kernels"),
    (_runtime_manipulator, r"choosing a stream manipulator at run time .* in each branch"),
])
def test_what_a_stream_cannot_write_is_a_compile_error(kq: sycl.queue, body, message: str
                                                       ) -> None:  # type: ignore[no-untyped-def]
    a = np.zeros(1, np.int32)
    with sycl.buffer(a) as A:
        def cg(h: sycl.handler) -> None:
            out = sycl.stream(64, 64, h)
            acc = A.get_access(h, R)
            h.single_task(body(out) if body is _kept else body(out, acc))

        with pytest.raises(sycl.kernel_compile_error, match=message) as e:
            kq.submit(cg)
    assert "test_stream.py:" in str(e.value)


def test_host_device_rejects_what_it_cannot_format(hq: sycl.queue) -> None:
    def cg(h: sycl.handler) -> None:
        out = sycl.stream(64, 64, h)
        h.single_task(lambda: out << 1j)

    with pytest.raises(sycl.exception, match="cannot write a complex") as e:
        hq.submit(cg)
    assert e.value.code() == sycl.errc.kernel


def test_output_waits_for_a_sync_point_and_keeps_launch_order(
        kq: sycl.queue, capsys: pytest.CaptureFixture[str]) -> None:
    def cg(n: int):  # type: ignore[no-untyped-def]
        def g(h: sycl.handler) -> None:
            out = sycl.stream(64, 64, h)
            h.single_task(lambda: (print("print", n), out << "stream " << n << sycl.endl))

        return g

    ev = kq.submit(cg(0))
    kq.submit(cg(1))
    ev.wait()
    kq.wait()
    lines = capsys.readouterr().out.splitlines()  # launch by launch; within one, any order
    assert sorted(lines[:2]) == ["print 0", "stream 0"] and sorted(lines[2:]) == [
        "print 1", "stream 1"]


def test_stream_compiles_to_ptx(kq: sycl.queue, ptx_images: list,
                                capsys: pytest.CaptureFixture[str]) -> None:
    def cg(h: sycl.handler) -> None:
        out = sycl.stream(1024, 128, h)
        h.parallel_for(sycl.range(2), lambda i: out << "ptx " << i << " " << np.float16(0.5)
                       << sycl.hex << " " << i[0] + 10 << sycl.endl)

    kq.submit(cg).wait()
    assert _lines(capsys) == ["ptx item(range: {2}, id: {0}, offset: {0}) 0.5 a",
                              "ptx item(range: {2}, id: {1}, offset: {0}) 0.5 b"]
    (img,) = ptx_images
    assert "atom.sys.global.add.u32" in img.binary.decode()  # system scope: inline atom.sys
    ptxas_check(img.binary)


def test_decode_of_a_hand_made_buffer() -> None:
    from pysycl._core.abi import (
        PRINT_DTYPES,
        PRINT_FORMAT,
        PRINT_NUMBER,
        STREAM_ARRAY,
        STREAM_CONTINUES,
        STREAM_MANIP,
    )
    from pysycl._kernels import kstream

    holder: list[sycl.stream] = []
    sycl.queue(sycl.aspect_selector(sycl.aspect.host_debuggable)).submit(
        lambda h: holder.append(sycl.stream(100, 100, h)))
    i32 = PRINT_NUMBER + PRINT_DTYPES.index("int32")
    f64 = PRINT_NUMBER + PRINT_DTYPES.index("float64")
    bits = np.float64(0.1).view(np.uint64)
    rec1 = [0, 7, 0, 1 | (2 << 8), int.from_bytes(b"a=\0\0", "little"),
            STREAM_MANIP | (sycl.hex.value << 8), i32, 0xFFFFFFFF, 0xFFFFFFFF]
    rec2 = [STREAM_CONTINUES, 7, 0, STREAM_ARRAY | (2 << 8), 1, 0, 2, 0,
            f64 | PRINT_FORMAT, int(bits) & 0xFFFFFFFF, int(bits) >> 32,
            STREAM_MANIP | (sycl.endl.value << 8)]
    rec1[0] = len(rec1)
    rec2[0] |= len(rec2)
    w = np.zeros(64, np.uint32)
    w[1] = 60
    w[4:4 + len(rec1) + len(rec2)] = rec1 + rec2
    w[0] = len(rec1) + len(rec2)
    assert kstream.decode(w, holder[0], "kernel k") == "a=ffffffff{1, 2}0.1\n"


def test_reductions_and_bounds_checked_mode_do_not_take_streams_yet(
        kq: sycl.queue, request: pytest.FixtureRequest) -> None:
    total = np.zeros(1, np.int32)
    with sycl.buffer(total) as T:
        def cg(h: sycl.handler) -> None:
            out = sycl.stream(64, 64, h)
            r = sycl.reduction(T, h, sycl.plus())
            h.parallel_for(sycl.range(4), r, lambda i, s: (s.combine(1), out << 1))

        with pytest.raises(sycl.exception, match=r"sycl\.stream in kernels with reductions") as e:
            kq.submit(cg)
        assert e.value.code() == sycl.errc.feature_not_supported
    sycl.ext.set_bounds_check(True)
    request.addfinalizer(lambda: sycl.ext.set_bounds_check(None))

    def cg2(h: sycl.handler) -> None:
        out = sycl.stream(64, 64, h)
        h.single_task(lambda: out << 1)

    with pytest.raises(sycl.exception, match=r"sycl\.stream in kernels are not available in "
                       "bounds-checked mode") as e:
        kq.submit(cg2)
    assert e.value.code() == sycl.errc.feature_not_supported

"""``print(...)`` in kernels: output reaches ``sys.stdout`` (pytest's capsys) at synchronization.

Compiled devices write records into a per-launch buffer that the host decodes;
the host_debuggable device runs ``print`` itself. Both must print the same lines
(inter-work-item order is unspecified on devices: lines are compared sorted).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pysycl as sycl
from pysycl._core.abi import PRINT_BUFFER_WORDS
from pysycl._kernels import kprint
from tests.conftest import ptxas_check

R = sycl.access_mode.read


def _run_print_kernel(q: sycl.queue, a: np.ndarray) -> None:
    with sycl.buffer(a) as A:
        def cg(h: sycl.handler) -> None:
            r = A.get_access(h, R)

            def k(i: sycl.item) -> None:
                x = r[i]
                print("item", i[0], "x =", x, f"half={x / 2}", x > 1, sep=" ", end=";\n")

            h.parallel_for(sycl.range(a.size), k)

        q.submit(cg).wait()


def _expected(a: np.ndarray) -> list[str]:
    return sorted(f"item {k} x = {x} half={x / 2} {x > 1};" for k, x in enumerate(a))


def test_print_lines_match_the_host_oracle(any_kernel_queue: sycl.queue,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    a = np.array([0.5, 1.0, 2.25, -3.0], np.float32)
    _run_print_kernel(any_kernel_queue, a)
    out = capsys.readouterr().out
    assert sorted(out.splitlines()) == _expected(a)


def test_output_waits_for_a_synchronization_point(kq: sycl.queue,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    ev = kq.single_task(lambda: print("hello from the device"))
    ev.wait()
    assert capsys.readouterr().out == "hello from the device\n"
    kq.single_task(lambda: print(1, 2, 3, sep=", ", end=""))
    kq.wait()  # queue.wait flushes too
    assert capsys.readouterr().out == "1, 2, 3"
    out = np.zeros(1, np.int32)
    with sycl.buffer(out) as O:  # a buffer's write-back flushes what its kernels printed
        kq.submit(lambda h: h.single_task(_writer(O.get_access(h, sycl.access_mode.write))))
    assert capsys.readouterr().out == "wrote 7\n" and out[0] == 7


def _writer(o: sycl.accessor):  # type: ignore[no-untyped-def]
    def k() -> None:
        o[0] = 7
        print("wrote", o[0])

    return k


def _say(v: int) -> None:  # a helper that prints: its print is lifted like the kernel's
    print("helper", v)


def _sayer(n: int):  # type: ignore[no-untyped-def]
    return lambda: _say(n)


def test_helpers_print_and_launch_order_is_kept(any_kernel_queue: sycl.queue,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    q = any_kernel_queue
    for n in range(3):
        q.single_task(_sayer(n))
    q.wait()
    assert capsys.readouterr().out == "helper 0\nhelper 1\nhelper 2\n"


_INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


@settings(max_examples=25)
@given(st.sampled_from([*_INTS, np.float16, np.float32, np.float64, np.bool_]),
       st.integers(-(1 << 70), 1 << 70), st.floats(allow_nan=True, allow_infinity=True))
def test_numbers_print_as_numpy_prints_them(dt: type, i: int, f: float) -> None:
    q = sycl.queue()
    if dt is np.bool_:
        v = np.bool_(i % 2)
    elif np.dtype(dt).kind == "f":
        with np.errstate(over="ignore"):
            v = dt(f)
    else:
        info = np.iinfo(dt)
        v = dt(i % (int(info.max) - int(info.min) + 1) + int(info.min))
    import io
    import sys
    buf, old = io.StringIO(), sys.stdout
    sys.stdout = buf
    try:
        q.single_task(lambda: print(v)).wait()
    finally:
        sys.stdout = old
    assert buf.getvalue() == str(v) + "\n"  # print uses str()


def test_a_full_buffer_drops_records_with_a_note(kq: sycl.queue,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    n = PRINT_BUFFER_WORDS // 3 + 1000  # 3 words a record: more than fit
    kq.parallel_for(sycl.range(n), lambda i: print(i[0])).wait()
    out = capsys.readouterr().out.splitlines()
    assert out[-1].startswith("[pysycl: ") and "were dropped" in out[-1]
    dropped = int(out[-1].split()[1])
    assert len(out) - 1 + dropped == n and dropped >= 1000
    assert len(set(out[:-1])) == len(out) - 1


def test_unsupported_print_forms_are_compile_errors(kq: sycl.queue) -> None:
    a = np.zeros(2, np.int32)
    with sycl.buffer(a) as A:
        with pytest.raises(sycl.kernel_compile_error, match="prints numbers") as e:
            kq.submit(lambda h: h.parallel_for(sycl.range(2), lambda i: print(i, i[0] * 1j)))
        assert "test_print.py:" in str(e.value)
        with pytest.raises(sycl.kernel_compile_error, match="takes a string literal"):
            kq.submit(lambda h: h.single_task(_sep_from_variable(A.get_access(h, R))))
        with pytest.raises(sycl.kernel_compile_error, match=r"file=.*not supported"):
            kq.single_task(lambda: print(1, file=None))


def test_unprintable_values_and_format_specs_are_named(kq: sycl.queue) -> None:
    """Never Numba's type names (``UniTuple(complex128 x 1)``) nor its 'format spec in
    f-strings not supported yet'; the message names the value and what to write."""
    z = np.complex64(1 + 2j)
    for kernel, what in ((lambda i: print(z), "print() of a complex64 value"),
                         (lambda i: print(None), "print() of None"),
                         (lambda i: print((1, 2)), "print() of a tuple"),
                         (lambda i: print(f"{i[0] * 0.5:.2f}"), "{x:.2f}"),
                         (lambda i: print(f"{i[0]!r}"), "{x!r}")):
        with pytest.raises(sycl.kernel_compile_error) as e:
            kq.parallel_for(sycl.range(1), kernel).wait()
        msg = str(e.value)
        assert what in msg and "test_print.py:" in msg and "UniTuple" not in msg, msg
        assert "not supported yet" not in msg


def test_a_conditional_argument_prints(any_kernel_queue: sycl.queue,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """``print("v", a if c else b)`` branches inside the call: print was once reported as
    'used as a value' (Numba copies the callee into the branch's block)."""
    any_kernel_queue.parallel_for(
        sycl.range(2), lambda i: print("v", 1.5 if i[0] else -2.5, i[0] > 0 and i[0] < 5)).wait()
    assert sorted(capsys.readouterr().out.splitlines()) == ["v -2.5 False", "v 1.5 True"]


def _sep_from_variable(r: sycl.accessor):  # type: ignore[no-untyped-def]
    def k() -> None:
        s = "," if r[0] else ";"
        print(1, 2, sep=s)

    return k


def test_print_compiles_to_ptx(kq: sycl.queue, ptx_images: list,
                               capsys: pytest.CaptureFixture[str]) -> None:
    kq.single_task(lambda: print("ptx", np.int32(3), np.float32(0.5))).wait()
    assert capsys.readouterr().out == "ptx 3 0.5\n"
    (img,) = ptx_images
    ptx = img.binary.decode()
    # the record counter: a system-scope add (inline atom.sys: LLVM 22 drops that scope)
    assert re.search(r"\b(?:atom(?:\.sys)?|red)(?:\.global)?\.add\.u32\b", ptx)
    assert ".param .u64 .ptr .global" in ptx or ".param .u64" in ptx
    ptxas_check(img.binary)


def test_decode_is_exact_on_a_hand_made_buffer() -> None:
    w = np.zeros(32, np.uint32)
    w[1] = 28
    text = b"ab\xc3\xa9"  # "abé": 4 bytes
    rec = [0, 1 | (4 << 8), int.from_bytes(text, "little"), 2 + 3, 0xFFFFFFFF, 0xFFFFFFFF]
    rec[0] = len(rec)
    w[4:4 + len(rec)] = rec
    w[0] = len(rec)
    assert kprint.decode(w) == ("abé-1", 0)


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from([np.float16, np.float32, np.float64, np.int16, np.uint64, np.bool_]),
       st.floats(-1e4, 1e4, allow_nan=False))
def test_fstring_fields_format_as_python_does(any_kernel_queue: sycl.queue, dt: type,
                                              f: float) -> None:
    """``f"{x}"`` of a numpy scalar is ``format(x, "")``, not ``str(x)``: numpy's float32
    ``0.1`` is ``0.10000000149011612`` in an f-string. Compiled kernels and the
    host_debuggable device print what Python prints."""
    import contextlib
    import io

    v = dt(f) if np.dtype(dt).kind == "f" else dt(abs(int(f))) if dt is not np.bool_ \
        else np.bool_(f > 0)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        any_kernel_queue.single_task(lambda: print(f"v={v} and {v}", v)).wait()
    assert buf.getvalue() == f"v={v} and {v} " + str(v) + "\n"  # print(v) is str(v)

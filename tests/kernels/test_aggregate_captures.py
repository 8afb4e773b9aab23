"""Captured complex numbers and tuples: by-value aggregates, lowered to scalar arguments.

A ``{float, float}`` struct passed by value made Intel's OpenCL CPU compiler abort
the process in ``clBuildProgram``; complex captures now travel as two real
arguments (tuples as their elements) and the kernel's entry point rebuilds them.
The crash regression runs in a child process, so a regression cannot kill the
test run.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pysycl as sycl

COMPLEX_KINDS = [complex, np.complex64, np.complex128]


def _run(q: sycl.queue, kernel_of, out: np.ndarray, *inputs: np.ndarray) -> np.ndarray:
    """Run ``kernel_of(out_acc, *in_accs)`` over ``out.size`` items; return ``out``."""
    with contextlib.ExitStack() as stack:
        bufs = [stack.enter_context(sycl.buffer(a)) for a in (out, *inputs)]

        def cg(h: sycl.handler) -> None:
            o = bufs[0].get_access(h, sycl.access_mode.write)
            ins = [b.get_access(h, sycl.access_mode.read) for b in bufs[1:]]
            h.parallel_for(sycl.range(out.size), kernel_of(o, *ins))

        q.submit(cg)
    return out


def _result_dtype(kind: type) -> np.dtype:
    return np.dtype(np.complex64 if kind is np.complex64 else np.complex128)


@pytest.mark.parametrize("kind", COMPLEX_KINDS, ids=lambda k: k.__name__)
def test_complex_capture_matches_numpy(any_kernel_queue: sycl.queue, kind: type) -> None:
    c = kind(1.5 - 2.25j)
    dt = _result_dtype(kind)
    x = (np.arange(6) - 2.5j * np.arange(6)[::-1]).astype(dt)
    re = np.zeros(6, dt.type(0).real.dtype)
    z = _run(any_kernel_queue,
             lambda o, rx: lambda i: o.__setitem__(i, c * rx[i] + c.conjugate() - c / (rx[i] + c)),
             np.zeros(6, dt), x)
    np.testing.assert_allclose(z, c * x + np.conj(c) - c / (x + c), rtol=1e-6)
    parts = _run(any_kernel_queue,
                 lambda o: lambda i: o.__setitem__(i, c.real * i + c.imag + abs(c)), re)
    np.testing.assert_allclose(parts, np.real(c) * np.arange(6) + np.imag(c) + np.abs(c),
                               rtol=1e-6)


def test_complex_capture_does_not_crash_the_process(tmp_path) -> None:
    script = textwrap.dedent("""
        import numpy as np
        import pysycl as sycl

        q = sycl.queue()
        for c in (1 + 2j, np.complex64(1 + 2j), np.complex128(-3 + 0.5j)):
            r = np.zeros(4, dtype=np.complex128)
            with sycl.buffer(r) as B:
                def cg(h):
                    a = B.get_access(h, sycl.access_mode.write)
                    h.parallel_for(sycl.range(4), lambda i: a.__setitem__(i, c * 2))
                q.submit(cg)
            assert np.array_equal(r, np.full(4, np.complex128(c) * 2)), (c, r)
        print("ok")
    """)
    env = {**os.environ, "PYSYCL_CACHE_DIR": str(tmp_path / "cache")}
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=300, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.strip() == "ok"


@settings(max_examples=40)
@given(re=st.floats(-1e6, 1e6), im=st.floats(-1e6, 1e6),
       kind=st.sampled_from(COMPLEX_KINDS))
def test_complex_capture_values_match_numpy(kernel_device: sycl.device, re: float, im: float,
                                            kind: type) -> None:
    kq = sycl.queue(kernel_device)
    c = kind(complex(re, im))
    dt = _result_dtype(kind)
    x = np.array([1 + 1j, -2.5 + 0.5j, 0j, 3 - 4j], dt)
    got = _run(kq, lambda o, rx: lambda i: o.__setitem__(i, rx[i] * c + c), np.zeros(4, dt), x)
    np.testing.assert_allclose(got, x * c + c, rtol=1e-5 if dt == np.complex64 else 1e-12,
                               atol=1e-30)


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_complex_division_matches_numpy(any_kernel_queue: sycl.queue, dt: type) -> None:
    a = np.array([1 + 2j, -3 + 0.5j, 2 - 1j, 1 + 1j, 0j, 5j], dt)
    b = np.array([3 - 4j, 0.25 + 8j, 0j, np.inf + 0j, 0j, 1e-30 + 1j], dt)
    got = _run(any_kernel_queue, lambda o, ra, rb: lambda i: o.__setitem__(i, ra[i] / rb[i]),
               np.zeros(6, dt), a, b)
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(got, a / b, rtol=1e-6)


def test_tuple_capture_is_an_argument(any_kernel_queue: sycl.queue) -> None:
    sycl.ext.clear_kernel_memory_cache()
    sycl.ext.reset_kernel_cache_stats()
    for t in ((1.0, 2.0, 3.0), (-1.0, 0.5, 4.0)):
        got = _run(any_kernel_queue, lambda o: lambda i: o.__setitem__(i, t[0] + t[1] * i + t[2]),
                   np.zeros(4))
        np.testing.assert_array_equal(got, t[0] + t[1] * np.arange(4) + t[2])
    if any_kernel_queue.get_device().image_targets:
        s = sycl.ext.kernel_cache_stats()
        assert s["compiles"] + s["disk_hits"] == 1 and s["memory_hits"] == 1, s


def test_nested_mixed_tuple_capture(any_kernel_queue: sycl.queue) -> None:
    t = ((2, np.float32(0.5)), True, 1 - 1j, np.uint8(7))

    def kernel_of(o):
        def k(i):
            x = int(i)
            o[i] = (t[0][0] * x + t[0][1] + t[2] * x) if t[1] else t[3]

        return k

    got = _run(any_kernel_queue, kernel_of, np.zeros(4, np.complex128))
    x = np.arange(4)
    np.testing.assert_allclose(got, 2 * x + 0.5 + (1 - 1j) * x)


def test_tuple_of_non_numbers_is_rejected(kq: sycl.queue) -> None:
    t = (1.0, "two")
    with pytest.raises(sycl.kernel_compile_error) as info:
        _run(kq, lambda o: lambda i: o.__setitem__(i, t[0]), np.zeros(4))
    assert info.value.code() == sycl.errc.kernel
    assert "'t'" in str(info.value) and "numbers" in str(info.value)

"""A captured ``str`` compared with a literal in a kernel (docs/kernels.md: a compile-time
constant): ``op = "min"; ... if op == "min":``. Each value is its own specialisation; every
device that runs Python kernels agrees with numpy."""

from __future__ import annotations

import numpy as np
import pytest

import pysycl as sycl

MODE = "scale"  # a module global read by a kernel: a constant too

A = np.array([3.0, 1.0, 2.0, 5.0, -1.0], np.float32)
B = np.array([1.0, 4.0, 2.0, 0.0, -2.0], np.float32)


def _compiled(q: sycl.queue) -> bool:
    return not q.get_device().has(sycl.aspect.host_debuggable)


def _compiles() -> int:
    s = sycl.ext.kernel_cache_stats()
    return s["compiles"] + s["disk_hits"]


def _binary(q: sycl.queue, op: str) -> np.ndarray:
    c = np.zeros_like(A)
    with sycl.buffer(A) as Ab, sycl.buffer(B) as Bb, sycl.buffer(c) as Cb:
        def cg(h: sycl.handler) -> None:
            ra = Ab.get_access(h, sycl.access_mode.read)
            rb = Bb.get_access(h, sycl.access_mode.read)
            wc = Cb.get_access(h, sycl.access_mode.write)

            def k(i):
                if op == "min":
                    wc[i] = min(ra[i], rb[i])
                elif "max" == op:
                    wc[i] = max(ra[i], rb[i])
                elif op != "sum":
                    wc[i] = ra[i] - rb[i]
                else:
                    wc[i] = ra[i] + rb[i]
            h.parallel_for(sycl.range(len(c)), k)
        q.submit(cg)
    return c


def test_a_captured_string_picks_the_branch(any_kernel_queue: sycl.queue,
                                            fresh_stats: None) -> None:
    want = {"min": np.minimum(A, B), "max": np.maximum(A, B), "sum": A + B, "diff": A - B}
    for op in ("min", "max", "sum", "diff", "min", "sum"):
        np.testing.assert_array_equal(_binary(any_kernel_queue, op), want[op])
    if _compiled(any_kernel_queue):
        assert _compiles() == 4  # one specialisation per value; the repeats are hits


def test_a_string_in_a_lambda_and_a_module_global(any_kernel_queue: sycl.queue) -> None:
    for how, want in (("double", A * 2), ("negate", -A)):
        out = np.zeros_like(A)
        with sycl.buffer(A) as Ab, sycl.buffer(out) as Ob:
            def cg(h: sycl.handler, how: str = how) -> None:
                ra = Ab.get_access(h, sycl.access_mode.read)
                wo = Ob.get_access(h, sycl.access_mode.write)
                h.parallel_for(sycl.range(len(A)), lambda i: wo.__setitem__(
                    i, ra[i] * (2 if how == "double" else -1) * (1 if MODE == "scale" else 0)))
            any_kernel_queue.submit(cg)
        np.testing.assert_array_equal(out, want)


def test_a_string_used_otherwise_is_still_an_error(any_kernel_queue: sycl.queue) -> None:
    name = "abc"
    out = np.zeros(3, np.int64)
    with sycl.buffer(out) as Ob:
        def cg(h: sycl.handler) -> None:
            wo = Ob.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.range(3), lambda i: wo.__setitem__(i, len(name)))
        if _compiled(any_kernel_queue):
            with pytest.raises(sycl.kernel_compile_error, match="strings cannot be used in "
                               "kernels") as ei:
                any_kernel_queue.submit(cg)
            assert f"{__file__}:" in str(ei.value)
        else:  # the interpreter runs Python as it is
            any_kernel_queue.submit(cg)
    if not _compiled(any_kernel_queue):
        assert out.tolist() == [3, 3, 3]

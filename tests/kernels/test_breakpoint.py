"""``breakpoint()`` in a kernel (docs/debugging.md): the host_debuggable device stops there
(``sys.breakpointhook``); a compiled device ignores it with one ``pysycl.ext.KernelWarning``
per line and process, naming the line -- so the kernel debugged on the host device runs
unchanged everywhere, with the same results."""

from __future__ import annotations

import sys
import warnings
from typing import Any

import numpy as np
import pytest

import pysycl as sycl
from tests.conftest import ptxas_check


def _is_host(q: sycl.queue) -> bool:
    return q.get_device().has(sycl.aspect.host_debuggable)


def _hook(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """``sys.breakpointhook`` replaced by a recorder (what ``breakpoint()`` calls)."""
    calls: list[Any] = []
    monkeypatch.setattr(sys, "breakpointhook", lambda *a, **k: calls.append(a))
    return calls


def _message(line: int, name: str) -> str:
    return (f"breakpoint() at {__file__}:{line} does nothing in kernel {name!r} on a compiled "
            "device (no debugger runs there); to stop there, submit the command group to the "
            "host_debuggable device: sycl.queue(sycl.aspect_selector(sycl.aspect."
            "host_debuggable)) (docs/debugging.md)")


def _line_of(text: str) -> int:
    with open(__file__) as f:
        return next(n for n, ln in enumerate(f, 1) if ln.strip() == text)


def _double(q: sycl.queue, n: int = 4) -> tuple[np.ndarray, Any]:
    x = np.arange(n, dtype=np.float32)
    kernels = []
    with sycl.buffer(x) as X:
        def cg(h: sycl.handler) -> None:
            a = X.get_access(h, sycl.access_mode.read_write)

            def k(i):
                v = a[i] * 2
                if i[0] == 2:
                    breakpoint()  # the kernel's breakpoint
                a[i] = v

            kernels.append(k)
            h.parallel_for(sycl.range(n), k)

        q.submit(cg)
    return x, kernels[0]


def test_breakpoint_stops_on_the_host_device_and_is_ignored_with_a_warning_elsewhere(
        any_kernel_queue: sycl.queue, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _hook(monkeypatch)
    if _is_host(any_kernel_queue):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no warning on the host device
            x, _ = _double(any_kernel_queue)
        assert len(calls) == 1  # work-item 2 stopped
    else:
        with pytest.warns(sycl.ext.KernelWarning) as rec:
            x, k = _double(any_kernel_queue)
        (w,) = rec
        line = _line_of("breakpoint()  # the kernel's breakpoint")
        assert str(w.message) == _message(line, k.__qualname__)
        assert (w.filename, w.lineno) == (__file__, line)  # the warning points at the line
        assert calls == []
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # once per line and process
            x2, _ = _double(any_kernel_queue, 8)
        assert np.array_equal(x2, np.arange(8) * 2)
    assert np.array_equal(x, np.arange(4) * 2)


def _helper(v):
    breakpoint()  # the helper's breakpoint
    return v + 1


def test_a_breakpoint_in_a_helper_names_the_helpers_line(
        any_kernel_queue: sycl.queue, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _hook(monkeypatch)
    x = np.zeros(4, np.float32)
    with sycl.buffer(x) as X:
        def cg(h: sycl.handler) -> None:
            a = X.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.range(4), lambda i: a.__setitem__(i, _helper(i[0])))

        if _is_host(any_kernel_queue):
            any_kernel_queue.submit(cg)
            assert len(calls) == 4
        else:
            with pytest.warns(sycl.ext.KernelWarning) as rec:
                any_kernel_queue.submit(cg)
            (w,) = rec
            line = _line_of("breakpoint()  # the helper's breakpoint")
            assert f"breakpoint() at {__file__}:{line} does nothing in kernel" in str(w.message)
            assert calls == []
    assert x.tolist() == [1, 2, 3, 4]


def test_breakpoint_compiles_to_nothing_in_ptx(ptx_images: list, kq: sycl.queue,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    _hook(monkeypatch)
    x = np.zeros(4, np.int32)
    with sycl.buffer(x) as X:
        def cg(h: sycl.handler) -> None:
            a = X.get_access(h, sycl.access_mode.write)

            def k(i):
                breakpoint()  # the PTX kernel's breakpoint
                a[i] = i[0]

            h.parallel_for(sycl.range(4), k)

        with pytest.warns(sycl.ext.KernelWarning):
            kq.submit(cg)
    assert x.tolist() == [0, 1, 2, 3]
    (img,) = ptx_images
    assert img.format == "ptx" and b"trap" not in img.binary
    ptxas_check(img.binary)


def test_breakpoint_with_arguments_is_a_compile_error(kq: sycl.queue) -> None:
    x = np.zeros(4, np.int32)
    with sycl.buffer(x) as X:
        def cg(h: sycl.handler) -> None:
            a = X.get_access(h, sycl.access_mode.write)

            def k(i):
                breakpoint(1)
                a[i] = 1

            h.parallel_for(sycl.range(4), k)

        with pytest.warns(sycl.ext.KernelWarning), pytest.raises(sycl.kernel_compile_error) as e:
            kq.submit(cg)
    assert "breakpoint() with the arguments (int)" in str(e.value)

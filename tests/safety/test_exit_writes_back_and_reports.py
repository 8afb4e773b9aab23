"""Issue 21 items 11 and 19: nothing is dropped when a program ends or a queue goes.

* A buffer still alive when the interpreter exits (a module's global, one in a
  reference cycle) writes back before the interpreter finalizes: SYCL writes back
  when a buffer is destroyed (SYCL 2020 §4.7.2.3), and the program's end destroys it.
* Asynchronous errors (a host_task that raised) that no ``wait_and_throw`` /
  ``throw_asynchronous`` took are handed to the async handler when their queue is
  destroyed (SYCL 2020 §4.6.5.5: "if there are asynchronous errors to be processed
  when a queue is destructed, the handler is called"), or at exit for a queue still
  alive then; pysycl's default handler, with no caller left to raise in, reports them
  on the ``pysycl.queue`` logger (stderr when the program configures no logging).

Exits and the default handler's report are checked in child processes.
"""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

import pysycl as sycl


def _child(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args],
                          capture_output=True, text=True, timeout=300)


# ------------------------------------------------------------------ write-back at exit
_MEMMAP_PROGRAM = """
    import sys, numpy as np, pysycl as sycl
    q = sycl.queue()
    data = np.memmap(sys.argv[1], dtype=np.float32, mode="r+", shape=(4096,))
    B = sycl.buffer(data)                  # a module-level buffer, never closed

    def cg(h):
        a = B.get_access(h, sycl.access_mode.read_write)
        def k(i):
            x = a[i]
            for j in range(200):
                x = x + 1.0
            a[i] = x + i
        h.parallel_for(sycl.range(4096), k)

    q.submit(cg)
    print("SUBMITTED")                     # exit: the kernel may still be running
"""


def test_exit_writes_back_a_module_level_buffer_over_a_memmap(tmp_path: Path) -> None:
    path = tmp_path / "data.f32"
    np.zeros(4096, np.float32).tofile(path)
    p = _child(_MEMMAP_PROGRAM, str(path))
    assert p.returncode == 0 and "SUBMITTED" in p.stdout, p.stderr[-3000:]
    got = np.fromfile(path, np.float32)
    np.testing.assert_array_equal(got, np.arange(4096, dtype=np.float32) + 200)


def test_exit_writes_back_a_buffer_kept_by_a_reference_cycle(tmp_path: Path) -> None:
    # With the cyclic collector off, the cycle outlives the program's code: only the
    # exit hook can write it back (a copy of a non-contiguous array: written element-wise).
    path = tmp_path / "data.f64"
    np.zeros((8, 8), np.float64).tofile(path)
    p = _child("""
        import gc, sys, numpy as np, pysycl as sycl
        gc.disable()
        q = sycl.queue()
        data = np.memmap(sys.argv[1], dtype=np.float64, mode="r+", shape=(8, 8))
        view = data[:, ::2]                    # not contiguous: the buffer copies it

        class Holder:
            pass

        def run():
            h = Holder()
            h.me = h                           # a cycle holds the buffer
            h.buf = sycl.buffer(view)
            def cg(hd):
                a = h.buf.get_access(hd, sycl.access_mode.write)
                hd.parallel_for(sycl.range(8, 4), lambda it: a.__setitem__(it, 7.0))
            q.submit(cg)

        run()
        print("DONE")
    """, str(path))
    assert p.returncode == 0 and "DONE" in p.stdout, p.stderr[-3000:]
    got = np.fromfile(path, np.float64).reshape(8, 8)
    assert (got[:, ::2] == 7.0).all() and (got[:, 1::2] == 0.0).all(), got


# ------------------------------------------------------------------ errors at destruction
def _boom() -> None:
    raise ValueError("host task failed")


def test_destroyed_queue_hands_its_host_task_errors_to_its_async_handler(
        cl_device: sycl.device) -> None:
    got: list[list[BaseException]] = []
    q = sycl.queue(cl_device, lambda errs: got.append(list(errs)))
    q.submit(lambda h: h.host_task(_boom))
    assert got == []  # asynchronous: nothing before a synchronization point
    del q  # the last reference (a cycle through the error's traceback: collected)
    gc.collect()
    assert len(got) == 1 and len(got[0]) == 1, got
    assert isinstance(got[0][0], ValueError) and "host task failed" in str(got[0][0])


def test_destroyed_queue_hands_its_errors_to_its_contexts_async_handler(
        cl_device: sycl.device) -> None:
    got: list[list[BaseException]] = []
    ctx = sycl.context(cl_device, async_handler=lambda errs: got.append(list(errs)))
    q = sycl.queue(ctx, cl_device)
    q.submit(lambda h: h.host_task(_boom))
    del q
    gc.collect()
    assert len(got) == 1 and isinstance(got[0][0], ValueError), got


def test_errors_taken_before_destruction_are_not_handed_over_again(
        cl_device: sycl.device) -> None:
    got: list[list[BaseException]] = []
    q = sycl.queue(cl_device, lambda errs: got.append(list(errs)))
    q.submit(lambda h: h.host_task(_boom))
    q.wait_and_throw()
    del q
    gc.collect()
    assert len(got) == 1, got


def test_default_handler_reports_errors_of_a_destroyed_queue() -> None:
    p = _child("""
        import gc, pysycl as sycl
        q = sycl.queue()
        q.submit(lambda h: h.host_task(lambda: 1 / 0))
        del q
        gc.collect()
        print("AFTER")
    """)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "AFTER" in p.stdout
    err = p.stderr
    assert "asynchronous error no async_handler received" in err, err
    assert "ZeroDivisionError" in err and "in <lambda>" in err, err  # the error, its traceback


def test_exit_reports_errors_of_queues_still_alive() -> None:
    got = _child("""
        import pysycl as sycl
        seen = []
        q1 = sycl.queue(async_handler=lambda errs: print("HANDLER", [repr(e) for e in errs]))
        q2 = sycl.queue()
        q1.submit(lambda h: h.host_task(lambda: [][1]))
        q2.submit(lambda h: h.host_task(lambda: {}["missing"]))
        print("END")
    """)
    assert got.returncode == 0, got.stderr[-3000:]
    assert "HANDLER [\"IndexError('list index out of range')\"]" in got.stdout, got.stdout
    assert "asynchronous error no async_handler received" in got.stderr, got.stderr
    assert "KeyError: 'missing'" in got.stderr, got.stderr

"""Issue 21 item 1: threads on one queue; a running command keeps what it uses alive.

docs/memory.md promises that a command keeps the USM pointers and host arrays it
uses alive until it completes, whatever the program drops. Each queue remembers
what its commands in flight hold; these tests submit to one queue from several
threads, which wait (``q.wait()``, ``event.wait()``) while the others submit, and
drop their pointers and host arrays right after submitting. Each runs in a child
process: the failure they guard against is a use-after-free (SIGSEGV, garbage data).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

_TIMEOUT = 600


def _child(code: str, cache: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if cache is not None:
        env["PYSYCL_CACHE_DIR"] = str(cache)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=_TIMEOUT, env=env)


def test_threads_dropping_usm_pointers_of_running_kernels_on_one_queue(tmp_path: Path) -> None:
    # Four threads on one in-order queue: allocate, launch (the fast path and a
    # command group), drop the pointers while the kernels run; every few launches a
    # thread waits for the whole queue or for its event. Run twice: the second run
    # loads the kernel from the disk cache, without the compiler (whose memory use
    # hid the crash in the first).
    for _ in range(2):
        p = _child(_DROPPING, tmp_path / "cache")
        assert p.returncode == 0, f"child died ({p.returncode}): {p.stderr[-3000:]}"
        assert "BAD 0 ERRORS []" in p.stdout, p.stdout + p.stderr[-3000:]


_DROPPING = """
        import threading, numpy as np, pysycl as sycl
        q = sycl.queue(properties=[sycl.property.queue.in_order()])
        N = 1 << 15
        bad, errors = [], []

        def worker(seed):
            try:
                for it in range(120):
                    out = sycl.malloc_device(N, q, dtype=np.float32)  # every device has it
                    tmp = sycl.malloc_device(N, q, dtype=np.float32)
                    v = float(seed * 100 + it)

                    def k(i):
                        x = 0.0
                        for j in range(100):
                            x += v
                        tmp[i] = x
                        out[i] = x

                    if it % 2:
                        ev = q.parallel_for(sycl.range(N), k)
                    else:
                        ev = q.submit(lambda h: h.parallel_for(sycl.range(N), k))
                    if it % 3 == 0:
                        q.wait() if seed % 3 else ev.wait()
                        got = np.empty(N, np.float32)
                        q.copy(out, got, N).wait()
                        if not (got == v * 100).all():
                            bad.append((seed, it))
                    del out, tmp, k  # the kernel still runs: it holds them
            except BaseException as e:
                errors.append(repr(e))

        ts = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        q.wait()
        print("BAD", len(bad), "ERRORS", errors)
"""


def test_threads_memcpy_from_temporary_host_arrays_delivers_every_value() -> None:
    # 2,400 q.memcpy calls from host arrays nobody keeps, by four threads on one queue;
    # each copy is read back and checked. Threads wait for the queue while the others
    # copy: a wait must release only what its own commands (and earlier ones) held.
    p = _child("""
        import threading, numpy as np, pysycl as sycl
        q = sycl.queue()
        n, nthreads = 1 << 14, 4
        bad, errors = [], []

        def worker(seed):
            try:
                dst = sycl.malloc_device(n, q, dtype=np.int64)
                for it in range(2400 // nthreads):
                    val = seed * 100000 + it
                    q.memcpy(dst, np.full(n, val, dtype=np.int64), n * 8)  # a temporary
                    junk = np.full(n, -1, dtype=np.int64)  # reuses the freed memory
                    out = np.empty(n, dtype=np.int64)
                    if it % 2:
                        q.memcpy(out, dst, n * 8)
                        q.wait()
                    else:
                        q.memcpy(out, dst, n * 8).wait()
                    if not (out == val).all():
                        bad.append((seed, it))
                    del junk
            except BaseException as e:
                errors.append(repr(e))

        ts = [threading.Thread(target=worker, args=(s,)) for s in range(nthreads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        print("BAD", len(bad), "ERRORS", errors)
    """)
    assert p.returncode == 0, f"child died ({p.returncode}): {p.stderr[-3000:]}"
    assert "BAD 0 ERRORS []" in p.stdout, p.stdout + p.stderr[-3000:]


def test_reduction_kernel_keeps_its_usm_pointer_alive() -> None:
    # One thread: a kernel with a reduction reads a USM pointer the program drops right
    # after the submit; the kernel must finish on valid memory, with the right sum.
    p = _child("""
        import numpy as np, pysycl as sycl
        q = sycl.queue()
        N = 1 << 18
        bad = 0
        for it in range(20):
            p = sycl.malloc_device(N, q, dtype=np.float32)  # every device has it
            q.fill(p, np.float32(1.0), N).wait()
            out = np.zeros(1, np.float32)
            with sycl.buffer(out) as O:
                def cg(h):
                    red = sycl.reduction(O, h, sycl.plus())
                    def k(i, s):
                        x = 0.0
                        for j in range(100):
                            x += p[i] * 0.01
                        s.combine(x)
                    h.parallel_for(sycl.range(N), red, k)
                q.submit(cg)
                del p, cg  # the kernel still runs: it holds the pointer
                junk = [np.ones(N, np.float32) for _ in range(4)]
            if abs(out[0] - N) > N * 1e-3:
                bad += 1
        print("BAD", bad)
    """)
    assert p.returncode == 0, f"child died ({p.returncode}): {p.stderr[-3000:]}"
    assert "BAD 0" in p.stdout, p.stdout + p.stderr[-3000:]


def test_in_flight_list_is_empty_after_waits_of_one_thread() -> None:
    # The bookkeeping itself: after the last command's wait (event or queue), nothing is
    # held any more; with threads, the queue's wait leaves nothing behind either.
    p = _child("""
        import threading, numpy as np, pysycl as sycl
        q = sycl.queue()
        p = sycl.malloc_device(64, q, dtype=np.int32)
        for _ in range(200):
            q.memcpy(p, np.arange(64, dtype=np.int32), 256)
        q.memcpy(p, np.arange(64, dtype=np.int32), 256).wait()
        a = len(q.executor.inflight)
        def copies():
            for _ in range(100):
                q.memcpy(p, np.arange(64, dtype=np.int32), 256)
        ts = [threading.Thread(target=copies) for _ in range(3)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        q.wait()
        print("HELD", a, len(q.executor.inflight))
    """)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "HELD 0 0" in p.stdout, p.stdout + p.stderr[-3000:]


def test_prefetch_holds_its_pointer_until_it_is_waited_for() -> None:
    # A prefetch (clEnqueueSVMMigrateMem) of a pointer the program drops at once: the
    # allocation must outlive the command (clSVMFree does not wait for commands).
    p = _child("""
        import gc, weakref, numpy as np, pysycl as sycl
        q = sycl.queue()
        # shared memory, what prefetch is for; device memory where the device has none
        malloc = (sycl.malloc_shared if q.get_device().has(sycl.aspect.usm_shared_allocations)
                  else sycl.malloc_device)
        ptr = malloc(1 << 20, q, dtype=np.float32)
        alloc = weakref.ref(ptr._alloc)
        q.prefetch(ptr, 4 << 20)
        del ptr
        gc.collect()
        print("HELD", alloc() is not None and alloc().live)
        q.wait()
        gc.collect()
        print("RELEASED", alloc() is None)
    """)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "HELD True" in p.stdout and "RELEASED True" in p.stdout, p.stdout + p.stderr[-3000:]

"""The cost of ``assert`` in kernels when no assert fails: the same kernels with and without one.

Each pair of kernels differs only by an assert that always holds; they run alternately
in one process on one device, each call including ``wait()`` (where a launch's error
slot is inspected); both results are compared with numpy. A kernel with asserts
has one persistent error slot per context, bound once as its last argument and read at
the synchronization point (in place where the device has host-visible memory;
``pysycl._kernels.steps``), and its USM shortcut launches (``q.parallel_for(n, k)``) take
the whole launch path instead of the remembered fast path.

Run: ``.venv/bin/python benchmarks/bench_assert.py [--quick]``. Prints a markdown
table; ``--write`` also replaces the assert section of ``docs/performance.md``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

import pysycl as sycl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import paired, paired_table, setup, write_section

R, W = sycl.access_mode.read, sycl.access_mode.write


def _triad_cg(A: sycl.buffer, B: sycl.buffer, C: sycl.buffer, s: float, n: int,
              checked: bool) -> Callable[[sycl.handler], None]:
    def cg(h: sycl.handler) -> None:
        a, b, c = A.get_access(h, R), B.get_access(h, R), C.get_access(h, W)
        if checked:
            def k(i: sycl.item) -> None:
                x = a[i]
                assert x >= 0.0, f"a[{i[0]}] = {x}"
                c[i] = x + s * b[i]
        else:
            def k(i: sycl.item) -> None:
                x = a[i]
                c[i] = x + s * b[i]
        h.parallel_for(sycl.range(n), k)
    return cg


def _submit_wait(q: sycl.queue, cg: Callable[[sycl.handler], None]) -> Callable[[], None]:
    return lambda: q.submit(cg).wait()


def _usm_launch(q: sycl.queue, p: sycl.usm_pointer, n: int, checked: bool) -> Callable[[], None]:
    if checked:
        def k(i: sycl.item) -> None:
            assert p[i] >= 0.0
            p[i] = p[i] + 1.0
    else:
        def k(i: sycl.item) -> None:
            p[i] = p[i] + 1.0

    def run() -> None:
        q.parallel_for(n, k)
        q.wait()
    return run


def bench(q: sycl.queue, quick: bool) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    rng = np.random.default_rng(0)
    n = 1 << 22
    s = np.float32(3.0)
    a = rng.random(n, dtype=np.float32)
    b = rng.random(n, dtype=np.float32)
    c = np.empty_like(a)
    A, B, C = sycl.buffer(a), sycl.buffer(b), sycl.buffer(c)
    runs = [_submit_wait(q, _triad_cg(A, B, C, s, n, checked)) for checked in (False, True)]
    for run in runs:
        run()
        with sycl.host_accessor(C, R) as hc:
            np.testing.assert_allclose(np.array(hc), a + s * b, rtol=1e-6)
    t = paired(*runs, 5 if quick else 25)
    rows.append({"name": "triad 2^22 f32 (c = a + s*b)", "unit": "GB/s", "work": 3 * 4 * n / 1e9,
                 "t": t})
    del A, B, C

    k = 16
    x = np.zeros(k, np.float32)
    X, Y = sycl.buffer(x), sycl.buffer(x.copy())
    reps = 300 if quick else 3000
    runs = [_submit_wait(q, _triad_cg(X, X, Y, s, k, checked)) for checked in (False, True)]
    rows.append({"name": f"launch latency: triad of {k}, submit + wait", "unit": "µs",
                 "t": paired(*runs, reps, warmup=50)})
    del X, Y

    p = sycl.malloc_device(k, q, dtype=np.float32)  # every USM device has device allocations
    q.memset(p, 0, 4 * k).wait()
    runs = [_usm_launch(q, p, k, checked) for checked in (False, True)]
    rows.append({"name": f"launch latency: USM q.parallel_for({k}, k) + wait", "unit": "µs",
                 "t": paired(*runs, reps, warmup=50)})
    q.wait()
    total = 2 * (reps + 50)
    got = np.empty(k, np.float32)
    q.memcpy(got, p, 4 * k).wait()
    assert np.all(got == total), got[:4]
    sycl.free(p, q)
    return rows


def render(rows: list[dict[str, object]], dev: str) -> str:
    return paired_table(rows, dev,
                        "One run of `benchmarks/bench_assert.py`; the same kernel without and with an "
                        "`assert` that always holds, alternately, medians, each call including `wait()`; "
                        "results compared with numpy.",
                        ("no assert", "with an assert", "assert / no assert time"))


def main() -> None:
    args, q, dev = setup()
    text = render(bench(q, args.quick), dev)
    print(text)
    if args.write:
        write_section("bench_assert", text)


if __name__ == "__main__":
    main()

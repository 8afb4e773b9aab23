"""A kernel that needs more than 64 registers a work-item without a launch bound.

``ACCUMULATORS`` float64 values live across a loop (two registers each): ptxas gives
the kernel ~96 registers (sm_90) when nothing bounds it, so it cannot run 1024 wide
(65536 registers a block), and 64 with ``.maxntid 1024`` (spilling the rest). The
kernel's text is generated (40 names), compiled once, and registered with
:mod:`linecache` so that messages and ``inspect`` find its source.
"""

from __future__ import annotations

import linecache
from collections.abc import Callable
from typing import Any

import numpy as np

import pysycl as sycl

ACCUMULATORS = 40
STEPS = 64
_FILE = "<pysycl-tests register_heavy>"


def _source() -> str:
    c = [f"c{j}" for j in range(ACCUMULATORS)]
    lines = ["def build(a, o, n):", "    def k(it):", "        i = it.get_global_id(0)",
             "        v = a[i]"]
    lines += [f"        {c[j]} = v * {j + 1}.5" for j in range(ACCUMULATORS)]
    lines += [f"        for t in range({STEPS}):", "            w = a[(i + t) % n]"]
    lines += [f"            {c[j]} = {c[j]} * w + {c[(j + 1) % ACCUMULATORS]}"
              for j in range(ACCUMULATORS)]
    lines += ["        o[i] = " + " + ".join(c), "    return k"]
    return "\n".join(lines) + "\n"


_SRC = _source()
linecache.cache[_FILE] = (len(_SRC), None, _SRC.splitlines(True), _FILE)
_ns: dict[str, Any] = {}
exec(compile(_SRC, _FILE, "exec"), _ns)  # the test's own generated kernel
build: Callable[[Any, Any, int], Callable[[Any], None]] = _ns["build"]


def expected(x: np.ndarray) -> np.ndarray:
    """The kernel's result, computed by numpy in the kernel's order."""
    n = x.size
    c = [x * (j + 1.5) for j in range(ACCUMULATORS)]
    for t in range(STEPS):
        w = x[(np.arange(n) + t) % n]
        for j in range(ACCUMULATORS):
            c[j] = c[j] * w + c[(j + 1) % ACCUMULATORS]
    return sum(c[1:], c[0])


def run(q: sycl.queue, x: np.ndarray, wg: int) -> np.ndarray:
    """The kernel over ``x`` as an nd_range with work-groups of ``wg``."""
    y = np.zeros_like(x)
    with sycl.buffer(x) as bx, sycl.buffer(y) as by:
        def cg(h: sycl.handler) -> None:
            a = bx.get_access(h, sycl.access_mode.read)
            o = by.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.nd_range(sycl.range(x.size), sycl.range(wg)), build(a, o, x.size))

        q.submit(cg)
    return y

"""Helpers shared by the benchmark scripts: timing and writing docs/performance.md."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def median_time(fn: Callable[[], object], reps: int, warmup: int = 2) -> float:
    """Median wall time of ``fn`` over ``reps`` calls, after ``warmup`` calls."""
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def paired(fa: Callable[[], object], fb: Callable[[], object], reps: int,
           warmup: int = 2) -> tuple[float, float]:
    """Median times of ``fa`` and ``fb``, measured alternately so drift hits both alike."""
    for _ in range(warmup):
        fa()
        fb()
    ta, tb = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        fa()
        t1 = time.perf_counter()
        fb()
        t2 = time.perf_counter()
        ta.append(t1 - t0)
        tb.append(t2 - t1)
    return statistics.median(ta), statistics.median(tb)


def write_section(marker: str, text: str) -> None:
    """Replace the text between ``<!-- marker:begin -->`` and ``<!-- marker:end -->``."""
    doc = ROOT / "docs" / "performance.md"
    begin, end = f"<!-- {marker}:begin -->", f"<!-- {marker}:end -->"
    cur = doc.read_text()
    pre, rest = cur.split(begin, 1)
    _, post = rest.split(end, 1)
    doc.write_text(pre + begin + "\n" + text + "\n" + end + post)

"""How the suite runs on several processes (pytest-xdist; ``make test`` passes ``-n auto``).

* **Workers**: ``-n auto`` (and ``-n logical``) is one worker per CPU this process may
  use, at most one per 2 GiB of available memory (a worker holds Numba, LLVM, the OpenCL
  runtime and the kernels it compiled: 0.7 GiB at the start, about 2 GiB at the end of
  a whole run); ``PYTEST_XDIST_AUTO_NUM_WORKERS`` overrides it, as in
  pytest-xdist. Physical cores (xdist's own ``auto`` with psutil) would be one worker on a
  2-vCPU CI machine whose vCPUs are hyper-threads of one core.
* **Kernel cache**: each worker uses its own ``PYSYCL_CACHE_DIR`` (tests/conftest.py):
  tests count compiles and disk hits, which another worker's writes would change.
* ``@pytest.mark.serial``: the test runs **alone** -- while it runs, no other worker runs
  a test (a shared/exclusive file lock taken around each test's setup, call and teardown;
  a waiting serial test stops new tests from starting, so it is never starved). For tests
  that measure time, calibrate work to the machine's speed, or need the machine quiet.
  Without workers the lock is not taken: tests run one at a time anyway.
* **Progress**: with workers and without ``-v``, one line per test file as its last test
  ends, instead of dots: the share of tests done, the time since the start, the file and
  its outcomes; a failing test is named at once. ``-v`` gives xdist's line per test.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

try:
    import fcntl
except ImportError:  # not POSIX: no lock, serial tests run beside others
    fcntl = None  # type: ignore[assignment]

#: The ``workerinput`` key that hands the lock folder from the controller to the workers.
LOCK_KEY = "pysycl_serial_lock"
#: Memory one worker may need, for the ``-n auto`` cap.
WORKER_BYTES = 2 << 30


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    env = os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS", "")
    if env.strip().isdigit():
        return max(1, int(env))
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    avail = _available_memory()
    return max(1, min(cpus, avail // WORKER_BYTES if avail else cpus))


def _available_memory() -> int | None:
    """``MemAvailable`` of /proc/meminfo in bytes (None where there is none)."""
    try:
        with open("/proc/meminfo") as f:
            m = re.search(r"^MemAvailable:\s+(\d+) kB", f.read(), re.M)
    except OSError:
        return None
    return int(m.group(1)) * 1024 if m else None


def pytest_configure(config: pytest.Config) -> None:
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:  # an xdist worker
        if workerinput.get(LOCK_KEY):
            config.pluginmanager.register(SerialLock(workerinput[LOCK_KEY]), "pysycl-serial-lock")
    elif (config.getoption("numprocesses", None) or 0) and not config.getoption("collectonly"):
        config.pluginmanager.register(Controller(config), "pysycl-parallel-controller")


class SerialLock:
    """In a worker: each test holds the lock shared, a ``serial`` test exclusive."""

    def __init__(self, folder: str) -> None:
        # Two locks: ``rw`` is the shared/exclusive one; ``gate`` is held by a serial test
        # from before it asks for ``rw`` until it ends, and passed through by every other
        # test before it asks for ``rw`` shared, so a waiting serial test is never starved.
        self._gate = open(os.path.join(folder, "gate"), "a+b")  # held all session
        self._rw = open(os.path.join(folder, "rw"), "a+b")

    @contextlib.contextmanager
    def hold(self, alone: bool) -> Iterator[None]:
        if fcntl is None:
            yield
            return
        fcntl.flock(self._gate, fcntl.LOCK_EX)
        try:
            fcntl.flock(self._rw, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        finally:
            if not alone:
                fcntl.flock(self._gate, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(self._rw, fcntl.LOCK_UN)
            if alone:
                fcntl.flock(self._gate, fcntl.LOCK_UN)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> Any:
        with self.hold(item.get_closest_marker("serial") is not None):
            yield

    def pytest_unconfigure(self) -> None:
        self._gate.close()
        self._rw.close()


class Controller:
    """In the xdist controller: the lock folder for the workers, and the progress lines."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.folder = tempfile.mkdtemp(prefix="pysycl-test-lock-")
        self.files: dict[str, int] = {}  # test file -> tests not ended yet
        self.outcomes: dict[str, Counter[str]] = {}
        self.total = 0
        self.done = 0
        self.start = time.monotonic()
        self.quiet = config.getoption("verbose") <= 0

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[LOCK_KEY] = self.folder

    def pytest_unconfigure(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if self.total:  # every worker collects the same tests (xdist checks it)
            return
        self.total = len(ids)
        for nodeid in ids:
            f = _file(nodeid)
            self.files[f] = self.files.get(f, 0) + 1
            self.outcomes.setdefault(f, Counter())
        if self.quiet:
            files = f"{len(self.files)} file" + ("s" if len(self.files) != 1 else "")
            self._line(f"{self.total} tests in {files}: a line per file as its last test ends")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_report_teststatus(self, report: pytest.TestReport, config: pytest.Config) -> Any:
        outcome = yield
        status = outcome.get_result()
        if self.quiet and self.total and isinstance(status, tuple) and len(status) == 3:
            outcome.force_result((status[0], "", status[2]))  # no dot: the file's line tells

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        f = _file(report.nodeid)
        if not self.quiet or f not in self.files:
            return
        category = self.config.hook.pytest_report_teststatus(report=report, config=self.config)[0]
        if category:
            self.outcomes[f][category] += 1
        if category in ("failed", "error"):
            self._line(f"{'FAILED' if category == 'failed' else 'ERROR'} {report.nodeid}"
                       + ("" if report.when == "call" else f" ({report.when})"), red=True)
        if report.when not in ("teardown", "???"):  # "???": xdist's report of a crashed worker's test
            return
        self.done += 1
        self.files[f] -= 1
        if self.files[f] == 0:
            out = self.outcomes[f]
            bad = out["failed"] + out["error"] > 0
            summary = ", ".join(f"{n} {c}" for c, n in sorted(out.items()) if n) or "nothing ran"
            self._line(f"[{100 * self.done // max(1, self.total):3d}%] {self._clock()} {f}: "
                       f"{summary}", red=bad, green=not bad)

    def _clock(self) -> str:
        s = int(time.monotonic() - self.start)
        return f"{s // 60:2d}:{s % 60:02d}"

    def _line(self, text: str, **markup: bool) -> None:
        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        if tr is not None:
            tr.write_line(text, **markup)


def _file(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]

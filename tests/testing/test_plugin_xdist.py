"""pysycl's pytest plugin under pytest-xdist, as a user runs it: ``pytest -n 2`` on a file
outside the project (a fresh interpreter, no conftest, one kernel cache both workers share).

Every worker collects the same tests (xdist refuses to run otherwise: the device ids must
be the same in every process), each test runs once per device on some worker, a kernel's
asynchronous error fails the test that caused it on its worker, and ``sycl_requires``
skips as without workers.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from pysycl.testing import devices
from pysycl.testing import plugin as sycl_plugin
from tests.testing._userrun import run_pytest

# pytest-xdist is in the test extra (make test runs on it); a machine set up without the
# extra (tools/gpu_suite.sh's offline GPU host) has none, as with Sphinx in test_docs.py.
pytest.importorskip("xdist", reason="pytest-xdist is not installed (pip install -e .[test])")

USER = """
    import numpy as np
    import pytest
    import pysycl as sycl
    from hypothesis import given, settings, strategies as st

    def test_dev(sycl_device):
        assert isinstance(sycl_device, sycl.device)

    @settings(max_examples=5)
    @given(n=st.integers(1, 32))
    def test_fill(sycl_queue, n):
        out = np.zeros(n, np.int64)
        with sycl.buffer(out) as B:
            def cg(h):
                b = B.get_access(h, sycl.access_mode.write)
                h.parallel_for(sycl.range(n), lambda i: b.__setitem__(i, i[0] * 3))
            sycl_queue.submit(cg)
        assert (out == 3 * np.arange(n)).all()

    def test_leaves_an_error(sycl_queue):
        def boom():
            raise RuntimeError("the host task's own error")
        sycl_queue.submit(lambda h: h.host_task(boom))

    def test_after_it(sycl_queue):
        sycl_queue.wait_and_throw()

    @pytest.mark.sycl_requires(sycl.aspect.host_debuggable)
    def test_host_only(sycl_device):
        assert sycl_device.has(sycl.aspect.host_debuggable)
"""


def _xdist_outcomes(r: subprocess.CompletedProcess[str]) -> dict[str, str]:
    """test id -> outcome from ``pytest -n N -v``: ``[gw0] [ 50%] PASSED file::id``."""
    return dict((t, o) for o, t in re.findall(r"^\[gw\d+\] \[ *\d+%\] (PASSED|FAILED|SKIPPED|ERROR) "
                                              r"\S+::(\S+)", r.stdout, re.M))


def test_the_plugin_under_xdist(tmp_path: Path) -> None:
    r = run_pytest(tmp_path, USER, "-n", "2")
    assert r.returncode == 1, r.stdout + r.stderr  # test_leaves_an_error fails, as it should
    assert "created: 2/2 workers" in r.stdout, r.stdout
    ids = sycl_plugin.device_ids(devices())
    got = _xdist_outcomes(r)
    want = {}
    for i in ids:
        want.update({f"test_dev[{i}]": "PASSED", f"test_fill[{i}]": "PASSED",
                     f"test_leaves_an_error[{i}]": "FAILED", f"test_after_it[{i}]": "PASSED",
                     f"test_host_only[{i}]": "PASSED" if i == "host" else "SKIPPED"})
    assert got == want, r.stdout
    assert len(set(re.findall(r"^\[(gw\d+)\]", r.stdout, re.M))) == 2, r.stdout  # both ran tests
    assert "the host task's own error" in r.stdout
    assert re.search(r"SKIPPED \[\d+\] test_user\.py:\d+: device \S+ \(.*\) lacks "
                     r"aspect\.host_debuggable", r.stdout), r.stdout

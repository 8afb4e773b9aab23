"""First-time work is reported once and left out of hypothesis deadlines (docs/testing.md).

The project's conftest loads a profile without deadlines; the tests here set
``deadline`` and the health checks explicitly, or run pytest in a fresh interpreter
without the conftest, as a user's CI does.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.control import current_build_context
from hypothesis.errors import DeadlineExceeded

import pysycl as sycl
import pysycl.testing
from pysycl._core import first_use
from pysycl._kernels.cache import kernels
from pysycl.testing import _deadline
from tests.testing._userrun import outcomes, run_pytest

STRICT = settings(deadline=200, max_examples=4, database=None, derandomize=True,
                  suppress_health_check=())


@pytest.fixture
def reports() -> Iterator[list[tuple[str, float]]]:
    got: list[tuple[str, float]] = []

    def listen(what: str, seconds: float) -> None:
        got.append((what, seconds))

    first_use.add_listener(listen)
    yield got
    first_use.remove_listener(listen)


def _fill(q: sycl.queue, n: int, scale: int) -> np.ndarray:
    out = np.zeros(n, np.int64)
    with sycl.buffer(out) as B:
        def cg(h: sycl.handler) -> None:
            b = B.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.range(n), lambda i: b.__setitem__(i, i[0] * scale + 41))

        q.submit(cg)
    return out


def test_a_first_launch_reports_its_work_once_and_a_second_nothing(
        kernel_device: sycl.device, reports: list[tuple[str, float]]) -> None:
    kernels.clear_memory()  # this test's kernel compiles (or comes from disk) now
    q = sycl.queue(kernel_device)
    t0 = time.perf_counter()
    assert _fill(q, 8, 3).tolist() == [3 * i + 41 for i in range(8)]
    took = time.perf_counter() - t0
    whats = [w for w, _ in reports]
    # the outermost spans only: the kernel (disk or compiler, the compiler's import nested
    # in it) and its build for the device, never their nested steps again
    assert len(whats) == 2, whats
    assert whats[0] == "kernel from the disk cache or the compiler"
    assert whats[1].startswith("kernel ") and "build for" in whats[1]
    assert 0 < sum(s for _, s in reports) <= took
    reports.clear()
    assert _fill(q, 8, 3)[1] == 44
    assert reports == []


def _doubles(o):  # a kernel of this test's own, declared: no other test submits it
    return lambda i: o.__setitem__(i, 2 * i[0])


def test_explicit_bundle_operations_are_first_time_work(
        kernel_device: sycl.device, reports: list[tuple[str, float]]) -> None:
    """sycl.get_kernel_bundle / compile / link / build compile and build: each is reported,
    as one span (the compiles and builds inside it are not reported again).

    The bundle holds this test's kernel only: one of every kernel the process has met so
    far would compile, link and build hundreds of them in a test session (two minutes),
    and what is reported does not depend on how many."""
    kid = sycl.ext.declare_kernel(_doubles, kernel_name="test_deadline.doubles",
                                  index_space=sycl.range(1),
                                  captures={"o": sycl.ext.accessor_type(np.int64, 1,
                                                                        sycl.access_mode.write)})
    kernels.clear_memory()
    sycl.ext.reset_kernel_cache_stats()
    ctx = sycl.context(kernel_device)
    kb = sycl.get_kernel_bundle(ctx, [kid], state=sycl.bundle_state.input)
    assert kb.get_kernel_ids() == [kid]
    # nested first-time work happened inside get_kernel_bundle: its one report covers it
    stats = sycl.ext.kernel_cache_stats()
    assert stats["compiles"] + stats["disk_hits"] == 1, stats
    obj = sycl.compile(kb)
    exe = sycl.link(obj)
    assert exe.get_state() is sycl.bundle_state.executable and exe.has_kernel(kid, kernel_device)
    built = sycl.build(kb)
    assert built.get_state() is sycl.bundle_state.executable and built.has_kernel(kid)
    assert [w for w, _ in reports] == ["sycl.get_kernel_bundle", "sycl.compile", "sycl.link",
                                       "sycl.build"]
    assert all(s >= 0 for _, s in reports)


def test_nested_first_use_is_reported_once_by_the_outermost(
        reports: list[tuple[str, float]]) -> None:
    with first_use.first_use("outer"):
        with first_use.first_use("inner"):
            time.sleep(0.02)
        time.sleep(0.01)
    assert [w for w, _ in reports] == ["outer"]
    assert reports[0][1] >= 0.03


def test_a_failing_listener_never_fails_the_work(caplog: pytest.LogCaptureFixture) -> None:
    def broken(what: str, seconds: float) -> None:
        raise RuntimeError("listener bug")

    first_use.add_listener(broken)
    try:
        with first_use.first_use("work"):
            pass
    finally:
        first_use.remove_listener(broken)
    assert "listener bug" in caplog.text


@pytest.mark.serial  # the example's own work must stay under 200 ms: no busy neighbour
def test_first_use_inside_an_example_is_left_out_of_the_deadline() -> None:
    """Each example spends 300 ms in first-time work (deadline 200 ms): the example passes;
    the credit is gone from the draw times once the example ends, so the input-generation
    health check (1 s of draw time) never sees it."""
    credited: list[float] = []
    examples: list[object] = []

    @STRICT
    @given(st.integers())
    def prop(x: int) -> None:
        data = current_build_context().data
        with first_use.first_use("slow first-time work"):
            time.sleep(0.3)
        credited.append(data.draw_times[_deadline.KEY])
        examples.append(data)

    prop()
    assert len(credited) == 4 and min(credited) >= 0.3
    assert all(_deadline.KEY not in d.draw_times for d in examples)  # type: ignore[attr-defined]


def test_without_the_listener_the_same_example_exceeds_the_deadline() -> None:
    """The control: the same property fails when the work is not left out."""

    @STRICT
    @given(st.just(0))  # one example: nothing to shrink
    def prop(x: int) -> None:
        with first_use.first_use("slow first-time work"):
            time.sleep(0.3)

    _deadline.uninstall()
    try:
        with pytest.raises(DeadlineExceeded):
            prop()
    finally:
        _deadline.install()


def test_other_work_stays_under_the_deadline() -> None:
    @STRICT
    @given(st.just(0))  # one example: nothing to shrink
    def prop(x: int) -> None:
        with first_use.first_use("quick"):
            pass
        time.sleep(0.3)  # the example's own work

    with pytest.raises(DeadlineExceeded):
        prop()


def test_listener_is_installed_by_importing_pysycl_testing() -> None:
    assert _deadline.credit in first_use._listeners
    assert pysycl.testing.devices  # (the import above installed it)


USER_PROPERTY = """
    import numpy as np
    import pysycl as sycl
    {imports}
    from hypothesis import given, strategies as st

    q = sycl.queue()  # the default device: a GPU where there is one, else the CPU

    @given(st.integers(1, 64), st.integers(-5, 5))
    def test_fill(n, scale):
        out = np.zeros(n, np.int64)
        with sycl.buffer(out) as B:
            def cg(h):
                b = B.get_access(h, sycl.access_mode.write)
                h.parallel_for(sycl.range(n), lambda i: b.__setitem__(i, i[0] * scale))
            q.submit(cg)
        assert (out == scale * np.arange(n)).all()
"""


@pytest.mark.slow
@pytest.mark.serial  # hypothesis's default 200 ms deadline: no busy neighbour (tests/_parallel.py)
def test_a_property_test_with_default_settings_passes_from_an_empty_cache(tmp_path: Path,
                                                                          kernel_device) -> None:
    """The issue's failure, as a user's CI meets it: hypothesis's default settings (deadline
    200 ms), an empty kernel cache, a fresh interpreter, no conftest. Without pysycl.testing
    the first example's compile exceeds the deadline; with it imported, the test passes.
    The profile is named: where a CI variable is set hypothesis loads its "ci" profile
    instead, which has no deadline."""
    default = "--hypothesis-profile=default"
    plain = run_pytest(tmp_path, USER_PROPERTY.format(imports=""), "-p", "no:_pysycl_pytestplugin",
                       default, name="test_plain.py", load=False)
    assert plain.returncode == 1, plain.stdout + plain.stderr
    # The compile fails the deadline; on a loaded machine hypothesis may first find the
    # whole example too slow (its input-generation health check): a failure either way.
    assert "DeadlineExceeded" in plain.stdout or "FailedHealthCheck" in plain.stdout, plain.stdout
    fixed = run_pytest(tmp_path, USER_PROPERTY.format(imports="import pysycl.testing"), default,
                       name="test_fixed.py", load=False, env={"PYSYCL_CACHE_DIR": str(tmp_path / "c2")})
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert outcomes(fixed) == {"test_fill": "PASSED"}

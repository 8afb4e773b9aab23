"""pysycl's pytest plugin, run as users run it: ``python -m pytest`` on files outside the project.

Each test writes a test file (and no conftest) into ``tmp_path`` and runs pytest on it
in a fresh interpreter with an empty kernel cache, loading the plugin as the
``pytest11`` entry point does (``-p _pysycl_pytestplugin``, unless pysycl is installed
with the entry point already).
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

import pysycl as sycl
from pysycl.testing import devices
from pysycl.testing import plugin as sycl_plugin
from tests.testing._userrun import PLUGIN, ROOT, outcomes, run_pytest


def test_ids_name_the_devices_that_run_python_kernels(tmp_path: Path) -> None:
    r = run_pytest(tmp_path, """
        import pysycl as sycl

        def test_dev(sycl_device):
            assert isinstance(sycl_device, sycl.device)

        def test_q(sycl_queue, sycl_device):
            assert sycl_queue.get_device() == sycl_device
    """)
    assert r.returncode == 0, r.stdout + r.stderr
    ids = sycl_plugin.device_ids(devices())
    assert outcomes(r) == {f"{t}[{i}]": "PASSED" for t in ("test_dev", "test_q") for i in ids}
    names = [d.get_info(sycl.info.device.name) for d in devices()]
    assert ("host" in ids) == any(d.has(sycl.aspect.host_debuggable) for d in devices())
    for d, i in zip(devices(), ids, strict=True):  # short, readable, no spaces
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", i), (i, names)
        if d.get_platform().get_info(sycl.info.platform.vendor).lower().startswith("intel") \
                and d.is_cpu():
            assert i == "intel-cpu"
    assert "pocl" not in " ".join(ids)  # PoCL runs no Python kernel


def test_ids_are_unique_when_devices_look_alike() -> None:
    d = devices()[0]
    one = sycl_plugin.device_id(d)
    assert sycl_plugin.device_ids([d, d, d]) == [f"{one}-0", f"{one}-1", f"{one}-2"]
    host = sycl.device(sycl.aspect_selector(sycl.aspect.host_debuggable))
    assert sycl_plugin.device_ids([d, host]) == [one, "host"]


SELECT = """
    def test_dev(sycl_device):
        pass
"""


@pytest.mark.parametrize(("args", "env", "want"), [
    (["--sycl-devices=host"], {}, ["host"]),
    ([], {"PYSYCL_TEST_DEVICES": "HOST"}, ["host"]),
    ([], {"PYSYCL_TEST_DEVICES": "intel"}, ["intel-cpu"]),
    (["--sycl-devices=host"], {"PYSYCL_TEST_DEVICES": "intel"}, ["host"]),  # the option wins
    (["--sycl-devices=intel-cpu,host"], {}, ["intel-cpu", "host"]),
])
def test_option_and_env_select_devices(tmp_path: Path, args: list[str], env: dict[str, str],
                                       want: list[str]) -> None:
    ids = sycl_plugin.device_ids(devices())
    if not set(want) <= set(ids):
        pytest.skip(f"this machine has no {set(want) - set(ids)} device")
    r = run_pytest(tmp_path, SELECT, *args, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert outcomes(r) == {f"test_dev[{i}]": "PASSED" for i in want}


def test_a_selection_that_matches_nothing_skips_with_the_reason(tmp_path: Path) -> None:
    r = run_pytest(tmp_path, SELECT, "--sycl-devices=no-such-device")
    assert r.returncode == 0, r.stdout + r.stderr
    assert outcomes(r) == {"test_dev[no-device]": "SKIPPED"}
    assert "no device that runs Python kernels matches --sycl-devices=no-such-device" in r.stdout


def test_sycl_requires_skips_devices_lacking_an_aspect(tmp_path: Path) -> None:
    r = run_pytest(tmp_path, """
        import pytest
        import pysycl as sycl

        @pytest.mark.sycl_requires(sycl.aspect.gpu)
        def test_gpu_only(sycl_device):
            assert sycl_device.is_gpu()

        @pytest.mark.sycl_requires("fp64", sycl.aspect.host_debuggable)
        def test_host_only(sycl_queue):
            assert sycl_queue.get_device().has(sycl.aspect.host_debuggable)

        @pytest.mark.sycl_requires(sycl.aspect.fp64)
        def test_without_fixture():
            pass

        @pytest.mark.sycl_requires(sycl.aspect.accelerator)
        def test_without_fixture_no_device():
            pass
    """, "--strict-markers")  # the marker is registered
    assert r.returncode == 0, r.stdout + r.stderr
    got = outcomes(r)
    for d, i in zip(devices(), sycl_plugin.device_ids(devices()), strict=True):
        assert got[f"test_gpu_only[{i}]"] == ("PASSED" if d.is_gpu() else "SKIPPED")
        host = d.has(sycl.aspect.host_debuggable)
        assert got[f"test_host_only[{i}]"] == ("PASSED" if host else "SKIPPED")
        if not host:
            assert f"device {i} ({d.display_name}) lacks aspect.host_debuggable" in r.stdout
        if not d.is_gpu():
            assert f"device {i} ({d.display_name}) lacks aspect.gpu" in r.stdout
    assert got["test_without_fixture"] == "PASSED"
    assert got["test_without_fixture_no_device"] == "SKIPPED"
    assert "no selected device has aspect.accelerator" in r.stdout


def test_sycl_requires_with_no_aspect_is_a_usage_error(tmp_path: Path) -> None:
    r = run_pytest(tmp_path, """
        import pytest

        @pytest.mark.sycl_requires("fp65")
        def test_dev(sycl_device):
            pass
    """)
    assert r.returncode != 0
    assert "sycl_requires('fp65'): no such sycl.aspect" in r.stdout + r.stderr


def test_async_errors_fail_the_test_that_caused_them(tmp_path: Path) -> None:
    """The queue is shared by the session: a test's asynchronous error (a host task that
    raised, never waited for) fails that test, not the next one on the queue."""
    r = run_pytest(tmp_path, """
        def test_a_leaves_an_error(sycl_queue):
            def boom():
                raise ValueError("boom in a host task")
            sycl_queue.submit(lambda h: h.host_task(boom))

        def test_b_after_it(sycl_queue):
            sycl_queue.wait_and_throw()

        def test_c_fails_and_leaves_an_error(sycl_queue):
            def boom():
                raise ValueError("second boom")
            sycl_queue.submit(lambda h: h.host_task(boom))
            assert False, "the test's own failure"
    """)
    got = outcomes(r)
    for i in sycl_plugin.device_ids(devices()):
        assert got[f"test_a_leaves_an_error[{i}]"] == "FAILED", r.stdout
        assert got[f"test_b_after_it[{i}]"] == "PASSED", r.stdout
        assert got[f"test_c_fails_and_leaves_an_error[{i}]"] == "FAILED", r.stdout
    assert "ValueError('boom in a host task')" in r.stdout
    assert "the test's own failure" in r.stdout
    assert "sycl_queue.wait_and_throw() raised" in r.stdout and "second boom" in r.stdout


def test_a_tests_own_sycl_device_is_left_alone(tmp_path: Path) -> None:
    """A conftest's own ``sycl_device`` fixture, or a test that parametrizes ``sycl_device``
    itself, is not parametrized over the devices again."""
    (tmp_path / "conftest.py").write_text(textwrap.dedent("""
        import pytest

        @pytest.fixture
        def sycl_device():
            return "the project's own"
    """))
    r = run_pytest(tmp_path, """
        import pytest
        import pysycl as sycl

        def test_own(sycl_device):
            assert sycl_device == "the project's own"
    """)
    assert r.returncode == 0, r.stdout + r.stderr
    assert outcomes(r) == {"test_own": "PASSED"}
    (tmp_path / "conftest.py").unlink()
    r = run_pytest(tmp_path, """
        import pytest
        import pysycl as sycl

        HOST = sycl.device(sycl.aspect_selector(sycl.aspect.host_debuggable))

        @pytest.mark.parametrize("sycl_device", [HOST], ids=["mine"], indirect=True)
        def test_explicit(sycl_queue, sycl_device):
            assert sycl_queue.get_device() == sycl_device == HOST
    """)
    assert r.returncode == 0, r.stdout + r.stderr
    assert outcomes(r) == {"test_explicit[mine]": "PASSED"}


def test_plugin_costs_nothing_when_unused(tmp_path: Path) -> None:
    """A pytest run whose tests use no pysycl fixture imports nothing of pysycl."""
    r = run_pytest(tmp_path, f"""
        import sys

        def test_trivial(request):
            assert request.config.pluginmanager.has_plugin({PLUGIN!r})
            loaded = sorted(m for m in sys.modules if m == "pysycl" or m.startswith("pysycl."))
            assert loaded == []
    """)
    assert r.returncode == 0, r.stdout + r.stderr
    assert outcomes(r) == {"test_trivial": "PASSED"}


def test_plugin_works_without_hypothesis(tmp_path: Path) -> None:
    """With hypothesis not importable (and its plugin off) the fixtures run kernels, and
    nothing tries to import hypothesis."""
    blocked = tmp_path / "no_hypothesis"
    blocked.mkdir()
    (blocked / "hypothesis.py").write_text('raise ImportError("hypothesis is not installed")\n')
    r = run_pytest(tmp_path, """
        import sys
        import numpy as np
        import pysycl as sycl
        import pysycl.testing

        def test_kernel(sycl_queue):
            out = np.zeros(8, np.int32)
            with sycl.buffer(out) as B:
                def cg(h):
                    b = B.get_access(h, sycl.access_mode.write)
                    h.parallel_for(sycl.range(8), lambda i: b.__setitem__(i, i[0] + 1))
                sycl_queue.submit(cg)
            assert out.tolist() == list(range(1, 9))
            assert "hypothesis" not in sys.modules
    """, "-p", "no:hypothesispytest", pythonpath=(str(blocked),))
    assert r.returncode == 0, r.stdout + r.stderr
    assert set(outcomes(r).values()) == {"PASSED"}


def test_entry_point_and_pytest_plugins_register_it_once(tmp_path: Path) -> None:
    """pysycl installed (its pytest11 entry point, as pyproject.toml declares it) and a
    conftest naming the plugin module, as the project's own tests/conftest.py does: pytest
    loads the entry point and registers the plugin once."""
    section = (ROOT / "pyproject.toml").read_text().split("[project.entry-points.pytest11]\n")[1]
    eps = dict(re.findall(r'^(\S+) = "(\S+)"$', section.split("\n[")[0], re.M))
    assert eps == {PLUGIN: PLUGIN}
    site = tmp_path / "site"
    dist = site / "pysycl_entry_point_probe-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: pysycl-entry-point-probe\n"
                                   "Version: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[pytest11]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()))
    (tmp_path / "conftest.py").write_text(f"pytest_plugins = [{PLUGIN!r}]\n")
    r = run_pytest(tmp_path, f"""
        import importlib.metadata

        def test_once(request, sycl_device):
            pm = request.config.pluginmanager
            names = [n for n, p in pm.list_name_plugin() if getattr(p, "__name__", "") == {PLUGIN!r}]
            assert names == [{PLUGIN!r}]
            assert {PLUGIN!r} in [e.name for e in importlib.metadata.entry_points(group="pytest11")]
    """, "--sycl-devices=host", load=False, pythonpath=(str(site),))
    assert r.returncode == 0, r.stdout + r.stderr
    assert outcomes(r) == {"test_once[host]": "PASSED"}


def test_project_suite_uses_the_plugin(request: pytest.FixtureRequest) -> None:
    """The project's own run has the plugin (tests/conftest.py), also without pysycl installed."""
    assert request.config.pluginmanager.has_plugin(PLUGIN)

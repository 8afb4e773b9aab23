"""pysycl's pytest plugin: fixtures ``sycl_device`` and ``sycl_queue``, ``--sycl-devices``,
the marker ``sycl_requires`` (docs/testing.md; the work is in :mod:`pysycl.testing.plugin`).

Installed with pysycl as the ``pytest11`` entry point ``_pysycl_pytestplugin`` (disable it
with ``-p no:_pysycl_pytestplugin``). This module sits outside the ``pysycl`` package so
that loading it imports nothing of pysycl (nor hypothesis): pysycl is imported the first
time a test uses a fixture or carries the marker. The entry point has the module's name,
so a ``pytest_plugins = ["_pysycl_pytestplugin"]`` (or ``-p _pysycl_pytestplugin``) where
pysycl is installed too registers it once.
"""

from __future__ import annotations

from typing import Any

import pytest

_MARKER = ("sycl_requires(*aspects): skip the test's devices that lack one of these "
           "sycl.aspect members (e.g. sycl.aspect.fp64)")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("pysycl", "pysycl (SYCL kernels in Python)")
    group.addoption("--sycl-devices", dest="sycl_devices", default=None, metavar="SUBSTR,...",
                    help="run the sycl_device/sycl_queue tests on the devices whose platform, "
                         "vendor or device name or test id contains one of these substrings "
                         "(any case; 'host': the host_debuggable device). Default: "
                         "$PYSYCL_TEST_DEVICES, else every device that runs Python kernels.")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", _MARKER)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "sycl_device" in metafunc.fixturenames:
        from pysycl.testing import plugin

        plugin.parametrize(metafunc)


def pytest_runtest_setup(item: pytest.Item) -> None:
    fixtures = getattr(item, "fixturenames", ())
    if "sycl_device" not in fixtures and item.get_closest_marker("sycl_requires") is not None:
        from pysycl.testing import plugin

        plugin.skip_unless_some_device(item)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    """After a test that used ``sycl_queue``: wait for the queue and throw its asynchronous
    errors, so that they fail this test rather than a later one."""
    outcome = yield
    q = getattr(item, "funcargs", {}).get("sycl_queue")
    if q is None:
        return
    from pysycl.testing import plugin

    err = plugin.drain(q)
    if err is None:
        return
    if outcome.excinfo is None:
        force = getattr(outcome, "force_exception", None)
        if force is None:  # pluggy < 1.1
            raise err
        force(err)
    elif hasattr(outcome.excinfo[1], "add_note"):  # the test failed already: keep its error
        outcome.excinfo[1].add_note(f"and then, at the test's end, sycl_queue.wait_and_throw() "
                                    f"raised: {err!r}")


@pytest.fixture(scope="session")
def sycl_device(request: pytest.FixtureRequest) -> Any:
    """Each device that runs Python kernels in turn (``pysycl.testing.devices()``, the
    host_debuggable device included), as selected by ``--sycl-devices`` or
    ``PYSYCL_TEST_DEVICES``; session-scoped, so ``@given`` tests may use it."""
    return request.param


@pytest.fixture(scope="session")
def _sycl_queues() -> Any:
    from pysycl.testing import plugin

    return plugin.Queues()


@pytest.fixture(scope="session")
def sycl_queue(sycl_device: Any, _sycl_queues: Any) -> Any:
    """A queue on ``sycl_device`` (one per device for the session); after each test that
    uses it, the plugin waits for it and throws its asynchronous errors."""
    return _sycl_queues.get(sycl_device)

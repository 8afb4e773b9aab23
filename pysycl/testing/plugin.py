"""The pytest plugin's work: device fixtures, ``--sycl-devices``, ``sycl_requires`` (docs/testing.md).

The fixtures are ``sycl_device`` and ``sycl_queue``, the marker ``sycl_requires``.

pytest loads the plugin through the ``pytest11`` entry point ``_pysycl_pytestplugin``,
a top-level module beside this package (as hypothesis's ``_hypothesis_pytestplugin``):
loading it imports nothing of pysycl, so a pytest run whose tests use none of this
pays nothing. It declares the option, the marker and the fixtures and calls into
this module, imported the first time a test asks for a fixture or carries the marker.

* ``sycl_device``: session-scoped, parametrized over :func:`pysycl.testing.devices`
  (every device that runs Python kernels, host_debuggable included), each test id
  naming the device (:func:`device_ids`: ``intel-cpu``, ``host``, ``nvidia-h100``).
  Session scope, because hypothesis refuses function-scoped fixtures in ``@given``
  tests (``HealthCheck.function_scoped_fixture``).
* ``sycl_queue``: a queue on that device, one per device for the session. After
  each test that used it, the plugin waits for it and throws its asynchronous
  errors (``wait_and_throw``): an error a test's kernels caused fails that test,
  never the next one on the same queue.
* ``--sycl-devices=SUBSTR,...`` or else ``PYSYCL_TEST_DEVICES``: keep the devices
  whose platform name, vendor, device name or test id contains one of the
  comma-separated substrings (any case); ``host`` keeps the host_debuggable device.
* ``@pytest.mark.sycl_requires(sycl.aspect.fp64, ...)``: the test's devices that
  lack one of the aspects are skipped, with a reason naming the device and the
  aspects. On a test that uses neither fixture, it is skipped unless a selected
  device has them all.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from typing import Any

import pytest

import pysycl as sycl
from pysycl.testing import devices

#: The environment variable that selects devices (the option ``--sycl-devices`` wins).
ENV = "PYSYCL_TEST_DEVICES"
#: The fixtures this plugin parametrizes over devices.
FIXTURES = ("sycl_device", "sycl_queue")

_VENDORS = ("pocl", "nvidia", "amd", "intel", "arm", "qualcomm", "apple")
_TYPES = {sycl.info.device_type.cpu: "cpu", sycl.info.device_type.gpu: "gpu",
          sycl.info.device_type.accelerator: "accelerator"}


def wanted(option: str | None) -> list[str]:
    """The lower-cased substrings that select devices: ``--sycl-devices`` if given, else
    ``PYSYCL_TEST_DEVICES``; empty: every device."""
    value = option if option is not None else os.environ.get(ENV, "")
    return [w.strip().lower() for w in value.split(",") if w.strip()]


def names(d: sycl.device) -> str:
    """What a selection substring is matched against: platform name and vendor, device name."""
    p = d.get_platform()
    return " ".join((p.get_info(sycl.info.platform.name), p.get_info(sycl.info.platform.vendor),
                     d.get_info(sycl.info.device.name))).lower()


def device_id(d: sycl.device) -> str:
    """A short, stable name of ``d`` for test ids: ``host``, ``intel-cpu``, ``pocl-cpu``,
    ``nvidia-h100`` (a GPU's first model token with a digit)."""
    if d.has(sycl.aspect.host_debuggable):
        return "host"
    text = names(d)  # the vendor named first: the runtime's (Intel's CPU runtime on an AMD CPU)
    vendor = min((v for v in _VENDORS if v in text), key=text.find, default=None)
    if vendor is None:
        vendor = _token(d.get_platform().get_info(sycl.info.platform.name).split()[0])
    kind = _TYPES.get(d.get_info(sycl.info.device.device_type), "device")
    if kind == "gpu":
        model = [t for t in map(_token, d.get_info(sycl.info.device.name).split())
                 if any(c.isdigit() for c in t) and t not in _VENDORS]
        if model:
            kind = model[0]
    return f"{vendor}-{kind}"


def _token(word: str) -> str:
    return re.sub(r"\(r\)|\(tm\)|[^a-z0-9]", "", word.lower())


def device_ids(devs: Sequence[sycl.device]) -> list[str]:
    """:func:`device_id` of each device, numbered ``-0``, ``-1``, ... where two look alike."""
    ids = [device_id(d) for d in devs]
    seen: dict[str, int] = {}
    out = []
    for i in ids:
        if ids.count(i) > 1:
            out.append(f"{i}-{seen.get(i, 0)}")
            seen[i] = seen.get(i, 0) + 1
        else:
            out.append(i)
    return out


def selected(option: str | None) -> tuple[list[sycl.device], list[str]]:
    """The devices the fixtures run on, and their ids (:func:`wanted` filters
    :func:`pysycl.testing.devices`)."""
    devs = devices()
    ids = device_ids(devs)
    want = wanted(option)
    if not want:
        return devs, ids
    keep = [i for i, (d, n) in enumerate(zip(devs, ids, strict=True))
            if any(w in names(d) or w in n for w in want)]
    return [devs[i] for i in keep], [ids[i] for i in keep]


def required_aspects(marks: Iterable[pytest.Mark]) -> list[sycl.aspect]:
    """The aspects the ``sycl_requires`` marks name (``sycl.aspect`` members or their names)."""
    out = []
    for m in marks:
        for a in m.args:
            if isinstance(a, str):
                found = getattr(sycl.aspect, a, None)
                if not isinstance(found, sycl.aspect):
                    raise pytest.UsageError(f"sycl_requires({a!r}): no such sycl.aspect")
                a = found
            if not isinstance(a, sycl.aspect):
                raise pytest.UsageError(f"sycl_requires({a!r}): give sycl.aspect members, "
                                        "e.g. @pytest.mark.sycl_requires(sycl.aspect.fp64)")
            out.append(a)
    return out


def _missing(d: sycl.device, aspects: Sequence[sycl.aspect]) -> list[str]:
    return [f"aspect.{a.name}" for a in aspects if not d.has(a)]


def _ours(metafunc: pytest.Metafunc) -> bool:
    """Whether the test's ``sycl_device`` is the plugin's, and not parametrized by the test
    itself: a project's own fixture of that name, or an explicit
    ``@pytest.mark.parametrize("sycl_device", ..., indirect=True)``, is left alone."""
    defs = getattr(metafunc, "_arg2fixturedefs", {}).get("sycl_device")
    if defs and getattr(defs[-1].func, "__module__", None) != "_pysycl_pytestplugin":
        return False
    for m in metafunc.definition.iter_markers("parametrize"):
        names = m.args[0] if m.args else m.kwargs.get("argnames", ())
        if isinstance(names, str):
            names = [n.strip() for n in names.split(",")]
        if "sycl_device" in names:
            return False
    return True


def parametrize(metafunc: pytest.Metafunc) -> None:
    """Run the test once per selected device (``sycl_device``, indirect, session scope);
    a device lacking a ``sycl_requires`` aspect is a skipped parameter."""
    if not _ours(metafunc):
        return
    option = metafunc.config.getoption("sycl_devices", None)
    devs, ids = selected(option)
    aspects = required_aspects(metafunc.definition.iter_markers("sycl_requires"))
    params = []
    for d, i in zip(devs, ids, strict=True):
        lacks = _missing(d, aspects)
        marks = [pytest.mark.skip(reason=f"device {i} ({d.display_name}) lacks "
                                         f"{', '.join(lacks)}")] if lacks else []
        params.append(pytest.param(d, id=i, marks=marks))
    if not params:
        how = f"--sycl-devices={option}" if option is not None else f"{ENV}={os.environ.get(ENV)}"
        reason = (f"no device that runs Python kernels matches {how}" if wanted(option)
                  else "this machine has no device that runs Python kernels")
        params.append(pytest.param(None, id="no-device", marks=pytest.mark.skip(reason=reason)))
    metafunc.parametrize("sycl_device", params, indirect=True, scope="session")


def skip_unless_some_device(item: pytest.Item) -> None:
    """``sycl_requires`` on a test without the fixtures: skip it unless a selected device has
    every aspect it names."""
    aspects = required_aspects(item.iter_markers("sycl_requires"))
    devs, _ = selected(item.config.getoption("sycl_devices", None))
    if not any(not _missing(d, aspects) for d in devs):
        pytest.skip(f"no selected device has {', '.join('aspect.' + a.name for a in aspects)}")


class Queues:
    """The session's queues, one per device, handed out by the ``sycl_queue`` fixture."""

    def __init__(self) -> None:
        self._queues: dict[sycl.device, sycl.queue] = {}

    def get(self, d: sycl.device) -> sycl.queue:
        """The queue on ``d`` (made on first use)."""
        q = self._queues.get(d)
        if q is None:
            q = self._queues[d] = sycl.queue(d)
        return q


def drain(q: Any) -> BaseException | None:
    """Wait for ``q`` and throw its asynchronous errors; the error raised, or None."""
    try:
        q.wait_and_throw()
    except Exception as e:
        return e
    return None

"""The cross-device oracle: run the same work on every device, compare the results.

:func:`assert_same_on_devices` runs ``run(queue)`` once on each device and
compares what it returns, device by device, with the host_debuggable device's
result (the oracle: the kernel run as plain Python) and the devices with each
other.

**What is compared.** ``run`` returns numpy arrays: one, or a tuple, list or
dict of them (nested as deep as it likes; a number counts as a 0-d array). Every
device's result must have the same structure, and each array the same shape and
dtype. Floating-point and complex arrays are equal where ``numpy.isclose(a,
oracle, rtol, atol, equal_nan=True)`` holds (NaN where the oracle has NaN; the
oracle's value sets the relative tolerance); all others (integers, booleans,
structured) must be equal exactly. The arrays are copied as soon as ``run``
returns: a ``run`` that returns the same array on every device is still compared
honestly.

**Devices left out.** A device on which ``run`` raises ``sycl.exception`` with
``errc.kernel_not_supported`` or ``errc.feature_not_supported`` (a float64
kernel on a device without fp64, a Python kernel on a device that loads no
SPIR-V) is left out, and the result says why (:attr:`DeviceResults.left_out`).
When no device is left, the work cannot be tested here: under pytest the test is
skipped (``pytest.skip`` with the reasons), elsewhere
``sycl.exception(errc.kernel_not_supported)`` is raised. Any other exception
from ``run`` propagates, with a note naming the device.

This module imports neither hypothesis nor pytest (pytest only to skip).
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

import pysycl as sycl
from pysycl._core.where import location
from pysycl.testing._devices import devices as python_devices
from pysycl.testing._where import caller

__all__ = ["DeviceResults", "assert_same_on_devices"]

#: At most this many differing elements are listed in a mismatch's message.
SHOWN = 5

_LEAVE_OUT = (sycl.errc.kernel_not_supported, sycl.errc.feature_not_supported)


class DeviceResults(dict):
    """What :func:`assert_same_on_devices` returns: ``{device: result}`` for every
    device that ran ``run``, in the order they ran, each result a copy of what
    ``run`` returned there.

    Attributes:
        oracle: the host_debuggable device when it ran, else None (the devices were
            then compared only with each other).
        left_out: ``{device: why}`` for the devices on which ``run`` raised
            ``errc.kernel_not_supported`` or ``errc.feature_not_supported``.
    """

    def __init__(self) -> None:
        super().__init__()
        self.oracle: sycl.device | None = None
        self.left_out: dict[sycl.device, str] = {}

    def __repr__(self) -> str:
        ran = ", ".join(repr(d.display_name) for d in self)
        out = ", ".join(f"{d.display_name!r}: {why}" for d, why in self.left_out.items())
        return f"DeviceResults(ran on [{ran}], oracle={_name(self.oracle)}, left out {{{out}}})"


def assert_same_on_devices(run: Callable[[sycl.queue], Any],
                           devices: Iterable[sycl.device] | None = None, *,
                           rtol: float = 1e-5, atol: float = 1e-8) -> DeviceResults:
    """Run ``run(queue)`` on every device; assert that the results agree.

    Args:
        run: called once per device with a new ``sycl.queue`` on it; returns numpy
            arrays (one, or a tuple/list/dict of them). pysycl waits for the
            queue (``wait_and_throw``) after ``run`` returns.
        devices: the devices; default :func:`pysycl.testing.devices` (every device
            that runs Python kernels, the host_debuggable device included). A
            device given twice runs once.
        rtol: relative tolerance for floating-point and complex arrays.
        atol: absolute tolerance for floating-point and complex arrays.

    Returns:
        :class:`DeviceResults`: each device's result, the oracle, the devices left out.

    Raises:
        AssertionError: two devices' results differ (structure, shape, dtype or values).
        sycl.exception: ``errc.kernel_not_supported``: no device could run it (not under pytest).

    A mismatch's message names both devices, the array (``result[1]``,
    ``result['c']``), how many elements differ and the first differing n-d
    indices with both values. Under pytest, no device able to run ``run`` skips
    the test (``pytest.skip``) with each device's reason.
    """
    __tracebackhide__ = True  # pytest: the failure points at the test, not in here
    where = f"assert_same_on_devices (called at {caller()})"
    if devices is None:
        devices = python_devices()
    devs = _devices_arg(devices, where)
    for name, tol in (("rtol", rtol), ("atol", atol)):
        if not isinstance(tol, (int, float)) or isinstance(tol, bool) or not tol >= 0:
            raise ValueError(f"{where}: {name} must be a number >= 0, not {tol!r}")
    results = DeviceResults()
    for dev in devs:
        leaves = _run_on(run, dev, results, where)
        if leaves is not None:
            results[dev] = leaves
    if not results:
        _none_could_run(results, devs, run, where)
    results.oracle = next((d for d in results if d.has(sycl.aspect.host_debuggable)), None)
    flat = {dev: _flatten(res) for dev, res in results.items()}
    for a, b in _pairs(list(results), results.oracle):
        _compare(flat[a], a, flat[b], b, results, rtol, atol)
    return results


def _devices_arg(devices: Iterable[sycl.device], where: str) -> list[sycl.device]:
    try:
        if isinstance(devices, (str, bytes)):
            raise TypeError
        devs = list(devices)
    except TypeError:
        raise TypeError(f"{where}: devices must be an iterable of sycl.device, not "
                        f"{type(devices).__name__}") from None
    for d in devs:
        if not isinstance(d, sycl.device):
            raise TypeError(f"{where}: devices must hold sycl.device objects, not "
                            f"{type(d).__name__} ({d!r})")
    return list(dict.fromkeys(devs))  # each device once


def _run_on(run: Callable[[sycl.queue], Any], dev: sycl.device, results: DeviceResults,
            where: str) -> Any:
    """``run``'s result on ``dev``, copied; None when ``dev`` is left out."""
    try:
        q = sycl.queue(dev)
        res = run(q)
        q.wait_and_throw()
    except sycl.exception as e:
        if e.code() in _LEAVE_OUT:
            results.left_out[dev] = str(e)
            return None
        _note(e, f"{where}: raised by {_describe(run)} on device {dev.display_name!r}")
        raise
    except Exception as e:
        _note(e, f"{where}: raised by {_describe(run)} on device {dev.display_name!r}")
        raise
    return _copy(res, f"{_describe(run)} on device {dev.display_name!r}", "result", where)


def _note(e: BaseException, text: str) -> None:
    add = getattr(e, "add_note", None)  # Python 3.11 on
    if add is not None:
        add(text)


def _copy(res: Any, who: str, path: str, where: str) -> Any:
    """``res`` with every array copied (a number becomes a 0-d array)."""
    if isinstance(res, dict):
        return {k: _copy(v, who, f"{path}[{k!r}]", where) for k, v in res.items()}
    if isinstance(res, (tuple, list)):
        return type(res)(_copy(v, who, f"{path}[{i}]", where) for i, v in enumerate(res))
    if isinstance(res, (np.ndarray, np.generic, int, float, complex, bool)):
        return np.array(res, copy=True)
    raise TypeError(f"{where}: {who} returned a {type(res).__name__} as {path}; return numpy "
                    "arrays (one, or a tuple, list or dict of them)")


def _flatten(res: Any) -> dict[str, np.ndarray]:
    """``{path: array}`` of a copied result, paths such as ``result['c'][1]``."""
    out: dict[str, np.ndarray] = {}

    def walk(v: Any, path: str) -> None:
        if isinstance(v, dict):
            for k, x in v.items():
                walk(x, f"{path}[{k!r}]")
        elif isinstance(v, (tuple, list)):
            for i, x in enumerate(v):
                walk(x, f"{path}[{i}]")
        else:
            out[path] = v

    walk(res, "result")
    return out


def _pairs(devs: list[sycl.device], oracle: sycl.device | None
           ) -> list[tuple[sycl.device, sycl.device]]:
    """Each device against the oracle first, then the others pairwise."""
    others = [d for d in devs if d != oracle]
    first = [(d, oracle) for d in others] if oracle is not None else []
    return first + list(itertools.combinations(others, 2))


def _compare(fa: dict[str, np.ndarray], a: sycl.device, fb: dict[str, np.ndarray],
             b: sycl.device, results: DeviceResults, rtol: float, atol: float) -> None:
    __tracebackhide__ = True
    who = _who(a, b, results)
    if list(fa) != list(fb):
        raise AssertionError(f"assert_same_on_devices: the results differ in structure {who}: "
                             f"{list(fa)} on {_name(a)}, {list(fb)} on {_name(b)}"
                             + _left_out_note(results))
    for path, x in fa.items():
        y = fb[path]
        if x.shape != y.shape or x.dtype != y.dtype:
            what = "shape" if x.shape != y.shape else "dtype"
            raise AssertionError(
                f"assert_same_on_devices: {path} has a different {what} {who}: "
                f"{getattr(x, what)} on {_name(a)}, {getattr(y, what)} on {_name(b)}"
                + _left_out_note(results))
        bad = _differ(x, y, rtol, atol)
        if bad.any():
            raise AssertionError(_mismatch(path, x, a, y, b, bad, who, rtol, atol)
                                 + _left_out_note(results))


def _differ(x: np.ndarray, y: np.ndarray, rtol: float, atol: float) -> np.ndarray:
    """Where ``x`` and ``y`` (``y`` the reference) differ."""
    if x.dtype.kind in "fc":
        return ~np.isclose(x, y, rtol=rtol, atol=atol, equal_nan=True)
    if x.dtype.kind == "V" and x.dtype.fields is None:  # raw bytes: compare them
        return np.array(x.tobytes() != y.tobytes())
    return np.asarray(x != y)


def _mismatch(path: str, x: np.ndarray, a: sycl.device, y: np.ndarray, b: sycl.device,
              bad: np.ndarray, who: str, rtol: float, atol: float) -> str:
    n = int(bad.sum())
    tol = f" (rtol={rtol}, atol={atol})" if x.dtype.kind in "fc" else ""
    lines = [f"assert_same_on_devices: {path} differs {who}: {n} of {x.size} elements{tol}"]
    for idx in [tuple(i) for i in np.argwhere(bad)[:SHOWN]] if x.ndim else [()]:
        at = f"index [{', '.join(str(int(i)) for i in idx)}]" if x.ndim else "the value"
        lines.append(f"  at {at}: {_value(x[idx])} on {_name(a)}, {_value(y[idx])} on {_name(b)}")
    if n > SHOWN:
        lines.append(f"  ... and {n - SHOWN} more")
    return "\n".join(lines)


def _value(v: Any) -> str:
    """An element as Python writes it (every digit of a float32)."""
    return repr(v.item()) if isinstance(v, np.generic) else repr(v)


def _who(a: sycl.device, b: sycl.device, results: DeviceResults) -> str:
    if b == results.oracle:
        return f"between device {_name(a)} and the oracle, the host_debuggable device {_name(b)}"
    return f"between devices {_name(a)} and {_name(b)}"


def _left_out_note(results: DeviceResults) -> str:
    if not results.left_out:
        return ""
    return "\n(left out: " + "; ".join(f"{_name(d)}: {why}"
                                       for d, why in results.left_out.items()) + ")"


def _none_could_run(results: DeviceResults, devs: list[sycl.device],
                    run: Callable[[sycl.queue], Any], where: str) -> None:
    __tracebackhide__ = True
    why = ("; ".join(f"device {_name(d)}: {r}" for d, r in results.left_out.items())
           if devs else "no devices were given")
    reason = f"{where}: no device could run what {_describe(run)} submits ({why})"
    if "pytest" in sys.modules and "PYTEST_CURRENT_TEST" in os.environ:
        import pytest

        pytest.skip(reason)
    raise sycl.exception(sycl.errc.kernel_not_supported, reason)


def _name(dev: sycl.device | None) -> str:
    if dev is None:
        return "None"
    return repr(dev.display_name) + (" (sub-device)" if dev.parent is not None else "")


def _describe(run: Callable[..., Any]) -> str:
    code = getattr(run, "__code__", None)
    name = getattr(run, "__qualname__", None) or type(run).__name__
    if code is None:
        return f"{name}()"
    return f"{name}() at {location(code.co_filename, code.co_firstlineno)}"

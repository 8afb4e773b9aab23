"""pysycl.testing.assert_same_on_devices: the cross-device oracle on real devices.

The mismatches are real: ``run`` computes something that honestly depends on the
device it runs on (``q.get_device().has(sycl.aspect.host_debuggable)``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pysycl as sycl
from pysycl.testing import DeviceResults, assert_same_on_devices, devices


def _on_host(q: sycl.queue) -> bool:
    return q.get_device().has(sycl.aspect.host_debuggable)


def _table(q: sycl.queue, shape: tuple[int, int], bump: float = 0.0,
           at: tuple[int, int] = (-1, -1), dtype: type = np.float32) -> np.ndarray:
    """``out[i, j] = 10 i + j``, plus ``bump`` at ``at``: a 2-d range kernel."""
    out = np.zeros(shape, dtype)
    ai, aj = at
    with sycl.buffer(out) as B:
        def cg(h: sycl.handler) -> None:
            o = B.get_access(h, sycl.access_mode.write)

            def k(it):
                i = it.get_id(0)
                j = it.get_id(1)
                extra = bump if i == ai and j == aj else 0.0
                o[i, j] = i * 10 + j + extra

            h.parallel_for(sycl.range(*shape), k)

        q.submit(cg)
    return out


@pytest.fixture
def both(kernel_device: sycl.device, host_device: sycl.device) -> list[sycl.device]:
    """The compiled device and the oracle."""
    return [kernel_device, host_device]


def test_a_correct_kernel_passes_and_returns_each_result(both: list[sycl.device]) -> None:
    def run(q: sycl.queue) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        t = _table(q, (3, 4))
        return t, {"sum": t.sum(axis=1), "n": np.int64(t.size)}

    res = assert_same_on_devices(run, both)
    assert isinstance(res, DeviceResults) and list(res) == both
    assert res.oracle == both[1] and res.left_out == {}
    want = np.add.outer(np.arange(3) * 10, np.arange(4)).astype(np.float32)
    for dev in both:
        table, extra = res[dev]
        np.testing.assert_array_equal(table, want)
        np.testing.assert_array_equal(extra["sum"], want.sum(axis=1))
        assert extra["n"] == 12 and extra["n"].shape == ()


def test_the_default_devices_are_every_python_kernel_device() -> None:
    res = assert_same_on_devices(lambda q: _table(q, (2, 3)))
    assert list(res) == devices()
    assert res.oracle is not None and res.oracle.has(sycl.aspect.host_debuggable)


def test_a_mismatch_names_the_device_the_index_and_both_values(both: list[sycl.device]) -> None:
    def run(q: sycl.queue) -> dict[str, np.ndarray]:
        return {"t": _table(q, (4, 5), bump=0.0 if _on_host(q) else 1.0, at=(2, 3))}

    with pytest.raises(AssertionError) as ei:
        assert_same_on_devices(run, both)
    text = str(ei.value)
    dev, oracle = (d.display_name for d in both)
    assert f"result['t'] differs between device {dev!r} and the oracle, the host_debuggable " \
           f"device {oracle!r}: 1 of 20 elements (rtol=1e-05, atol=1e-08)" in text, text
    assert f"at index [2, 3]: 24.0 on {dev!r}, 23.0 on {oracle!r}" in text, text


def test_many_mismatches_are_counted_and_the_first_listed(both: list[sycl.device]) -> None:
    def run(q: sycl.queue) -> np.ndarray:
        t = _table(q, (4, 5), dtype=np.int32)
        return t if _on_host(q) else t + (np.arange(20).reshape(4, 5) % 2).astype(np.int32)

    with pytest.raises(AssertionError) as ei:
        assert_same_on_devices(run, both)
    text = str(ei.value)
    assert "result differs" in text and "10 of 20 elements" in text and "rtol" not in text
    assert "at index [0, 1]: 2 on" in text and "... and 5 more" in text
    assert len(re.findall(r"  at index \[", text)) == 5


def test_rtol_and_atol_are_honoured(both: list[sycl.device]) -> None:
    def relative(q: sycl.queue) -> np.ndarray:   # 1e-3 relative at 23.0
        return _table(q, (3, 4), bump=0.0 if _on_host(q) else 0.023, at=(2, 3))

    with pytest.raises(AssertionError, match=r"1 of 12 elements \(rtol=1e-05"):
        assert_same_on_devices(relative, both)
    with pytest.raises(AssertionError, match=r"rtol=0\.0005, atol=0\.0"):
        assert_same_on_devices(relative, both, rtol=5e-4, atol=0.0)
    assert_same_on_devices(relative, both, rtol=2e-3)

    def absolute(q: sycl.queue) -> np.ndarray:   # 0.25 off at 0.0: only atol helps
        return _table(q, (3, 4), bump=0.0 if _on_host(q) else 0.25, at=(0, 0))

    with pytest.raises(AssertionError, match=r"at index \[0, 0\]: 0\.25 on .*, 0\.0 on"):
        assert_same_on_devices(absolute, both, rtol=0.5)
    assert_same_on_devices(absolute, both, atol=0.3)


def test_nan_must_be_where_the_oracle_has_it(both: list[sycl.device]) -> None:
    def same(q: sycl.queue) -> np.ndarray:
        t = _table(q, (2, 3))
        return np.where(t < 5, np.float32("nan"), t)   # NaN in the first row on every device

    assert_same_on_devices(same, both)

    def differ(q: sycl.queue) -> np.ndarray:
        t = _table(q, (2, 3))
        return t if _on_host(q) else np.where(t == 11.0, np.float32("nan"), t)

    with pytest.raises(AssertionError, match=r"at index \[1, 1\]: nan on .*, 11\.0 on"):
        assert_same_on_devices(differ, both)


def test_shapes_dtypes_and_structures_that_differ_are_named(both: list[sycl.device]) -> None:
    def shape(q: sycl.queue) -> np.ndarray:
        return _table(q, (2, 3) if _on_host(q) else (3, 2))

    with pytest.raises(AssertionError, match=r"result has a different shape .*: \(3, 2\) on "
                                             r".*, \(2, 3\) on"):
        assert_same_on_devices(shape, both)

    def dtype(q: sycl.queue) -> list[np.ndarray]:
        return [_table(q, (2, 2), dtype=np.float64 if _on_host(q) else np.float32)]

    with pytest.raises(AssertionError, match=r"result\[0\] has a different dtype .*: float32 "
                                             r"on .*, float64 on"):
        assert_same_on_devices(dtype, both)

    def structure(q: sycl.queue) -> dict[str, np.ndarray]:
        t = _table(q, (2, 2))
        return {"a": t} if _on_host(q) else {"a": t, "b": t}

    with pytest.raises(AssertionError, match=r"differ in structure .*\[\"result\['a'\]\", "
                                             r"\"result\['b'\]\"\] on"):
        assert_same_on_devices(structure, both)


def test_results_are_copied_when_run_returns(both: list[sycl.device]) -> None:
    shared = np.zeros((2, 3), np.float32)

    def run(q: sycl.queue) -> np.ndarray:   # the same array on every device
        shared[...] = _table(q, (2, 3), bump=0.0 if _on_host(q) else 7.0, at=(1, 2))
        return shared

    with pytest.raises(AssertionError, match=r"at index \[1, 2\]: 19\.0 on .*, 12\.0 on"):
        assert_same_on_devices(run, both)


def _two_devices() -> list[sycl.device]:
    """A device that runs Python kernels and a sub-device of it: two devices, not the oracle."""
    for dev in devices():
        props = dev.get_info(sycl.info.device.partition_properties)
        if sycl.info.partition_property.partition_equally in props and dev.image_targets:
            return [dev, dev.create_sub_devices(sycl.info.partition_property.partition_equally,
                                                1)[0]]
    pytest.skip("no device here can be partitioned (the Intel OpenCL CPU device can)")


def test_devices_are_also_compared_with_each_other(host_device: sycl.device) -> None:
    pair = _two_devices()

    def run(q: sycl.queue) -> np.ndarray:   # differs only on the sub-device
        return _table(q, (2, 2), bump=1.0 if q.get_device() == pair[1] else 0.0, at=(0, 1))

    res = assert_same_on_devices(lambda q: _table(q, (2, 2)), pair)
    assert list(res) == pair and res.oracle is None
    with pytest.raises(AssertionError) as ei:
        assert_same_on_devices(run, pair)
    name = repr(pair[0].display_name)
    assert f"result differs between devices {name} and {name} (sub-device): 1 of 4" \
        in str(ei.value)
    assert f"at index [0, 1]: 1.0 on {name}, 2.0 on {name} (sub-device)" in str(ei.value)
    with pytest.raises(AssertionError, match=r"between device .* \(sub-device\) and the oracle"):
        assert_same_on_devices(run, [*pair, host_device])


def test_each_device_runs_once(host_device: sycl.device) -> None:
    calls: list[sycl.device] = []

    def run(q: sycl.queue) -> np.ndarray:
        calls.append(q.get_device())
        return _table(q, (1, 2))

    res = assert_same_on_devices(run, [host_device, host_device])
    assert calls == [host_device] and list(res) == [host_device] and res.oracle == host_device


def _offset_launch(q: sycl.queue) -> np.ndarray:
    """A launch no device runs: pysycl does not support nd_range offsets
    (errc.feature_not_supported on every device, host_debuggable included)."""
    out = np.zeros(4, np.float32)
    with sycl.buffer(out) as B:
        def cg(h: sycl.handler) -> None:
            o = B.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.nd_range(sycl.range(4), sycl.range(2), sycl.id(1)),
                           lambda it: o.__setitem__(it.get_global_id(0), 1.0))

        q.submit(cg)
    return out


def test_devices_that_cannot_run_it_are_left_out(both: list[sycl.device],
                                                  pocl_device: sycl.device) -> None:
    res = assert_same_on_devices(lambda q: _table(q, (2, 3)), [both[0], pocl_device, both[1]])
    assert list(res) == both and res.oracle == both[1]
    why = res.left_out[pocl_device]
    assert "errc.kernel_not_supported" in why and "SPIR-V" in why
    assert pocl_device.display_name in repr(res)

    def mismatch(q: sycl.queue) -> np.ndarray:
        return _table(q, (2, 3), bump=0.0 if _on_host(q) else 1.0, at=(0, 0))

    with pytest.raises(AssertionError, match=r"(?s)1 of 6 elements.*left out: .*SPIR-V"):
        assert_same_on_devices(mismatch, [both[0], pocl_device, both[1]])


def test_no_device_able_to_run_it_skips_under_pytest(both: list[sycl.device]) -> None:
    with pytest.raises(pytest.skip.Exception) as ei:
        assert_same_on_devices(_offset_launch, both)
    text = str(ei.value)
    assert "no device could run what _offset_launch() at" in text
    assert f"{os.path.basename(__file__)}:" in text and "nd_range offsets" in text
    for dev in both:
        assert repr(dev.display_name) in text
    with pytest.raises(pytest.skip.Exception, match="no devices were given"):
        assert_same_on_devices(_offset_launch, [])


@pytest.mark.parametrize("import_pytest", [False, True], ids=["plain", "pytest-imported"])
def test_no_device_able_to_run_it_raises_outside_pytest(import_pytest: bool) -> None:
    """Outside a running test (a script; a script that imports pytest without running it)."""
    code = textwrap.dedent(f"""
        import sys
        {"import pytest" if import_pytest else ""}
        import numpy as np
        import pysycl as sycl
        from pysycl.testing import assert_same_on_devices

        def _offset_launch(q):  # as _offset_launch above: no device runs it
            out = np.zeros(4, np.float32)
            with sycl.buffer(out) as B:
                def cg(h):
                    o = B.get_access(h, sycl.access_mode.write)
                    h.parallel_for(sycl.nd_range(sycl.range(4), sycl.range(2), sycl.id(1)),
                                   lambda it: o.__setitem__(it.get_global_id(0), 1.0))
                q.submit(cg)
            return out

        try:
            assert_same_on_devices(_offset_launch)
        except sycl.exception as e:
            print("CODE", e.code())
            print(e)
        print("imported:", sorted(m for m in ("pytest", "hypothesis") if m in sys.modules))
    """)
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "CODE errc.kernel_not_supported" in r.stdout, r.stdout + r.stderr
    assert "no device could run what _offset_launch() at" in r.stdout
    want = "['pytest']" if import_pytest else "[]"
    assert f"imported: {want}" in r.stdout


def test_other_errors_propagate_naming_the_device(both: list[sycl.device]) -> None:
    def run(q: sycl.queue) -> np.ndarray:
        if not _on_host(q):
            raise ValueError("boom")
        return _table(q, (1, 1))

    with pytest.raises(ValueError, match="boom") as ei:
        assert_same_on_devices(run, both)
    notes = "\n".join(getattr(ei.value, "__notes__", []))
    if sys.version_info >= (3, 11):
        assert f"on device {both[0].display_name!r}" in notes and "run() at" in notes


@pytest.mark.parametrize(("devs", "result", "fragment"), [
    ("cpu", None, "devices must be an iterable of sycl.device, not str"),
    ([1], None, "devices must hold sycl.device objects, not int"),
    (None, "text", "returned a str as result; return numpy arrays"),
    (None, {"a": [np.zeros(1), object()]}, "returned a object as result['a'][1]"),
])
def test_bad_arguments_and_results_are_type_errors(host_device: sycl.device, devs, result,
                                                   fragment: str) -> None:
    with pytest.raises(TypeError) as ei:
        assert_same_on_devices(lambda q: result, [host_device] if devs is None else devs)
    assert fragment in str(ei.value)
    assert f"{os.path.basename(__file__)}:" in str(ei.value)


@pytest.mark.parametrize("kw", [{"rtol": -1e-3}, {"atol": float("nan")}, {"rtol": "0.1"}])
def test_bad_tolerances_are_value_errors(host_device: sycl.device, kw: dict) -> None:
    with pytest.raises(ValueError, match=rf"{next(iter(kw))} must be a number >= 0"):
        assert_same_on_devices(lambda q: np.zeros(1), [host_device], **kw)

"""A launch of more work-items than the device can index is ``errc.nd_range`` at submit
(SYCL 2020 §4.9.4.2: the index space of a launch; §4.13.2 ``errc::nd_range``), naming the
dimension or the total and the limit — never a raw ``RuntimeError`` (``std::bad_cast``),
a hang over 2**64 - 1 work-items, or ids that wrap.

Each launch runs in a child process with a timeout: before the fix some of them ran
(practically) forever.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    import pysycl as sycl
    dev = sycl.device(sycl.aspect_selector(sycl.aspect.host_debuggable)) if sys.argv[1] == "host" \\
        else max((d for d in sycl.device.get_devices() if d.image_targets), key=sycl.default_selector_v)
    q = sycl.queue(dev)
    out = np.zeros(4, np.int64)
    p = sycl.malloc_device(4, q, dtype=np.int64)  # device USM: every device has it
    S = 2**64 - 1
    spaces = {"range_1d": sycl.range(S), "range_2d": sycl.range(2**40, 2**40),
              "range_past_int64": sycl.range(2**63),
              "nd_range": sycl.nd_range(sycl.range(2**62, 4), sycl.range(1, 1))}
    res = {}
    for name, sp in spaces.items():
        try:
            if isinstance(sp, sycl.nd_range):
                q.parallel_for(sp, lambda it: p.__setitem__(0, 1)).wait()
            else:
                q.parallel_for(sp, lambda i: p.__setitem__(0, 1)).wait()
            res[name] = "ran"
        except sycl.exception as e:
            res[name] = [e.code().name, str(e)]
    with sycl.buffer(out) as B:  # a command group with an accessor and a kernel_name
        try:
            q.submit(lambda h: (lambda a: h.parallel_for(sycl.range(S), lambda i: a.__setitem__(0, 1),
                                                        kernel_name="limits.named"))(B.get_access(h)))
            res["command_group"] = "ran"
        except sycl.exception as e:
            res["command_group"] = [e.code().name, str(e)]
    if sys.argv[1] != "host":  # reductions take another launch path
        with sycl.buffer(out[:1].copy()) as R:
            try:
                q.submit(lambda h: h.parallel_for(sycl.range(2**62, 4), sycl.reduction(R, h, sycl.plus()),
                                                  lambda i, r: r.combine(1)))
                res["reduction"] = "ran"
            except sycl.exception as e:
                res["reduction"] = [e.code().name, str(e)]
    print(json.dumps(res))
""")


def _child(which: str) -> dict:
    r = subprocess.run([sys.executable, "-c", CHILD, which], capture_output=True, text=True,
                       timeout=300, check=False)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("which", ["kernel_device", "host"])
def test_launch_past_the_device_limit_is_nd_range(which: str) -> None:
    res = _child(which)
    host = which == "host"
    limit = str(2**63 - 1)  # int64 ids; the host device's Python ranges count in ssize_t
    for name, got in res.items():
        assert got != "ran", name
        code, msg = got
        assert code == "nd_range", (name, msg)
        assert limit in msg, (name, msg)
    assert "in dimension 0" in res["range_1d"][1]
    assert "in all" in res["range_2d"][1] and "in all" in res["nd_range"][1]
    assert "limits.named" in res["command_group"][1]
    assert ("ssize_t" if host else "int64") in res["range_past_int64"][1]

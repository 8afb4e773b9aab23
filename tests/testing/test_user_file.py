"""The issue's "Must hold": a user's test file, outside the project and without a conftest,
with the plugin's fixtures, ``pysycl.testing.strategies``, ``assert`` in kernels and
hypothesis's default settings, passes from an empty cache on the CPU device and the
host_debuggable device -- and fails, naming the failing work-item's line, when a
kernel's assert fails.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pysycl.testing import devices
from pysycl.testing import plugin as sycl_plugin
from tests.testing._userrun import outcomes, run_pytest

USER_TESTS = '''
    import numpy as np
    from hypothesis import given, strategies as st

    import pysycl as sycl
    from pysycl.testing.strategies import ids, nd_ranges, ranges


    @given(rng=ranges(max_size=64), data=st.data())
    def test_item_linear_id_is_row_major(sycl_queue, rng, data):
        shape = tuple(rng)
        n = rng.size()
        out = np.full(shape, -1, np.int64)
        with sycl.buffer(out) as B:
            def cg(h):
                b = B.get_access(h, sycl.access_mode.write)

                def k(it):
                    lin = it.get_linear_id()
                    assert lin < n, "linear id past the range"
                    b[it] = lin
                h.parallel_for(rng, k)
            sycl_queue.submit(cg)
        assert (out.ravel() == np.arange(n)).all()
        i = data.draw(ids(rng))
        assert out[tuple(i)] == np.ravel_multi_index(tuple(i), shape)


    @given(data=st.data())
    def test_nd_range_ids_follow_nd_item(sycl_queue, sycl_device, data):
        nd = data.draw(nd_ranges(sycl_device, max_global=64))
        glob = tuple(nd.get_global_range())
        dims = len(glob)
        out = np.full((nd.get_global_range().size(), 2 + dims), -1, np.int64)
        with sycl.buffer(out) as B:
            def cg(h):
                b = B.get_access(h, sycl.access_mode.write)

                def k(it):
                    row = it.get_global_linear_id()
                    assert it.get_local_linear_id() < it.get_local_range().size()
                    b[row, 0] = it.get_group_linear_id()
                    b[row, 1] = it.get_local_linear_id()
                    for d in range(dims):
                        b[row, 2 + d] = it.get_global_id(d)
                h.parallel_for(nd, k)
            sycl_queue.submit(cg)
        for gid in np.ndindex(*glob):
            model = sycl.nd_item(gid, nd)
            assert out[model.get_global_linear_id()].tolist() == [
                model.get_group_linear_id(), model.get_local_linear_id(), *gid]
'''

FAILING = '''
    import numpy as np
    from hypothesis import given, strategies as st

    import pysycl as sycl


    @given(st.integers(11, 64))
    def test_values_stay_small(sycl_queue, n):
        a = np.arange(n, dtype=np.int64)
        with sycl.buffer(a) as A:
            def cg(h):
                acc = A.get_access(h, sycl.access_mode.read_write)

                def k(i):
                    assert acc[i] < 10, "value too big"
                    acc[i] = 2 * acc[i]
                h.parallel_for(sycl.range(n), k)
            sycl_queue.submit(cg)
'''


def _wanted() -> list[str]:
    """The host_debuggable device and every compiled-kernel device here (the Intel CPU; a GPU)."""
    ids = sycl_plugin.device_ids(devices())
    if "host" not in ids or len(ids) < 2:
        pytest.skip(f"no compiled-kernel device beside the host_debuggable device ({ids})")
    return ids


@pytest.mark.slow
@pytest.mark.serial  # hypothesis's default deadline (without CI=true): no busy neighbour
def test_a_users_property_tests_pass_from_an_empty_cache(tmp_path: Path) -> None:
    want = _wanted()
    r = run_pytest(tmp_path, USER_TESTS, "--sycl-devices=" + ",".join(want))
    assert r.returncode == 0, r.stdout + r.stderr
    assert outcomes(r) == {f"{t}[{i}]": "PASSED" for i in want
                           for t in ("test_item_linear_id_is_row_major",
                                     "test_nd_range_ids_follow_nd_item")}, r.stdout


@pytest.mark.slow
def test_a_failing_kernel_assert_fails_the_test_naming_its_line(tmp_path: Path) -> None:
    want = _wanted()
    r = run_pytest(tmp_path, FAILING, "--sycl-devices=" + ",".join(want), name="test_user_fail.py")
    assert r.returncode == 1, r.stdout + r.stderr
    assert outcomes(r) == {f"test_values_stay_small[{i}]": "FAILED" for i in want}, r.stdout
    line = 1 + next(k for k, text in enumerate(FAILING.splitlines()) if "assert acc[i]" in text)
    where = f"{tmp_path / 'test_user_fail.py'}:{line}, work-item (10,)"
    assert r.stdout.count(where) >= len(want), r.stdout  # each device names it
    assert "AssertionError: value too big" in r.stdout, r.stdout
    # pytest shows the user's frames only: the runtime's path to the synchronization point
    # is left out (its modules' __tracebackhide__)
    assert f"{os.sep}pysycl{os.sep}_" not in r.stdout, r.stdout

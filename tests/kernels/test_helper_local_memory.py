"""A helper that captures a ``local_accessor`` sees the kernel's local memory (issue 21, item 7).

Local memory belongs to a kernel argument: each captured local accessor was one argument
with its own allocation, so a command-group helper reading the kernel's ``tmp`` through
its closure got another allocation and read garbage where the kernel wrote 42. Every
later capture of one local accessor object is now the first capture's argument
(``SameAsType``): one pointer, one allocation -- in memory, in bounds-checked mode and
through the disk cache. Compared with numpy and with the host_debuggable device.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import pysycl as sycl
from pysycl._core.abi import (
    AccessorType,
    Capture,
    CompiledKernel,
    IndexSpace,
    SameAsType,
    ScalarType,
)
from pysycl._core.abi_plain import kernel_from_plain, kernel_to_plain

W = sycl.access_mode.write
WG = 4


def _run(q: sycl.queue, kernel_of) -> np.ndarray:  # type: ignore[no-untyped-def]
    """``kernel_of(o, tmp, other)`` over an nd_range of 2 groups of WG: the output."""
    out = np.full(2 * WG, -1, np.int32)
    with sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            o = O.get_access(h, W)
            tmp = sycl.local_accessor(np.int32, sycl.range(WG), h)
            other = sycl.local_accessor(np.int32, sycl.range(WG), h)
            h.parallel_for(sycl.nd_range(sycl.range(2 * WG), sycl.range(WG)),
                           kernel_of(o, tmp, other))

        q.submit(cg)
    return out


def test_a_helper_capturing_the_kernels_local_accessor_reads_what_the_kernel_wrote(
        any_kernel_queue: sycl.queue) -> None:
    """The issue's program: the kernel writes 42 + l, the helper reads it back reversed."""
    def kernel_of(o, tmp, other):  # type: ignore[no-untyped-def]
        def read_tmp(j):
            return tmp[j]

        def k(it):
            lid = it.get_local_id(0)
            tmp[lid] = 42 + lid
            sycl.group_barrier(it.get_group())
            o[it.get_global_id(0)] = read_tmp(WG - 1 - lid)

        return k

    np.testing.assert_array_equal(_run(any_kernel_queue, kernel_of),
                                  np.tile(42 + np.arange(WG)[::-1], 2))


def test_a_helper_writes_the_kernels_local_memory_and_other_tiles_stay_apart(
        any_kernel_queue: sycl.queue) -> None:
    """A helper of a helper stores; a second local accessor of the same type is its own."""
    def kernel_of(o, tmp, other):  # type: ignore[no-untyped-def]
        def put(j, v):
            tmp[j] = v

        def put_twice(j, v):
            put(j, v)
            other[j] = -v  # the helper's own local accessor, read by the kernel below

        def k(it):
            lid = it.get_local_id(0)
            put_twice(lid, 100 * it.get_group(0) + lid)
            sycl.group_barrier(it.get_group())
            o[it.get_global_id(0)] = tmp[(lid + 1) % WG] + 1000 * (other[lid] != -tmp[lid])

        return k

    lid = np.arange(WG)
    want = np.concatenate([100 * g + (lid + 1) % WG for g in range(2)])
    np.testing.assert_array_equal(_run(any_kernel_queue, kernel_of), want)


def test_one_local_accessor_under_two_names_is_one_memory(any_kernel_queue: sycl.queue) -> None:
    out = np.zeros(WG, np.int32)
    with sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            o = O.get_access(h, W)
            tmp = sycl.local_accessor(np.int32, sycl.range(WG), h)
            alias = tmp

            def k(it):
                lid = it.get_local_id(0)
                tmp[lid] = 7 * lid
                sycl.group_barrier(it.get_group())
                o[lid] = alias[WG - 1 - lid]

            h.parallel_for(sycl.nd_range(sycl.range(WG), sycl.range(WG)), k)

        any_kernel_queue.submit(cg)
    np.testing.assert_array_equal(out, 7 * np.arange(WG)[::-1])


def test_in_bounds_checked_mode_the_helper_shares_memory_and_its_slot(
        kq: sycl.queue, request: pytest.FixtureRequest) -> None:
    sycl.ext.set_bounds_check(True)
    request.addfinalizer(lambda: sycl.ext.set_bounds_check(None))
    test_a_helper_capturing_the_kernels_local_accessor_reads_what_the_kernel_wrote(kq)

    def kernel_of(o, tmp, other):  # type: ignore[no-untyped-def]
        def read_tmp(j):
            return tmp[j]

        return lambda it: o.__setitem__(it.get_global_id(0), read_tmp(WG))  # one past the end

    with pytest.raises(sycl.exception, match=r"out-of-bounds read of .*'tmp'") as e:
        _run(kq, kernel_of)
    assert e.value.code() == sycl.errc.kernel


def test_a_same_as_capture_survives_the_plain_form_and_is_checked() -> None:
    local = AccessorType(np.dtype(np.int32), 1, "read_write", "local")
    caps = (Capture("tmp", "freevar", local), Capture("n", "freevar", ScalarType(np.dtype(np.int64))),
            Capture("tmp", "freevar", SameAsType(0), owner=1))
    k = CompiledKernel(binary=b"", format="spirv", entry="e", captures=caps,
                       index=IndexSpace("nd_range", 1))
    assert kernel_from_plain(kernel_to_plain(k), b"") == k
    bad = kernel_to_plain(k)
    bad["captures"][2]["type"]["index"] = 1  # type: ignore[index] - a scalar, not local memory
    with pytest.raises(ValueError, match="no earlier local accessor"):
        kernel_from_plain(bad, b"")


@pytest.mark.slow
def test_the_disk_cache_of_another_process_keeps_the_shared_memory(tmp_path) -> None:  # type: ignore[no-untyped-def]
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent("""
        import numpy as np
        import pysycl as sycl

        out = np.zeros(4, np.int32)
        with sycl.buffer(out) as O:
            def cg(h):
                o = O.get_access(h, sycl.access_mode.write)
                tmp = sycl.local_accessor(np.int32, sycl.range(4), h)

                def read_tmp(j):
                    return tmp[j]

                def k(it):
                    lid = it.get_local_id(0)
                    tmp[lid] = 42 + lid
                    sycl.group_barrier(it.get_group())
                    o[lid] = read_tmp(3 - lid)

                h.parallel_for(sycl.nd_range(sycl.range(4), sycl.range(4)), k)
            sycl.queue().submit(cg)
        s = sycl.ext.kernel_cache_stats()
        print(out.tolist(), s["compiles"], s["disk_hits"])
    """))
    root = str(Path(__file__).resolve().parents[2])  # this checkout's pysycl
    env = {**os.environ, "PYSYCL_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}
    runs = []
    for _ in range(2):
        p = subprocess.run([sys.executable, str(prog)], capture_output=True, text=True,
                           timeout=300, env=env, cwd=tmp_path)
        assert p.returncode == 0, p.stdout + p.stderr
        runs.append(p.stdout.strip())
    assert runs == ["[45, 44, 43, 42] 1 0", "[45, 44, 43, 42] 0 1"], runs

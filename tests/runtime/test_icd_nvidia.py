"""The ICD setup names an unregistered NVIDIA OpenCL driver only when that is safe."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pysycl._backends.opencl.icd import find_unregistered_nvidia


def _lib(tmp_path: Path, mode: int) -> Path:
    p = tmp_path / "libnvidia-opencl.so.1"
    p.write_bytes(b"\x7fELF")
    p.chmod(mode)
    return p


@pytest.mark.skipif(os.geteuid() != 0, reason="needs a root-owned file")
def test_a_root_owned_unregistered_driver_is_named(tmp_path: Path) -> None:
    lib = _lib(tmp_path, 0o644)
    assert find_unregistered_nvidia([b"/x/libintelocl.so\n"], (str(lib),)) == lib.resolve()


def test_a_registered_driver_is_left_alone(tmp_path: Path) -> None:
    lib = _lib(tmp_path, 0o644)
    assert find_unregistered_nvidia([b"libnvidia-opencl.so.1\n"], (str(lib),)) is None


def test_a_file_others_may_write_is_never_named(tmp_path: Path) -> None:
    for mode in (0o666, 0o664):
        lib = _lib(tmp_path, mode)
        assert find_unregistered_nvidia([], (str(lib),)) is None


def test_a_missing_or_non_regular_path_is_skipped(tmp_path: Path) -> None:
    assert find_unregistered_nvidia([], (str(tmp_path / "none"), str(tmp_path))) is None


def test_a_file_owned_by_someone_else_is_never_named(tmp_path: Path) -> None:
    lib = _lib(tmp_path, 0o644)
    if os.geteuid() == 0:
        os.chown(lib, 12345, 12345)
        assert find_unregistered_nvidia([], (str(lib),)) is None
    else:
        assert find_unregistered_nvidia([], (str(lib),)) is None  # owned by this user, not root

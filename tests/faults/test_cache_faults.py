"""Faults around the cache: each ends with a correct kernel result in the next
process, the Intel device still the default, and at most one warning saying
what was wrong and where."""

from __future__ import annotations

import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from security.child import CHILD, assert_healthy, entries, run_child

from pysycl._backends.opencl.icd import find_intel_cpu_runtime
from pysycl._core import cachefs as _cachefs
from pysycl._kernels import diskcache as _diskcache


def _one_warning(r: dict[str, object], *words: str) -> str:
    assert_healthy(r, max_warnings=1)
    (w,) = r["warnings"]
    for word in words:
        assert word in w, (word, w)
    return w


class _ReadOnly:
    """Make folders read-only for real: mode 0500, or for root (whom modes do not stop)
    the immutable attribute (``chattr +i``); skips when neither can be had."""

    def __init__(self) -> None:
        self.done: list[Path] = []

    def __call__(self, d: Path) -> None:
        if os.geteuid() != 0:
            os.chmod(d, 0o500)
        else:
            chattr = shutil.which("chattr")
            r = subprocess.run([chattr, "+i", str(d)], capture_output=True) if chattr else None
            if r is None or r.returncode != 0:
                pytest.skip("running as root without `chattr +i` on this file system: a "
                            "read-only folder cannot be made (file-instead-of-folder covers it)")
        self.done.append(d)

    def undo(self) -> None:
        for d in self.done:
            if os.geteuid() != 0:
                os.chmod(d, 0o700)
            else:
                subprocess.run(["chattr", "-i", str(d)], check=True)


@pytest.fixture
def read_only() -> Iterator[_ReadOnly]:
    ro = _ReadOnly()
    try:
        yield ro
    finally:
        ro.undo()


def test_read_only_cache_dir_keeps_the_device_and_reads_entries(tmp_path: Path,
                                                                read_only: _ReadOnly) -> None:
    empty = tmp_path / "ro"
    empty.mkdir(mode=0o700)
    read_only(empty)
    r = run_child(empty)
    w = _one_warning(r, "not writable", str(empty))
    assert "memory only" in w and r["cache_dir"] == "None"
    assert not str(r["icd"]).startswith(str(empty))   # vendors list in a temporary folder
    cache = tmp_path / "cache"
    run_child(cache)
    (entry,) = entries(cache)
    read_only(entry.parent)
    read_only(cache / "kernels")
    r = run_child(cache, CHILD_KERNELS="2")   # the old entry is read, the new one not written
    _one_warning(r, "not writable")
    assert r["disk_hits"] == 1 and r["disk_writes"] == 0


def test_cache_path_that_is_a_file(tmp_path: Path) -> None:
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("x")
    r = run_child(blocker)
    _one_warning(r, "not writable", str(blocker), "not a directory")
    icd = Path(r["icd"])
    assert icd.parent == Path(tempfile.gettempdir()) and icd.name.startswith("pysycl-icd-")
    assert not icd.exists(), "the temporary vendors folder is removed at exit"
    assert r["cache_dir"] == "None" and blocker.read_text() == "x"
    # A file where the kernels folder goes: the same, one level down.
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    (cache / "kernels").write_text("x")
    r = run_child(cache)
    _one_warning(r, "not writable", str(cache / "kernels"))
    assert Path(r["icd"]).parent == cache / "icd"     # the ICD folder is fine there


def test_full_disk_skips_one_write_only(tmp_path: Path) -> None:
    # RLIMIT_FSIZE makes writes past 300 bytes fail with EFBIG, as a full disk fails
    # with ENOSPC; the limit is lifted after the first kernel, as space comes back.
    cache = tmp_path / "cache"
    before = ("import resource, signal; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
              "resource.setrlimit(resource.RLIMIT_FSIZE, (300, resource.RLIM_INFINITY))")
    lift = "resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY,) * 2)"
    r = run_child(cache, CHILD_BEFORE=before, CHILD_BETWEEN=lift, CHILD_KERNELS="2")
    _one_warning(r, "could not write", "later ones are tried again")
    assert r["compiles"] == 2 and r["disk_writes"] == 1      # the cache stayed on
    assert not list((cache / "kernels").rglob("*.tmp")), "no temporary file left behind"
    r = run_child(cache, CHILD_KERNELS="2")
    assert_healthy(r)
    assert r["compiles"] == 1 and r["disk_hits"] == 1


def test_relative_cache_dir_does_not_move_with_chdir(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    chdir = f"os.chdir({str(b)!r})"
    r = run_child("rel/cache", cwd=a, CHILD_AFTER_IMPORT=chdir)
    assert_healthy(r)
    assert r["cache_dir"] == str(a / "rel" / "cache" / "kernels") and r["disk_writes"] == 1
    assert not (b / "rel").exists()
    r = run_child("rel/cache", cwd=a, CHILD_AFTER_IMPORT=chdir)
    assert_healthy(r)
    assert r["disk_hits"] == 1


def _reframe(entry: Path, spirv_edit: object) -> bytes:
    """The entry with its SPIR-V changed by ``spirv_edit`` and a *valid* header and hash."""
    payload = _cachefs.unframe(b"K", entry.stem, entry.read_bytes())
    (n,) = struct.unpack_from("<I", payload)
    spv = bytearray(payload[4 + n:])
    spirv_edit(spv)  # type: ignore[operator]
    return _cachefs.frame(b"K", entry.stem, payload[:4 + n] + bytes(spv))


def _set_word_count(spv: bytearray, count: int) -> None:
    struct.pack_into("<H", spv, 5 * 4 + 2, count)   # the first instruction after the header


CORRUPTIONS = {
    "truncated in the header": lambda e, o: o[:40],
    "truncated in the metadata": lambda e, o: o[:_cachefs.HEADER_BYTES + 30],
    "last byte missing": lambda e, o: o[:-1],
    "a byte flipped in the SPIR-V": lambda e, o: o[:-50] + bytes([o[-50] ^ 0x10]) + o[-49:],
    "SPIR-V word count 0, valid hash": lambda e, o: _reframe(e, lambda s: _set_word_count(s, 0)),
    "SPIR-V word count past the end, valid hash":
        lambda e, o: _reframe(e, lambda s: _set_word_count(s, 0xFFFF)),
    "JSON metadata that is not an object, valid hash":
        lambda e, o: _cachefs.frame(b"K", e.stem, struct.pack("<I", 2) + b"[]"),
}


def test_truncated_and_corrupted_entries_are_rebuilt(tmp_path: Path) -> None:
    # One kernel per corruption, all in one process: one warning for each entry.
    cache, n = tmp_path / "cache", str(len(CORRUPTIONS))
    run_child(cache, CHILD_KERNELS=n)
    found = entries(cache)
    assert len(found) == len(CORRUPTIONS)
    for entry, corrupt in zip(found, CORRUPTIONS.values(), strict=True):
        entry.write_bytes(corrupt(entry, entry.read_bytes()))
    r = run_child(cache, CHILD_KERNELS=n)
    assert_healthy(r, max_warnings=len(CORRUPTIONS))
    for entry, name in zip(found, CORRUPTIONS, strict=True):
        (w,) = [w for w in r["warnings"] if str(entry) in w]
        assert "corrupt kernel cache entry" in w, (name, w)
        _diskcache.decode_kernel(_cachefs.unframe(b"K", entry.stem, entry.read_bytes()))
    assert r["compiles"] == len(CORRUPTIONS) and r["disk_writes"] == len(CORRUPTIONS)
    assert run_child(cache, CHILD_KERNELS=n)["disk_hits"] == len(CORRUPTIONS)


def test_entry_moved_from_another_key_is_rejected(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    run_child(cache, CHILD_KERNELS="2")
    e0, e1 = entries(cache)
    e0.write_bytes(e1.read_bytes())          # another kernel's (valid) entry
    r = run_child(cache, CHILD_KERNELS="2")
    _one_warning(r, "stored under key", str(e0))
    assert r["compiles"] == 1 and r["disk_hits"] == 1


@pytest.mark.skipif(find_intel_cpu_runtime() is None,
                    reason="needs the pip-installed Intel runtime, whose .icd pysycl writes")
def test_non_utf8_icd_files_keep_the_device(tmp_path: Path) -> None:
    vendors = tmp_path / "vendors"
    vendors.mkdir()
    weird = b"/opt/\xff\xfe-vendor/libnothing\xe9.so\n"
    (vendors / "latin1.icd").write_bytes(weird)
    os.mkdir(vendors / "folder.icd")          # a folder squatting on an .icd name
    cache = tmp_path / "cache"
    r = run_child(cache, OCL_ICD_VENDORS=str(vendors))
    assert_healthy(r)
    folder = Path(r["icd"])
    assert (folder / "latin1.icd").read_bytes() == weird      # copied byte for byte
    assert not (folder / "folder.icd").exists()
    # A non-UTF-8 file and a folder planted in pysycl's own vendors folder.
    r = run_child(cache)
    own = Path(r["icd"])
    (own / "bad.icd").write_bytes(b"\xff\xff\xff\n")
    (own / "pysycl-intel-cpu.icd").unlink()
    (own / "pysycl-intel-cpu.icd").mkdir()
    r = run_child(cache)
    assert_healthy(r)
    assert Path(r["icd"]) == own and sorted(os.listdir(own)) == ["pysycl-intel-cpu.icd"]
    assert (own / "pysycl-intel-cpu.icd").is_file()


@pytest.mark.slow
def test_folder_squatting_on_an_entry(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    run_child(cache)
    (entry,) = entries(cache)
    entry.unlink()
    entry.mkdir()
    (entry / "keep").write_text("x")
    _one_warning(run_child(cache), str(entry))      # not cached, nothing else lost
    (entry / "keep").unlink()                 # an empty one is simply removed
    r = run_child(cache)
    _one_warning(r, str(entry))
    assert entry.is_file() and r["disk_writes"] == 1


def test_sigkill_during_compile_leaves_a_working_cache(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    env = {k: v for k, v in os.environ.items() if k not in ("OCL_ICD_VENDORS",
                                                          "PYSYCL_ICD_VENDORS_SET")}
    env.update(PYSYCL_CACHE_DIR=str(cache), CHILD_KERNELS="3")
    for delay in (0.4, 0.8, 1.2):   # at import, in Numba, around the cache writes
        p = subprocess.Popen([sys.executable, "-c", CHILD], env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        time.sleep(delay)
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=60)
    r = run_child(cache, CHILD_KERNELS="3")
    assert_healthy(r)
    assert r["compiles"] + r["disk_hits"] == 3
    for e in entries(cache):
        _diskcache.decode_kernel(_cachefs.unframe(b"K", e.stem, e.read_bytes()))

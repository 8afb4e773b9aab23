"""Nobody in: what someone who can write to the cache folder can do (nothing).

Each scenario plants something in a real cache folder, then runs a fresh
process (state at import matters) and proves the plant harmless: planted code
never runs, planted libraries never load, links are never written through,
untrusted folders are refused, and the kernel still runs right on the Intel
device, the default.
"""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pysycl._backends.opencl.icd import find_intel_cpu_runtime
from pysycl._core import cachefs as _cachefs
from pysycl._kernels import diskcache as _diskcache
from security.child import assert_healthy, entries, run_child

FOREIGN_UID = 54321


class _MakeMarker:
    """Pickles into "call os.mkdir(marker)": what a planted pickle would run."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, ...]:
        return (os.mkdir, (str(self.marker),))


def _payloads(marker: Path, kind: bytes, key: str) -> dict[str, bytes]:
    evil = pickle.dumps(_MakeMarker(marker), protocol=pickle.HIGHEST_PROTOCOL)
    return {
        "old format + pickle": b"PYSYCL" + kind + b"1" + evil,    # what pysycl <= 0.1 read
        "bare pickle": evil,
        "valid header + pickle": _cachefs.frame(kind, key, evil),  # an attacker who hashes
    }


def test_planted_pickle_in_kernel_cache_never_runs(tmp_path: Path) -> None:
    cache, marker = tmp_path / "cache", tmp_path / "marker"
    assert run_child(cache, CHILD_KERNELS="3")["compiles"] == 3
    found = entries(cache)
    planted = {}
    for entry, name in zip(found, _payloads(marker, b"K", "0" * 64), strict=True):
        planted[entry] = name
        entry.write_bytes(_payloads(marker, b"K", entry.stem)[name])
    r = run_child(cache, CHILD_KERNELS="3")
    assert_healthy(r, max_warnings=3)
    assert not marker.exists()
    assert r["compiles"] == 3 and r["disk_hits"] == 0 and r["disk_writes"] == 3, r
    for entry in found:   # rebuilt: plain data again
        k = _diskcache.decode_kernel(_cachefs.unframe(b"K", entry.stem, entry.read_bytes()))
        assert k.format in ("spirv", "ptx") and k.binary, planted[entry]


BUNDLE = textwrap.dedent("""
    import json, numpy as np, pysycl as sycl
    def fac(x):
        def kern(i):
            x[i] = x[i] * 3.0 + 1.0
        return kern
    sycl.ext.declare_kernel(fac, kernel_name="security.k", index_space=sycl.range(1),
                            captures={"x": sycl.ext.accessor_type(np.float32, 1, "read_write")})
    q = sycl.queue()
    kb = sycl.build(sycl.get_kernel_bundle(q.get_context(), state=sycl.bundle_state.input))
    x = np.ones(4, np.float32)
    with sycl.buffer(x) as X:
        def cg(h):
            h.use_kernel_bundle(kb)
            h.parallel_for(sycl.range(4), fac(X.get_access(h, sycl.access_mode.read_write)))
        q.submit(cg)
    s = sycl.ext.kernel_cache_stats()
    print(json.dumps({"ok": x.tolist() == [4.0] * 4, "hits": s["binary_hits"],
                      "writes": s["binary_writes"]}))
""")


def _bundle_child(cache: Path) -> dict[str, object]:
    env = dict(os.environ, PYSYCL_CACHE_DIR=str(cache), PYTHONWARNINGS="ignore")
    r = subprocess.run([sys.executable, "-c", BUNDLE], env=env, capture_output=True, text=True,
                       timeout=240)
    assert r.returncode == 0, r.stderr[-3000:]
    import json

    return json.loads(r.stdout.strip().splitlines()[-1])


def test_planted_pickle_in_binary_cache_never_runs(tmp_path: Path) -> None:
    cache, marker = tmp_path / "cache", tmp_path / "marker"
    writes = _bundle_child(cache)["writes"]
    assert writes == 1
    # one program binary (on CUDA devices also the kernel's cubin): a payload planted in each
    found = entries(cache, "*.bin")
    assert found
    for name, data in _payloads(marker, b"B", found[0].stem).items():
        for entry in found:
            entry.write_bytes(_payloads(marker, b"B", entry.stem)[name])
        r = _bundle_child(cache)
        assert r["ok"] and not marker.exists(), name
        assert r["hits"] == 0 and r["writes"] == writes, (name, r)   # ignored and rebuilt
        for entry in found:
            assert _cachefs.unframe(b"B", entry.stem, entry.read_bytes())[:4] != data[:4]


@pytest.fixture
def marker_library(tmp_path: Path) -> tuple[Path, Path]:
    """A shared object that creates a marker file when it is loaded, and the marker's path."""
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("gcc is needed to build the planted library")
    marker = tmp_path / "loaded-marker"
    src = tmp_path / "evil.c"
    src.write_text(textwrap.dedent(f"""
        #include <stdio.h>
        __attribute__((constructor)) static void planted(void) {{
            FILE *f = fopen("{marker}", "w");
            if (f) fclose(f);
        }}
    """))
    lib = tmp_path / "libevil.so"
    subprocess.run([gcc, "-shared", "-fPIC", "-o", str(lib), str(src)], check=True,
                   capture_output=True)
    return lib, marker


@pytest.mark.skipif(find_intel_cpu_runtime() is None,
                    reason="needs the pip-installed Intel runtime, whose .icd pysycl writes")
def test_planted_icd_is_removed_and_never_loaded(tmp_path: Path,
                                                 marker_library: tuple[Path, Path]) -> None:
    lib, marker = marker_library
    # Control: the ICD loader does load what a vendors folder names.
    vendors = tmp_path / "vendors"
    vendors.mkdir()
    (vendors / "evil.icd").write_text(f"{lib}\n")
    run_child(None, OCL_ICD_VENDORS=str(vendors), PYSYCL_NO_ICD_SETUP="1",
              PYSYCL_CACHE_DIR=str(tmp_path / "control"), PYSYCL_DEVICE_FILTER="",
              CHILD_AFTER_IMPORT="import pyopencl; pyopencl.get_platforms()",
              CHILD_KERNELS="0")
    assert marker.exists(), "control failed: the planted library was not loaded"
    marker.unlink()

    cache = tmp_path / "cache"
    first = run_child(cache)
    folder = Path(first["icd"])
    assert folder.parent == cache / "icd"
    (folder / "evil.icd").write_text(f"{lib}\n")
    (folder / "evil.icd.bak").write_text("not an icd, still not pysycl's")
    r = run_child(cache)
    assert_healthy(r)
    assert not marker.exists()
    assert sorted(os.listdir(r["icd"])) == ["pysycl-intel-cpu.icd"]
    assert not (folder / "evil.icd").exists()
    assert os.stat(r["icd"]).st_mode & 0o777 == 0o700


def test_entry_symlink_is_never_written_through(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    run_child(cache)
    (entry,) = entries(cache)
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    entry.unlink()
    entry.symlink_to(victim)
    r = run_child(cache)
    assert_healthy(r, max_warnings=1)
    assert victim.read_bytes() == b"precious"
    assert entry.is_file() and not entry.is_symlink() and r["disk_writes"] == 1


def test_planted_temp_file_symlinks_are_never_written_through(tmp_path: Path) -> None:
    # The temporary names pysycl <= 0.1 used, `.<entry>.<pid>.tmp`, planted as links
    # by the child itself (it knows its pid) before pysycl is imported.
    cache = tmp_path / "cache"
    run_child(cache)
    (entry,) = entries(cache)
    entry.unlink()
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    plant = (f"p = {str(entry)!r}; import os.path as P; "
             f"os.symlink({str(victim)!r}, P.join(P.dirname(p), '.' + P.basename(p) + "
             f"'.' + str(os.getpid()) + '.tmp'))")
    r = run_child(cache, CHILD_BEFORE=plant)
    assert_healthy(r)
    assert victim.read_bytes() == b"precious" and r["disk_writes"] == 1
    assert entry.is_file() and not entry.is_symlink()


def test_symlinked_entry_folder_is_refused(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    run_child(cache)
    (entry,) = entries(cache)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    shutil.rmtree(entry.parent)
    entry.parent.symlink_to(elsewhere)
    r = run_child(cache)
    assert_healthy(r, max_warnings=1)
    assert "symbolic link" in r["warnings"][0] and str(entry.parent) in r["warnings"][0]
    assert list(elsewhere.iterdir()) == []


def _refused(r: dict[str, object], cache: Path) -> None:
    assert_healthy(r, max_warnings=1)
    (w,) = r["warnings"]
    assert "refused" in w and str(cache) in w, w
    assert r["disk_writes"] == 0 and r["disk_hits"] == 0 and r["cache_dir"] == "None"
    assert not str(r["icd"]).startswith(str(cache))  # vendors list in a private temp folder


@pytest.mark.slow
def test_world_writable_cache_dir_is_refused(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    run_child(cache)                 # a good entry is there, but nobody may trust it now
    os.chmod(cache, 0o777)
    _refused(run_child(cache), cache)
    os.chmod(cache, 0o700)
    sub = cache / "kernels"
    os.chmod(sub, 0o770)             # group-writable: refused as well
    r = run_child(cache)
    assert_healthy(r, max_warnings=1)
    assert "refused" in r["warnings"][0] and str(sub) in r["warnings"][0]
    assert r["disk_hits"] == 0 and r["cache_dir"] == "None"


needs_root = pytest.mark.skipif(os.geteuid() != 0,
                                reason="making a folder or link owned by another uid needs root")


@needs_root
def test_foreign_owned_cache_dir_is_refused(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    os.chown(cache, FOREIGN_UID, FOREIGN_UID)
    _refused(run_child(cache), cache)


@needs_root
def test_foreign_owned_symlink_to_cache_dir_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(target)
    assert_healthy(run_child(link))          # the user's own link is fine
    os.lchown(link, FOREIGN_UID, FOREIGN_UID)
    _refused(run_child(link), link)

"""Make the OpenCL ICD loader see the pip-installed Intel CPU runtime and NVIDIA's OpenCL.

PyPI's ``intel-opencl-rt`` installs ``libintelocl.so`` into ``<prefix>/lib`` but
its ``.icd`` file holds an unreplaced placeholder path, so no loader finds it.
We point the loader (``OCL_ICD_VENDORS``, read by ocl-icd, which pyopencl's
wheels bundle) at a vendors folder that holds exactly

* one ``.icd`` naming the installed ``libintelocl.so`` by absolute path, and
* a byte-for-byte copy of every ``.icd`` the loader would have seen otherwise
  (the folder or file ``OCL_ICD_VENDORS`` already named, else
  ``/etc/OpenCL/vendors``), so NVIDIA, Debian's PoCL and any other system ICD
  stay visible,

* one ``.icd`` naming NVIDIA's ``libnvidia-opencl.so.1`` when the driver is
  installed but not registered — as in containers, where the NVIDIA container
  toolkit mounts the driver's libraries (``/usr/local/nvidia/lib64``) but no
  ``.icd`` file. Only fixed, root-owned system locations are looked in
  (:data:`NVIDIA_OPENCL_PATHS`), and only a root-owned file that no one else
  may write is named; a registered NVIDIA ICD is left as it is,

and nothing else: the loader loads whatever library an ``.icd`` there names.
The folder is ``<cache folder>/icd/<digest of its contents>``, private (0700,
checked like every cache folder by :mod:`pysycl._core.cachefs`). It is used only
if it holds exactly the files pysycl would write; otherwise a fresh folder
with an unpredictable name (``mkdtemp``) is written and renamed into place,
and whatever was there is removed. When the cache folder cannot be used
(read-only, a file, refused), the vendors folder is a private ``mkdtemp``
folder in the temporary directory, removed at exit. Nothing is written at
all when there is neither a pip-installed Intel runtime nor an unregistered
NVIDIA driver; ``PYSYCL_NO_ICD_SETUP=1``
turns this off. The variable must be set before the loader's first
``clGetPlatformIDs``; ``pysycl`` does it at import.
"""

from __future__ import annotations

import atexit
import glob
import hashlib
import logging
import os
import secrets
import shutil
import stat
import sys
import tempfile
import warnings
from pathlib import Path

from pysycl._core import cachefs as _cachefs

_log = logging.getLogger("pysycl.icd")

SYSTEM_VENDORS = "/etc/OpenCL/vendors"
_DONE_MARKER = "PYSYCL_ICD_VENDORS_SET"    # the folder pysycl put in OCL_ICD_VENDORS
_ORIGINAL = "PYSYCL_ICD_VENDORS_ORIGINAL"  # OCL_ICD_VENDORS before that ("" when unset)
INTEL_ICD = "pysycl-intel-cpu.icd"
NVIDIA_ICD = "pysycl-nvidia.icd"
#: Where an unregistered NVIDIA OpenCL driver library is looked for (root-owned folders).
NVIDIA_OPENCL_PATHS = ("/usr/local/nvidia/lib64/libnvidia-opencl.so.1",
                       "/usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1",
                       "/usr/lib64/libnvidia-opencl.so.1")


def find_intel_cpu_runtime() -> Path | None:
    """Return the path of the pip-installed ``libintelocl.so``, if any."""
    candidates = [Path(sys.prefix) / "lib" / "libintelocl.so"]
    try:
        from importlib import metadata

        dist = metadata.distribution("intel-opencl-rt")
        for f in dist.files or ():
            if f.name == "libintelocl.so":
                candidates.append(Path(str(dist.locate_file(f))))
    except Exception:
        pass
    for c in candidates:
        if c.is_file():
            return c.resolve()


def find_unregistered_nvidia(icd_texts: list[bytes],
                             paths: tuple[str, ...] = NVIDIA_OPENCL_PATHS) -> Path | None:
    """NVIDIA's OpenCL library when no ICD in ``icd_texts`` names it and a safe copy exists.

    Safe: a regular file (after links) owned by root, writable by no one else.
    """
    if any(b"nvidia-opencl" in t for t in icd_texts):
        return None
    for p in paths:
        try:
            real = Path(p).resolve(strict=True)
            st = real.stat()
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) and st.st_uid == 0 and not st.st_mode & 0o022:
            return real
    return None


def _icd_sources(original: str) -> list[Path]:
    """The ``.icd`` files the loader would read for ``OCL_ICD_VENDORS=original`` ("" unset)."""
    if original:
        p = Path(original)
        if p.is_dir():
            return sorted(Path(x) for x in glob.glob(os.path.join(glob.escape(original), "*.icd")))
        if p.is_file():
            return [p]
        return []
    return sorted(Path(x) for x in glob.glob(os.path.join(SYSTEM_VENDORS, "*.icd")))


def _entries(original: str, lib: Path | None, nvidia: bool = True) -> dict[str, bytes]:
    """The vendors folder's files: name -> bytes (copied as bytes: any encoding is kept).

    Empty when there is nothing to add (no Intel runtime, no unregistered NVIDIA).
    """
    entries: dict[str, bytes] = {}
    for icd in _icd_sources(original):
        try:
            # The loader itself follows links here: these files are outside pysycl's cache.
            with open(icd, "rb") as f:
                data = f.read(1 << 16)
        except OSError as e:  # a folder or an unreadable file named *.icd: the loader skips it too
            _log.debug("skipping ICD file %s: %s", icd, e)
            continue
        if icd.name not in (INTEL_ICD, NVIDIA_ICD) and b"\0" not in data:
            entries[icd.name] = data
    nv = find_unregistered_nvidia(list(entries.values())) if nvidia else None
    if lib is None and nv is None:
        return {}
    if lib is not None:
        entries[INTEL_ICD] = os.fsencode(str(lib)) + b"\n"
    if nv is not None:
        entries[NVIDIA_ICD] = os.fsencode(str(nv)) + b"\n"
    return entries


def _is_exact(folder: Path, entries: dict[str, bytes]) -> bool:
    """Whether ``folder`` is private and holds exactly ``entries`` (and nothing else)."""
    try:
        st = os.lstat(folder)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            return False
        if set(os.listdir(folder)) != set(entries):
            return False
        for name, data in entries.items():
            if _cachefs.read_private(folder / name, limit=1 << 16) != data:
                return False
    except (OSError, _cachefs.CorruptEntryError):
        return False
    return True


def _write_folder(parent: Path, entries: dict[str, bytes], prefix: str) -> Path:
    """A fresh private folder (``mkdtemp``, 0700) in ``parent`` holding ``entries`` (0600)."""
    d = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    try:
        os.chmod(d, 0o700)
        for name, data in entries.items():
            fd = os.open(d / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                         | os.O_CLOEXEC, 0o600)
            try:
                os.fchmod(fd, 0o600)
                os.write(fd, data)
            finally:
                os.close(fd)
    except BaseException:
        shutil.rmtree(d, ignore_errors=True)
        raise
    return d


def _discard(p: Path) -> None:
    """Remove ``p`` whatever it is (a link is unlinked, never followed)."""
    try:
        if os.path.isdir(p) and not os.path.islink(p):
            shutil.rmtree(p)
        else:
            os.unlink(p)
    except OSError as e:
        _log.debug("could not remove %s: %s", p, e)


def _cache_folder(entries: dict[str, bytes]) -> Path | None:
    """The verified vendors folder in the cache, rebuilt when needed; None if unusable."""
    if _cachefs.root_problem() is not None:
        return None
    icd_dir = _cachefs.cache_root() / "icd"
    problem = _cachefs.dir_problem(icd_dir, create=True)
    if problem is not None:
        _cachefs.warn_folder(icd_dir, problem, "ICD vendors", "The vendors list is written to a "
                             "private temporary folder.")
        return None
    digest = hashlib.sha256(repr(sorted(entries.items())).encode()).hexdigest()[:16]
    folder = icd_dir / digest
    if _is_exact(folder, entries):
        return folder
    fresh = _write_folder(icd_dir, entries, ".new-")
    try:
        if os.path.lexists(folder):
            _log.debug("ICD vendors folder %s is not exactly pysycl's: rebuilding it", folder)
            old = icd_dir / f".old-{secrets.token_hex(8)}"
            try:
                os.rename(folder, old)
            except FileNotFoundError:  # another process moved it first
                pass
            else:
                _discard(old)
        os.rename(fresh, folder)
    except OSError:  # another process put one there meanwhile, or it cannot be moved
        if _is_exact(folder, entries):
            _discard(fresh)
            return folder
        return fresh  # private, holding exactly pysycl's files: as good, under another name
    return folder


def _temporary_folder(entries: dict[str, bytes]) -> Path:
    """A private ``mkdtemp`` vendors folder in the temporary directory, removed at exit."""
    d = _write_folder(Path(tempfile.gettempdir()), entries, "pysycl-icd-")
    atexit.register(shutil.rmtree, d, True)
    return d


def setup_icd_loader() -> str | None:
    """Point the ICD loader at the pip-installed Intel runtime (and an unregistered
    NVIDIA driver) plus system ICDs.

    Returns:
        The vendors folder now in ``OCL_ICD_VENDORS``, or ``None`` when nothing
        was changed (nothing to add, disabled, or no folder could be written).
    """
    if os.environ.get("PYSYCL_NO_ICD_SETUP") == "1":
        return None
    lib = find_intel_cpu_runtime()
    current = os.environ.get("OCL_ICD_VENDORS", "")
    inherited = bool(current) and os.environ.get(_DONE_MARKER) == current
    # A process started by one that ran this inherits its folder: checked, never trusted.
    original = os.environ.get(_ORIGINAL, "") if inherited else current
    entries = _entries(original, lib)
    if not entries:
        return None
    folder = Path(current) if inherited and _is_exact(Path(current), entries) else None
    try:
        if folder is None:
            folder = _cache_folder(entries)
        if folder is None:
            folder = _temporary_folder(entries)
    except OSError as e:
        _log.debug("cannot write the ICD vendors folder in the cache: %s", e)
        try:
            folder = _temporary_folder(entries)
        except OSError as e2:
            warnings.warn(f"pysycl: cannot write an OpenCL ICD vendors folder ({e}; {e2}); the "
                          "pip-installed Intel OpenCL runtime will not be visible",
                          _cachefs.CacheWarning, stacklevel=2)
            return None
    os.environ["OCL_ICD_VENDORS"] = str(folder)
    os.environ[_DONE_MARKER] = str(folder)
    os.environ[_ORIGINAL] = original
    _log.debug("OCL_ICD_VENDORS=%s (%s)", folder, ", ".join(sorted(entries)))
    return str(folder)

"""Make the OpenCL ICD loader see the pip-installed Intel CPU runtime.

PyPI's ``intel-opencl-rt`` installs ``libintelocl.so`` into ``<prefix>/lib`` but
its ``.icd`` file holds an unreplaced placeholder path, so no loader finds it.
We point the loader (``OCL_ICD_VENDORS``, read by ocl-icd, which pyopencl's
wheels bundle) at a vendors folder in the user's cache directory that holds

* one ``.icd`` naming the installed ``libintelocl.so`` by absolute path, and
* a copy of every ``.icd`` the loader would have seen otherwise (the folder or
  file ``OCL_ICD_VENDORS`` already named, else ``/etc/OpenCL/vendors``), so
  NVIDIA, Debian's PoCL and any other system ICD stay visible.

pyopencl's bundled loader also adds the PoCL of ``pocl-binary-distribution``
on its own. Nothing is written outside the user's cache directory, and nothing
at all when there is no pip-installed Intel runtime. ``PYSYCL_NO_ICD_SETUP=1``
turns this off. The variable must be set before the loader's first
``clGetPlatformIDs``; ``pysycl`` does it at import.
"""

from __future__ import annotations

import glob
import hashlib
import logging
import os
import sys
from pathlib import Path

_log = logging.getLogger("pysycl.icd")

SYSTEM_VENDORS = "/etc/OpenCL/vendors"
_DONE_MARKER = "PYSYCL_ICD_VENDORS_SET"


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
    return None


def _existing_icd_files() -> list[Path]:
    current = os.environ.get("OCL_ICD_VENDORS")
    if current:
        p = Path(current)
        if p.is_dir():
            return sorted(Path(x) for x in glob.glob(str(p / "*.icd")))
        if p.is_file():
            return [p]
        return []
    return sorted(Path(x) for x in glob.glob(os.path.join(SYSTEM_VENDORS, "*.icd")))


def _cache_root() -> Path:
    override = os.environ.get("PYSYCL_CACHE_DIR")
    if override:
        return Path(override)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("pysycl"))


def setup_icd_loader() -> str | None:
    """Point the ICD loader at the pip-installed Intel runtime plus system ICDs.

    Returns:
        The vendors folder now in ``OCL_ICD_VENDORS``, or ``None`` when nothing
        was changed (no pip runtime, already done, disabled, or unwritable cache).
    """
    if os.environ.get("PYSYCL_NO_ICD_SETUP") == "1":
        return None
    if os.environ.get(_DONE_MARKER) and os.environ.get("OCL_ICD_VENDORS") == os.environ.get(
        _DONE_MARKER
    ):
        return None
    lib = find_intel_cpu_runtime()
    if lib is None:
        return None
    entries: dict[str, str] = {}
    for icd in _existing_icd_files():
        try:
            entries[icd.name] = icd.read_text().strip()
        except OSError:
            continue
    entries["pysycl-intel-cpu.icd"] = str(lib)
    digest = hashlib.sha256(repr(sorted(entries.items())).encode()).hexdigest()[:16]
    folder = _cache_root() / "icd" / digest
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, content in entries.items():
            target = folder / name
            if not target.is_file() or target.read_text().strip() != content:
                tmp = folder / f".{name}.{os.getpid()}.tmp"
                tmp.write_text(content + "\n")
                os.replace(tmp, target)
    except OSError as e:
        _log.warning("pysycl: cannot write the ICD vendors folder %s (%s); "
                     "the pip-installed Intel OpenCL runtime will not be visible", folder, e)
        return None
    os.environ["OCL_ICD_VENDORS"] = str(folder)
    os.environ[_DONE_MARKER] = str(folder)
    _log.debug("OCL_ICD_VENDORS=%s (%s)", folder, ", ".join(sorted(entries)))
    return str(folder)

"""On-disk cache of per-device program binaries (``CL_PROGRAM_BINARIES``).

Sits beside the SPIR-V cache (:mod:`pysycl._kernels.diskcache`), in
``<kernel cache folder>/binaries``. The key covers the device image contents
(the digests of its SPIR-V modules or source), the build options, and the
device: platform name/vendor/version, device name/vendor/version, driver
version and address bits (:func:`pysycl._backends.opencl.programs.device_cache_key`), so a
new driver never loads an old binary. An entry is the header of
:mod:`pysycl._core.cachefs` (magic ``PYSYCLB2``, key, length, SHA-256) then the
binary. Writes are atomic; a corrupt entry is ignored with a ``CacheWarning``
and rebuilt; an unwritable folder turns this level off with one warning.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from pysycl._kernels.diskcache import cache_dir, read_entry, write_entry

_KIND = b"B"
_state: dict[str, object] = {"unwritable": False}


def key(*parts: str) -> str:
    """A cache key from strings (image digests, options, device key)."""
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode())
        h.update(b"\x00")
    return h.hexdigest()


def _path(d: Path, k: str) -> Path:
    return d / "binaries" / k[:2] / f"{k}.bin"


def load(k: str) -> bytes | None:
    """The cached binary for key ``k``, or None."""
    d = cache_dir()
    if d is None:
        return None
    return read_entry(d, _path(d, k), _KIND, k, bytes, "device binary cache entry")


def store(k: str, binary: bytes) -> bool:
    """Write ``binary`` under ``k`` atomically; False when off or unwritable."""
    d = cache_dir()
    if d is None or _state["unwritable"] or not binary:
        return False
    r = write_entry(d, _path(d, k), _KIND, k, binary, "device binary cache",
                    "Its entries are not used.")
    if r == "unwritable":
        _state["unwritable"] = True
    return r == "ok"

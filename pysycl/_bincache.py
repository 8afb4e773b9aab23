"""On-disk cache of per-device program binaries (``CL_PROGRAM_BINARIES``).

Sits beside the SPIR-V cache (:mod:`pysycl._diskcache`), in
``<kernel cache folder>/binaries``. The key covers the device image contents
(the digests of its SPIR-V modules or source), the build options, and the
device: platform name/vendor/version, device name/vendor/version, driver
version and address bits (:func:`pysycl._cl.programs.device_cache_key`), so a
new driver never loads an old binary. Writes are atomic (temporary file, then
``os.replace``); a corrupt entry is ignored with a ``CacheWarning`` and rebuilt;
an unwritable folder turns this level off with one warning.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from pysycl._diskcache import cache_dir, read_entry, write_entry

_MAGIC = b"PYSYCLB1"
_state: dict[str, object] = {"unwritable": False}


def key(*parts: str) -> str:
    """A cache key from strings (image digests, options, device key)."""
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode())
        h.update(b"\x00")
    return h.hexdigest()


def _path(k: str) -> Path | None:
    d = cache_dir()
    if d is None:
        return None
    return d / "binaries" / k[:2] / f"{k}.bin"


def _decode(data: bytes) -> bytes:
    body = data[len(_MAGIC) + 32:]
    if not data.startswith(_MAGIC) or hashlib.sha256(body).digest() != data[len(_MAGIC):
                                                                          len(_MAGIC) + 32]:
        raise ValueError("bad magic or checksum")
    return body


def load(k: str) -> bytes | None:
    """The cached binary for key ``k``, or None."""
    p = _path(k)
    return None if p is None else read_entry(p, _decode, "device binary cache entry")


def store(k: str, binary: bytes) -> bool:
    """Write ``binary`` under ``k`` atomically; False when off or unwritable."""
    p = _path(k)
    if p is None or _state["unwritable"] or not binary:
        return False
    if write_entry(p, _MAGIC + hashlib.sha256(binary).digest() + binary,
                   "device binary cache", "binaries are not cached"):
        return True
    _state["unwritable"] = True
    return False

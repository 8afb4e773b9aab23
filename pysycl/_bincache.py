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
import os
import warnings
from pathlib import Path

from pysycl._diskcache import CacheWarning, cache_dir

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


def load(k: str) -> bytes | None:
    """The cached binary for key ``k``, or None."""
    p = _path(k)
    if p is None:
        return None
    try:
        data = p.read_bytes()
    except OSError:
        return None
    body = data[len(_MAGIC) + 32:]
    if not data.startswith(_MAGIC) or hashlib.sha256(body).digest() != data[len(_MAGIC):
                                                                          len(_MAGIC) + 32]:
        warnings.warn(f"pysycl: ignoring corrupt device binary cache entry {p}; it will be "
                      "rebuilt", CacheWarning, stacklevel=4)
        try:
            p.unlink()
        except OSError:
            pass
        return None
    return body


def store(k: str, binary: bytes) -> bool:
    """Write ``binary`` under ``k`` atomically; False when off or unwritable."""
    p = _path(k)
    if p is None or _state["unwritable"] or not binary:
        return False
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(_MAGIC + hashlib.sha256(binary).digest() + binary)
        os.replace(tmp, p)
        return True
    except OSError as e:
        _state["unwritable"] = True
        warnings.warn(f"pysycl: device binary cache folder {p.parent} is not writable ({e}); "
                      "binaries are not cached", CacheWarning, stacklevel=4)
        try:
            tmp.unlink()
        except OSError:
            pass
        return False

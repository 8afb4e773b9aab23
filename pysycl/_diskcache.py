"""The on-disk cache of compiled kernels (SPIR-V modules and their metadata).

Location: ``$PYSYCL_CACHE_DIR/kernels`` or the platform's user cache folder
(``platformdirs.user_cache_dir("pysycl")``); ``PYSYCL_DISABLE_CACHE=1`` turns the
disk cache off. Entries are written atomically (a temporary file, then
``os.replace``), so concurrent processes never see a half-written entry and
need no lock: two processes compiling the same kernel write identical
contents and the last rename wins. A corrupt or truncated entry is ignored
with a warning and rebuilt; an unwritable folder degrades the cache to
memory-only with one warning.
"""

from __future__ import annotations

import logging
import os
import pickle
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from pysycl._kernel_abi import CompiledKernel

_log = logging.getLogger("pysycl.cache")

_MAGIC = b"PYSYCLK1"
T = TypeVar("T")


class CacheWarning(UserWarning):
    """The kernel disk cache could not be used as intended (corrupt entry, unwritable folder)."""


_state: dict[str, object] = {"dir": None, "disabled_warned": False}


def cache_dir() -> Path | None:
    """The kernel cache folder, or None when the disk cache is disabled."""
    if os.environ.get("PYSYCL_DISABLE_CACHE", "") not in ("", "0"):
        return None
    base = os.environ.get("PYSYCL_CACHE_DIR")
    if base:
        return Path(base) / "kernels"
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("pysycl")) / "kernels"


def _path(digest: str) -> Path | None:
    d = cache_dir()
    if d is None:
        return None
    return d / digest[:2] / f"{digest}.spvk"


def read_entry(p: Path, decode: Callable[[bytes], T], what: str) -> T | None:
    """``decode(contents of p)``; None when missing; a corrupt entry is warned about and removed.

    Shared by the SPIR-V cache and the device-binary cache (:mod:`pysycl._bincache`).
    """
    try:
        data = p.read_bytes()
    except OSError:
        return None
    try:
        return decode(data)
    except Exception as e:
        warnings.warn(f"pysycl: ignoring corrupt {what} {p} ({e}); it will be rebuilt",
                      CacheWarning, stacklevel=5)
        try:
            p.unlink()
        except OSError:
            pass
        return None


def write_entry(p: Path, data: bytes, what: str, consequence: str) -> bool:
    """Write ``data`` to ``p`` atomically (temporary file, then ``os.replace``).

    Returns False, with a warning naming ``what`` folder and the ``consequence``,
    when the folder is not writable.
    """
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(data)
        os.replace(tmp, p)
        return True
    except OSError as e:
        warnings.warn(f"pysycl: {what} folder {p.parent} is not writable ({e}); {consequence}",
                      CacheWarning, stacklevel=5)
        try:
            tmp.unlink()
        except OSError:
            pass
        return False


def _decode_kernel(data: bytes) -> CompiledKernel:
    if not data.startswith(_MAGIC):
        raise ValueError("bad magic")
    obj = pickle.loads(data[len(_MAGIC):])
    if not isinstance(obj, CompiledKernel):
        raise TypeError(type(obj).__name__)
    return obj


def load(digest: str) -> CompiledKernel | None:
    """The cached kernel for ``digest``, or None (missing, disabled or corrupt)."""
    p = _path(digest)
    return None if p is None else read_entry(p, _decode_kernel, "kernel cache entry")


def store(digest: str, kernel: CompiledKernel) -> bool:
    """Write ``kernel`` under ``digest`` atomically; False when the cache is off or unwritable."""
    p = _path(digest)
    if p is None or _state["dir"] == "unwritable":
        return False
    data = _MAGIC + pickle.dumps(kernel, protocol=pickle.HIGHEST_PROTOCOL)
    if write_entry(p, data, "kernel cache", "kernels are cached in memory only"):
        return True
    _state["dir"] = "unwritable"
    return False

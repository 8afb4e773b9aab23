"""The on-disk cache of compiled kernels (SPIR-V modules and their metadata).

Location: ``$PYSYCL_CACHE_DIR/kernels`` or the platform's user cache folder
(``platformdirs.user_cache_dir("pysycl")``); ``PYSYCL_DISABLE_CACHE=1`` turns the
disk cache off. File handling, trust rules and the entry header live in
:mod:`pysycl._core.cachefs`; docs/caching.md gives the exact layout.

An entry is plain data, never code: the header (magic ``PYSYCLK2``, the key,
length, SHA-256) then a payload of ``u32 n``, ``n`` bytes of UTF-8 JSON
(:func:`pysycl._core.abi_plain.kernel_to_plain`, a versioned schema) and the
SPIR-V module, which must pass :mod:`pysycl._core.spirv_check`. Entries are written
atomically, so concurrent processes never see a half-written entry and need no
lock: two processes compiling the same kernel write identical contents and the
last rename wins. A corrupt, truncated, moved or untrusted entry is warned
about once and rebuilt; an unwritable or untrusted folder degrades the cache to
memory-only with one warning; a transient failure (a full disk) skips one write.
"""

from __future__ import annotations

import json
import logging
import os
import struct
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from pysycl._core import cachefs as _cachefs
from pysycl._core.abi import CompiledKernel
from pysycl._core.abi_plain import kernel_from_plain, kernel_to_plain
from pysycl._core.cachefs import CacheWarning
from pysycl._core.spirv_check import problem as spirv_problem

_log = logging.getLogger("pysycl.cache")

_KIND = b"K"
T = TypeVar("T")

__all__ = ["CacheWarning", "cache_dir", "load", "read_entry", "store", "write_entry"]

#: ``"dir"``: ``"unwritable"`` once a write failed for good (read-only folder):
#: later writes are skipped, reads go on. Set it to None to try writing again.
_state: dict[str, object] = {"dir": None}


def cache_dir() -> Path | None:
    """The kernel cache folder, or None when the disk cache is disabled or unusable."""
    if os.environ.get("PYSYCL_DISABLE_CACHE", "") not in ("", "0"):
        return None
    if _cachefs.root_problem() is not None:
        return None
    d = _cachefs.cache_root() / "kernels"
    problem = _cachefs.dir_problem(d, create=True)
    if problem is not None:
        _warn_dir(d, problem, "kernel cache", "Kernels are cached in memory only.")
        return None
    return d


def _warn_dir(d: Path, problem: str, what: str, consequence: str) -> None:
    _cachefs.warn_folder(d, problem, what, consequence)


def _folders(base: Path, p: Path) -> list[Path]:
    """The folders from below ``base`` down to ``p``'s folder."""
    rel = p.parent.relative_to(base)
    return [base.joinpath(*rel.parts[:i + 1]) for i in range(len(rel.parts))]


def read_entry(base: Path, p: Path, kind: bytes, key: str, decode: Callable[[bytes], T],
               what: str) -> T | None:
    """``decode(payload of entry p)``; None when missing; a bad entry is warned about and removed.

    ``base`` is the trusted folder ``p`` lies below; every folder between them
    is checked too. Shared by the SPIR-V cache and the device-binary cache
    (:mod:`pysycl._kernels.bincache`).
    """
    for d in _folders(base, p):
        problem = _cachefs.dir_problem(d, create=False)
        if problem == "missing":
            return None
        if problem is not None:
            _warn_dir(d, problem, what.replace(" entry", ""), "Its entries are not used.")
            return None
    try:
        data = _cachefs.read_private(p)
        if data is None:
            return None
        return decode(_cachefs.unframe(kind, key, data))
    except _cachefs.StaleEntryError as e:
        _log.debug("replacing %s %s: %s", what, p, e)
    except Exception as e:  # decoding is plain parsing: any failure means a bad entry
        _cachefs.warn_once(f"entry:{p}", f"pysycl: ignoring corrupt {what} {p} ({e}); it will "
                           "be rebuilt")
    _cachefs.remove_entry(p)
    return None


def write_entry(base: Path, p: Path, kind: bytes, key: str, payload: bytes, what: str,
                consequence: str) -> str:
    """Write entry ``p`` atomically; ``"ok"``, ``"skipped"`` (this one) or ``"unwritable"`` (all).

    A persistent failure (read-only folder) warns once and returns
    ``"unwritable"``; an untrusted folder on the way warns once with
    ``consequence`` and skips; a transient failure (disk full) warns once per
    kind of failure and skips only this write; a folder removed meanwhile is
    made again.
    """
    data = _cachefs.frame(kind, key, payload)
    for _ in range(2):
        for d in _folders(base, p):
            problem = _cachefs.dir_problem(d, create=True)
            if problem is not None:
                _warn_dir(d, problem, what, consequence)
                return "unwritable" if _cachefs.is_unwritable(problem) else "skipped"
        try:
            _cachefs.write_private(p, data)
            return "ok"
        except FileNotFoundError:
            _cachefs.forget(base)  # the folder went away under us: make it again, once
            continue
        except IsADirectoryError:
            _cachefs.warn_once(f"entry:{p}", f"pysycl: a folder squats on the {what} entry {p}; "
                               "that entry is not cached")
            return "skipped"
        except OSError as e:
            if e.errno in _cachefs.PERSISTENT_ERRNOS:
                _warn_dir(p.parent, f"writing failed ({e.strerror or e})", what, consequence)
                return "unwritable"
            _cachefs.warn_once(f"errno:{e.errno}:{base}",
                               f"pysycl: could not write the {what} entry {p} ({e.strerror or e}); "
                               "that entry is not cached, later ones are tried again")
            return "skipped"
    return "skipped"


def _path(d: Path, digest: str) -> Path:
    return d / digest[:2] / f"{digest}.spvk"


def encode_kernel(kernel: CompiledKernel) -> bytes:
    """The payload of a kernel entry: ``u32 n``, ``n`` bytes of JSON, the module."""
    meta = json.dumps(kernel_to_plain(kernel), sort_keys=True, separators=(",", ":")).encode()
    return struct.pack("<I", len(meta)) + meta + kernel.binary


def decode_kernel(payload: bytes) -> CompiledKernel:
    """The kernel of a payload from :func:`encode_kernel`; ValueError when anything is off."""
    if len(payload) < 4:
        raise ValueError("payload shorter than its length field")
    (n,) = struct.unpack_from("<I", payload)
    if 4 + n > len(payload):
        raise ValueError("metadata length runs past the payload")
    meta = json.loads(payload[4:4 + n].decode("utf-8"))
    kernel = kernel_from_plain(meta, payload[4 + n:])
    if kernel.format == "spirv":
        bad = spirv_problem(kernel.binary)
        if bad is not None:
            raise ValueError(f"malformed SPIR-V: {bad[1]} at word {bad[0]}")
    elif not ptx_plausible(kernel.binary, kernel.entry):
        raise ValueError("not PTX text with the kernel's entry point")
    return kernel


def ptx_plausible(ptx: bytes, entry: str) -> bool:
    """Printable ASCII PTX text that declares ``.entry <entry>(``."""
    return ptx.isascii() and b"\x00" not in ptx and f".entry {entry}(".encode() in ptx


def load(digest: str) -> CompiledKernel | None:
    """The cached kernel for ``digest``, or None (missing, disabled or corrupt)."""
    d = cache_dir()
    if d is None:
        return None
    return read_entry(d, _path(d, digest), _KIND, digest, decode_kernel, "kernel cache entry")


def store(digest: str, kernel: CompiledKernel) -> bool:
    """Write ``kernel`` under ``digest`` atomically; False when the cache is off or unwritable."""
    d = cache_dir()
    if d is None or _state["dir"] == "unwritable":
        return False
    r = write_entry(d, _path(d, digest), _KIND, digest, encode_kernel(kernel), "kernel cache",
                    "Its entries are not used.")
    if r == "unwritable":
        _state["dir"] = "unwritable"
    return r == "ok"

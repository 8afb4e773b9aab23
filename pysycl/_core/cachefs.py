"""The file side of pysycl's caches: where they live, whether to trust them, safe I/O.

Shared by the kernel cache (:mod:`pysycl._kernels.diskcache`), the device-binary cache
(:mod:`pysycl._kernels.bincache`) and the ICD vendors folder (:mod:`pysycl._backends.opencl.icd`).
docs/caching.md describes the rules; in short:

* **Where.** ``$PYSYCL_CACHE_DIR`` or the platform's user cache folder, made
  absolute the first time pysycl sees the value (at import), so a later
  ``os.chdir`` does not move the cache.
* **Trust.** The cache folder and every folder pysycl uses inside it must be
  owned by the current user and not writable by group or others (checked with
  ``os.lstat``; the cache folder itself may be a symbolic link owned by the
  user). Anything else is refused with one :class:`CacheWarning`: whoever can
  write there could plant entries. That is what ssh does with ``~/.ssh``.
  Folders pysycl creates are 0700 and files 0600, whatever the umask.
* **Reads** never follow a symbolic link (``O_NOFOLLOW``), never block on a
  FIFO (``O_NONBLOCK``), and take only regular files owned by the user.
* **Writes** go to a temporary file with an unpredictable name created
  exclusively (``tempfile.mkstemp``: ``O_CREAT|O_EXCL|O_NOFOLLOW``, 0600),
  flushed to disk, then renamed over the entry (``os.replace``, atomic).
* **Entries** are plain bytes: an 80-byte header (magic and format version,
  the key the entry is stored under, payload length, SHA-256 of header and
  payload) then the payload. Nothing read is ever executed or unpickled.

Every problem is warned about once per process (:func:`warn_once`) and costs
at most the disk cache, never a kernel: the caller falls back to memory.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import stat
import struct
import tempfile
import warnings
from pathlib import Path

_log = logging.getLogger("pysycl.cache")


class CacheWarning(UserWarning):
    """A pysycl cache could not be used as intended (corrupt entry, unwritable or untrusted folder)."""


_roots: dict[str, Path] = {}                 # PYSYCL_CACHE_DIR value -> absolute folder
_verdicts: dict[Path, str | None] = {}       # folder -> problem (None: trusted)
_warned: set[str] = set()

#: errnos after which writing to the cache is pointless for the rest of the process.
PERSISTENT_ERRNOS = frozenset((errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR))

# ----------------------------------------------------------------- entry format
MAGIC_PREFIX = b"PYSYCL"
FORMAT_VERSION = b"2"
_HEAD = struct.Struct("<8s32sQ32s")  # magic, key, payload length, SHA-256
HEADER_BYTES = _HEAD.size             # 80
MAX_ENTRY_BYTES = 1 << 30


class CorruptEntryError(ValueError):
    """A cache entry that must not be used (and is rebuilt)."""


class StaleEntryError(CorruptEntryError):
    """An entry of another pysycl cache format: replaced quietly, not warned about."""


def warn_once(key: str, message: str) -> None:
    """``warnings.warn(message, CacheWarning)`` the first time ``key`` is seen in this process."""
    if key in _warned:
        return
    _warned.add(key)
    _log.info("%s", message)
    warnings.warn(message, CacheWarning, stacklevel=3)


def warn_folder(folder: Path, problem: str, what: str, consequence: str) -> None:
    """Warn once about a folder problem from :func:`dir_problem` (or a failed write).

    Every "cannot write" problem under one cache folder is one warning (a
    read-only cache is one problem, however many folders it stops), naming the
    folder and its consequences for all of pysycl's caches; an untrusted
    folder is a warning of its own, with ``consequence``.
    """
    if is_unwritable(problem):
        root = cache_root()
        where = "" if folder == root else f" ({folder})"
        warn_once(f"unwritable:{root}", f"pysycl: the cache folder {root} is not writable{where}: "
                  f"{problem}. Compiled kernels are kept in memory only (entries already there "
                  "are still read) and the OpenCL ICD vendors list is written to a private "
                  "temporary folder")
    else:
        warn_once(f"refused:{folder}", f"pysycl: the {what} folder {folder} is refused: {problem}. "
                  "Whoever can write there could plant entries. " + consequence)


def cache_root() -> Path:
    """The absolute cache folder (``$PYSYCL_CACHE_DIR`` or the user cache folder).

    A relative ``PYSYCL_CACHE_DIR`` is resolved against the working directory
    the first time its value is seen, and stays that folder afterwards.
    """
    raw = os.environ.get("PYSYCL_CACHE_DIR", "")
    p = _roots.get(raw)
    if p is None:
        if raw:
            p = Path(os.path.abspath(os.path.expanduser(raw)))
        else:
            from platformdirs import user_cache_dir

            p = Path(os.path.abspath(user_cache_dir("pysycl")))
        _roots[raw] = p
    return p


def _ownership_problem(st: os.stat_result) -> str | None:
    uid = os.geteuid()
    if st.st_uid != uid:
        return f"it is owned by uid {st.st_uid}, not by the current user (uid {uid})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return (f"it is writable by group or others (mode {stat.filemode(st.st_mode)}; "
                "`chmod go-w` it or use another PYSYCL_CACHE_DIR)")
    return None


def _mkdir_private(path: Path) -> None:
    """Create ``path`` and missing parents as 0700 folders (explicitly, not from the umask)."""
    missing = []
    p = path
    while not os.path.lexists(p):
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    for d in reversed(missing):
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:
            continue  # another process made it: it is checked like any folder
        os.chmod(d, 0o700)  # mkdir's mode is filtered by the umask


def dir_problem(path: Path, *, create: bool, link_ok: bool = False) -> str | None:
    """Why folder ``path`` cannot be trusted or used; None when it can.

    Creates it (0700) when missing and ``create``; a missing folder that is not
    created is reported as ``"missing"``. ``link_ok`` accepts a symbolic link
    owned by the current user to a trusted folder (for the cache folder itself).
    Verdicts are remembered for the process.
    """
    if path in _verdicts:
        return _verdicts[path]
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        if not create:
            return "missing"
        try:
            _mkdir_private(path)
            st = os.lstat(path)
        except OSError as e:
            return _remember(path, f"it cannot be created ({e.strerror or e})")
    except OSError as e:
        return _remember(path, f"it cannot be examined ({e.strerror or e})")
    if stat.S_ISLNK(st.st_mode):
        if not link_ok:
            return _remember(path, "it is a symbolic link")
        if st.st_uid != os.geteuid():
            return _remember(path, f"it is a symbolic link owned by uid {st.st_uid}, not by the "
                                   f"current user (uid {os.geteuid()})")
        try:
            st = os.stat(path)
        except OSError as e:
            return _remember(path, f"it is a symbolic link to nowhere ({e.strerror or e})")
    if not stat.S_ISDIR(st.st_mode):
        return _remember(path, "it is not a directory")
    return _remember(path, _ownership_problem(st))


def _remember(path: Path, problem: str | None) -> str | None:
    _verdicts[path] = problem
    return problem


def forget(root: Path) -> None:
    """Forget the verdicts on ``root`` and the folders below it (they changed on disk)."""
    for p in [p for p in _verdicts if p == root or root in p.parents]:
        del _verdicts[p]


def root_problem() -> str | None:
    """Why the cache folder cannot be used (warned about once); None when it can.

    Creates it (0700) when missing. The kernel caches then work in memory only
    and the ICD vendors folder goes to a private temporary folder.
    """
    root = cache_root()
    problem = dir_problem(root, create=True, link_ok=True)
    if problem is not None:
        warn_folder(root, problem, "cache", "Compiled kernels are kept in memory only and the "
                    "OpenCL ICD vendors list is written to a private temporary folder")
    return problem


def is_unwritable(problem: str) -> bool:
    """Whether ``problem`` (from :func:`dir_problem`) means "cannot write", not "untrusted"."""
    return problem.startswith(("it cannot", "it is not a directory", "it is a symbolic link to",
                               "writing failed"))


# ------------------------------------------------------------------------ reads
def read_private(path: Path, limit: int = MAX_ENTRY_BYTES) -> bytes | None:
    """The bytes of regular file ``path`` owned by the current user; None when it is missing.

    Raises:
        CorruptEntryError: ``path`` is a symbolic link, a folder, a FIFO, someone
            else's file, larger than ``limit``, or unreadable.
    """
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise CorruptEntryError("it is a symbolic link") from None
        raise CorruptEntryError(f"it cannot be opened ({e.strerror or e})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
            raise CorruptEntryError(f"it is {kind}")
        if st.st_uid != os.geteuid():
            raise CorruptEntryError(f"it is owned by uid {st.st_uid}, not by the current user")
        if st.st_size > limit:
            raise CorruptEntryError(f"it is {st.st_size} bytes, more than {limit}")
        chunks = []
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                break
            chunks.append(b)
        return b"".join(chunks)
    except OSError as e:
        raise CorruptEntryError(f"it cannot be read ({e.strerror or e})") from None
    finally:
        os.close(fd)


# ----------------------------------------------------------------------- writes
def write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: exclusive 0600 temporary file, fsync, rename.

    The temporary file's name is unpredictable and created with
    ``O_CREAT|O_EXCL|O_NOFOLLOW``, so nothing planted in the folder (a symbolic
    link, a FIFO) is written through; ``os.replace`` replaces a link at
    ``path`` itself, never its target.

    Raises:
        OSError: the write failed (nothing is left behind).
    """
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o600)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
        os.close(fd)
        fd = -1
        os.replace(tmp, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def remove_entry(path: Path) -> None:
    """Remove a bad entry: a file or link is unlinked, an empty folder squatting on it removed."""
    try:
        os.unlink(path)
    except IsADirectoryError:
        try:
            os.rmdir(path)
        except OSError:
            pass
    except OSError:
        pass


# ---------------------------------------------------------------- entry framing
def _key_bytes(key: str) -> bytes:
    b = bytes.fromhex(key)
    if len(b) != 32:
        raise ValueError(f"cache keys are SHA-256 hex digests, not {key!r}")
    return b


def frame(kind: bytes, key: str, payload: bytes) -> bytes:
    """An entry of ``kind`` (one letter) holding ``payload`` under ``key`` (64 hex digits)."""
    magic = MAGIC_PREFIX + kind + FORMAT_VERSION
    head = struct.pack("<8s32sQ", magic, _key_bytes(key), len(payload))
    return head + hashlib.sha256(head + payload).digest() + payload


def unframe(kind: bytes, key: str, data: bytes) -> bytes:
    """The payload of entry ``data`` after checking its magic, key, length and SHA-256.

    Raises:
        StaleEntryError: an entry of another pysycl format version.
        CorruptEntryError: anything else that does not check out.
    """
    magic = MAGIC_PREFIX + kind + FORMAT_VERSION
    if len(data) < HEADER_BYTES:
        if data.startswith(MAGIC_PREFIX + kind) and not data.startswith(magic):
            raise StaleEntryError("an entry of an older pysycl")
        raise CorruptEntryError(f"truncated ({len(data)} bytes, the header alone is "
                                f"{HEADER_BYTES})")
    got_magic, got_key, n, digest = _HEAD.unpack_from(data)
    if got_magic != magic:
        if got_magic.startswith(MAGIC_PREFIX + kind):
            raise StaleEntryError(f"format {got_magic!r} of another pysycl version")
        raise CorruptEntryError(f"bad magic {got_magic!r}")
    if got_key != _key_bytes(key):
        raise CorruptEntryError(f"it was stored under key {got_key.hex()[:16]}…, not this one "
                                "(a moved or copied file)")
    payload = data[HEADER_BYTES:]
    if len(payload) != n:
        raise CorruptEntryError(f"payload is {len(payload)} bytes, the header says {n} "
                                "(truncated or appended to)")
    if hashlib.sha256(data[:HEADER_BYTES - 32] + payload).digest() != digest:
        raise CorruptEntryError("SHA-256 mismatch (the contents changed after writing)")
    return payload

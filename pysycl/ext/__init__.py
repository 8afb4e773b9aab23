"""pysycl extensions beyond SYCL 2020 (the mapping rules put them here).

* :func:`kernel_cache_stats` — what the kernel caches did (prove "one compile").
* :func:`reset_kernel_cache_stats`, :func:`clear_kernel_memory_cache`.
* :func:`kernel_cache_dir` — where compiled SPIR-V lives on disk.
* :func:`declare_kernel`, :func:`accessor_type`, :func:`local_accessor_type` —
  declare kernels up front for kernel bundles (docs/bundles.md).
* :func:`set_bounds_check`, :func:`bounds_check_enabled` — bounds-checked mode
  (docs/debugging.md), like ``PYSYCL_BOUNDS_CHECK=1``.
* :mod:`pysycl.ext.oneapi` — ``sycl::ext::oneapi::experimental`` (kernel_compiler).
* :mod:`pysycl.ext.mpi` — MPI through mpi4py (docs/distributed.md); imported only on use
  (``from pysycl.ext import mpi``), never by ``import pysycl``.
* :class:`KernelWarning` (``breakpoint()`` ignored in a compiled kernel),
  :class:`DeviceWarning` (the default device cannot run Python kernels).
"""

from __future__ import annotations

from pathlib import Path

from pysycl._bundles.kernel_id import accessor_type, declare_kernel, local_accessor_type
from pysycl._core.exceptions import DeviceWarning, KernelWarning
from pysycl.ext import oneapi

__all__ = [
    "DeviceWarning",
    "KernelWarning",
    "accessor_type",
    "bounds_check_enabled",
    "clear_kernel_memory_cache",
    "declare_kernel",
    "kernel_cache_dir",
    "kernel_cache_stats",
    "local_accessor_type",
    "oneapi",
    "reset_kernel_cache_stats",
    "set_bounds_check",
]


def kernel_cache_stats() -> dict[str, int]:
    """Counters since start (or the last reset).

    Keys: ``compiles`` (Numba runs), ``memory_hits``, ``disk_hits``,
    ``disk_writes``, ``cl_builds`` (OpenCL program builds at submit); kernel
    bundles add ``cl_compiles`` (clCompileProgram), ``cl_links`` (clLinkProgram),
    ``cl_source_builds`` (kernel_compiler builds), ``binary_hits`` and
    ``binary_writes`` (the per-device binary cache).
    """
    from pysycl._bundles.kernel_bundle import stats_snapshot
    from pysycl._kernels.cache import kernels

    return {**kernels.stats, **stats_snapshot()}


def reset_kernel_cache_stats() -> None:
    """Zero the counters of :func:`kernel_cache_stats`."""
    from pysycl._bundles.kernel_bundle import reset_stats
    from pysycl._kernels.cache import kernels

    kernels.reset_stats()
    reset_stats()


def clear_kernel_memory_cache() -> None:
    """Forget compiled kernels held in memory (the disk cache is kept)."""
    from pysycl._kernels.cache import kernels

    kernels.clear_memory()


def kernel_cache_dir() -> Path | None:
    """The on-disk kernel cache folder.

    None when ``PYSYCL_DISABLE_CACHE=1``, or when the cache folder cannot be
    used (unwritable, or refused: not owned by the user or writable by others;
    see docs/caching.md).
    """
    from pysycl._kernels import diskcache as _diskcache

    return _diskcache.cache_dir()


def set_bounds_check(enabled: bool | None) -> None:
    """Turn bounds-checked mode on or off for the kernels launched from now on.

    In bounds-checked mode every accessor access of a Python kernel is checked
    on the device and the first out-of-range one is reported as
    ``sycl.exception(errc.kernel)`` at the next synchronization point
    (docs/debugging.md). ``None`` (the default) leaves the choice to the
    environment variable ``PYSYCL_BOUNDS_CHECK``, read when pysycl is imported and
    again by this call.

    Raises:
        TypeError: ``enabled`` is not True, False or None.
    """
    from pysycl._kernels import bounds as _bounds

    _bounds.set_enabled(enabled)


def bounds_check_enabled() -> bool:
    """Whether kernels launched now run bounds-checked (:func:`set_bounds_check`)."""
    from pysycl._kernels import bounds as _bounds

    return _bounds.enabled()

"""pysycl extensions beyond SYCL 2020 (the mapping rules put them here).

* :func:`kernel_cache_stats` — what the kernel caches did (prove "one compile").
* :func:`reset_kernel_cache_stats`, :func:`clear_kernel_memory_cache`.
* :func:`kernel_cache_dir` — where compiled SPIR-V lives on disk.
"""

from __future__ import annotations

from pathlib import Path


def kernel_cache_stats() -> dict[str, int]:
    """Counters since start (or the last reset).

    Keys: ``compiles`` (Numba runs), ``memory_hits``, ``disk_hits``,
    ``disk_writes``, ``cl_builds`` (OpenCL program builds).
    """
    from pysycl import _launch

    return dict(_launch.stats)


def reset_kernel_cache_stats() -> None:
    """Zero the counters of :func:`kernel_cache_stats`."""
    from pysycl import _launch

    _launch.reset_stats()


def clear_kernel_memory_cache() -> None:
    """Forget compiled kernels held in memory (the disk cache is kept)."""
    from pysycl import _launch

    _launch.clear_memory_cache()


def kernel_cache_dir() -> Path | None:
    """The on-disk kernel cache folder (None when ``PYSYCL_DISABLE_CACHE=1``)."""
    from pysycl import _diskcache

    return _diskcache.cache_dir()

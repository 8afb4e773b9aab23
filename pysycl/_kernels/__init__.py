"""Python kernels: capture analysis, cache keys, the kernel cache, launch, reductions, spec constants."""

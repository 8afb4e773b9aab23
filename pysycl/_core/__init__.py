"""Leaves of the runtime: errors, the runtime/compiler ABI, logging, cache files, SPIR-V checks."""

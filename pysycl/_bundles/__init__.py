"""Kernel ids, kernel bundles, device images, bundle operations, the binary cache."""

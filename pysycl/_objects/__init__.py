"""Platforms, devices, contexts, selectors, aspects, info descriptors, index-space classes."""

"""Buffers, accessors and their coherence state."""

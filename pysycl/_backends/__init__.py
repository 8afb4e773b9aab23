"""Backends: the executor protocol and registry, and one folder per backend."""

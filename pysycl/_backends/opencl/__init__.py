"""The only package in pysycl that imports pyopencl.

Every OpenCL call of the runtime goes through a module in here, so that the rest
of ``pysycl`` imports (and its pure-Python parts run) without pyopencl or any
OpenCL device. Modules here import pyopencl lazily, on first use.
"""

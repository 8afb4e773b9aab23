"""The host_debuggable backend: a device of pysycl's own, executing kernels in Python."""

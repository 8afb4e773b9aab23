"""Typing and lowering of what a kernel can use, one module per SYCL concept.

Every module here opens with the same two registries and registers both halves
of its concept into them, typing beside lowering::

    typing_registry = TypingRegistry()
    lowering_registry = LoweringRegistry("pysycl.<concept>")

:class:`pysycl_numba.target.SYCLTypingContext` and
:class:`~pysycl_numba.target.SYCLTargetContext` install them, from the one list
:data:`pysycl_numba.target.OVERLOADS` (after numba-cuda's
``load_additional_registries``). These modules import the Numba types
(:mod:`pysycl_numba.types`), the SPIR-V target's built-in declarations and
each other, never the target, the dispatcher or the compiler.

=================== ==========================================================
``index``           ``sycl.item``, ``sycl.range``, ids as tuples
``accessor``        ``sycl.accessor`` / ``local_accessor`` element access
``pointer``         captured USM pointers: ``p[i]``, ``p + k``
``ndrange``         ``nd_item``, ``group``, ``sub_group``, ``nd_range``, barriers
``async_copy``      ``async_work_group_copy``, ``wait_for``, ``device_event`` (``cp.async`` on sm_80+)
``index_types``     ``sycl.id``/``sycl.range`` built in kernels, their arithmetic
``index_ops``       unary ``+``/``-``, elementwise comparisons, ``sycl.nd_range(...)``
``collectives``     group algorithms: broadcast, ``reduce_over_group``, votes
``constants``       SYCL enum members and function objects (compile-time values)
``atomics``         ``atomic_ref``, ``atomic_fence``
``private_array``   ``sycl.private_array``
``hierarchical``    ``h_item``, ``private_memory``, ``parallel_for_work_item``'s intrinsics
``reduction``       ``sycl.reducer`` (``combine``, ``+=`` ...)
``specconst``       ``kernel_handler.get_specialization_constant``
``math``            ``math.*`` and numpy math ufuncs on numbers → OpenCL built-ins
``math_extras``     ``math.ldexp/frexp/nextafter/gcd`` and ``math.log(x, base)``
``half``            float16 arithmetic in ``half`` (numpy 2 promotion, weak literals)
``float32``         float32 with Python literals stays float32 (numpy 2's weak literals)
``integers``        integer operators with numpy's result types (wrap-around, weak int literals)
``clip``            ``np.clip`` on numbers (numpy's result type and NaN rule)
``bfloat16``        ``sycl.ext.oneapi.bfloat16.from_float`` / ``to_float``
``complex_math``    ``cmath.*`` on complex numbers (Numba's CPython transcription)
``sycl_math``       ``sycl.sqrt``, ``sycl.clamp`` ...: SYCL 2020 math and common functions
=================== ==========================================================
"""

"""A kernel that does not compile: the traceback starts in the user's code, without Numba.

The error's cause is the compiler's one-line diagnostic, with no frames; the
full text is ``e.__cause__.text`` (and in the ``PYSYCL_LOG=debug`` log).
"""

from __future__ import annotations

import traceback

import numpy as np
import pytest

import pysycl as sycl


def test_compile_error_traceback_starts_in_user_code_without_compiler_frames(kq: sycl.queue) -> None:
    x = np.zeros(4)
    with sycl.buffer(x) as X:
        def cg(h: sycl.handler) -> None:
            ra = X.get_access(h, sycl.access_mode.read)

            def k(i):
                ra[i] = 1.0

            h.parallel_for(sycl.range(4), k)

        with pytest.raises(sycl.kernel_compile_error) as info:
            kq.submit(cg)
    err = info.value
    text = "".join(traceback.format_exception(err))
    assert "site-packages" not in text, text  # no frame of Numba (or llvmlite)
    # Before the main traceback: only the diagnostic's one line, no frames.
    cause_part, _, main_part = text.partition("The above exception was the direct cause")
    assert "Traceback" not in cause_part and "File " not in cause_part, text
    first_frame = next(ln for ln in main_part.splitlines() if ln.strip().startswith("File "))
    assert __file__ in first_frame, text
    assert f"{__file__}:{k_line(err)}" in str(err)
    assert "'ra'" in str(err) and "ra[i] = 1.0" in str(err)


def k_line(err: sycl.kernel_compile_error) -> int:
    """The line of ``ra[i] = 1.0`` in this file."""
    with open(__file__) as f:
        return next(n for n, ln in enumerate(f, 1) if ln.strip() == "ra[i] = 1.0")

"""Where the user's code is: the innermost frame outside the pysycl package (for messages)."""

from __future__ import annotations

import os
import sys

#: The ``pysycl/`` folder (with a trailing separator): frames under it are pysycl's own.
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def in_package(filename: str) -> bool:
    """Whether ``filename`` is one of pysycl's own source files."""
    return os.path.abspath(filename).startswith(PACKAGE_DIR)


def user_site(depth: int = 1) -> str:
    """``file:line`` of the innermost caller outside the pysycl package."""
    f = sys._getframe(depth)
    while f is not None and in_package(f.f_code.co_filename):
        f = f.f_back  # type: ignore[assignment]
    return "<unknown>" if f is None else f"{f.f_code.co_filename}:{f.f_lineno}"

"""Where the user called ``pysycl.testing`` from: the ``file:line`` its messages name."""

from __future__ import annotations

import os
import sys

from pysycl._core.where import location

_HERE = os.path.dirname(os.path.abspath(__file__))


def caller() -> str:
    """``file:line`` of the innermost frame outside ``pysycl.testing`` (and hypothesis)."""
    f = sys._getframe(1)
    while f is not None:
        name = os.path.abspath(f.f_code.co_filename)
        if not name.startswith(_HERE + os.sep) and f"{os.sep}hypothesis{os.sep}" not in name:
            return location(f.f_code.co_filename, f.f_lineno)
        f = f.f_back
    return "<unknown>"

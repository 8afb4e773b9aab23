"""How pysycl writes a source location (``pysycl/_core/where.py``); the IPython cell form is
tested in a real Jupyter kernel (tests/test_notebooks.py)."""

from __future__ import annotations

import subprocess
import sys

from pysycl._core.where import cell_name, location


def test_a_file_is_file_colon_line() -> None:
    assert location("/home/u/prog.py", 12) == "/home/u/prog.py:12"
    assert cell_name("/home/u/prog.py") is None


def test_where_needs_no_ipython_and_never_imports_it() -> None:
    code = ("import sys; from pysycl._core.where import location; "
            "assert location('/tmp/ipykernel_1/2.py', 6) == '/tmp/ipykernel_1/2.py:6'; "
            "assert 'IPython' not in sys.modules")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr

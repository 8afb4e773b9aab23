"""How pysycl writes a source location for a user: ``file:line``, or, for code typed into
a Jupyter/IPython cell, the cell as IPython's own tracebacks name it (``Cell In[13], line
6``) rather than the temporary file IPython compiled the cell under
(``/tmp/ipykernel_26349/1766016355.py:6``).

IPython keeps the map (``InteractiveShell.compile``, a ``CachingCompiler``:
``format_code_name(filename)`` -> ``("Cell", "In[13]")``, the execution count of the cell);
pysycl only asks it when IPython is already imported, and never imports it.
"""

from __future__ import annotations

import sys


def location(filename: str, line: int | str) -> str:
    """``filename:line``, or ``Cell In[N], line L`` where ``filename`` is an IPython cell."""
    cell = cell_name(filename)
    return f"{cell}, line {line}" if cell is not None else f"{filename}:{line}"


def cell_name(filename: str) -> str | None:
    """``Cell In[N]`` for the file IPython compiled a cell under, else None."""
    ipython = sys.modules.get("IPython")
    if ipython is None:  # no shell: a plain script, pytest, ...
        return None
    try:
        shell = ipython.get_ipython()
        named = shell.compile.format_code_name(filename) if shell is not None else None
    except Exception:
        return None
    if not named:
        return None
    label, name = named
    return f"{label} {name}"

"""Run a notebook's code cells in order in one namespace, where Jupyter is not installed.

On the GPU machine (no package index, no Jupyter)::

    python tools/run_notebook.py examples/notebooks/pysycl_tour.ipynb

Without IPython, ``from IPython.display import display`` in a cell becomes
``display = print``; a cell that uses matplotlib is skipped when it is missing.
"""

from __future__ import annotations

import importlib.util
import json
import sys


def main(path: str) -> None:
    with open(path) as f:
        nb = json.load(f)
    have_ipython = importlib.util.find_spec("IPython") is not None
    have_mpl = importlib.util.find_spec("matplotlib") is not None
    ns: dict[str, object] = {"__name__": "__main__"}
    ran = skipped = 0
    for i, c in enumerate(nb["cells"]):
        if c["cell_type"] != "code":
            continue
        src = "".join(c["source"])
        if not have_ipython:
            src = src.replace("from IPython.display import display", "display = print")
        if "matplotlib" in src:
            if not have_mpl:
                print(f"cell {i}: skipped (no matplotlib)")
                skipped += 1
                continue
            import matplotlib

            matplotlib.use("Agg")
        exec(compile(src, f"<cell {i}>", "exec"), ns)  # the project's own notebook
        ran += 1
    print(f"notebook: {ran} code cells ran, {skipped} skipped")


if __name__ == "__main__":
    main(sys.argv[1])

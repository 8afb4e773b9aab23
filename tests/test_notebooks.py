"""Every notebook in examples/notebooks runs top to bottom in a real Jupyter kernel, and
kernels defined in notebook cells report errors at the cell's file and line and cache on disk.

The notebooks run in a subprocess (nbclient + ipykernel's ``python3`` kernel of this
interpreter): Jupyter's own machinery is not under the suite's ``filterwarnings =
error``, but anything a cell writes to stderr (warnings included) fails the test.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

# The test extra installs nbformat, nbclient, ipykernel, matplotlib; the offline GPU
# machine (tools/gpu_suite.sh) has none of them.
nbformat = pytest.importorskip("nbformat")

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "examples" / "notebooks")
                   .glob("*.ipynb"))

RUNNER = """
import sys, nbformat
from nbclient import NotebookClient
nb = nbformat.read(sys.argv[1], as_version=4)
NotebookClient(nb, kernel_name="python3", timeout=300, allow_errors=False,
               resources={"metadata": {"path": sys.argv[3]}}).execute()
nbformat.write(nb, sys.argv[2])
"""

# ipykernel names a cell's code ``/tmp/ipykernel_<pid>/<hash>.py`` (IPython >= 8 with
# ipykernel >= 6), older IPython ``<ipython-input-<n>-<hash>>``.
CELL_FILE = re.compile(r"(<ipython-input-\d+-[0-9a-f]+>|ipykernel_\d+[/\\]\d+\.py)")


def _execute(nb_path: Path, tmp: Path, cache_dir: Path) -> nbformat.NotebookNode:
    """Run ``nb_path`` in a fresh kernel of this interpreter; return the executed notebook."""
    # A kernelspec named python3 that is exactly this interpreter (JUPYTER_PATH comes
    # first in Jupyter's search path, before any user or system python3 kernel).
    spec = tmp / "jupyter" / "kernels" / "python3"
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (pysycl tests)", "language": "python"}))
    work = tmp / "cwd"
    work.mkdir(exist_ok=True)
    env = dict(os.environ, JUPYTER_PATH=str(tmp / "jupyter"), IPYTHONDIR=str(tmp / "ipython"),
               PYSYCL_CACHE_DIR=str(cache_dir), HYPOTHESIS_STORAGE_DIRECTORY=str(tmp / "hyp"),
               MPLCONFIGDIR=str(tmp / "mpl"))
    env.pop("PYSYCL_LOG", None)
    out = tmp / ("executed-" + nb_path.name)
    r = subprocess.run([sys.executable, "-c", RUNNER, str(nb_path), str(out), str(work)],
                       capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, (r.stdout + r.stderr)[-6000:]
    assert list(work.iterdir()) == [], "the notebook left files in its working directory"
    return nbformat.read(out, as_version=4)


def _stderr(nb: nbformat.NotebookNode) -> list[str]:
    return [o["text"] for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
            if o.get("output_type") == "stream" and o.get("name") == "stderr"]


@pytest.mark.slow
@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(nb_path: Path, tmp_path: Path) -> None:
    nb = _execute(nb_path, tmp_path, tmp_path / "cache")
    assert _stderr(nb) == []
    kinds = {k for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
             for k in o.get("data", {})}
    assert "text/html" in kinds  # the rich display of devices/queues/events/bundles
    assert "image/png" in kinds  # the bandwidth plot


def test_notebooks_exist() -> None:
    assert NOTEBOOKS, "examples/notebooks has no notebook"


CELLS = [
    "import json\nimport numpy as np\nimport pysycl as sycl\nq = sycl.queue()",
    # a kernel with an error on the cell's line 5
    """\
out = np.zeros(4, np.float32)
with sycl.buffer(out) as O:
    def cg(h):
        o = O.get_access(h, sycl.access_mode.write)
        h.parallel_for(sycl.range(4), lambda i: o.__setitem__(i, [1.0][0]))
    try:
        q.submit(cg)
        msg = None
    except sycl.kernel_compile_error as e:
        msg = str(e)
print(json.dumps({"msg": msg, "file": cg.__code__.co_filename}))""",
    # a good kernel: compiled in the first session, from the disk cache in the second
    """\
sycl.ext.reset_kernel_cache_stats()
x = np.zeros(8, np.int32)
with sycl.buffer(x) as X:
    q.submit(lambda h: (lambda a: h.parallel_for(sycl.range(8), lambda i: a.__setitem__(i, i[0] * 3)))(
        X.get_access(h, sycl.access_mode.write)))
assert (x == np.arange(8) * 3).all()
print(json.dumps(sycl.ext.kernel_cache_stats()))""",
]


def _json_outputs(nb: nbformat.NotebookNode) -> list[dict]:
    return [json.loads(o["text"]) for c in nb.cells if c.cell_type == "code"
            for o in c.get("outputs", []) if o.get("name") == "stdout"]


def test_cell_kernels_report_cell_and_line_and_cache_on_disk(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in CELLS])
    path = tmp_path / "cells.ipynb"
    nbformat.write(nb, path)
    cache = tmp_path / "cache"

    first = _execute(path, tmp_path / "s1", cache)
    err, stats1 = _json_outputs(first)
    assert CELL_FILE.search(err["file"]), err["file"]      # the kernel's file is the cell
    assert err["msg"] is not None
    assert f"{err['file']}:5" in err["msg"], err["msg"]     # ... and the line in that cell
    assert "list" in err["msg"]
    assert stats1["compiles"] == 1 and stats1["disk_writes"] == 1, stats1

    # A second kernel session: another cell file name, same code -> disk cache, no compile.
    _, stats2 = _json_outputs(_execute(path, tmp_path / "s2", cache))
    assert stats2["compiles"] == 0 and stats2["disk_hits"] == 1, stats2

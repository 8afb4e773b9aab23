"""Every notebook in examples/notebooks runs top to bottom in a real Jupyter kernel, and
kernels defined in notebook cells report errors at the cell as IPython names it (``Cell
In[2], line 5``, not the temporary file the cell was compiled under) and cache on disk.

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
    # ... named as IPython names it, with the line in that cell
    assert "defined at Cell In[2], line 5): Cell In[2], line 5: " in err["msg"], err["msg"]
    assert err["file"] not in err["msg"], err["msg"]
    assert "list" in err["msg"]
    assert stats1["compiles"] == 1 and stats1["disk_writes"] == 1, stats1

    # A second kernel session: another cell file name, same code -> disk cache, no compile.
    _, stats2 = _json_outputs(_execute(path, tmp_path / "s2", cache))
    assert stats2["compiles"] == 0 and stats2["disk_hits"] == 1, stats2


CELL_ERRORS = [
    "import json\nimport numpy as np\nimport pysycl as sycl\nq = sycl.queue()\n"
    "hq = sycl.queue(sycl.aspect_selector(sycl.aspect.host_debuggable))",
    # In[2]: a kernel whose assert fails on line 3 of the cell
    """\
def make(a):
    def k(i):
        assert a[i] < 2, "too big"
        a[i] = a[i] + 1
    return k""",
    # In[3]: submitted on line 6, on the compiled device and the host_debuggable device
    """\
out = {}
for name, qq in (("compiled", q), ("host", hq)):
    x = np.arange(4, dtype=np.float32)
    try:
        with sycl.buffer(x) as X:
            qq.submit(lambda h: h.parallel_for(
                sycl.range(4), make(X.get_access(h, sycl.access_mode.read_write))))
    except AssertionError as e:
        out[name] = str(e)
print(json.dumps(out))""",
    # In[4]: an index out of range on the host_debuggable device (line 3), a compile error
    # (line 11) and a signature error (line 17)
    """\
def bad(h):
    a = Y.get_access(h, sycl.access_mode.read_write)
    h.parallel_for(sycl.range(4), lambda i: a.__setitem__(i, a[i + 10]))
out = {}
y = np.zeros(4)
try:
    with sycl.buffer(y) as Y:
        hq.submit(bad)
except sycl.exception as e:
    out["index"] = str(e)
k = lambda i: y.__setitem__(i / 2, 1.0)
try:
    q.parallel_for(sycl.range(4), k)
except sycl.exception as e:
    out["compile"] = str(e)
try:
    q.parallel_for(sycl.range(4), lambda i, j: None)
except sycl.exception as e:
    out["signature"] = str(e)
print(json.dumps(out))""",
]


@pytest.mark.slow
def test_kernel_errors_name_the_cell_as_ipython_does(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in CELL_ERRORS])
    path = tmp_path / "errors.ipynb"
    nbformat.write(nb, path)
    asserts, errors = _json_outputs(_execute(path, tmp_path / "s", tmp_path / "cache"))
    assert asserts["compiled"].startswith(
        "too big -- Cell In[2], line 3, work-item (2,)\nkernel 'make.<locals>.k' (Cell In[2], "
        "line 2, submitted at Cell In[3], line 6): 2 work-items failed an assert; the first one "
        "found is shown (on "), asserts
    assert asserts["host"] == (
        "too big -- Cell In[2], line 3, work-item (2,)\nkernel 'make.<locals>.k' (Cell In[2], "
        "line 2): 2 work-items failed an assert; the first one found is shown (host_debuggable "
        "device)")
    assert errors["index"] == (
        "[errc.kernel] kernel 'bad.<locals>.<lambda>' (Cell In[4], line 3) raised IndexError: "
        "index 10 is out of bounds for axis 0 with size 4 in work-item (0,), at Cell In[4], "
        "line 3 (host_debuggable device)")
    assert errors["compile"] == (
        "[errc.kernel] cannot compile kernel '<lambda>' (defined at Cell In[4], line 11): Cell "
        "In[4], line 11: an index must be an integer, not a float64 -- use i // 2 (integer "
        "division; / gives a float in Python)\n    k = lambda i: y.__setitem__(i / 2, 1.0)")
    assert errors["signature"].startswith(
        "[errc.invalid] Cell In[4], line 17: kernel <lambda> takes 2 parameter(s) (i, j)")
    assert not CELL_FILE.search(json.dumps([asserts, errors]))  # never the temporary file

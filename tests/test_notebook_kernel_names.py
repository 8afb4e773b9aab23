"""A kernel_name in a real Jupyter kernel: a cell run again keeps its kernel, an edited
cell run again replaces it, another function under the name is refused (SYCL 2020 §5.2:
a kernel name identifies one kernel)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")

from test_notebooks import _execute, _json_outputs  # noqa: E402

SETUP = "import json\nimport numpy as np\nimport pysycl as sycl\nq = sycl.queue()"


def _cell(value: int, fn: str = "cg") -> str:
    return f"""\
r = np.zeros(4, np.int32)
def {fn}(h):
    a = B.get_access(h, sycl.access_mode.write)
    h.parallel_for(sycl.range(4), lambda i: a.__setitem__(i, {value}), kernel_name="nb.k")
try:
    with sycl.buffer(r) as B:
        q.submit({fn})
    out = {{"r": r.tolist()}}
except sycl.exception as e:
    out = {{"errc": e.code().name, "msg": str(e)}}
print(json.dumps(out))"""


@pytest.mark.slow
def test_notebook_cells_run_again_and_edited_keep_one_kernel_per_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the Jupyter kernel imports this checkout's pysycl (a worktree, not the installed one)
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[1]))
    cells = [SETUP, _cell(1), _cell(1), _cell(2), _cell(3, "other")]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in cells])
    path = tmp_path / "names.ipynb"
    nbformat.write(nb, path)
    same, again, edited, other = _json_outputs(_execute(path, tmp_path / "run", tmp_path / "c"))
    assert same == again == {"r": [1] * 4}
    assert edited == {"r": [2] * 4}, json.dumps(edited)
    assert other["errc"] == "invalid" and "'nb.k'" in other["msg"], other

"""MPI through mpi4py (docs/distributed.md): the PRK programs of examples/distributed under
``mpiexec``, the rank-to-device helper, pysycl memory in MPI calls and the refusal of device
memory an MPI cannot read. Needs the ``mpi`` extra (mpi4py and the mpich wheel; CI installs
it with the test extra); skipped, with the reason, where either is missing."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import pysycl as sycl

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "distributed"

try:
    from mpi4py import MPI
except ImportError as e:  # pragma: no cover - the mpi extra is missing
    pytest.skip(f"mpi4py is not installed (pip install pysycl[mpi]): {e}", allow_module_level=True)

MPIEXEC = (shutil.which("mpiexec", path=str(Path(sys.executable).parent))
           or shutil.which("mpiexec"))
needs_mpiexec = pytest.mark.skipif(MPIEXEC is None,
                                   reason="no mpiexec (the mpich wheel of pysycl[mpi] has one)")
pytestmark = pytest.mark.mpi


def mpiexec(n: int, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """Run ``python args`` on ``n`` ranks (oversubscribed past the cores) with this tree's pysycl."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
        # Open MPI's mpiexec (a system MPI) refuses root, as CI containers run; mpich ignores these
        OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return subprocess.run([str(MPIEXEC), "-n", str(n), sys.executable, *map(str, args)],
                          capture_output=True, text=True, timeout=180, env=env)


PROGRAMS = {"nstream": ("10", "20000"), "transpose": ("4", "48"), "stencil": ("4", "40")}
RUNS = [(name, n, variant) for name in PROGRAMS for n, variant in
        ((2, "pysycl"), (2, "numpy"), (4, "pysycl"))]


@needs_mpiexec
@pytest.mark.parametrize(("program", "ranks", "variant"), RUNS,
                         ids=[f"{p}-n{n}-{v}" for p, n, v in RUNS])
def test_prk_program_validates(program: str, ranks: int, variant: str) -> None:
    extra = ["--numpy"] if variant == "numpy" else []
    r = mpiexec(ranks, EXAMPLES / f"{program}.py", *PROGRAMS[program], *extra)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"Number of ranks      {'  ' if program == 'stencil' else ''}= {ranks}" in r.stdout
    assert r.stdout.count("Solution validates") == 1, r.stdout
    assert "Rate (M" in r.stdout
    if variant == "pysycl":
        assert "Device " in r.stdout and "numpy" not in r.stdout.split("Device")[1]


@needs_mpiexec
def test_prk_program_rejects_bad_arguments() -> None:
    r = mpiexec(2, EXAMPLES / "transpose.py", "2", "33")  # 33 is no multiple of 2 ranks
    assert r.returncode != 0
    assert "should be a multiple of # procs 2" in r.stdout
    assert "Solution validates" not in r.stdout


RANKS_SCRIPT = """
import numpy as np, pysycl as sycl
from pysycl.ext import mpi as sycl_mpi
from mpi4py import MPI
comm = MPI.COMM_WORLD
local, size = sycl_mpi.local_rank()
dev = sycl_mpi.device_for_rank()
q = sycl.queue(dev)
p = sycl.malloc_device(8, q, dtype=np.int32)  # every device has device USM
rank = np.int32(comm.rank)
def k(i: sycl.item) -> None:
    p[i] = i[0] * 10 + rank
q.parallel_for(sycl.range(8), k).wait()
got = np.empty(8, np.int32)
q.memcpy(got, p, got.nbytes).wait()
assert (got == np.arange(8) * 10 + comm.rank).all()
preferred = dev.get_backend() == sycl.device(sycl.default_selector_v).get_backend()
lines = comm.gather(f"rank {comm.rank} local {local}/{size} runs-python "
                    f"{bool(dev.image_targets)} preferred-backend {preferred} "
                    f"device {dev.get_info(sycl.info.device.name)}")
if comm.rank == 0:  # one writer: the ranks' output is not interleaved
    print("\\n".join(lines), flush=True)
"""


@needs_mpiexec
def test_each_rank_gets_a_device_from_its_node_local_rank(tmp_path: Path) -> None:
    script = tmp_path / "ranks.py"
    script.write_text(RANKS_SCRIPT)
    r = mpiexec(2, script)
    assert r.returncode == 0, r.stdout + r.stderr
    out = re.sub(r"\x1b\[[0-9;]*m", "", r.stdout)  # a driver's colour resets (PoCL's debug build)
    lines = sorted(line for line in out.splitlines() if line.startswith("rank "))
    assert [line.split(" device ")[0] for line in lines] == [
        "rank 0 local 0/2 runs-python True preferred-backend True",
        "rank 1 local 1/2 runs-python True preferred-backend True"]  # one view of each GPU


@needs_mpiexec
def test_a_rank_without_a_device_is_told_its_rank_and_host(tmp_path: Path) -> None:
    accel = sycl.info.device_type.accelerator  # a kind of device no test machine has
    if any(d.image_targets for d in sycl.device.get_devices(accel)):
        pytest.skip("this machine has an accelerator device that runs Python kernels")
    script = tmp_path / "nodevice.py"
    script.write_text(
        "import pysycl as sycl\nfrom pysycl.ext import mpi as sycl_mpi\n"
        "from mpi4py import MPI\nmsg = 'none'\n"
        "try:\n    sycl_mpi.device_for_rank(device_type=sycl.info.device_type.accelerator)\n"
        "except sycl.exception as e:\n    msg = f'ERR {e.code()} {e}'\n"
        "msgs = MPI.COMM_WORLD.gather(msg)\n"
        "if MPI.COMM_WORLD.rank == 0:\n    print('\\n'.join(msgs), flush=True)\n")
    r = mpiexec(2, script)
    assert r.returncode == 0, r.stdout + r.stderr
    errs = sorted(line for line in r.stdout.splitlines() if line.startswith("ERR"))
    assert len(errs) == 2, r.stdout
    host = MPI.Get_processor_name() or socket.gethostname()
    for rank, line in enumerate(errs):
        assert f"MPI rank {rank} (node-local rank {rank}) on host {host}" in line
        assert "errc.runtime" in line and "no device of type accelerator" in line


EXCHANGE_SCRIPT = """
import numpy as np, pysycl as sycl
from pysycl.ext import mpi as sycl_mpi
from mpi4py import MPI
comm = MPI.COMM_WORLD
me, other = comm.rank, 1 - comm.rank
q = sycl.queue(sycl_mpi.device_for_rank())
n = 1000
host_usm = q.get_device().has(sycl.aspect.usm_host_allocations)  # NVIDIA's OpenCL: none
h = sycl.malloc_host(n, q, dtype=np.float64) if host_usm else np.empty(n)  # to mpi4py as it is
d = sycl.malloc_device(n, q, dtype=np.float64)        # device USM: staged by the helper
q.memcpy(d, np.arange(n) + 1000.0 * me, n * 8).wait()
np.asarray(h)[:] = np.arange(n) * (me + 1)
buf = np.full(6, -1.0)
if me == 0:
    comm.Send(h, dest=1, tag=1)
    sycl_mpi.Send(comm, d, 1, tag=2, q=q)
    with sycl.buffer(np.arange(6.0) * 7) as B, B.get_host_access() as acc:
        comm.Send(acc, dest=1, tag=3)                 # a host accessor, in place
else:
    comm.Recv(h, source=0, tag=1)
    sycl_mpi.Recv(comm, d, source=0, tag=2, q=q)
    with sycl.buffer(buf) as B:
        with B.get_host_access() as acc:
            comm.Recv(acc, source=0, tag=3)
    got = np.empty(n)
    q.memcpy(got, d, n * 8).wait()
    assert (np.asarray(h) == np.arange(n)).all(), np.asarray(h)[:4]
    assert (got == np.arange(n)).all(), got[:4]
    assert (buf == np.arange(6.0) * 7).all(), buf
done = ["exchanged"]
a = sycl.malloc_device(4, q, dtype=np.int64)
t = sycl.malloc_device(4, q, dtype=np.int64)
q.memcpy(a, np.arange(4) + 10 * me, 32).wait()
sycl_mpi.Alltoall(comm, a, t, q)
got = np.empty(4, dtype=np.int64)
q.memcpy(got, t, 32).wait()
assert list(got) == [me * 2, me * 2 + 1, 10 + me * 2, 10 + me * 2 + 1], got
done.append("alltoall")
results = comm.gather(f"{' '.join(done)} {me}")
if me == 0:
    print("\\n".join(results), flush=True)
"""


@needs_mpiexec
def test_host_usm_accessors_and_staged_device_usm_through_mpi(tmp_path: Path) -> None:
    script = tmp_path / "exchange.py"
    script.write_text(EXCHANGE_SCRIPT)
    r = mpiexec(2, script)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.split("\n")[-3:] == ["exchanged alltoall 0", "exchanged alltoall 1", ""]


def test_device_memory_handed_to_mpi4py_is_refused_with_the_reason() -> None:
    q = sycl.queue(next(d for d in sycl.device.get_devices() if d.image_targets))
    d = sycl.malloc_device(16, q, dtype=np.float64)
    try:
        for call in (lambda: MPI.COMM_SELF.Send(d, dest=0),
                     lambda: MPI.COMM_SELF.Isend(d, dest=0),
                     lambda: MPI.COMM_SELF.Allreduce(MPI.IN_PLACE, d)):
            with pytest.raises(BufferError, match=r"device (allocation|memory)"):  # OpenCL | CUDA
                call()
    finally:
        sycl.free(d, q)


def test_the_mpi_guard_refuses_gpu_memory_unless_mpi_is_gpu_aware(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The check CUDA device allocations pass through in ``__dlpack__`` (a GPU machine
    reaches it from ``comm.Send``; here it is called as ``__dlpack__`` calls it)."""
    from pysycl._memory import mpi_guard
    from pysycl.ext import mpi as sycl_mpi

    q = sycl.queue(next(d for d in sycl.device.get_devices()
                        if d.has(sycl.aspect.usm_host_allocations)))  # the host device has it
    p = sycl.malloc_host(4, q, dtype=np.float64)
    try:
        monkeypatch.delenv("PYSYCL_MPI_GPU_AWARE", raising=False)
        assert sycl_mpi.gpu_aware() is False  # the mpich wheel: MPIX_Query_cuda_support() == 0
        with pytest.raises(BufferError, match=r"not GPU-aware .*pysycl\.ext\.mpi"):
            mpi_guard.check_dlpack_export(p, (2, 0), -1)  # mpi4py's stream=-1
        mpi_guard.check_dlpack_export(p, (2, 0), 7)  # another consumer's stream: let through
        monkeypatch.setenv("PYSYCL_MPI_GPU_AWARE", "1")
        assert sycl_mpi.gpu_aware() is True
        mpi_guard.check_dlpack_export(p, (2, 0), -1)  # a GPU-aware MPI reads it
    finally:
        sycl.free(p, q)


def test_mpi_buffer_needs_a_queue_to_stage_device_memory() -> None:
    from pysycl.ext import mpi as sycl_mpi

    q = sycl.queue(next(d for d in sycl.device.get_devices() if d.image_targets))
    d = sycl.malloc_device(4, q, dtype=np.float64)
    try:
        with pytest.raises(TypeError, match="pass the queue"), sycl_mpi.mpi_buffer(d):
            pass
        with pytest.raises(ValueError, match="count 5 outside"), sycl_mpi.mpi_buffer(d, q, count=5):
            pass
    finally:
        sycl.free(d, q)


def test_import_pysycl_needs_no_mpi() -> None:
    code = ("import sys, pysycl, pysycl.ext\n"
            "assert not any(m.startswith('mpi4py') for m in sys.modules), sorted(sys.modules)\n"
            "assert 'pysycl.ext.mpi' not in sys.modules\nprint('ok')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr

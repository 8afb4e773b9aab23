# The two commands of the README: `make run` and `make test`.
# Each creates the virtual environment if it is missing and installs what is
# missing (re-installing only when pyproject.toml or the C extension changed), then acts.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: run test bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(STAMP): pyproject.toml pysycl/_backends/cuda/_native.c pysycl/_backends/opencl/_native.c | $(PY)
	$(PY) -m pip install -q -e ".[test,mpi]"
	touch $(STAMP)

run: $(STAMP)
	$(PY) -m pysycl
	$(PY) examples/vector_add.py

# One pytest-xdist worker per CPU (tests/_parallel.py): a line per test file as it
# ends. A part: make test PYTEST_ARGS="tests/unit" (README, "Running the tests").
test: $(STAMP)
	$(PY) -m pytest -n auto $(PYTEST_ARGS)

bench: $(STAMP)
	$(PY) benchmarks/bench_kernels.py --write
	$(PY) benchmarks/bench_ndrange.py --write
	$(PY) benchmarks/bench_bounds.py --write
	$(PY) benchmarks/bench_submit.py --write
	$(PY) benchmarks/bench_usm.py --write
	$(PY) benchmarks/bench_groups.py --write
	$(PY) benchmarks/bench_vec.py --write
	$(PY) benchmarks/bench_gpu.py --device cpu --small

clean:
	rm -rf $(VENV) build *.egg-info

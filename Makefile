# One command each, on a fresh machine with python3: `make demo`, `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# the data folder beside the repository, when there is one: MNIST and the scene data are read
# from it (else they download on first use; statnet's networks ship inside the package)
export NUMPYRO_UGM_DATA ?= $(wildcard $(abspath ..)/shared/data)

.PHONY: demo test test-durations test-slow install-check bench docs clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,examples,docs]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) examples/vbm_demo.py

# the default suite is compile-bound (most of its time compiles small programs): XLA's
# backend optimization level 0 and its CPU loop emitters in place of the fusion emitters
# compile them 2-3 times faster (the PF learner's scan: 5.2 s -> 2.1 s) and run them slower
TEST_XLA_FLAGS = --xla_backend_optimization_level=0 --xla_cpu_use_fusion_emitters=false

test: $(STAMP)
	XLA_FLAGS="$$XLA_FLAGS $(TEST_XLA_FLAGS)" $(PY) -m pytest -q -n 2 --dist loadfile
	$(MAKE) docs

# each test file's time on cold compilation caches (JAX's and numba's, as on a clean clone),
# into tests/durations.json (the order in which `make test` hands the files to its
# workers: longest first), and a table of what JAX spent of it compiling, per file
test-durations: $(STAMP)
	rm -rf .pytest_cache/jax .pytest_cache/compiles.*
	find numpyro_ugm -name '*.nbi' -delete -o -name '*.nbc' -delete
	XLA_FLAGS="$$XLA_FLAGS $(TEST_XLA_FLAGS)" $(PY) -m pytest -q -n 2 --dist loadfile --store-durations \
	    --compile-report .pytest_cache/compiles
	$(PY) tests/scripts/compile_report.py .pytest_cache/compiles

# the package outside its repository: the wheel installed into a fresh venv in a temporary
# folder, where the README's quick start and a network fit from the shipped data run
install-check: $(STAMP)
	$(PY) tests/scripts/install_check.py

docs: $(STAMP)
	$(PY) -m sphinx -W --keep-going -q -b html docs docs/_build/html

test-slow: $(STAMP)
	$(PY) -m pytest -q -m slow

bench: $(STAMP)
	$(PY) -m pip install -q -e '.[bench]'
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) build *.egg-info docs/_build

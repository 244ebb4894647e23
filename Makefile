# make check  create .venv if missing, install the project, run the quick tier (no mpiexec jobs)
# make test   the same set-up, then every test (what CI runs)
# make bench  the same set-up, then the all-reduce sweep against the baselines
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
MPIEXEC := $(VENV)/bin/mpiexec
NP     ?= 2

comma  := ,
# CuPy for the CUDA major version of the driver, when there is one.
CUDA_MAJOR := $(shell nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9]*\).*/\1/p' | head -n1)
EXTRAS := test,plot$(if $(filter 12 13,$(CUDA_MAJOR)),$(comma)cuda$(CUDA_MAJOR))

# No GPU: kernels run under Numba's CUDA simulator.
NO_GPU := $(if $(CUDA_MAJOR),,NUMBA_ENABLE_CUDASIM=1)

# Python's bytecode and pytest's rewritten asserts cached in __pycache__ (ignored by git),
# also where the environment says not to: else every rank of every job compiles them anew
unexport PYTHONDONTWRITEBYTECODE

.PHONY: check test bench bench-kernels clean

# NVVM, NVRTC and ptxas from pip, to compile the kernels without a GPU (tests/test_compile.py,
# tools/compile_kernels.py); optional: .ci/run makes them, the test skips without them
build/cuda-compilers: $(VENV)/.installed
	rm -rf $@.tmp && $(PY) -m pip install -q --target $@.tmp \
	    nvidia-cuda-nvcc==13.5.37 nvidia-nvvm==13.5.37 nvidia-cuda-nvrtc==13.5.37 \
	    nvidia-cuda-cuobjdump==13.5.37 nvidia-cuda-nvdisasm==13.5.37 && mv $@.tmp $@

# ml_dtypes before 0.7 in this environment (ring takes any from 0.3): importing 0.7.0 costs
# 0.6 s of CPU, 0.6.0 0.01 s, and every rank of every mpiexec job imports it (ringtypes)
$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[$(EXTRAS)]' 'ml_dtypes<0.7'
	touch $@

# unit, property and single-process tests: the edit loop's tier
check: $(VENV)/.installed
	$(NO_GPU) $(PY) -m pytest -m "not mpi" -q

# everything, what CI runs: every test but the fault tests on TEST_WORKERS pytest-xdist
# workers (two: a multi-rank job beside another test keeps both of the CI machine's cores
# busy: 14 min at a2970d0, 16-19.5 before it cut each process's start-up: results/test-time.md),
# then the fault tests on three (jobs that mostly wait out a dead peer's timeout, napping:
# three at once cost little more than one; beside the rest, starved of the cores, a
# survivor could miss its 2 s timeout)
TEST_WORKERS ?= 2
test: $(VENV)/.installed
	mkdir -p build
	$(NO_GPU) $(PY) -m pytest --ignore=tests/test_faults.py -n $(TEST_WORKERS) \
	    --junitxml=build/junit.xml; rest=$$?; \
	$(NO_GPU) $(PY) -m pytest tests/test_faults.py -n 3 -p no:cacheprovider \
	    --junitxml=build/junit-faults.xml; fault=$$?; [ $$rest -eq 0 ] && [ $$fault -eq 0 ]

bench: $(VENV)/.installed
	$(NO_GPU) $(MPIEXEC) -n $(NP) $(PY) -m harness allreduce -b 8 -e 64M -f 4 \
	    --impl ring,mpi,nccl --json results/latest.json --plot results/latest.png

# Kernel microbenchmarks (GPU only): results/kernels-<gpu>.json
bench-kernels: $(VENV)/.installed
	$(PY) -m pytest tests/bench -q -o addopts= --benchmark-only --benchmark-json=results/kernels-$$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n1 | tr 'A-Z ' 'a-z-').json

clean:
	rm -rf $(VENV) build .pytest_cache .hypothesis

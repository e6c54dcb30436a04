# Two entry points (see README): `make demo` runs the main job, `make test` the test suite.
# Both create .venv and install torch *before* the package, from PyTorch's CPU wheel index,
# so pip never pulls the multi-GB CUDA build that PyPI serves on Linux.
#
# Variables (make VAR=value ... or the environment):
#   PYTHON           the interpreter for .venv; default: the first of python3, python3.14 ...
#                    python3.11, python on PATH that is at least PYTHON_MIN
#                    (another one: make install PYTHON=/path/to/python3.12)
#   TORCH_INDEX_URL  where torch comes from; default PyTorch's CPU index. Empty
#                    (TORCH_INDEX_URL=) installs whatever the configured pip indexes give
#                    (CI does this: its machines' pip configuration supplies a CPU build);
#                    e.g. https://download.pytorch.org/whl/cu126 for a CUDA build.
# The package's requires-python (pyproject.toml; tests/test_makefile.py keeps the two equal).
# Not 3.10: the package's own code runs there (vermin 1.9.2 finds nothing newer), but every
# Tianshou 2.x release, the PPO baselines' library, requires Python >= 3.11 (on 3.10 pip finds
# only tianshou <= 0.5.1); the test checks the installed Tianshou's requirement.
PYTHON_MIN := 3.11
PYTHON_WHY := Tianshou 2.x, the PPO baselines' library, requires it
PYTHON_CANDIDATES := python3 python3.14 python3.13 python3.12 python3.11 python
comma := ,
# $(call python_ok,NAME): NAME if it runs and is at least PYTHON_MIN, else nothing
python_ok = $(if $(1),$(shell command -v $(1) >/dev/null 2>&1 && \
	$(1) -c 'import sys; sys.exit(sys.version_info[:2] < ($(subst .,$(comma),$(PYTHON_MIN))))' 2>/dev/null \
	&& echo $(1)))
ifndef PYTHON
PYTHON := $(firstword $(foreach p,$(PYTHON_CANDIDATES),$(call python_ok,$(p))))
PYTHON_ERROR := found no Python >= $(PYTHON_MIN) on PATH (looked for $(PYTHON_CANDIDATES))
else
PYTHON_ERROR := PYTHON=$(PYTHON) is not a Python >= $(PYTHON_MIN) that runs
endif
VENV ?= .venv
BIN := $(VENV)/bin
TORCH_PIN := torch==2.13.0
TORCH_INDEX_URL ?= https://download.pytorch.org/whl/cpu
TORCH_INSTALL := $(TORCH_PIN)$(if $(strip $(TORCH_INDEX_URL)), --index-url $(strip $(TORCH_INDEX_URL)))

.PHONY: install demo test test-slow test-numerics test-fast lint clean

$(BIN)/.installed: pyproject.toml
	@test -n "$(call python_ok,$(PYTHON))" || { echo "$(PYTHON_ERROR). circuit_gym needs Python >= \
	$(PYTHON_MIN) ($(PYTHON_WHY)). Install one, then: make install PYTHON=/path/to/python3.X" >&2; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet $(TORCH_INSTALL)
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $@

install: $(BIN)/.installed

demo: install
	$(BIN)/circuit-gym run --out results

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy  # the public API's type check; scope and settings in pyproject.toml [tool.mypy]

# The numerically sensitive tests (marker `numerics`) run a second time as another CPU would
# round: torch's portable kernels instead of this CPU's vector ones, and one thread. A test
# that holds only on the machine that recorded its numbers fails here, at home (issue 47).
NUMERICS_CONFIG := ATEN_CPU_CAPABILITY=default OMP_NUM_THREADS=1

# The suites run in JOBS pytest-xdist workers (default 2, the cores CI and this project's machines
# have; JOBS=1 runs serially), a test file per worker (--dist loadfile: a module's fixtures are built
# once), each worker's torch on one thread so the two do not oversubscribe the cores. Two workers
# take about half the serial time (measured: two halves of the default suite side by side, 9 and
# 12 min against 21 serially). Every worker has its own cache (tests/conftest.py).
JOBS ?= 2
PARALLEL := $(if $(filter 1,$(JOBS)),,-n $(JOBS) --dist loadfile)
PARALLEL_ENV := $(if $(filter 1,$(JOBS)),,OMP_NUM_THREADS=1 MKL_NUM_THREADS=1)

# The default suite skips tests marked slow (model training, PPO, GPT-2-sized runs) so it stays near
# 20 minutes on 2 cores; CI runs `make test` and then `make test-slow` (.ci/run).
# --durations=30: the 30 slowest tests are listed at the end, so a test that grew slow is seen (issue 56).
test: lint
	$(PARALLEL_ENV) $(BIN)/python -m pytest -q -m "not slow" --durations=30 $(PARALLEL)
	$(NUMERICS_CONFIG) $(BIN)/python -m pytest -q -m numerics

test-slow: install
	$(PARALLEL_ENV) $(BIN)/python -m pytest -q -m slow --durations=30 $(PARALLEL)

test-numerics: install
	$(NUMERICS_CONFIG) $(BIN)/python -m pytest -q -m numerics

test-fast: install
	$(BIN)/python -m pytest -q -m "not slow"

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache build *.egg-info

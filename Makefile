# Two entry points (see README): `make demo` runs the main job, `make test` the test suite.
# Both create .venv and install the CPU build of torch *before* the package, so pip never
# pulls a multi-GB CUDA build.
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
TORCH_PIN := torch==2.13.0

.PHONY: install demo test test-fast lint clean

$(BIN)/.installed: pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "need $(PYTHON) (set PYTHON=...)"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet $(TORCH_PIN)
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $@

install: $(BIN)/.installed

demo: install
	$(BIN)/circuit-gym run --out results

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy  # the public API's type check; scope and settings in pyproject.toml [tool.mypy]

test: lint
	$(BIN)/python -m pytest -q

test-fast: install
	$(BIN)/python -m pytest -q -m "not slow"

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache build *.egg-info

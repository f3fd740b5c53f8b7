# The two commands a newcomer needs: `make demo` (the main job on real data) and `make test`.
# Both create .venv when it is missing and install the project into it; torch's CPU build is
# installed first, so pip never resolves the multi-GB CUDA build on a machine without a GPU.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TORCH_SPEC ?= torch==2.13.0
STAMP := $(VENV)/.installed

.PHONY: install test test-fast lint demo clean

$(STAMP): pyproject.toml
	@echo "make: installing torch (CPU build) and agentmemory with its dev tools into $(VENV); about 70 s the first time, quiet while pip works"
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$(TORCH_SPEC)"
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy --strict agentmemory embedders recallers

# Two workers (pytest-xdist), one per core here: every test owns its folders, ports and servers.
test: lint
	$(BIN)/python -m pytest -q -n 2

# The quick loop while working: every test but those marked slow (half a second or more: the real
# model, a server, a process, Chroma), on two workers (pytest-xdist). No lint. `make test` is what
# CI runs.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow" -n 2

# DEMO_ARGS: e.g. --download (fetch the public LoCoMo file when ../shared/data is absent),
# --conversation conv-41, --questions 12, --keep DIR
DEMO_ARGS ?=

demo: $(STAMP)
	$(BIN)/agentmemory demo $(DEMO_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

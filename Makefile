# make test: fresh .venv with the test extra, then pytest. make demo: the main job.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: test demo bench docs clean lint

$(BIN)/.installed-test: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

$(BIN)/.installed-demo: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[plot]'
	touch $@

test: $(BIN)/.installed-test
	$(BIN)/python -m pytest

demo: $(BIN)/.installed-demo
	$(BIN)/wholebody demo

bench: $(BIN)/.installed-test
	$(BIN)/python benchmarks/bench_dynamics.py

docs: $(BIN)/.installed-test
	$(BIN)/python -m pip install --quiet pdoc
	$(BIN)/pdoc -o docs/api wholebody

clean:
	rm -rf $(VENV) docs/api .pytest_cache

lint: $(BIN)/.installed-test
	$(BIN)/python -m pip install --quiet ruff
	$(BIN)/ruff check src tests examples benchmarks

# make test: fresh .venv with the dev extra, then every gate (ruff, mypy, API docs) and pytest.
# make demo: the main job. make test-all: the same with the slow tests.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: test test-all test-engines pytest check lint typecheck docs demo bench clean chromium

$(BIN)/.installed-dev: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

$(BIN)/.installed-demo: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[plot]'
	touch $@

# The README's test command (.ci/run calls it): gates first, they take seconds.
test: check pytest

test-all: check chromium
	$(BIN)/python -m pytest -n 2 --dist loadfile -m "slow or not slow"

# Two processes (pytest-xdist): the suite is CPU-bound and the machine has two cores.
pytest: $(BIN)/.installed-dev chromium
	$(BIN)/python -m pytest -n 2 --dist loadfile

# The browser tests (tests/test_report_html_browser.py) drive Debian's chromium through
# Playwright (never `playwright install`). Installed here when missing, as root or with sudo;
# without it the browser tests skip (and fail under WHOLEBODY_REQUIRE_BROWSER, as in .ci/run).
CHROMIUM := /usr/bin/chromium
chromium:
	@test -x $(CHROMIUM) || { \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO="sudo -n"; fi; \
	  command -v apt-get >/dev/null && \
	  $$SUDO apt-get update -qq >/dev/null 2>&1 && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends \
	    chromium >/dev/null 2>&1; \
	  test -x $(CHROMIUM) || echo "chromium could not be installed: the browser test skips"; }

check: lint typecheck docs

# Every simulator with a recorder (wholebody.sim), installed into .venv, then their tests
# (each skips when its engine is missing; `make test` runs MuJoCo, PyBullet and Drake).
# Genesis needs torch: the CPU build is installed first (PyPI's Linux torch is a CUDA build of
# several GB); `make test-engines TORCH_INDEX=` takes PyPI's, or set your own index.
# Genesis compiles its kernels for minutes: its tests are marked slow.
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
test-engines: $(BIN)/.installed-dev
	$(BIN)/python -c 'import torch' 2>/dev/null || $(BIN)/python -m pip install --quiet torch \
		$(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(BIN)/python -m pip install --quiet -e '.[dev,engines,genesis]'
	$(BIN)/python -m pytest -n 2 --dist loadfile tests/test_mujoco.py tests/test_sim_*.py
	$(BIN)/python -m pytest -n 0 -m slow tests/test_sim_genesis.py \
		'tests/test_sim_docs.py::test_recipe_runs_and_its_log_is_consistent[Genesis]'

lint: $(BIN)/.installed-dev
	$(BIN)/ruff check src tests examples benchmarks docs

typecheck: $(BIN)/.installed-dev
	$(BIN)/mypy src

# API reference from the docstrings into docs/api/; a warning or a public name without a
# page fails the build.
docs: $(BIN)/.installed-dev
	rm -rf docs/api
	$(BIN)/python docs/build_api.py docs/api

demo: $(BIN)/.installed-demo
	$(BIN)/wholebody demo

bench: $(BIN)/.installed-dev
	$(BIN)/python benchmarks/bench_dynamics.py

clean:
	rm -rf $(VENV) docs/api .pytest_cache .mypy_cache

# Two commands matter: `make run` and `make test`. Everything else is a helper.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP_RUN := $(VENV)/.installed-run
STAMP_TEST := $(VENV)/.installed-test

.PHONY: run test lint typecheck check bench clean docs

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(STAMP_RUN): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $@

$(STAMP_TEST): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[test,spark,bench]'
	touch $@ $(STAMP_RUN)

run: $(STAMP_RUN)
	$(BIN)/groupcoord serve --listen 127.0.0.1:9092 --data-dir ./data

lint: $(STAMP_TEST)
	$(BIN)/ruff check src tests bench scripts
	$(BIN)/ruff format --check src tests bench scripts || true

typecheck: $(STAMP_TEST)
	$(BIN)/mypy

docs: $(STAMP_TEST)
	$(BIN)/python scripts/gen_state_machine.py > docs/state-machine.md
	$(BIN)/python scripts/gen_client_state_machine.py --write docs/client-state-machine.md
	$(BIN)/python scripts/gen_txn_state_machine.py --write docs/transactions-state-machine.md

# The whole suite, on two pytest-xdist workers: every test file runs whole on one worker and the
# Spark tests together on one (tests/conftest.py groups them); on 2 cores this takes about two
# thirds of a serial run. pytest exit code 5 (no tests collected) is a failure here, never a pass.
test: $(STAMP_TEST)
	@# the report's browser test (tests/pipeline/test_report_browser.py) needs headless Chromium
	@test -x /usr/bin/chromium || apt-get install -y -q chromium || (apt-get update -q && apt-get install -y -q chromium)
	$(BIN)/ruff check src tests bench scripts
	$(BIN)/mypy
	$(BIN)/python scripts/gen_state_machine.py --check docs/state-machine.md
	$(BIN)/python scripts/gen_client_state_machine.py --check docs/client-state-machine.md
	$(BIN)/python scripts/gen_txn_state_machine.py --check docs/transactions-state-machine.md
	$(BIN)/python -m pytest -q -p no:cacheprovider -n 2 --dist loadgroup tests; rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing"; exit 1; fi; exit $$rc

bench: $(STAMP_TEST)
	$(BIN)/pip install -q -e '.[bench]'
	$(BIN)/python bench/core_bench.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info

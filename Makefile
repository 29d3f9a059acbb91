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

# The request path compiled with mypyc (setup.py; docs/architecture.md, "The compiled build"),
# rebuilt when one of its sources changes. A build that fails leaves no manifest, and the broker
# runs the same modules as Python (its start log says which); build/native.log says why.
NATIVE := src/groupcoord/native-build.json
NATIVE_SOURCES := setup.py $(addprefix src/,$(shell sed -n 's/^    "\(groupcoord\/[a-z_/]*\.py\)",$$/\1/p' setup.py))

$(NATIVE): $(NATIVE_SOURCES) | $(STAMP_RUN)
	$(BIN)/pip install -q 'setuptools>=77' 'mypy>=1.10'
	@mkdir -p build
	@echo "compiling the request path with mypyc (about a minute; build/native.log)"
	@GROUPCOORD_COMPILE=1 $(BIN)/python setup.py build_ext --inplace > build/native.log 2>&1 \
	  || echo "the compiled build failed (build/native.log); the broker runs as Python"

run: $(STAMP_RUN) $(NATIVE)
	$(BIN)/groupcoord serve --listen 127.0.0.1:9092 --data-dir ./data

lint: $(STAMP_TEST)
	$(BIN)/ruff check src tests bench scripts
	$(BIN)/ruff format --check src tests bench scripts || true

typecheck: $(STAMP_TEST)
	$(BIN)/mypy

docs: $(STAMP_TEST)
	$(BIN)/python scripts/gen_state_machine.py > docs/state-machine.md
	$(BIN)/python scripts/gen_client_state_machine.py --write docs/client-state-machine.md
	$(BIN)/python scripts/gen_consumer_group_state_machine.py --write docs/consumer-group-client-state-machine.md
	$(BIN)/python scripts/gen_txn_state_machine.py --write docs/transactions-state-machine.md
	$(BIN)/python scripts/gen_protocol_comparison.py --write docs/simulator-protocols.md

# The whole suite, on two pytest-xdist workers: every test file runs whole on one worker and the
# Spark tests together on one (tests/conftest.py groups them); on 2 cores this takes about two
# thirds of a serial run. pytest exit code 5 (no tests collected) is a failure here, never a pass.
test: $(STAMP_TEST) $(NATIVE)
	@# the report's browser test (tests/pipeline/test_report_browser.py) needs headless Chromium
	@test -x /usr/bin/chromium || apt-get install -y -q chromium || (apt-get update -q && apt-get install -y -q chromium)
	$(BIN)/ruff check src tests bench scripts setup.py
	$(BIN)/mypy
	$(BIN)/python scripts/gen_state_machine.py --check docs/state-machine.md
	$(BIN)/python scripts/gen_client_state_machine.py --check docs/client-state-machine.md
	$(BIN)/python scripts/gen_consumer_group_state_machine.py --check docs/consumer-group-client-state-machine.md
	$(BIN)/python scripts/gen_txn_state_machine.py --check docs/transactions-state-machine.md
	$(BIN)/python -m pytest -q -p no:cacheprovider -n 2 --dist loadgroup tests; rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing"; exit 1; fi; exit $$rc

bench: $(STAMP_TEST)
	$(BIN)/pip install -q -e '.[bench]'
	$(BIN)/python bench/core_bench.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info $(NATIVE)
	find src -name '*.so' -delete

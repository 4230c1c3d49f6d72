# Two entry points: `make demo` runs the main job end to end, `make test` runs the test suite.
# Both create .venv on first use and install the project into it.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The reference tools the differential tests compare against, in an environment of their own:
# google-adk pins an older opentelemetry than the project is tested with.
REFERENCE := .venv-reference
REFERENCE_STAMP := $(REFERENCE)/.installed
REFERENCE_PACKAGES := google-adk==2.13.0 rouge-score==0.1.2
# Big Sky Agents' evaluators (its published package's dist/evaluators), run by node.
BIGSKY_PACKAGE := @automattic/big-sky-agents@1.2.2
BIGSKY := $(REFERENCE)/bigsky
BIGSKY_STAMP := $(BIGSKY)/.installed

.PHONY: demo test check reference clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

$(REFERENCE_STAMP):
	$(PYTHON) -m venv $(REFERENCE)
	$(REFERENCE)/bin/python -m pip install --quiet --upgrade pip
	$(REFERENCE)/bin/python -m pip install --quiet $(REFERENCE_PACKAGES)
	touch $(REFERENCE_STAMP)

$(BIGSKY_STAMP):
	mkdir -p $(BIGSKY)
	cd $(BIGSKY) && npm pack --silent $(BIGSKY_PACKAGE) >/dev/null && tar xzf automattic-big-sky-agents-*.tgz \
		package/package.json package/dist/evaluators && rm automattic-big-sky-agents-*.tgz
	touch $(BIGSKY_STAMP)

reference: $(REFERENCE_STAMP) $(BIGSKY_STAMP)

demo: $(STAMP)
	$(BIN)/python -m examples.demo

# Lint, layout and types first: a minute, and they say where before the suite says what.
check: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

test: check $(REFERENCE_STAMP) $(BIGSKY_STAMP)
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) $(REFERENCE) *.egg-info .pytest_cache

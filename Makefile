# Two commands matter: `make demo` and `make test`. Each creates .venv if missing, installs
# torch==2.13.0 (the local CPU wheel) first and then the project, and runs. A stamp file keyed on
# pyproject.toml makes repeated runs skip the install.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
STAMP_HASH := $(shell cat pyproject.toml Makefile | sha1sum | cut -c1-12)
STAMP := $(VENV)/.installed-$(STAMP_HASH)

.PHONY: demo test soak venv bench lint clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(VENV)/bin/python
	$(PIP) install --upgrade pip setuptools wheel
	$(PIP) install torch==2.13.0
	$(PIP) install -e ".[dev,rl,bench]"
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(PY) experiments/demo.py

test: $(STAMP)
	$(PY) -m pytest -q tests

# The long reliability run (tests/reliability, ~5 min on 2 CPUs): 10 seeded random SIGKILLs of a Tune
# driver + Tuner.restore, a worker node killed on a 3-node local Ray cluster, 200 fuzzed tell sequences.
soak: $(STAMP)
	RELIABILITY_SOAK=1 TELL_FUZZ_EXAMPLES=200 $(PY) -m pytest -q -s tests/reliability -k "soak or noise_never"

bench: $(STAMP)
	$(PY) experiments/bench_engine.py

lint: $(STAMP)
	$(VENV)/bin/ruff check tune_risk rl_tasks tests experiments

clean:
	rm -rf $(VENV) build *.egg-info

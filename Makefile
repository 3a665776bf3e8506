# Two commands matter: `make demo` and `make test`. Each creates .venv if missing, installs
# torch==2.13.0 (the local CPU wheel) first and then the project, and runs. A stamp file keyed on
# pyproject.toml makes repeated runs skip the install.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
STAMP_HASH := $(shell cat pyproject.toml Makefile | sha1sum | cut -c1-12)
STAMP := $(VENV)/.installed-$(STAMP_HASH)

.PHONY: demo test soak venv bench lint docs clean

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

# The long reliability run (tests/reliability, ~35 min on 2 busy CPUs): 30 seeded SIGKILLs of a Tune driver
# + restore_tuner (10 inside a snapshot copy), a worker node killed on a 3-node local Ray cluster, 200 fuzzed tell sequences.
soak: $(STAMP)
	RELIABILITY_SOAK=1 TELL_FUZZ_EXAMPLES=200 $(PY) -m pytest -q -s tests/reliability -k "soak or noise_never"

# The performance suite (experiments/bench_all.py): ~8 min on 2 cores (plus ~1 min to build the HEBO venv once); `make bench QUICK=1` for a one-minute version.
# HEBO pins numpy<1.25, which JAX 0.10 cannot use, so HEBOSearch runs from its own venv; if building it
# fails, the suite still runs and reports HEBO as not run.
HEBO_VENV := .venv-hebo
HEBO_STAMP := $(HEBO_VENV)/.installed-hebo-0.3.6
HEBO_PIP := $(HEBO_VENV)/bin/python -m pip --disable-pip-version-check -q

$(HEBO_STAMP):
	$(PYTHON) -m venv $(HEBO_VENV)
	$(HEBO_PIP) install torch==2.13.0
	$(HEBO_PIP) install "ray[tune]==2.60.0" "numpy<1.25" "pyarrow<20"   # pyarrow 20+ needs numpy 2
	$(HEBO_PIP) install --no-deps hebo==0.3.6   # its full resolution with ray backtracks for many minutes
	$(HEBO_PIP) install "numpy<1.25" "scipy<=1.12" "paramz==0.9.6" "GPy==1.13.2" "pymoo==0.6.0" "catboost>=0.24.4" \
		disjoint-set scikit-learn "gpytorch>=1.4.0" "pandas>=1.0.1"   # paramz 0.10 and GPy need numpy>=2 / scipy<=1.12
	touch $(HEBO_STAMP)

bench: $(STAMP)
	-$(MAKE) --no-print-directory $(HEBO_STAMP)
	$(PY) experiments/bench_all.py $(if $(QUICK),--quick) --hebo-python $(HEBO_VENV)/bin/python

# The API reference (pdoc) from the docstrings: docs/api/index.html; warnings are errors.
docs: $(STAMP)
	$(PY) -W error::UserWarning docs/build_api.py docs/api

lint: $(STAMP)
	$(VENV)/bin/ruff check tune_risk rl_tasks tests experiments docs

clean:
	rm -rf $(VENV) build *.egg-info

# Two commands matter: `make demo` and `make test`. Each creates .venv if missing, installs torch first
# (TORCH_VERSION from TORCH_INDEX) and then the project, and runs. `make demo` installs the project alone (what
# experiments/examples/demo.py imports: no JAX, no extras); `make test` (and `make venv`) add the extras the tests use:
# dev, docs, rl, brax, bench. Stamp files keyed on pyproject.toml and this Makefile make repeated runs skip
# the install.
#
# TORCH_INDEX: the package index torch is installed from, passed to pip as --index-url for that one install
# (torch alone, --no-deps: its dependencies come from pip's usual index with the project's). The default is
# PyTorch's CPU index, so every machine gets the CPU wheel (PyPI's Linux torch is the CUDA build, several GB).
# Override it for another build, or set it empty to let pip's own configuration choose (e.g. a local wheel
# found through find-links):
#     make test TORCH_INDEX=https://download.pytorch.org/whl/cu126    # a CUDA build
#     make test TORCH_INDEX=                                          # pip's configured index / find-links
# A machine that cannot reach that index falls back to pip's configured find-links and extra indexes (after
# pip's retries, a few seconds).
PYTHON ?= python3
TORCH_VERSION ?= 2.13.0
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
TORCH_PIP := --no-deps $(if $(strip $(TORCH_INDEX)),--index-url $(TORCH_INDEX)) torch==$(TORCH_VERSION)
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
EXTRAS := dev,docs,rl,brax,bench
STAMP_HASH := $(shell cat pyproject.toml Makefile | sha1sum | cut -c1-12)
BASE_STAMP := $(VENV)/.installed-base-$(STAMP_HASH)
STAMP := $(VENV)/.installed-full-$(STAMP_HASH)

.PHONY: demo test soak venv bench lint docs clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

# The project without extras: torch (CPU by default) first, then tune-risk and its dependencies.
$(BASE_STAMP): $(VENV)/bin/python
	$(PIP) install --upgrade pip setuptools wheel
	$(PIP) install $(TORCH_PIP)
	$(PIP) install -e .
	rm -f $(VENV)/.installed-base-*
	touch $(BASE_STAMP)

# Everything the tests, benchmarks and docs use.
$(STAMP): $(BASE_STAMP)
	$(PIP) install -e ".[$(EXTRAS)]"
	rm -f $(VENV)/.installed-full-* $(VENV)/.installed-[0-9a-f]*
	touch $(STAMP)

venv: $(STAMP)

demo: $(BASE_STAMP)
	$(PY) experiments/examples/demo.py

test: $(STAMP)
	$(PY) -m pytest -q tests

# The long reliability run (tests/reliability, ~35 min on 2 busy CPUs): 30 seeded SIGKILLs of a Tune driver
# + restore_tuner (10 inside a snapshot copy), a worker node killed on a 3-node local Ray cluster, 200 fuzzed tell sequences.
soak: $(STAMP)
	RELIABILITY_SOAK=1 TELL_FUZZ_EXAMPLES=200 $(PY) -m pytest -q -s tests/reliability -k "soak or noise_never"

# The performance suite (experiments/benchmarks/bench_all.py): ~8 min on 2 cores (plus ~1 min to build the HEBO venv once); `make bench QUICK=1` for a one-minute version.
# HEBO pins numpy<1.25, which JAX 0.10 cannot use, so HEBOSearch runs from its own venv; if building it
# fails, the suite still runs and reports HEBO as not run.
HEBO_VENV := .venv-hebo
HEBO_STAMP := $(HEBO_VENV)/.installed-hebo-0.3.6
HEBO_PIP := $(HEBO_VENV)/bin/python -m pip --disable-pip-version-check -q

$(HEBO_STAMP):
	$(PYTHON) -m venv $(HEBO_VENV)
	$(HEBO_PIP) install $(TORCH_PIP)
	$(HEBO_PIP) install "ray[tune]==2.60.0" "numpy<1.25" "pyarrow<20"   # pyarrow 20+ needs numpy 2
	$(HEBO_PIP) install --no-deps hebo==0.3.6   # its full resolution with ray backtracks for many minutes
	$(HEBO_PIP) install "numpy<1.25" "scipy<=1.12" "paramz==0.9.6" "GPy==1.13.2" "pymoo==0.6.0" "catboost>=0.24.4" \
		disjoint-set scikit-learn "gpytorch>=1.4.0" "pandas>=1.0.1"   # paramz 0.10 and GPy need numpy>=2 / scipy<=1.12
	touch $(HEBO_STAMP)

bench: $(STAMP)
	-$(MAKE) --no-print-directory $(HEBO_STAMP)
	$(PY) experiments/benchmarks/bench_all.py $(if $(QUICK),--quick) --hebo-python $(HEBO_VENV)/bin/python

# The documentation site (mkdocs-material + mkdocstrings, mkdocs.yml): site/index.html. --strict: any warning
# (a broken link, a docstring mkdocstrings cannot read, a missing result file a page includes) fails the build.
docs: $(STAMP)
	$(VENV)/bin/mkdocs build --strict --quiet

lint: $(STAMP)
	$(VENV)/bin/ruff check tune_risk rl_tasks tests experiments docs

clean:
	rm -rf $(VENV) build *.egg-info

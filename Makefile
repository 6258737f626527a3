# Two commands matter (README.md): `make quickstart` and `make test`. Both install what they need.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip

.PHONY: setup system-deps quickstart test test-fast lint stop lint-docker bench-core

setup: $(VENV)/.installed

# uv (from PyPI) resolves the same versions as pip and fetches wheels in parallel: a fresh install of '.[all]'
# took 1-4 min where pip took 11-21 min on this machine, which waits on downloads, not on its CPU (BENCHMARKS.md,
# "CI and the install").  pip stays the fallback, e.g. where uv cannot be installed or cannot reach the index
# pip is set up for.
# --compile-bytecode: pip writes the .pyc files at install, uv does not by default; where the environment sets
# PYTHONDONTWRITEBYTECODE=1 (these machines do) no .pyc is ever written later either, so every Python process
# the tests start (Spark executors, servers, CLI runs: hundreds) compiled TensorFlow, Keras, JAX, SciPy ... from
# source again: `import tensorflow` took 11 s of CPU instead of 4.5 s. Compiling once at install costs ~35 s CPU.
$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PIP) install -q uv && $(VENV)/bin/uv pip install -q --compile-bytecode --python $(PY) -e '.[all]' \
	  || $(PIP) install -q -e '.[all]'
	touch $@

# Debian chromium for the browser test (root or sudo needed; skipped when it is already there).
system-deps:
	@command -v chromium >/dev/null 2>&1 || scripts/install-system-deps.sh

quickstart: setup
	scripts/quickstart.sh

stop:
	scripts/quickstart.sh stop

# ruff and mypy (configured in pyproject.toml; mypy is strict on the core packages), then every test tier, on
# two pytest-xdist workers: one test file per unit of work, longest first (tests/conftest.py); then, alone,
# the tests marked serial (they measure the machine). Three workers were ~11 % faster but flaky on two cores
# (BENCHMARKS.md, "CI and the install").
test: setup system-deps lint
	$(PY) -m pytest -q -n 2 --dist loadfile --durations=30 -m "not serial"
	$(PY) -m pytest -q --durations=5 -m serial

lint: setup
	$(PY) -m ruff check .
	$(PY) -m mypy

lint-docker: setup
	$(PY) -m pytest -q tests/docker -m "not slow"

# The fast tier: no training, no servers, no cluster (models are tiny random-weight fixtures).
test-fast: setup lint
	$(PY) -m pytest -q -m "not slow and not spark and not server and not browser and not jax"

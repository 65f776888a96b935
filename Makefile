# clothsim: one command per job. Each target sets up what it needs first, idempotently:
#   make demo      set up, then drape the T-shirt scene on the mannequin and render catalog shots -> out/demo/
#   make test      set up, then run the CPU test suite (what CI runs)
#   make test-gpu  set up, then run the GPU-only tests (skipped without CUDA)
#   make bench     set up, then run the simulation benchmark grid
#   make clean     remove outputs and caches (keeps .venv; `make distclean` removes it too)
#
# Setup = a virtual environment in .venv (python3 >= 3.11) with `pip install -e '.[dev,torch]'`,
# plus the Debian packages the renderer needs (libegl1 libgl1, xvfb for preview tests).
# Stamp files in .venv record what is done; editing pyproject.toml re-runs the pip step.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
SYSTEM_PACKAGES := libegl1 libgl1 xvfb
PY_STAMP := $(VENV)/.stamp-python
SYS_STAMP := $(VENV)/.stamp-system

.PHONY: help setup demo test test-gpu bench clean distclean

help:
	@sed -n '2,7s/^# \{0,1\}//p' $(firstword $(MAKEFILE_LIST))

setup: $(PY_STAMP) $(SYS_STAMP)

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { \
	  echo "error: clothsim needs Python >= 3.11; '$(PYTHON)' is $$($(PYTHON) --version 2>&1)." >&2; \
	  echo "       Run with PYTHON=/path/to/python3.11 (e.g. make test PYTHON=python3.12)." >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)

$(PY_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev,torch]'
	@touch $@

# Debian packages for the renderer (EGL/GL) and the preview tests (xvfb). Missing apt or sudo is
# not fatal: the simulator and its tests do not need them; we say what to install and go on
# (without touching the stamp, so the next run checks again).
$(SYS_STAMP): | $(BIN)/python
	@missing=""; \
	for p in $(SYSTEM_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' "$$p" 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -z "$$missing" ]; then \
	  echo "system packages present: $(SYSTEM_PACKAGES)"; \
	elif ! command -v apt-get >/dev/null 2>&1; then \
	  echo "note: apt-get not found; install these with your package manager for rendering:$$missing"; exit 0; \
	else \
	  if [ "$$(id -u)" -eq 0 ]; then sudo=""; \
	  elif command -v sudo >/dev/null 2>&1; then sudo="sudo"; \
	  else echo "note: not root and no sudo; install as root: apt-get install$$missing"; exit 0; fi; \
	  echo "installing system packages:$$missing"; \
	  if $$sudo apt-get update -qq && \
	     DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends $$missing >/dev/null; then \
	    echo "installed:$$missing"; \
	  else \
	    echo "warning: apt-get failed; rendering will need:$$missing"; exit 0; \
	  fi; \
	fi; \
	touch $@

demo: setup
	$(BIN)/clothsim render scenes/tshirt.toml -o out/demo --size 1080x1440 --views front,three_quarter --level 1

test: setup
	$(BIN)/python -m pytest

test-gpu: setup
	$(BIN)/python -m pytest -m gpu

bench: setup
	$(BIN)/python benchmarks/sim_grid.py

clean:
	rm -rf out/ build/ dist/ .pytest_cache/ test-artifacts/ *.egg-info
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV)

# Two commands do everything from nothing (see README):  make book   and   make test
# Each sets up what is missing first: .venv from requirements.txt (the lock), the editable `attn`,
# and the site's own copies of MathJax and the widget runtime (npm, package-lock.json -> _assets/).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PORT   ?= 8000

.PHONY: help setup book test unit lint execute reader lab serve bench mutate clean
.DEFAULT_GOAL := help

help:
	@echo "make book     build the static site into _build/html (from the stored notebook outputs)"
	@echo "make test     run the whole verification: pytest --nbval (package, notebooks, site, browser)"
	@echo "make unit     the quick loop (< 1 min): pytest -m 'not slow' (no notebooks, site or browser)"
	@echo "make execute  re-execute the chapters after changing src/attn (NB=book/x.ipynb for one)"
	@echo "make reader   rewrite the reader editions (reader/book/*.ipynb) from the stored outputs"
	@echo "make lab      open JupyterLab on the reader editions, with live widgets"
	@echo "make serve    serve _build/html on http://127.0.0.1:$(PORT)"
	@echo "make bench    run the benchmarks in benchmarks/"
	@echo "make mutate   mutation testing of the core modules with mutmut (MODULES=functional masks ...; not in CI)"

$(BIN)/python:
	@$(PYTHON) -c 'import sys; assert sys.version_info[:2] == (3, 11), "Python 3.11 is required, found " + sys.version.split()[0] + " (set PYTHON=...)"'
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: requirements.txt pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
	@touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --silent
	@touch $@

_assets/.installed: node_modules/.installed $(VENV)/.installed scripts/assets.py
	$(BIN)/python scripts/assets.py
	@touch $@

setup: $(VENV)/.installed _assets/.installed

book: setup
	$(BIN)/jupyter-book build . --all -W -n --keep-going
	@echo "Built: open _build/html/index.html, or run 'make serve' and visit http://127.0.0.1:$(PORT)"

test: setup
	$(BIN)/python -m pytest --nbval
	$(BIN)/python -m pytest --fresh-env -m fresh_env tests/test_fresh_env.py

unit: setup
	$(BIN)/python -m pytest -m "not slow"

lint: setup
	$(BIN)/ruff check .

execute: setup
	$(BIN)/python scripts/notebooks.py execute $(NB)

reader: setup
	$(BIN)/python scripts/notebooks.py reader $(NB)

lab: setup
	$(BIN)/jupyter lab --ServerApp.ip=127.0.0.1 --ServerApp.root_dir=reader/book

serve:
	$(BIN)/python -m http.server --bind 127.0.0.1 --directory _build/html $(PORT)

bench: setup
	@for b in benchmarks/*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

# Mutation testing (minutes of CPU per module): each core module against its own quick tests.
mutate: setup
	$(BIN)/python scripts/mutate.py $(MODULES)

clean:
	rm -rf _build _assets

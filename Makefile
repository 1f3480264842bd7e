# Two commands do everything from nothing (see README):  make book   and   make test
# Each sets up what is missing first: .venv from requirements.txt (the lock), the editable `attn`,
# and the site's own copies of MathJax and the widget runtime (npm, package-lock.json -> _assets/).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PORT   ?= 8000
# Parallel tests (pytest-xdist): JOBS workers, one more than the machine's cores. A good part of the
# suite's time is waiting (the site build on one core, pages loading in Chromium, kernels starting),
# which a third worker fills on two cores: 467 s with 2 workers, 394-444 s with 3; with 4 the
# workers fight for the cores (530 s, CPU 907 s against 759 s). Since bytecode is compiled once and
# the browser passes share contexts, less is waiting: 324 s with 2 workers, 311-317 s with 3 (this
# round's machine, 439 s and 473 s of CPU), so 3 stays. Each notebook, the site tests and the
# fresh environment stay on one worker each (--dist loadfile; longest first: tests/conftest.py).
JOBS   ?= $(shell $(PYTHON) -c "import os; print(len(os.sched_getaffinity(0)) + 1)" 2>/dev/null || echo 3)
XDIST  := -n $(JOBS) --dist loadfile --no-loadscope-reorder
# Colab's Python for `make test-newest` (any 3.12 interpreter; pyenv's where the PATH has none)
PYTHON_NEWEST ?= $(firstword $(shell command -v python3.12 >/dev/null 2>&1 && python3.12 -c 'import sys; print(sys.executable)' 2>/dev/null) $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3.12) python3.12)

.PHONY: help setup book pdf test audit test-cpus test-newest unit lint execute reader lab serve bench mutate clean
.DEFAULT_GOAL := help

help:
	@echo "make book     build the static site into _build/html (from the stored notebook outputs), with the book's PDFs"
	@echo "make pdf      print the whole book from the built site, one PDF per edition (Chromium, no TeX)"
	@echo "make test     run the whole verification: pytest --nbval --fresh-env (package, notebooks, site, browser, fresh env), then Lighthouse"
	@echo "make audit    Lighthouse (mobile) on a page of each type of _build/html (SITE=..., PAGES=...)"
	@echo "make test-cpus    every chapter with nbval under simulated other CPUs (AVX2, no SIMD, another thread count)"
	@echo "make test-newest  every chapter with nbval in a fresh env: Python 3.12, the newest torch, numpy, transformers"
	@echo "make unit     the quick loop (< 1 min): pytest -m 'not slow' (no notebooks, site or browser)"
	@echo "make execute  re-execute the chapters after changing src/attn (NB=book/x.ipynb for one)"
	@echo "make reader   rewrite the reader editions (reader/book/*.ipynb) from the stored outputs"
	@echo "make lab      open JupyterLab on the reader editions, with live widgets"
	@echo "make serve    serve _build/html on http://127.0.0.1:$(PORT)"
	@echo "make bench    run the benchmarks in benchmarks/"
	@echo "make mutate   mutation testing of the core modules with mutmut (MODULES=functional masks ...; not in CI)"

$(BIN)/python:
	@$(PYTHON) -c 'import sys; assert sys.version_info[:2] in [(3, 11), (3, 12)], "Python 3.11 or 3.12 is required (the lock is made on 3.11), found " + sys.version.split()[0] + " (set PYTHON=...)"'
	$(PYTHON) -m venv $(VENV)

# uv (pinned in the lock) installs the lock: packages are unpacked once into its cache (~/.cache/uv)
# and linked from there, from the indexes pip is configured with (scripts/uv_args.py). Their bytecode
# is compiled once here (~30 s of CPU): where PYTHONDONTWRITEBYTECODE is set (as on this project's
# machines) Python never caches it, and every process of `make test` (3 workers, 13 kernels, the site
# builds, JupyterLab) would compile torch, transformers and Sphinx from source again (4.5 s -> 2.0 s
# to import torch, attn, matplotlib and transformers; 18 s -> 10 s to collect the tests).
$(VENV)/.installed: requirements.txt pyproject.toml scripts/uv_args.py | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check "$$(grep -E '^uv==' requirements.txt)"
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python $$($(BIN)/python -m scripts.uv_args) -r requirements.txt
	$(BIN)/uv pip install --quiet --python $(BIN)/python --no-deps -e .
	@touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --silent
	@touch $@

_assets/.installed: node_modules/.installed $(VENV)/.installed scripts/assets.py src/attn/book/widgets/static_runtime.js
	$(BIN)/python -m scripts.assets
	@touch $@

setup: $(VENV)/.installed _assets/.installed

# Both editions at once: English at the root of _build/html, Chinese (zh/) under _build/html/zh/ (scripts/site.py).
book: setup
	$(BIN)/python -m scripts.site
	$(BIN)/python -m scripts.pdf

# The whole book as one PDF per edition, printed by Chromium from the built site (scripts/pdf.py),
# which the introduction then offers; `make book` makes them too.
pdf: _assets/.installed
	$(BIN)/python -m scripts.pdf
	@echo "Built: open _build/html/index.html, or run 'make serve' and visit http://127.0.0.1:$(PORT) (中文: /zh/)"

# Two phases. The parallel suite, then Lighthouse alone (tests/test_lighthouse.py) on the site that
# suite built (under TESTTMP, pytest's --basetemp): Lighthouse turns the CPU time a page costs into
# a phone's timings, so it audits the pages, not the load, only when nothing else runs (the busy
# machine scored chapters 38-41 that a quiet one scored 43-54). 9 pages, 5-10 s each (scripts/audit.py
# SAMPLE; one Node process audits them all, with a fresh browser each: scripts/lighthouse.mjs; 115 -> 70 s),
# each printed as it is audited (-s: the CI log keeps the table); scripts/audit.py also scales the CPU
# slowdown to the machine. Two audits at once (tried with the command line tool, before the runner) took
# 64-70 s instead of 114 s (three runs against two), within the bounds, but each measured the other:
# book/api.html (367 elements, TBT 0 ms alone) had 97 ms, the heaviest TBT rose from 108 to 125 ms (each
# pinned to one core: 113-157 ms on three pages), so one at a time.
TESTTMP ?= _build/test-run
# (pytest makes --basetemp but not its parent, and a clean clone has no _build/)
test: setup
	@mkdir -p $(dir $(TESTTMP))
	$(BIN)/python -m pytest --nbval --fresh-env $(XDIST) --durations=25 --basetemp=$(TESTTMP) --ignore=tests/test_lighthouse.py
	ATTN_SITE=$(TESTTMP)/site/_build/html $(BIN)/python -m pytest tests/test_lighthouse.py -q -s

test-cpus: setup
	$(BIN)/python -m scripts.nbval_runs

test-newest: setup
	$(BIN)/python -m scripts.fresh_env --newest --nbval --python $(PYTHON_NEWEST)

unit: setup
	$(BIN)/python -m pytest -m "not slow" $(XDIST)

lint: setup
	$(BIN)/ruff check .

execute: setup
	$(BIN)/python -m scripts.notebooks execute $(NB)

reader: setup
	$(BIN)/python -m scripts.notebooks reader $(NB)

lab: setup
	$(BIN)/jupyter lab --ServerApp.ip=127.0.0.1 --ServerApp.root_dir=reader/book

audit: setup
	$(BIN)/python -m scripts.audit $(or $(SITE),_build/html) $(PAGES) --calibrate

serve:
	$(BIN)/python -m http.server --bind 127.0.0.1 --directory _build/html $(PORT)

bench: setup
	@for b in benchmarks/*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

# Mutation testing (minutes of CPU per module): each core module against its own quick tests.
mutate: setup
	$(BIN)/python -m scripts.mutate $(MODULES)

clean:
	rm -rf _build _assets

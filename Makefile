# The two commands a reader needs: `make book` and `make test`. `make help` lists the rest.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
BOOK ?= chapters
OUT ?= _build
STAMP_TOOLS := $(VENV)/.installed-tools
STAMP_DEV := $(VENV)/.installed-dev
STAMP_SYS := $(VENV)/.installed-system

# pip warns about every index folder this machine's pip.conf names but lacks; keep the real errors, drop that noise.
PIP_INSTALL = set -o pipefail; $(BIN)/pip install -q --disable-pip-version-check $(1) 2>&1 | { grep -v "^WARNING: Location '.*' is ignored" || true; }

comma := ,

.DEFAULT_GOAL := help
.PHONY: help book html pdf epub test lint check-links check-links-html check-links-all clean install install-dev system-deps book-deps
.PHONY: check-programs serve bench node-deps

help: ## list the targets
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-18s %s\n", $$1, $$2}'

$(BIN)/python:
	@$(PYTHON) -c 'import ensurepip' 2>/dev/null || bash scripts/apt-install.sh "make" "Python's virtual environments" python3-venv
	$(PYTHON) -m venv $(VENV)
	$(call PIP_INSTALL,--upgrade pip)

$(STAMP_TOOLS): pyproject.toml | $(BIN)/python
	$(call PIP_INSTALL,-e '.[diagrams]')
	touch $@

$(STAMP_DEV): pyproject.toml $(STAMP_TOOLS)
	$(call PIP_INSTALL,-e '.[dev$(comma)scripts$(comma)diagrams]')
	touch $@

system-deps: ## install the Debian packages the tests need (when missing; as root or with passwordless sudo)
	bash scripts/install-system-deps.sh

book-deps: $(STAMP_TOOLS) ## install the Debian packages the book's outputs need (derived from the book; SYSTEM_DEPS=no skips)
	@bash scripts/install-book-deps.sh $(BOOK)

install: $(STAMP_TOOLS) ## create .venv and install the book tool (and mermaid.js for diagrams, when npm is there)
	@bash scripts/install-node-deps.sh --optional

install-dev: $(STAMP_DEV) system-deps node-deps ## install everything the tests need

node-deps: ## install mermaid.js and the validators the tests run (axe-core, vnu-jar, DAISY Ace) from npm into node_modules/ (when missing)
	bash scripts/install-node-deps.sh

# Extra options for the build targets, e.g. BUILD_ARGS=--strict (what CI's book job runs: no warning either).
BUILD_ARGS ?=

book: book-deps install ## install what the book needs (Debian packages, mermaid.js), build every format and print where each output is
	$(BIN)/tools build all --book $(BOOK) --out $(OUT) $(BUILD_ARGS)

html: install ## build the HTML site into _build/html
	$(BIN)/tools build html --book $(BOOK) --out $(OUT)/html $(BUILD_ARGS)

pdf: install ## build the PDF into _build/book.pdf
	$(BIN)/tools build pdf --book $(BOOK) --out $(OUT)/book.pdf $(BUILD_ARGS)

epub: install ## build the EPUB into _build/book.epub
	$(BIN)/tools build epub --book $(BOOK) --out $(OUT)/book.epub $(BUILD_ARGS)

test: install-dev ## install what the tests need and run the whole suite
	$(BIN)/python -m pytest -n 2 --dist loadgroup

serve: install ## preview the site on 127.0.0.1:8000; it rebuilds and reloads as you edit
	$(BIN)/tools serve --book $(BOOK)

# e.g. BENCH_ARGS="--quick --only site,epub" or "--json run.json --record" (into BENCHMARKS.md); the books are copies of
# ../shared/corpus/ml-engineering; the baselines (MkDocs, Zensical, lychee, LinkChecker, matplotlib) go into
# .cache/bench-venv, pandoc from Debian when missing; scripts/bench.py lists the sections
BENCH_ARGS ?=

bench: install-dev ## every comparison of issues 19 and 37 on the real book (site, EPUB, PDF, link checks, live reload, scale) against its baseline, as ratios
	$(BIN)/python scripts/bench.py $(BENCH_ARGS)

# Extra options for the check-links targets, e.g. LINK_ARGS="--format github" (what CI runs).
LINK_ARGS ?=

check-links: install ## check every local link and anchor of the book (LINK_ARGS="..." adds options)
	$(BIN)/tools check-links --book $(BOOK) $(LINK_ARGS)

$(BIN)/linkchecker: | $(STAMP_TOOLS)
	$(call PIP_INSTALL,'linkchecker>=10.4')

check-links-html: install $(BIN)/linkchecker ## check links, then build the site and cross-check it with LinkChecker
	$(BIN)/tools check-links --book $(BOOK) --html $(LINK_ARGS)

check-links-all: install $(BIN)/linkchecker ## local check, LinkChecker cross-check and every external URL (cached)
	$(BIN)/tools check-links --book $(BOOK) --html --external $(LINK_ARGS)

check-programs: install ## check that every script the chapters link to starts (--help, bash -n, shellcheck)
	$(BIN)/tools check-programs --book $(BOOK)

clean: ## remove build outputs and caches (keeps .venv)
	rm -rf $(OUT) .cache .pytest_cache .hypothesis .mypy_cache .ruff_cache

# The source checks authors rely on; every check runs, and the target fails when any of them found something,
# saying how to fix each kind. The code checks (ruff, mypy) read their settings from pyproject.toml.
LINT_CODESPELL = $(BIN)/codespell --ignore-words build/codespell-words.txt --skip '*.png,*.jpg,*.pdf,*.epub'
lint: $(STAMP_DEV) ## check the chapters (tables GitHub renders, one line per paragraph, spelling) and the code (ruff, mypy, the layers)
	@status=0; hints=""; \
	$(BIN)/tools fix-tables --check $(BOOK) || { status=1; hints="$$hints\n  tables: run '$(BIN)/tools fix-tables $(BOOK)'"; }; \
	$(BIN)/tools check-style $(BOOK) || { status=1; hints="$$hints\n  style: one line per paragraph, as each message above says"; }; \
	$(LINT_CODESPELL) $(BOOK) || { status=1; hints="$$hints\n  spelling: fix the word or add it to build/codespell-words.txt"; }; \
	$(BIN)/ruff check . || { status=1; hints="$$hints\n  ruff: run '$(BIN)/ruff check --fix .' for what it can fix, then fix the rest by hand (never 'ruff format')"; }; \
	$(BIN)/mypy || { status=1; hints="$$hints\n  mypy: fix the types it names in tools/ (settings: [tool.mypy] in pyproject.toml)"; }; \
	$(BIN)/lint-imports || { status=1; hints="$$hints\n  imports: a module imports upward or in a cycle; see ARCHITECTURE.md, Layers"; }; \
	if [ $$status -ne 0 ]; then echo -e "make lint: problems found:$$hints"; fi; \
	exit $$status

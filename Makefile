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

.DEFAULT_GOAL := help
.PHONY: help book html pdf epub test lint check-links check-links-html check-links-all clean install install-dev system-deps
.PHONY: check-programs

help: ## list the targets
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-18s %s\n", $$1, $$2}'

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(call PIP_INSTALL,--upgrade pip)

$(STAMP_TOOLS): pyproject.toml | $(BIN)/python
	$(call PIP_INSTALL,-e .)
	touch $@

$(STAMP_DEV): pyproject.toml $(STAMP_TOOLS)
	$(call PIP_INSTALL,-e '.[dev,scripts]')
	touch $@

system-deps: ## install the Debian packages the tests need (when missing)
	bash scripts/install-system-deps.sh

install: $(STAMP_TOOLS) ## create .venv and install the book tool

install-dev: $(STAMP_DEV) system-deps ## install everything the tests need

book: install ## build every format and print where each output is
	$(BIN)/tools build all --book $(BOOK) --out $(OUT)

html: install ## build the HTML site into _build/html
	$(BIN)/tools build html --book $(BOOK) --out $(OUT)/html

pdf: install ## build the PDF into _build/book.pdf
	$(BIN)/tools build pdf --book $(BOOK) --out $(OUT)/book.pdf

epub: install ## build the EPUB into _build/book.epub
	$(BIN)/tools build epub --book $(BOOK) --out $(OUT)/book.epub

test: install-dev ## install what the tests need and run the whole suite
	$(BIN)/python -m pytest -n 2 --dist loadgroup

check-links: install ## check every local link and anchor of the book
	$(BIN)/tools check-links --book $(BOOK)

check-programs: install ## check that every script the chapters link to starts (--help, bash -n, shellcheck)
	$(BIN)/tools check-programs --book $(BOOK)

clean: ## remove build outputs and caches (keeps .venv)
	rm -rf $(OUT) .cache .pytest_cache .hypothesis

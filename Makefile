# The two commands of the README:  `make book`  and  `make test`.
# Both create (or reuse) the virtual environment .venv and install what they need.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
# PyTorch, pinned and installed first, so that no dependency's range pulls in another version. From PyPI on
# Linux this is the CUDA build; the CPU wheel is on PyTorch's own index:
# `PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu make test` (docs/running.md, What they download).
TORCH  ?= torch==2.13.0
LRA_KIT_SCALE_TEST ?= smoke
LRA_KIT_SCALE_BOOK ?= book
# One intra-op thread in every notebook kernel (nbval and the book). The pages' models are small (d 64, at
# most a few thousand positions): on 2 cores a second thread gains nothing when the machine is idle (copy
# task at book scale, 100 steps: 7.1 s with two threads, 7.4 s with one), and when anything else runs
# beside the build the two OpenMP threads wait on each other at every small op: 205 s against 6 s. The copy
# page's live cell then outlived the 600 s cell timeout; nbclient shut the kernel down, and the kernel's late
# reply logged "ZMQError: Socket operation on non-socket" (a symptom of the timeout, not its cause).
# The package makes the same choice without make: LRA_KIT_THREADS, default 1 (lra_kit/threads.py), which the
# book's Sphinx extension exports to its kernels and `lra-kit` applies; nbval's kernels get it from here.
NOTEBOOK_THREADS ?= $(or $(LRA_KIT_THREADS),1)
# The offline datasets (tests marked `data`; docs/data-provenance.md): an optional default path,
# used when present and LRA_KIT_DATA is not set.
ifneq ($(wildcard ../shared/data),)
LRA_KIT_DATA ?= $(abspath ../shared/data)
endif
ifdef LRA_KIT_DATA
export LRA_KIT_DATA
endif

.PHONY: book test nbval venv bench clean test-browser chromium gpu-check data readme

$(VENV)/.created:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet "$(TORCH)"
	touch $@

$(VENV)/.test: $(VENV)/.created pyproject.toml
	$(PIP) install --quiet -e ".[test]"
	touch $@

$(VENV)/.book: $(VENV)/.created pyproject.toml
	$(PIP) install --quiet -e ".[book,test]"
	touch $@

venv: $(VENV)/.test

# Text notebooks (docs/design.md §1): book/*.md and notebooks/*.md that carry a jupytext header.
# nbval only collects .ipynb, so `make nbval` converts them into the git-ignored $(NBVAL_DIR)
# (same sub-folders, sources linked in) and runs them there; nothing generated is committed.
NBVAL_DIR      := .nbval
TEXT_NOTEBOOKS  = $(shell grep -l '^jupytext:' book/*.md notebooks/*.md 2>/dev/null)

## make test: ruff, the unit tests, then the notebooks under nbval at smoke scale. tests/browser needs the book
## built at book scale and is run by `make test-browser` (where CI=true, a browser test that cannot run fails).
test: $(VENV)/.test
	$(PY) -m ruff check lra_kit tests
	@command -v node >/dev/null || echo "make test: no node: the JavaScript tests (tests/js, run by tests/test_js_alone.py) are skipped"
	LRA_KIT_SCALE=$(LRA_KIT_SCALE_TEST) $(PY) -m pytest --durations=20 --ignore=tests/browser tests
	$(MAKE) --no-print-directory nbval

## make data: the datasets the notebooks read (MNIST 11 MB, IMDB 84 MB), fetched into $$LRA_KIT_DATA (default
## ~/.cache/lra_kit) unless present there (official files or the offline copies); offline (or LRA_KIT_FETCH=0) it
## says what is missing within seconds and the pages that need it show a notice. Never fails for a missing dataset.
BOOK_DATA ?= mnist imdb
data: $(VENV)/.test
	$(PY) -m lra_kit data ensure $(BOOK_DATA)

## make nbval: every text notebook, converted with jupytext, run by `pytest --nbval-lax` at smoke scale.
## The pages' checks on trained models must hold on every CPU: PyTorch's kernels round differently with the
## instruction set (AVX-512, AVX2, none), which changes a trained model in its last bits, and once picked a
## different attention head in chapter 7. `ATEN_CPU_CAPABILITY=avx2 make nbval` (or `=default`, and
## `make book` the same way) runs the pages as a CPU without AVX-512 would.
nbval: $(VENV)/.test data
	@rm -rf $(NBVAL_DIR)
	@mkdir -p $(NBVAL_DIR)/book $(NBVAL_DIR)/notebooks
	@# mirror the layout with links, so that a notebook's relative paths (its own .md, ../results,
	@# ../lra_kit) resolve from $(NBVAL_DIR)/<dir> exactly as from <dir>
	@for f in book/* notebooks/*; do [ -e "$$f" ] && ln -s ../../$$f $(NBVAL_DIR)/$$f; done; true
	@for f in results lra_kit references.bib; do ln -s ../$$f $(NBVAL_DIR)/$$f; done
	@echo "make nbval: $(words $(TEXT_NOTEBOOKS)) text notebooks converted into $(NBVAL_DIR)/ (jupytext), run at LRA_KIT_SCALE=$(LRA_KIT_SCALE_TEST)"
	@for f in $(TEXT_NOTEBOOKS); do \
	  $(PY) -m jupytext --quiet --to ipynb --output $(NBVAL_DIR)/$${f%.md}.ipynb $$f || exit 1; \
	done
	OMP_NUM_THREADS=$(NOTEBOOK_THREADS) LRA_KIT_SCALE=$(LRA_KIT_SCALE_TEST) $(PY) -m pytest -p no:cacheprovider --nbval-lax --nbval-current-env \
	  --nbval-cell-timeout=900 --durations=0 $(NBVAL_DIR)

## make book: execute every chapter at book scale and build the HTML; warnings are errors (-W),
## references are checked (-n), a failing cell fails the build (_config.yml: raise_on_error);
## --all re-reads every page, so every chapter re-executes even when only lra_kit changed
book: $(VENV)/.book data
	@start=$$(date +%s); \
	OMP_NUM_THREADS=$(NOTEBOOK_THREADS) LRA_KIT_SCALE=$(LRA_KIT_SCALE_BOOK) $(VENV)/bin/jupyter-book build . --all -W -n \
	  --keep-going || exit $$?; \
	echo "Book built in $$(( $$(date +%s) - start )) s at LRA_KIT_SCALE=$(LRA_KIT_SCALE_BOOK)."; \
	echo "The HTML is at: $(CURDIR)/_build/html/index.html"

## make test-browser: build the book, then open every page in headless Chromium, offline, at 1280 px
## (tests/browser): no raw TeX, no code block scrolling sideways, no machine path, every slider moved and
## its read-outs equal to the Python functions. Installs selenium into the venv and, where apt-get may run,
## Debian's chromium + chromium-driver (make chromium); without a browser the tests are skipped with the reason,
## not passed, and where CI=true they fail (tests/browser/chromium.py).
test-browser: $(VENV)/.book chromium
	$(PIP) install --quiet selenium
	OMP_NUM_THREADS=$(NOTEBOOK_THREADS) LRA_KIT_SCALE=$(LRA_KIT_SCALE_BOOK) $(VENV)/bin/jupyter-book build . --keep-going
	LRA_KIT_BOOK_HTML=$(CURDIR)/_build/html $(PY) -m pytest -rs tests/browser

## make chromium: Debian's chromium and chromium-driver, with apt-get (as root, or with sudo -n), when the browser or
## its driver is missing: a Chromium without chromedriver cannot be driven, and every browser test would be
## skipped (failed in CI). Says so, and fails nothing, where they cannot be installed.
CHROMIUM     ?= chromium chromium-browser
CHROMEDRIVER ?= chromedriver
APT_GET      ?= apt-get
SUDO         ?= $(shell [ "$$(id -u)" = 0 ] || echo "sudo -n")
chromium:
	@browser=; for b in $(CHROMIUM); do command -v $$b >/dev/null 2>&1 && browser=$$b; done; \
	if [ -z "$$browser" ] || ! command -v $(CHROMEDRIVER) >/dev/null 2>&1; then \
	  echo "make chromium: no Chromium or no $(CHROMEDRIVER): installing chromium and chromium-driver"; \
	  ( $(SUDO) $(APT_GET) update -qq && $(SUDO) $(APT_GET) install -y -qq chromium chromium-driver ) >/dev/null 2>&1 \
	    || echo "make chromium: could not install them; the browser tests will be skipped (failed where CI=true)"; \
	fi

bench: $(VENV)/.test
	$(PY) -m lra_kit.bench.attention

## make readme: regenerate, from results/, the README's table of reproductions and docs/budget.md's run costs
## (the parts between their <!-- NAME:start --> and <!-- NAME:end --> markers; lra_kit/reports.py). Run it after
## recording a run; tests/test_readme.py fails while they are out of date (`lra-kit report --check` says which).
readme: $(VENV)/.test
	$(PY) -m lra_kit report

## make gpu-check OUT=DIR: the GPU campaign (docs/gpu.md), steps of <= 8 min, JSON into DIR; needs a CUDA device.
## It stops after TIME_LIMIT seconds of steps (480: one 15-minute lease; the attention benchmark runs first)
OUT ?= results/gpu-check
TIME_LIMIT ?= 480
gpu-check: $(VENV)/.test
	$(PY) -m lra_kit.bench.gpu_check --out $(OUT) --time-limit $(TIME_LIMIT)

clean:
	rm -rf _build .jupyter_cache .pytest_cache $(NBVAL_DIR)

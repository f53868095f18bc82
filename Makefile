# The two commands of the README:  `make book`  and  `make test`.
# Both create (or reuse) the virtual environment .venv and install what they need.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
# CPU wheel of PyTorch; installed first so that no CUDA build is pulled in by a range.
TORCH  ?= torch==2.13.0
LRA_KIT_SCALE_TEST ?= smoke
LRA_KIT_SCALE_BOOK ?= book

.PHONY: book test venv bench clean

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

## make test: unit tests, then the notebooks under nbval at smoke scale
test: $(VENV)/.test
	LRA_KIT_SCALE=$(LRA_KIT_SCALE_TEST) $(PY) -m pytest tests

## make book: build the Jupyter Book at book scale (until the book exists: the attention benchmark)
book: $(VENV)/.book
	LRA_KIT_SCALE=$(LRA_KIT_SCALE_BOOK) $(PY) -m lra_kit.bench.attention

bench: $(VENV)/.test
	$(PY) -m lra_kit.bench.attention

clean:
	rm -rf _build .jupyter_cache .pytest_cache

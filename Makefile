# structperc — every target sets up .venv on first use.  `make help` lists them.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
TORCH_PIN := torch==2.13.0

# The CoNLL data folder: $STRUCTPERC_DATA if set, else ../shared/data when it exists.
ifeq ($(origin STRUCTPERC_DATA), undefined)
  ifneq ($(wildcard ../shared/data),)
    export STRUCTPERC_DATA := $(abspath ../shared/data)
  endif
endif

.DEFAULT_GOAL := help
.PHONY: help setup run tagger smoke test docs docs-serve bench bench-quick profile lint format tb clean

help: ## Show this help
	@grep -E '^[a-zA-Z_-]+:.*?## .*$$' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  \033[36m%-12s\033[0m %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q $(TORCH_PIN)
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP) ## Create .venv and install structperc with its dev tools

# Where `make tagger` trains the column tagger (POS + chunks for text without those columns) and
# `make run` writes the main job, which carries a copy of the tagger: then
#   .venv/bin/structperc-tag model=runs/main input=notes.txt output=- input_format=text output_format=jsonl
TAGGER := runs/tagchunk
MAIN_RUN := runs/main

# The main job's word classes (issue 34: k-means of CBOW vectors and Brown clusters, m = 1000, of
# the data folder's unlabeled text, experiments/wordclasses/): shipped as derived files, unpacked
# into the classes' cache, where a run finds them by their keys (without them, or with other
# library versions, a run builds them again: ~5 min for the vectors, ~48 min for Brown)
WC_CACHE := .cache/wordclasses
WC_SHIPPED := experiments/wordclasses/classes
WC_FILES := $(patsubst $(WC_SHIPPED)/%.gz,$(WC_CACHE)/%,$(wildcard $(WC_SHIPPED)/*.json.gz))
MAIN_FEATURES := features=kazama_wordclasses features.word_classes.architecture=cbow features.word_classes.brown=1000

run: $(STAMP) $(TAGGER)/results.json $(WC_FILES) ## The main job: Kazama & Torisawa's proposed algorithm with non-local features and word classes on CoNLL-2003, into runs/main (with the column tagger: make tagger), and its report page runs/main/report.html
	$(PY) -m structperc.run +experiment=conll03_nonlocal $(MAIN_FEATURES) features.tagger=$(TAGGER) hydra.run.dir=$(MAIN_RUN)
	$(PY) -m structperc.report.cli run=$(MAIN_RUN)

$(WC_CACHE)/%.json: $(WC_SHIPPED)/%.json.gz
	mkdir -p $(WC_CACHE) && gunzip -c $< > $@.part && mv $@.part $@

tagger: $(TAGGER)/results.json ## The column tagger for raw text (POS tagger + chunker on CoNLL-2000) in runs/tagchunk: ~9 min once, then cached

# results.json is the run's last file: a training cut short leaves none and runs again
$(TAGGER)/results.json: | $(STAMP)
	$(PY) -m structperc.run +experiment=conll00_tagchunk task.dev_sentences=0 hydra.run.dir=$(TAGGER)

smoke: $(STAMP) ## One-minute runs on 40 documents (local and non-local)
	$(PY) -m structperc.run +experiment=conll03_local data.max_docs=40 trainer.max_epochs=3 hydra.run.dir=outputs/smoke_local
	$(PY) -m structperc.run +experiment=conll03_nonlocal data.max_docs=40 trainer.max_epochs=2 hydra.run.dir=outputs/smoke_nonlocal

# pytest-xdist workers: one per core, at most 4 (each holds its own torch, ~0.4 GB); TEST_JOBS=0
# runs the suite in one process.  A test file stays on one worker (--dist loadfile), so the
# models a file's tests share are trained once.
TEST_JOBS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); echo $$(( n < 4 ? n : 4 )))

test: $(STAMP) ## Run the test suite (synthetic data and slices of the real data; in TEST_JOBS processes)
	$(PY) -m pytest -q -n $(TEST_JOBS) --dist loadfile

docs: $(STAMP) ## Build the documentation site into site/ (MkDocs, warnings as errors)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

docs-serve: $(STAMP) ## Serve the documentation at http://127.0.0.1:8000, rebuilt as the files change
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve

bench: $(STAMP) ## Every speed row (NER and POS tagger vs CRFsuite, CRF, n-best, proposed, label-chunk DP, rerank, scoring vs seqeval, templates, the sklearn face vs sklearn-crfsuite), ~20-25 min plus an estimated 30-40 for the sklearn section (--only picks sections); writes experiments/bench/
	$(PY) experiments/bench/bench.py

bench-quick: $(STAMP) ## The same benchmark on small slices (~2 min, checks the plumbing); writes experiments/bench/quick/
	$(PY) experiments/bench/bench.py --quick

profile: $(STAMP) ## Profile a perceptron epoch, a proposed epoch, a CRF iteration (~5 min); experiments/bench/profile.json + README
	$(PY) experiments/bench/profile_bench.py

lint: $(STAMP) ## ruff check and format check
	$(VENV)/bin/ruff check structperc tests experiments tools docs/examples
	$(VENV)/bin/ruff format --check structperc tests experiments tools docs/examples

format: $(STAMP) ## ruff fix and format
	$(VENV)/bin/ruff check --fix structperc tests experiments tools docs/examples
	$(VENV)/bin/ruff format structperc tests experiments tools docs/examples

tb: $(STAMP) ## TensorBoard over all runs (outputs/ and multirun/)
	$(VENV)/bin/tensorboard --logdir . --host 127.0.0.1

clean: ## Remove the venv, caches and run outputs
	rm -rf $(VENV) .cache outputs multirun site .pytest_cache .ruff_cache

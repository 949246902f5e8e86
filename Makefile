# reveal-lab: `make help` lists the targets. Each creates or reuses .venv itself.
.DEFAULT_GOAL := help
PRESET ?= full
OUT ?= out/reproduce
# notebooks `make reproduce` runs at once, each in its own kernel
JOBS ?= 2

help:  ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

setup:  ## create/reuse .venv with everything (no-op when up to date)
	@scripts/bootstrap.sh all,workloads

reproduce: setup  ## the main job: reproduce the studies on the bundled dataset into $(OUT)
	.venv/bin/reveal-lab reproduce --preset $(PRESET) --out $(OUT) --jobs $(JOBS)

test: setup  ## lint (ruff), then the whole test suite on every core (pytest-xdist)
	.venv/bin/ruff check .
	.venv/bin/python -m pytest -n auto --dist loadgroup

lab: setup  ## open the notebooks in JupyterLab (the default environment has it)
	.venv/bin/reveal-lab lab

test-latest:  ## run the suite in .venv-latest with the newest releases (reports drift; never fails make test)
	@scripts/test_latest.sh

lock:  ## move requirements/lock.txt to the versions in .venv-latest (after a green make test-latest)
	@scripts/lock.sh

bench: setup  ## run the performance benchmarks (results in benchmarks/results/; a quiet machine)
	.venv/bin/python benchmarks/run_all.py

bench-quick: setup  ## each benchmark's --quick run (minutes; shows they work, numbers not quotable; out/bench/quick/)
	.venv/bin/python benchmarks/run_all.py --quick --skip labelled_servers

record-lab:  ## (root, a quiet machine, ~95 min) record v2's plan with 15 s warm-ups into data/lab, refresh the HF export
	WARMUP=$${WARMUP:-15s} scripts/record_lab_dataset.sh v2

.PHONY: help setup reproduce test test-latest lock lab bench bench-quick record-lab

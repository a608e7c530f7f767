# Two commands do all set-up on a fresh machine: `make check` and `make test`.
PYTHON ?= python3.11
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# laplace-torch 0.3 and the backends it imports, without their torchvision requirement
# (never imported at run time; torchvision from PyPI breaks beside the CPU torch). Their
# other dependencies come with the extras (pyproject.toml, [laplace-torch]).
LAPLACE_TORCH := laplace-torch==0.3 backpack-for-pytorch==1.7.1 curvlinops-for-pytorch==3.0.1 asdfghjkl==0.1a4

# pytest-xdist workers: 2 on 2 cores. --dist loadgroup keeps the claim and mutant tests of each
# unit of work (the claims that share cached experiments) on one worker, in order, so its
# mutants reuse the true results they name (as `make check`).
TEST_WORKERS ?= 2

# glibc's malloc for the suite and the check: freed blocks up to 32 MiB stay in the heap for
# reuse (the ceiling its dynamic threshold reaches anyway) instead of being unmapped and mapped
# again, page by zero-filled page, at every allocation of a network's batch. Where memory comes
# from changes, not the arithmetic (every verdict and mutant outcome of the suite is the same
# with and without it): it took the suite's system time from 148 to 66 CPU-s.
MALLOC := MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=268435456 MALLOC_TOP_PAD_=33554432

.PHONY: test check results full lint format bench gpu-check clean docs

$(STAMP): pyproject.toml setup.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	$(PY) -m pip install --quiet --no-deps $(LAPLACE_TORCH)
	touch $(STAMP)

test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(MALLOC) HYPOTHESIS_PROFILE=$${HYPOTHESIS_PROFILE:-ci} $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup

check: $(STAMP)
	$(MALLOC) $(VENV)/bin/laplace-lab check

# The check, then each paper's RESULTS.md verdicts and figures rewritten from it.
results: $(STAMP)
	$(MALLOC) $(VENV)/bin/laplace-lab check --write-results

# The papers' full sizes (hours), each decided claim's result written to its paper's
# recorded/full_<claim>.json: the paper-scale evidence of every later check (docs/verification.md).
# SCHEDULER=tcp://HOST:PORT runs it on a Dask cluster (or SCHEDULER=local); a rerun resumes.
full: $(STAMP)
	$(MALLOC) $(VENV)/bin/laplace-lab check --full --record --out report-full $(if $(SCHEDULER),--scheduler $(SCHEDULER))

lint: $(STAMP)
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

bench: $(STAMP)
	$(VENV)/bin/laplace-lab bench

# The documentation site (mkdocs.yml): docs/, each paper's RESULTS.md and the API reference
# from the docstrings, into site/; --strict makes every warning (a broken link, a docstring
# griffe cannot parse) an error. tests/test_docs.py builds it in `make test`.
docs: $(STAMP)
	$(VENV)/bin/mkdocs build --strict --site-dir site

# The laplace-torch scoreboard of each laplace-torch version (conformance/versions.py), each in
# an environment of its own under .venvs/ (built once, then reused), into docs/versions.md and
# docs/versions.json. It needs the package registry, so it is no part of `make test`.
.PHONY: versions
versions: $(STAMP)
	$(VENV)/bin/laplace-lab validate --versions --seed 0 --out docs

# On a machine with CUDA, CuPy and torch: the GPU tests and the GPU bench's quick rows, results
# in $(OUT) (docs/performance.md, "GPU"). Installs nothing into the machine's environment.
OUT ?= gpu-check
gpu-check:
	benchmarks/gpu_check.sh $(OUT) $(WHEELS)

clean:
	rm -rf $(VENV) report .pytest_cache .hypothesis

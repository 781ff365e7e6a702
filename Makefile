# schedgate — `make e2e` runs the scenarios, `make test` runs everything.
# Each target installs what it needs: a Python venv from PyPI and the pinned
# Kubernetes binaries built from Go modules (go/go.mod).

PYTHON  ?= python3
VENV    := .venv
PY      := $(VENV)/bin/python
PYTEST  := scripts/pytest
ARGS    ?=

# Python's compiled files are kept, in the cache folder rather than the tree: with none written (an
# environment with PYTHONDONTWRITEBYTECODE set), every pytest process (xdist workers, each mutant's run,
# the tests that start pytest) compiled schedgate and rewrote its asserts again (docs/benchmarks.md).
export PYTHONPYCACHEPREFIX ?= $(or $(SCHEDGATE_CACHE),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/schedgate)/pycache
export PYTHONDONTWRITEBYTECODE :=

.PHONY: help venv tools browser docs e2e repro e2e-kind unit test mutants fuzz bugs bench bench-fleet bench-providers soak matrix lint clean docker kind-image kind-up kind-down kind-smoke

help:
	@echo "make e2e       run the scenario suite against the profile under test (kind if Docker answers, else local)"
	@echo "make e2e-kind  the same suite on kind (starts Docker; builds the node image the first time)"
	@echo "make test      Go and Python unit tests, then the scenario suite"
	@echo "make unit      the unit tests by layer (tests/unit/), without those marked live"
	@echo "make repro SCENARIO=FILE   run one scenario file; artifacts and placement.html under artifacts/"
	@echo "make mutants   run the suite against each broken scheduler in clusters/mutants"
	@echo "make bugs      the bug gallery (e2e/bugs/) on every pinned version, one table (xfail: a known bug there)"
	@echo "make fuzz      generated clusters and pods through the scheduler (seed 0); a failure shrunk into artifacts/fuzz/ (FUZZ='--seed 7 ...')"
	@echo "make bench     print start-up, suite and bind-latency figures"
	@echo "make soak N=20 the local suite N times: per-test pass counts, slowest tests (PROVIDER=kind N=5)"
	@echo "make bench-fleet  a live fleet (10,000 kwok nodes, 50,000 pods Running), then 1,000 and 5,000 API-only nodes: start, memory, pods/s, p50/p99, harness overhead (ARGS='--live 1000,5000 --sizes 1000')"
	@echo "make bench-providers   local and kind side by side: start to ready, node image build (ARGS=--suites: suite times)"
	@echo "make matrix    the local suite once per pinned Kubernetes minor (go/go.mod, go/pins/): one table version x scenario"
	@echo "make tools     build the pinned etcd, kube-apiserver, kube-controller-manager, kube-scheduler"
	@echo "make docker    start a Docker engine (installs Debian's docker.io if dockerd is missing)"
	@echo "make kind-image  build the kind node image for the pinned version (no pulls; see kind/)"
	@echo "make kind-up   a kind cluster (1 control plane, 1 worker) of that image; make kind-down removes it"
	@echo "make kind-smoke  cluster up, a loaded image's pod on the worker resolves the API Service, cluster down"
	@echo "make lint      ruff, mypy (strict) on the package, its layers contract (import-linter), gofmt and go vet on go/"
	@echo "make docs      the documentation site (docs/, mkdocs.yml) built strictly into site/"
	@echo "options: ARGS='--scheduler-config FILE --scheduler-binary FILE ...' (see docs/reference/options.md)"

$(VENV)/.installed: pyproject.toml
	@test -x "$$(command -v $(PYTHON))" || { echo "make: $(PYTHON) not found; schedgate needs Python 3.11+" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $@

venv: $(VENV)/.installed

tools: venv
	$(PY) -m schedgate tools build

browser:
	scripts/ensure-chromium

docs: venv
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict -d site

# kind when a Docker engine answers, else local (the pytest header says which); PROVIDER=... chooses.
PROVIDER ?= $(shell docker info >/dev/null 2>&1 && echo kind || echo local)

# pytest-xdist workers, each with its own cluster: 2 on this 2-core machine took the local suite from 344 s
# to 200-232 s (docs/guides/parallel-runs.md); on kind each worker has its own control planes. JOBS=1 runs
# it in one process.
JOBS  ?= 2
XDIST := $(if $(filter-out 0 1,$(JOBS)),-n $(JOBS))

e2e: tools
	$(PYTEST) e2e --provider $(PROVIDER) $(XDIST) --junitxml=artifacts/junit-e2e.xml $(ARGS)

e2e-kind: tools docker
	$(PYTEST) e2e --provider kind $(XDIST) --junitxml=artifacts/junit-e2e-kind.xml $(ARGS)

# The out-of-tree example: a scheduler built from its own Go module (--scheduler-module), and its scenario files.
example-out-of-tree: tools
	$(PYTEST) examples/out-of-tree-scheduler/scenarios --provider $(PROVIDER) --scheduler-module examples/out-of-tree-scheduler $(ARGS)

# The placement pictures in the docs (docs/images/), from real runs (scripts/docs-pictures).
docs-pictures: tools browser
	scripts/docs-pictures

repro: tools
	@test -n "$(SCENARIO)" || { echo "make repro: say which file: make repro SCENARIO=e2e/scenarios/hard-constraint.scenario.yaml" >&2; exit 2; }
	$(PY) -m schedgate repro $(SCENARIO) $(ARGS)

unit: venv
	$(PYTEST) tests/unit -m 'not live' $(ARGS)

# A Docker engine lets the kind bad-input tests run; without one they are skipped, nothing fails.
test: tools browser
	@scripts/docker-engine >/dev/null 2>&1 || echo "make test: no Docker engine started; kind bad-input tests will skip" >&2
	cd go && go test -trimpath ./pkg/... ./cmd/schedgate-pki/ ./cmd/schedgate-oracle/ ./cmd/schedgate-logto/
	cd examples/out-of-tree-scheduler && go test -trimpath ./...
	$(PYTEST) tests e2e --provider local $(XDIST) --junitxml=artifacts/junit.xml $(ARGS)

mutants: tools
	$(PY) -m schedgate mutants $(ARGS)

# The bug gallery (e2e/bugs/) on every pinned version: one table, a known bug's cells shown as xfail.
bugs: tools
	$(PY) -m schedgate matrix --suite e2e/bugs --versions bugs --out artifacts/bugs $(ARGS)

# Generated clusters and pods through the scheduler under test; a failure is shrunk into artifacts/fuzz/.
FUZZ ?= --seed 0 --examples 200 --max-nodes 4 --max-pods 8 --budget 280
fuzz: tools
	$(PY) -m schedgate fuzz $(FUZZ) $(ARGS)

# Each pin is built on first use (a cold pin: several minutes); ARGS='--versions 1.35,1.36 -- -n 2' narrows it.
MATRIX_ARGS ?= -- $(XDIST)
matrix: venv
	$(PY) -m schedgate matrix $(if $(ARGS),$(ARGS),$(MATRIX_ARGS))

bench: tools
	$(PY) bench/run.py $(ARGS)

bench-fleet: tools
	$(PY) bench/fleet.py $(ARGS)

# The suite N times in a row: per-test pass counts and the slowest tests (PROVIDER=kind for real kubelets).
N ?= 20
soak: tools
	$(PY) bench/soak.py --runs $(N) --provider $(if $(filter command environment,$(firstword $(origin PROVIDER))),$(PROVIDER),local) $(ARGS)

bench-providers: tools docker
	$(PY) bench/providers.py $(ARGS)

lint: venv
	$(PY) -m ruff check schedgate e2e tests bench
	$(PY) -m mypy
	$(VENV)/bin/lint-imports
	@out=$$(gofmt -l go examples); if [ -n "$$out" ]; then echo "gofmt: needs formatting: $$out" >&2; exit 1; fi
	cd go && go vet -trimpath ./...
	cd examples/out-of-tree-scheduler && go vet -trimpath ./...

docker:
	scripts/docker-engine

kind-image: venv docker
	nice -n 10 scripts/kind-image

kind-up: kind-image
	scripts/kind-cluster up

kind-down:
	scripts/kind-cluster down

kind-smoke: kind-image
	scripts/kind-smoke

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache .mypy_cache

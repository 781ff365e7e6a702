"""``schedgate init [DIR]``: a repository of one's own that tests one's scheduler with schedgate.

It writes a cluster definition and a scheduler profile (copies of the shipped ones, renamed so they
are clearly the user's), one scenario file, one Python scenario, a pytest.ini naming both files, a
Makefile whose ``make e2e`` and ``make test`` create a venv with schedgate and run the scenarios,
and a CI workflow running ``make test``. Existing files are never overwritten.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from urllib.parse import unquote, urlparse

from schedgate.errors import SchedgateError
from schedgate.spec.shipped import ROOT, shipped

PROFILE = "my-scheduler"

SCENARIO = f"""\
# A scheduling promise of your scheduler, written down as data (schedgate's docs/guides/scenario-files.md).
# `schedgate check FILE` validates it; `make e2e` runs it.
apiVersion: schedgate.io/v1alpha1
kind: Scenario
name: gpu-pod-waits-for-a-network-node
description: Every network node is full; a GPU pod that needs the network waits, then binds where room opens.
cluster: ../clusters/my-cluster.yaml
scheduler: ../profiles/{PROFILE}.yaml
templates:
  infer: {{gpus: 1, cpu: 4, memory: 32Gi, scheduler: {PROFILE},
          requireLabels: {{infra.example.com/high-speed-network: "true"}}}}
  filler: {{gpus: 8, cpu: 1, memory: 8Gi}}
steps:
  - createPods: {{template: filler, name: net-1, node: gpu-net-1}}   # pre-bound: holds all 8 GPUs
  - createPods: {{template: filler, name: net-2, node: gpu-net-2}}
  - createPods: {{template: filler, name: net-3, node: gpu-net-3}}
  - createPods: {{template: filler, name: net-4, node: gpu-net-4}}
  - createPods: {{template: infer, name: infer}}
  - expect: {{pods: infer, unschedulable: {{message: "didn't match Pod's node affinity"}}}}
  - deletePods: {{pods: net-2}}
  - expect: {{pods: infer, scheduledOn: [gpu-net-2], timeout: 20}}
"""

PYTHON_SCENARIO = f'''\
"""Your scheduler's promises as Python scenarios: schedgate's fixtures (cluster, ns, events) and waits."""

from schedgate import scheduled_on, unschedulable, wait_for
from schedgate.workloads.gpu import gpu_pod

PROFILE = "{PROFILE}"


def test_a_gpu_pod_lands_only_on_a_network_node(cluster, ns, events):
    pod = wait_for(gpu_pod("infer", scheduler=PROFILE).create(ns),
                   scheduled_on(cluster.pool("gpu-net"), never=cluster.nodes_except("gpu-net")))
    events.expect_scheduled(pod, by=PROFILE, node=pod.node_name)


def test_a_gpu_pod_too_big_for_any_node_stays_unschedulable(cluster, ns):
    pod = gpu_pod("too-big", gpus=16, scheduler=PROFILE).create(ns)
    wait_for(pod, unschedulable(message=r"Insufficient nvidia\\.com/gpu"))
    assert pod.refresh().node_name is None
'''

PYTEST_INI = """\
[pytest]
testpaths = scenarios tests
schedgate_cluster = clusters/my-cluster.yaml
schedgate_scheduler_config = profiles/{profile}.yaml
"""

MAKEFILE = """\
# `make e2e` runs the scheduling scenarios, `make test` everything; both create .venv with schedgate first.
PYTHON    ?= python3
VENV      := .venv
# Where schedgate is installed from: a checkout, a wheel, or a package index's name.
SCHEDGATE ?= {source}
PROVIDER  ?= local
ARGS      ?=

.PHONY: e2e test clean

$(VENV)/.installed: Makefile
\t$(PYTHON) -m venv $(VENV)
\t$(VENV)/bin/pip install --quiet $(SCHEDGATE)
\t@touch $@

e2e: $(VENV)/.installed
\t$(VENV)/bin/pytest -m schedgate --provider $(PROVIDER) $(ARGS)

test: $(VENV)/.installed
\t$(VENV)/bin/pytest --provider $(PROVIDER) $(ARGS)

clean:
\trm -rf $(VENV) .pytest_cache artifacts
"""

WORKFLOW = """\
# schedgate's scenarios on every change: the local provider (real kube-apiserver, etcd and your
# kube-scheduler as processes; no Docker). Point SCHEDGATE at where schedgate comes from for you.
name: scheduler scenarios

on:
  pull_request:
  push:
    branches: [main]

permissions:
  contents: read

jobs:
  scenarios:
    runs-on: ubuntu-24.04
    timeout-minutes: 60
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-go@v5
        with:
          go-version: "1.26"
          cache: false
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      - name: Cache Go builds and schedgate's binaries
        uses: actions/cache@v4
        with:
          path: |
            ~/.cache/go-build
            ~/go/pkg/mod
            ~/.cache/schedgate
          key: schedgate-${{ runner.os }}-${{ hashFiles('Makefile') }}
      - run: make test
      - uses: actions/upload-artifact@v4
        if: always()
        with:
          name: schedgate-artifacts
          path: artifacts/
          if-no-files-found: ignore
"""

README = f"""\
# Scheduler scenarios

```sh
make e2e     # the scheduling scenarios (scenarios/*.scenario.yaml, tests/ using schedgate's fixtures)
make test    # every test
```

- `clusters/my-cluster.yaml`: the nodes (pools of GPU nodes with and without the high-speed network).
- `profiles/{PROFILE}.yaml`: the scheduler configuration under test; its profile `{PROFILE}` is what
  the scenarios name. Your own build: `make e2e ARGS="--scheduler-binary ./kube-scheduler"`.
- `scenarios/`: scenario files; `schedgate check scenarios/*.scenario.yaml` validates them.
- `tests/`: Python scenarios.
"""


def _profile() -> str:
    text = shipped("clusters/profiles/gpu-packing-scheduler.yaml").read_text()
    return text.replace("schedulerName: gpu-packing-scheduler", f"schedulerName: {PROFILE}")


# A Makefile variable and a shell word: a source holding any of these would be read as something else.
_UNSAFE = set(" \t\n\r$#'\"`\\;&|<>(){}*?[]!~")
_SCHEMES = ("file://", "https://", "git+https://", "git+ssh://")


def _source() -> str:
    """Where exactly this schedgate can be installed from again: its checkout, or the wheel file (or folder)
    pip installed it from, as the installation's PEP 610 record (``direct_url.json``) says and the file still
    matches. A schedgate installed from a package index has no such file: the name ``schedgate`` there is not
    this project's, so a generated Makefile never installs it by name."""
    if (ROOT / "pyproject.toml").is_file():
        return str(ROOT)
    ask = "say where its Makefile installs schedgate from with --schedgate (a wheel file or a checkout)"
    try:
        record = json.loads(distribution("schedgate").read_text("direct_url.json") or "null")
    except (PackageNotFoundError, ValueError):
        record = None
    url = record.get("url") if isinstance(record, dict) else None
    if not isinstance(url, str) or not url.startswith("file://"):
        raise SchedgateError(f"this schedgate was not installed from a file or a checkout; {ask}")
    path = Path(unquote(urlparse(url).path))
    digest = ((record.get("archive_info") or {}).get("hash") or "") if isinstance(record, dict) else ""
    if path.is_file() and digest.startswith("sha256="):
        if hashlib.sha256(path.read_bytes()).hexdigest() != digest.removeprefix("sha256="):
            raise SchedgateError(f"{path}: no longer the wheel this schedgate was installed from; {ask}")
    elif not (path.is_file() or (path / "pyproject.toml").is_file()):
        raise SchedgateError(f"{path}, where this schedgate was installed from, is gone; {ask}")
    return _checked(str(path))


def _checked(source: str) -> str:
    """``--schedgate``: a wheel file, a checkout (made absolute: the Makefile runs elsewhere) or a URL; never a
    bare name, which a package index would resolve to whoever registered it."""
    if source.startswith(_SCHEMES):
        out = source
    else:
        p = Path(source).expanduser().absolute()
        if not (p.is_file() and p.suffix == ".whl" or (p / "pyproject.toml").is_file()):
            raise SchedgateError(f"--schedgate {source}: not a wheel file (*.whl) or a schedgate checkout; a bare "
                                 "name would install whatever a package index holds under it")
        out = str(p)
    bad = sorted(set(out) & _UNSAFE)
    if bad:
        raise SchedgateError(f"--schedgate {source}: holds {bad[0]!r}, which make and the shell would misread")
    return out


def files(source: str | None = None) -> dict[str, str]:
    """Every file ``init`` writes, by its path in the new repository."""
    return {
        "clusters/my-cluster.yaml": shipped("clusters/inference.yaml").read_text().replace(
            "\nname: inference\n", "\nname: my-cluster\n"),
        f"profiles/{PROFILE}.yaml": _profile(),
        "scenarios/gpu-pod-waits-for-a-network-node.scenario.yaml": SCENARIO,
        "tests/test_my_scheduler.py": PYTHON_SCENARIO,
        "pytest.ini": PYTEST_INI.format(profile=PROFILE),
        "Makefile": MAKEFILE.format(source=_checked(source) if source else _source()),
        ".github/workflows/scheduler-scenarios.yml": WORKFLOW,
        "README.md": README,
    }


def init(folder: Path, source: str | None = None) -> list[Path]:
    """Write the files into ``folder`` (made if missing); anything in the way (a file of that name, a link, even
    a dangling one, a file where a folder goes) stops it before anything is written."""
    if folder.exists() and not folder.is_dir():
        raise SchedgateError(f"{folder}: is a file, not a folder to write a repository into")
    out = files(source)
    for rel in out:
        _in_the_way(folder, Path(rel))
    written = []
    for rel, text in out.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        # O_EXCL: never through a link planted since the check, never over a file
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        written.append(path)
    return written


def _in_the_way(folder: Path, rel: Path) -> None:
    """Raise, in one line, if writing ``folder/rel`` would write over or through something."""
    here = folder
    for i, part in enumerate(rel.parts):
        here = here / part
        last = i == len(rel.parts) - 1
        try:
            st = os.lstat(here)
        except FileNotFoundError:
            return
        except OSError as e:
            raise SchedgateError(f"{here}: {e.strerror}") from None
        if stat.S_ISLNK(st.st_mode):
            raise SchedgateError(f"{here}: a symbolic link; schedgate init writes only into files and folders "
                                 "of its own making")
        if last:
            raise SchedgateError(f"{here}: exists; schedgate init writes only into files that do not")
        if not stat.S_ISDIR(st.st_mode):
            raise SchedgateError(f"{here}: is a file, where schedgate init makes a folder")

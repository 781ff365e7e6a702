"""The real binaries under test, built from Go modules at one pinned version.

The pin is ``go/go.mod`` (``require k8s.io/kubernetes vX.Y.Z``; change it with
``go/hack/pin-kubernetes.sh``). :func:`ensure_binaries` builds etcd,
kube-apiserver, kube-controller-manager, kube-scheduler and schedgate's PKI
helper into a cache folder keyed by the pin, the Go sources and the Go
version, so a second run with the same pin rebuilds nothing.

    schedgate tools build      # what `make tools` runs
    schedgate tools path       # print the binary folder
    schedgate tools ldflags    # the version ldflags (scripts/node-binaries uses them)
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from schedgate.errors import ToolchainError
from schedgate.runtime.progress import log, shown_on
from schedgate.spec.shipped import shipped

COMMANDS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "schedgate-pki")
# Deliberately broken builds for `make mutants`: binary name -> (package, build tag).
MUTANT_BUILDS = {
    "kube-scheduler-leaky-unreserve": ("./cmd/kube-scheduler", "schedgate_mutant_leaky_unreserve"),
    "kube-scheduler-blocking-permit": ("./cmd/kube-scheduler", "schedgate_mutant_blocking_permit"),
    "kube-scheduler-prebind-no-recheck": ("./cmd/kube-scheduler", "schedgate_mutant_prebind_no_recheck"),
    "kube-scheduler-memory-only-ledger": ("./cmd/kube-scheduler", "schedgate_mutant_memory_only_ledger"),
}
_VERSION_PKG = "k8s.io/component-base/version"


def go_module_dir() -> Path:
    """Where the Go module lives: $SCHEDGATE_GO_DIR, else beside this package."""
    env = os.environ.get("SCHEDGATE_GO_DIR")
    d = Path(env) if env else shipped("go")
    if not (d / "go.mod").is_file():
        raise ToolchainError(f"{d / 'go.mod'}: not found; set SCHEDGATE_GO_DIR to schedgate's go/ folder "
                             "or pass --bin-dir with prebuilt binaries")
    return d


def cache_root() -> Path:
    env = os.environ.get("SCHEDGATE_CACHE")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "schedgate"


def pinned_kubernetes_version(module_dir: Path | None = None) -> str:
    """The Kubernetes version every binary is built from, read from go.mod."""
    gomod = (module_dir or go_module_dir()) / "go.mod"
    m = re.search(r"^\s*(?:require\s+)?k8s\.io/kubernetes\s+(v\d+\.\d+\.\d+)\s*$", gomod.read_text(), re.M)
    if not m:
        raise ToolchainError(f"{gomod}: require k8s.io/kubernetes: no release version pinned")
    return m.group(1)


@dataclass(frozen=True)
class Binaries:
    """Paths of the binaries one cluster runs."""

    directory: Path
    kubernetes_version: str

    def path(self, command: str) -> Path:
        return self.directory / command

    @property
    def etcd(self) -> Path:
        return self.path("etcd")

    @property
    def kube_apiserver(self) -> Path:
        return self.path("kube-apiserver")

    @property
    def kube_controller_manager(self) -> Path:
        return self.path("kube-controller-manager")

    @property
    def kube_scheduler(self) -> Path:
        return self.path("kube-scheduler")

    @property
    def pki(self) -> Path:
        return self.path("schedgate-pki")

    def missing(self, mutants: bool = True) -> list[str]:
        names = COMMANDS + (tuple(MUTANT_BUILDS) if mutants else ())
        return [c for c in names if not os.access(self.path(c), os.X_OK)]


def _go() -> str:
    go = shutil.which("go")
    if not go:
        raise ToolchainError("go: toolchain not found on PATH; schedgate builds kube-apiserver, kube-scheduler "
                             "and etcd from go/go.mod (install Go 1.26+, or pass --bin-dir with prebuilt binaries)")
    return go


def _source_key(module_dir: Path, go: str) -> str:
    h = hashlib.sha256()
    goversion = subprocess.run([go, "env", "GOVERSION", "GOOS", "GOARCH"], capture_output=True, text=True,
                               check=True).stdout
    h.update(goversion.encode())
    files = [module_dir / "go.mod", module_dir / "go.sum"]
    files += sorted(p for p in module_dir.rglob("*.go") if not p.name.endswith("_test.go"))
    for f in files:
        h.update(str(f.relative_to(module_dir)).encode() + b"\0")
        h.update(f.read_bytes() + b"\0")
    return h.hexdigest()[:12]


def ldflags(version: str) -> str:
    major, minor = version.lstrip("v").split(".")[:2]
    return " ".join([
        "-s", "-w",
        f"-X {_VERSION_PKG}.gitVersion={version}",
        f"-X {_VERSION_PKG}.gitMajor={major}",
        f"-X {_VERSION_PKG}.gitMinor={minor}",
        f"-X {_VERSION_PKG}.gitTreeState=clean",
        f"-X k8s.io/client-go/pkg/version.gitVersion={version}",
    ])


def ensure_binaries(out: TextIO | None = None) -> Binaries:
    """Build the pinned binaries unless the cache already holds them (progress to the log, and to ``out``)."""
    module_dir = go_module_dir()
    version = pinned_kubernetes_version(module_dir)
    go = _go()
    key = _source_key(module_dir, go)
    root = cache_root() / "bin"
    final = root / f"kubernetes-{version}-{key}"
    bins = Binaries(final, version)
    if not bins.missing():
        return bins
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not bins.missing():  # another run built it while we waited
            return bins
        with shown_on(out):
            _build(go, module_dir, version, final)
    return bins


def _build(go: str, module_dir: Path, version: str, final: Path) -> None:
    say = log.info
    staging = Path(tempfile.mkdtemp(prefix=".build-", dir=final.parent))
    try:
        say(f"building {', '.join(COMMANDS)} (Kubernetes {version}) into {final}")
        say("a cold build takes several minutes; later runs with the same pin reuse it")
        cmd = [go, "build", "-v", "-trimpath", "-buildvcs=false", "-ldflags", ldflags(version),
               "-o", str(staging) + "/", *(f"./cmd/{c}" for c in COMMANDS)]
        started = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=module_dir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        counts = {"downloaded": 0, "compiled": 0}
        tail: list[str] = []

        def report() -> None:
            while True:
                try:
                    proc.wait(timeout=10)
                    return
                except subprocess.TimeoutExpired:
                    say(f"  {time.monotonic() - started:4.0f}s  {counts['downloaded']} modules downloaded, "
                        f"{counts['compiled']} packages compiled")

        ticker = threading.Thread(target=report, daemon=True)
        ticker.start()
        assert proc.stdout is not None
        for line in proc.stdout:
            line = line.rstrip()
            if line.startswith("go: downloading"):
                counts["downloaded"] += 1
            elif line and not line.startswith(("go:", "#")) and " " not in line:
                counts["compiled"] += 1
            else:
                tail = (tail + [line])[-20:]
        if proc.wait() != 0:
            detail = next((t for t in tail if t and not t.startswith("#")), "see output above")
            for t in tail:
                say(f"  {t}")
            raise ToolchainError(f"go build in {module_dir} failed: {detail}")
        for name, (pkg, tag) in MUTANT_BUILDS.items():
            say(f"building the mutant {name} (-tags {tag})")
            built = subprocess.run([go, "build", "-trimpath", "-buildvcs=false", "-tags", tag, "-ldflags",
                                    ldflags(version), "-o", str(staging / name), pkg],
                                   cwd=module_dir, capture_output=True, text=True)
            if built.returncode != 0:
                raise ToolchainError(f"go build -tags {tag} {pkg} failed: {built.stderr.strip()[-500:]}")
        for c in COMMANDS:
            if not c.startswith("kube-"):
                continue
            check = subprocess.run([str(staging / c), "--version"], capture_output=True, text=True,
                                   cwd=staging)
            shown = (check.stdout + check.stderr).strip().splitlines()
            if not shown or version not in shown[0]:
                raise ToolchainError(f"{c} --version says {shown[:1]}, expected Kubernetes {version}")
        if final.exists():
            shutil.rmtree(final)
        staging.rename(final)
        say(f"built {len(COMMANDS)} binaries in {time.monotonic() - started:.0f}s")
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)

"""The real binaries under test, built from Go modules at one pinned version.

The pin is ``go/go.mod`` (``require k8s.io/kubernetes vX.Y.Z``; change it with
``go/hack/pin-kubernetes.sh``), or an older minor's in ``go/pins/`` that
``--kubernetes-version`` selects (:mod:`schedgate.runtime.pins`). :func:`ensure_binaries` builds etcd,
kube-apiserver, kube-controller-manager, kube-scheduler, schedgate's PKI
helper and the pool scheduler into a cache folder keyed by the pin, the Go
sources and the Go version, so a second run with the same pin rebuilds
nothing. A broken build of ``MUTANT_BUILDS`` is linked into the same folder
the first time something asks for it (:func:`ensure_mutant`, or a black box
naming it): ``make e2e`` runs none, so it builds none.

    schedgate tools build      # what `make tools` runs
    schedgate tools path       # print the binary folder
    schedgate tools ldflags    # the version ldflags (scripts/node-binaries uses them)
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from schedgate.errors import ToolchainError
from schedgate.runtime.builds import MUTANT_BUILDS, TOOL_BUILDS
from schedgate.runtime.introspect import settable_gates_of
from schedgate.runtime.patches import ensure_modfile
from schedgate.runtime.pins import Pin, cache_root, select
from schedgate.runtime.progress import log, say_live, shown_on, ticking
from schedgate.runtime.prune import mark_used, prune_older
from schedgate.spec.gates import Gate
from schedgate.spec.shipped import shipped

COMMANDS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "schedgate-pki",
            "schedgate-pool-scheduler")
MUTANT_VAR = "schedgate/pkg/mutant.name"
# What a mutant binary prints on stderr first thing (mutant.Banner, printed by cmd/kube-scheduler).
_MUTANT_BANNER = "schedgate: THIS IS A DELIBERATELY BROKEN BUILD: "
_MUTANT_NAMED = " mutant {}: "
_VERSION_PKG = "k8s.io/component-base/version"


def go_module_dir() -> Path:
    """Where the Go module lives: $SCHEDGATE_GO_DIR, else beside this package."""
    env = os.environ.get("SCHEDGATE_GO_DIR")
    d = Path(env) if env else shipped("go")
    if not (d / "go.mod").is_file():
        raise ToolchainError(f"{d / 'go.mod'}: not found; set SCHEDGATE_GO_DIR to schedgate's go/ folder "
                             "or pass --bin-dir with prebuilt binaries")
    return d


def selected_pin(module_dir: Path | None = None) -> Pin:
    """The pin this run builds from: ``$SCHEDGATE_KUBERNETES_VERSION``'s (``--kubernetes-version`` sets it), else
    go.mod's."""
    return select(module_dir or go_module_dir())


def pinned_kubernetes_version(module_dir: Path | None = None) -> str:
    """The Kubernetes version every binary is built from: the selected pin's."""
    return selected_pin(module_dir).version


@dataclass(frozen=True)
class Binaries:
    """Paths of the binaries one cluster runs: ``directory``'s, but for those ``overrides`` names
    (e.g. etcd and kube-apiserver from envtest's ``KUBEBUILDER_ASSETS``); ``origins`` says where each came from."""

    directory: Path
    kubernetes_version: str
    overrides: Mapping[str, Path] = field(default_factory=dict)
    origins: Mapping[str, str] = field(default_factory=dict)
    # builds a missing mutant into ``directory`` (set for the cache folder; prebuilt folders have none)
    builder: Callable[[str], None] | None = field(default=None, compare=False, repr=False)

    def path(self, command: str) -> Path:
        return self.overrides.get(command) or self.directory / command

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

    def feature_gates(self) -> Mapping[str, Gate]:
        """The feature gates the pinned kube-apiserver lets one set (its ``--help``), by name."""
        return settable_gates_of(str(self.kube_apiserver))

    @property
    def programs(self) -> Mapping[str, Path]:
        """Every program schedgate builds (the commands and the mutants), by name: what a black box's
        ``command`` may name bare. A mutant is built when it is looked up, not before."""
        return _Programs(self)

    def mutant(self, name: str) -> Path:
        """The mutant binary ``name`` (a key of ``MUTANT_BUILDS``), linked now if it is missing."""
        return self._linked(name, MUTANT_BUILDS, "a mutant")

    def tool(self, name: str) -> Path:
        """The program ``name`` (a key of ``TOOL_BUILDS``), linked now if it is missing."""
        return self._linked(name, TOOL_BUILDS, "a program")

    def _linked(self, name: str, known: Mapping[str, object], what: str) -> Path:
        if name not in known:
            raise ToolchainError(f"{name}: not {what} schedgate builds ({', '.join(sorted(known))})")
        path = self.path(name)
        if not os.access(path, os.X_OK) and self.builder is not None:
            self.builder(name)
        return path

    def missing(self, mutants: bool = True) -> list[str]:
        names = COMMANDS + (tuple(MUTANT_BUILDS) if mutants else ())
        return [c for c in names if not os.access(self.path(c), os.X_OK)]


@dataclass(frozen=True)
class _Programs(Mapping[str, Path]):
    bins: Binaries

    def __getitem__(self, name: str) -> Path:
        if name in MUTANT_BUILDS:
            return self.bins.mutant(name)
        if name in COMMANDS:
            return self.bins.path(name)
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return iter((*COMMANDS, *MUTANT_BUILDS))

    def __len__(self) -> int:
        return len(COMMANDS) + len(MUTANT_BUILDS)

    def __contains__(self, name: object) -> bool:
        return name in COMMANDS or name in MUTANT_BUILDS


def _go() -> str:
    go = shutil.which("go")
    if not go:
        raise ToolchainError("go: toolchain not found on PATH; schedgate builds kube-apiserver, kube-scheduler "
                             "and etcd from go/go.mod (install Go 1.26+, or pass --bin-dir with prebuilt binaries)")
    return go


def _source_key(module_dir: Path, go: str, pin: Pin) -> str:
    h = hashlib.sha256()
    goversion = subprocess.run([go, "env", "GOVERSION", "GOOS", "GOARCH"], capture_output=True, text=True,
                               check=True).stdout
    h.update(goversion.encode())
    h.update(repr((MUTANT_VAR, sorted(MUTANT_BUILDS.items()))).encode())  # which binary links which mutant
    h.update(repr(pin.go_flags()).encode())
    files = [pin.modfile, pin.sumfile]
    files += sorted(p for p in module_dir.rglob("*.go") if not p.name.endswith("_test.go"))
    for f in files:
        h.update(str(f.relative_to(module_dir) if f.is_relative_to(module_dir) else f.name).encode() + b"\0")
        h.update(f.read_bytes() + b"\0")
    return h.hexdigest()[:12]


def ldflags(version: str, mutant: str = "") -> str:
    """The version stamping every binary is linked with; with ``mutant``, also that mutant's name."""
    major, minor = version.lstrip("v").split(".")[:2]
    return " ".join([
        "-s", "-w",
        f"-X {_VERSION_PKG}.gitVersion={version}",
        f"-X {_VERSION_PKG}.gitMajor={major}",
        f"-X {_VERSION_PKG}.gitMinor={minor}",
        f"-X {_VERSION_PKG}.gitTreeState=clean",
        f"-X k8s.io/client-go/pkg/version.gitVersion={version}",
        *([f"-X {MUTANT_VAR}={mutant}"] if mutant else []),
    ])


def ensure_binaries(out: TextIO | None = None) -> Binaries:
    """Build the pinned binaries unless the cache already holds them (progress to the log, and to ``out``).
    Mutants are not built here: :meth:`Binaries.mutant` links one when it is first asked for."""
    module_dir = go_module_dir()
    pin = selected_pin(module_dir)
    version = pin.version
    go = _go()
    root = cache_root() / "bin"
    if pin.on_demand and not pin.sumfile.is_file():
        with _locked(root), shown_on(out):
            say_live(f"making the pin of Kubernetes {version} (a patch release built on demand)")
            ensure_modfile(go, module_dir, pin)
    key = _source_key(module_dir, go, pin)
    final = root / f"kubernetes-{version}-{key}"

    def build_mutant(name: str) -> None:
        with shown_on(out):
            link_once(final, name, lambda: _link_mutant(go, module_dir, pin, final, name))
    bins = Binaries(final, version, builder=build_mutant)
    if bins.missing(mutants=False):
        with _locked(root):
            if bins.missing(mutants=False):  # else another run built it while we waited
                with shown_on(out):
                    _build(go, module_dir, pin, final)
                    for old in prune_older(root, f"kubernetes-{version}-", final):
                        say_live(f"removed the older build {old}")
    mark_used(final)
    return bins


def ensure_tool(name: str, out: TextIO | None = None) -> Path:
    """The program ``name`` of ``TOOL_BUILDS`` for the selected pin, built (with the commands) if missing."""
    return ensure_binaries(out).tool(name)


def ensure_mutant(name: str, out: TextIO | None = None) -> Path:
    """The mutant binary ``name`` of the selected pin, built (with the commands) if missing."""
    return ensure_binaries(out).mutant(name)


@contextlib.contextmanager
def _locked(root: Path, name: str = ".lock") -> Iterator[None]:
    root.mkdir(parents=True, exist_ok=True)
    with open(root / name, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def link_once(final: Path, name: str, link: Callable[[], None]) -> None:
    """``link()`` makes ``final/name`` unless it is there, under a lock of its own: others link beside it (a link
    takes about 5 s of one core here); a run asking for the same one waits, then finds it linked."""
    with _locked(final, f".{name}.lock"):
        if not os.access(final / name, os.X_OK):
            link()


def _link_mutant(go: str, module_dir: Path, pin: Pin, final: Path, name: str) -> None:
    """Link the mutant (or tool) ``name`` into ``final`` (beside the commands), checked, under its name at once."""
    pkg, mutant = MUTANT_BUILDS[name] if name in MUTANT_BUILDS else (TOOL_BUILDS[name], "")
    started = time.monotonic()
    say_live(f"building the mutant {name} (-X {MUTANT_VAR}={mutant})" if mutant else f"building {name}")
    staging = final / f".{name}.{os.getpid()}"
    try:
        built = subprocess.run([go, "build", "-trimpath", "-buildvcs=false", *pin.go_flags(), "-ldflags",
                                ldflags(pin.version, mutant), "-o", str(staging), pkg],
                               cwd=module_dir, capture_output=True, text=True)
        if built.returncode != 0:
            raise ToolchainError(f"go build {pkg}" + (f" as the mutant {mutant}" if mutant else "")
                                 + f" failed: {built.stderr.strip()[-500:]}")
        if name.startswith("kube-"):
            _check_version(staging, pin.version, mutant)
        os.replace(staging, final / name)
    finally:
        staging.unlink(missing_ok=True)
    log.info(f"built {'the mutant ' if mutant else ''}{name} in {time.monotonic() - started:.0f}s")


def _build(go: str, module_dir: Path, pin: Pin, final: Path) -> None:
    say, version = log.info, pin.version
    staging = Path(tempfile.mkdtemp(prefix=".build-", dir=final.parent))
    try:
        say(f"building {', '.join(COMMANDS)} (Kubernetes {version}) into {final}")
        say("a cold build takes several minutes; later runs with the same pin reuse it")
        cmd = [go, "build", "-v", "-trimpath", "-buildvcs=false", *pin.go_flags(), "-ldflags", ldflags(version),
               "-o", str(staging) + "/", *(f"./cmd/{c}" for c in COMMANDS)]
        started = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=module_dir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        counts = {"downloaded": 0, "compiled": 0}
        tail: list[str] = []

        assert proc.stdout is not None
        with ticking("go build", lambda: f"{counts['downloaded']} modules downloaded, "
                                         f"{counts['compiled']} packages compiled"):
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
        for c in COMMANDS:
            if c.startswith("kube-"):
                _check_version(staging / c, version, "")
        if final.exists():
            shutil.rmtree(final)
        staging.rename(final)
        say(f"built {len(COMMANDS)} binaries in {time.monotonic() - started:.0f}s (a mutant is linked when "
            "first asked for)")
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def _check_version(binary: Path, version: str, mutant: str) -> None:
    """``binary --version`` names the pinned version, and its stderr starts with the mutant's banner if
    it is one, or has no banner if not (the linker silently ignores an -X for a variable that does not
    exist, so a mutant build could otherwise be the correct build under a mutant's name)."""
    check = subprocess.run([str(binary), "--version"], capture_output=True, text=True, cwd=binary.parent)
    shown = check.stdout.strip().splitlines()
    if not shown or version not in shown[0]:
        raise ToolchainError(f"{binary.name} --version says {shown[:1]}, expected Kubernetes {version}")
    banner = next(iter(check.stderr.splitlines()), "")
    named = _MUTANT_NAMED.format(mutant)
    if mutant and not (banner.startswith(_MUTANT_BANNER) and named in banner):
        raise ToolchainError(f"{binary.name} is not the mutant {mutant}: its --version printed {banner!r} on "
                             f"stderr, expected {_MUTANT_BANNER!r}PLUGIN{named!r}... (is {MUTANT_VAR} right?)")
    if not mutant and "DELIBERATELY BROKEN" in check.stderr:
        raise ToolchainError(f"{binary.name} is a mutant build: {banner!r}")

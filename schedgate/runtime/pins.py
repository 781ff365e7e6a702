"""The Kubernetes versions schedgate builds from: one pin per supported minor, side by side.

``go/go.mod`` pins the newest minor (the default); ``go/pins/kubernetes-1.N.mod`` (with its ``.sum``)
pins an older one. Each is written by ``go/hack/pin-kubernetes.sh VERSION`` from k8s.io/kubernetes'
own go.mod: the release, every staging module replaced by its ``v0.N.P``, and the etcd server that
release was tested with. An older pin builds with ``-modfile`` and the build tag ``kubernetes1.N``,
which selects the files written for that minor's framework API (``//go:build kubernetes1.35``).

``--kubernetes-version 1.36`` (or ``$SCHEDGATE_KUBERNETES_VERSION``; a minor or a full version)
selects a pin; every binary, the node image and the version checks follow it. Another patch release of a
pinned minor (``1.36.1``) is a pin made on demand (:mod:`schedgate.runtime.patches`): its modfile is
written into the cache as the script writes a pin, and it builds with its minor's tags.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from schedgate.errors import SchedgateError, ToolchainError

PIN_ENV = "SCHEDGATE_KUBERNETES_VERSION"
PINS_DIR = "pins"
RELEASE = re.compile(r"^v?(1\.\d+\.\d+)$")  # a released Kubernetes version (no pre-release)


def cache_root() -> Path:
    env = os.environ.get("SCHEDGATE_CACHE")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "schedgate"


@dataclass(frozen=True)
class Pin:
    version: str  # v1.36.3
    modfile: Path  # go/go.mod or go/pins/kubernetes-1.36.mod (on demand: the cache's kubernetes-1.36.1.mod)
    default: bool
    on_demand: bool = False  # another patch of a pinned minor, its modfile made in the cache
    newest_minor: bool = False  # of go.mod's minor: built without a minor's tag

    @property
    def minor(self) -> str:
        return ".".join(self.version.lstrip("v").split(".")[:2])

    @property
    def file(self) -> str:
        """The modfile, as go/ names it: ``go.mod``, ``pins/kubernetes-1.36.mod``."""
        if self.on_demand:
            return str(self.modfile)
        return "go.mod" if self.default else f"{PINS_DIR}/{self.modfile.name}"

    @property
    def sumfile(self) -> Path:
        return self.modfile.with_suffix(".sum")

    @property
    def tags(self) -> list[str]:
        """The build tag of an older minor's files; none for the default pin."""
        return [] if self.default or self.newest_minor else [f"kubernetes{self.minor}"]

    def go_flags(self) -> list[str]:
        """What ``go build`` needs to build this pin instead of go.mod's."""
        if self.default:
            return []
        return [f"-modfile={self.file}", *([f"-tags={','.join(self.tags)}"] if self.tags else [])]  # run in go/

    @property
    def etcd_version(self) -> str:
        """The etcd server module version the pin names (what the etcd binary reports, without its ``v``)."""
        m = re.search(r"^\s*(?:require\s+)?go\.etcd\.io/etcd/server/v3\s+v(\d+\.\d+\.\d+)", self.modfile.read_text(),
                      re.M)
        if not m:
            raise ToolchainError(f"{self.modfile}: require go.etcd.io/etcd/server/v3: no version pinned")
        return m.group(1)


def _version_of(modfile: Path) -> str:
    m = re.search(r"^\s*(?:require\s+)?k8s\.io/kubernetes\s+(v\d+\.\d+\.\d+)\s*$", modfile.read_text(), re.M)
    if not m:
        raise ToolchainError(f"{modfile}: require k8s.io/kubernetes: no release version pinned")
    return m.group(1)


def pins(module_dir: Path) -> dict[str, Pin]:
    """Every pin of the module, by minor, oldest first."""
    found = {}
    default = Pin(_version_of(module_dir / "go.mod"), module_dir / "go.mod", True)
    for f in sorted((module_dir / PINS_DIR).glob("kubernetes-*.mod")):
        pin = Pin(_version_of(f), f, False)
        if f.name != f"kubernetes-{pin.minor}.mod":
            raise ToolchainError(f"{f}: pins Kubernetes {pin.version}, not the minor its name says")
        found[pin.minor] = pin
    found[default.minor] = default
    return dict(sorted(found.items(), key=lambda kv: tuple(int(x) for x in kv[0].split("."))))


def select(module_dir: Path, wanted: str | None = None) -> Pin:
    """The pin ``wanted`` names (``1.36``, ``1.36.3``, ``v1.36.3``), else ``$SCHEDGATE_KUBERNETES_VERSION``'s,
    else the default; another patch release of a pinned minor is a pin made on demand (built when first
    asked for); a version of no pinned minor, or that is no release, is refused in one line."""
    wanted = wanted or os.environ.get(PIN_ENV) or ""
    every = pins(module_dir)
    if not wanted:
        return next(p for p in every.values() if p.default)
    bare = wanted.strip().lstrip("v")
    minor = ".".join(bare.split(".")[:2])
    pin = every.get(minor)
    have = ", ".join(p.version for p in every.values())
    if pin is None:
        raise SchedgateError(f"--kubernetes-version {wanted}: schedgate builds the minors it pins ({have}: go/go.mod, "
                             f"go/{PINS_DIR}/); pin a new minor with go/hack/pin-kubernetes.sh {bare}")
    if bare.count(".") < 2 or pin.version.lstrip("v") == bare:
        return pin
    if not RELEASE.match(bare):
        raise SchedgateError(f"--kubernetes-version {wanted}: not a release version like {pin.version}")
    return Pin(f"v{bare}", cache_root() / PINS_DIR / f"kubernetes-{bare}.mod", False, on_demand=True,
               newest_minor=pin.default)

"""A scheduler built from its own Go module: ``--scheduler-module``.

Most schedulers teams ship are out-of-tree builds: a ``main`` package that runs
``app.NewSchedulerCommand(app.WithPlugin(...))`` from k8s.io/kubernetes, in a Go module of their own.
``--scheduler-module`` takes either

* a local folder: the ``main`` package, anywhere inside its module (``./scheduler``, ``.``), or
* ``MODULE@VERSION[/cmd/path]``: a module the Go module proxy serves, and the package inside it
  (``example.com/sched@v0.4.1/cmd/scheduler``),

and builds it with the module's own go.mod and go.sum (its replace directives, its vendor folder, the
Go toolchain its ``go``/``toolchain`` lines ask for: the go command fetches one through the module
proxy when ``GOTOOLCHAIN`` lets it). The module's Kubernetes (``k8s.io/kubernetes``, else its
staging modules' ``v0.N.P``) must be of the run's pinned minor, since the rest of the cluster runs the
pin; the binary reports the module's own version. Builds are cached by the module's sources and the Go
version, like the pinned binaries (:mod:`schedgate.runtime.toolchain`), so a second run builds nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from schedgate.errors import SchedgateError
from schedgate.runtime.pins import cache_root
from schedgate.runtime.progress import log, shown_on, ticking
from schedgate.runtime.prune import mark_used, prune_older
from schedgate.runtime.toolchain import _go, _locked, ldflags, pinned_kubernetes_version

OPTION = "--scheduler-module"
_REMOTE = re.compile(r"^(?P<module>[A-Za-z0-9][^@\s]*)@(?P<version>v[0-9][^/\s]*)(?P<sub>/\S*)?$")
_SKIPPED_DIRS = {"testdata", "node_modules", ".git"}
_BUILD_TIMEOUT = 3600.0


@dataclass(frozen=True)
class ModuleSpec:
    """What ``--scheduler-module`` named: a module ``root`` folder to build in and the ``package`` inside it;
    ``remote`` is ``MODULE@VERSION`` when the module comes from the module proxy (``root`` is then unknown until
    it is downloaded)."""

    given: str
    package: str
    root: Path | None = None
    remote: str = ""

    @property
    def name(self) -> str:
        """The binary's name: the package folder's, else the module's last path element."""
        last = self.package.rstrip("/").rsplit("/", 1)[-1]
        if last in ("", "."):
            last = (self.remote.split("@", 1)[0] if self.remote else str(self.root)).rstrip("/").rsplit("/", 1)[-1]
        return re.sub(r"[^A-Za-z0-9._-]", "-", last) or "scheduler"


def parse_spec(given: str) -> ModuleSpec:
    """A local folder (its module root found above it) or ``MODULE@VERSION[/path]``; anything else is refused in
    one line."""
    folder = Path(given)
    if folder.is_dir():
        here = folder.resolve()
        root = next((d for d in (here, *here.parents) if (d / "go.mod").is_file()), None)
        if root is None:
            raise SchedgateError(f"{OPTION} {given}: no go.mod in this folder or above it (a Go module's main "
                                 "package, or MODULE@VERSION[/cmd/path])")
        rel = here.relative_to(root).as_posix()
        return ModuleSpec(given, "." if rel == "." else f"./{rel}", root=root)
    m = _REMOTE.match(given)
    if m is None or folder.exists() or given.startswith((".", "/")):
        raise SchedgateError(f"{OPTION} {given}: neither a folder nor MODULE@VERSION[/cmd/path] "
                             "(e.g. example.com/scheduler@v0.4.1/cmd/scheduler)")
    return ModuleSpec(given, "." + (m["sub"] or ""), remote=f"{m['module']}@{m['version']}")


def kubernetes_of(gomod: str) -> str | None:
    """The Kubernetes version a go.mod builds against: what ``k8s.io/kubernetes`` resolves to (a replace of it by a
    version wins), else its staging modules' ``v0.N.P`` read as ``v1.N.P``; None when it names neither."""
    def version_of(module: str) -> str | None:
        replaced = re.search(rf"^\s*(?:replace\s+)?{re.escape(module)}(?:\s+v\S+)?\s+=>\s+\S+\s+(v\S+)\s*$", gomod,
                             re.M)
        if replaced:
            return replaced[1]
        req = re.search(rf"^\s*(?:require\s+)?{re.escape(module)}\s+(v\S+)", gomod, re.M)
        return req[1] if req else None

    kube = version_of("k8s.io/kubernetes")
    if kube and re.match(r"v1\.\d+\.\d+", kube):
        return kube
    for staging in ("k8s.io/kube-scheduler", "k8s.io/component-base", "k8s.io/client-go", "k8s.io/api"):
        v = version_of(staging)
        m = re.match(r"v0\.(\d+)\.(\d+\S*)$", v or "")
        if m:
            return f"v1.{m[1]}.{m[2]}"
    return None


def _minor(version: str) -> str:
    return ".".join(version.lstrip("v").split(".")[:2])


def check_kubernetes(spec: ModuleSpec, gomod: str, pinned: str) -> str:
    """The module's Kubernetes version, refused in one line unless it is of ``pinned``'s minor."""
    kube = kubernetes_of(gomod)
    where = f"{OPTION} {spec.given}: go.mod"
    if kube is None:
        raise SchedgateError(f"{where} requires neither k8s.io/kubernetes nor its staging modules: not a "
                             "kube-scheduler build (app.NewSchedulerCommand with your plugins)")
    if _minor(kube) != _minor(pinned):
        raise SchedgateError(f"{where} builds against Kubernetes {kube}, and this run's pin is {pinned}: build it "
                             f"at {_minor(pinned)} or pass --kubernetes-version {_minor(kube)}")
    return kube


def source_key(root: Path, package: str, go_version: str) -> str:
    """A hash of everything ``go build`` reads from the module (go.mod, go.sum, vendor/modules.txt, every
    non-test .go file) and of the Go version and package."""
    h = hashlib.sha256(f"{go_version}\0{package}\0".encode())
    files = [p for p in (root / "go.mod", root / "go.sum", root / "vendor" / "modules.txt") if p.is_file()]
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIPPED_DIRS and not d.startswith((".", "_")))
        files += [Path(dirpath) / f for f in sorted(filenames) if f.endswith(".go") and not f.endswith("_test.go")]
    for f in files:
        h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:12]


def _run_go(cmd: list[str], cwd: Path, what: str, given: str) -> str:
    env = dict(os.environ, GOFLAGS=os.environ.get("GOFLAGS", ""), GOWORK="off")
    try:
        proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=_BUILD_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise SchedgateError(f"{OPTION} {given}: {what} took more than {_BUILD_TIMEOUT:.0f}s") from None
    if proc.returncode != 0:
        lines = [x for x in proc.stderr.strip().splitlines() if x.strip() and not x.startswith("#")]
        raise SchedgateError(f"{OPTION} {given}: {what} failed: {lines[-1].strip() if lines else proc.returncode}")
    return proc.stdout


def _download(spec: ModuleSpec, go: str, root: Path) -> Path:
    """The module's source, from the module proxy into a writable folder of the cache (the module cache's own
    copy is read-only, and a build may need to write go.sum's missing lines to say so)."""
    src = root / "src" / re.sub(r"[^A-Za-z0-9._@-]", "_", spec.remote)
    if (src / "go.mod").is_file():
        return src
    with tempfile.TemporaryDirectory(prefix="schedgate-module-") as empty:
        out = _run_go([go, "mod", "download", "-json", spec.remote], Path(empty), "go mod download", spec.given)
    try:
        info = json.loads(out)
    except json.JSONDecodeError:
        raise SchedgateError(f"{OPTION} {spec.given}: go mod download said no module folder") from None
    staging = src.with_name(f".{src.name}.{os.getpid()}")
    shutil.copytree(info["Dir"], staging, symlinks=False)
    for dirpath, dirnames, filenames in os.walk(staging):
        for n in (*dirnames, *filenames):
            p = Path(dirpath) / n
            p.chmod(p.stat().st_mode | 0o200)
    os.replace(staging, src)
    return src


def ensure_scheduler_module(given: str, out: TextIO | None = None) -> Path:
    """The scheduler ``--scheduler-module`` names, built now unless the cache holds this source's build; bad input
    (not a module, another Kubernetes minor, a build that fails) is one line."""
    spec = parse_spec(given)
    go = _go()
    cache = cache_root() / "modules"
    pinned = pinned_kubernetes_version()
    with _locked(cache), shown_on(out):
        root = spec.root or _download(spec, go, cache)
        kube = check_kubernetes(spec, (root / "go.mod").read_text(), pinned)
        goversion = _run_go([go, "env", "GOVERSION", "GOOS", "GOARCH"], root, "go env", given)
        final = cache / f"{spec.name}-{source_key(root, spec.package, goversion)}"
        binary = final / spec.name
        if not os.access(binary, os.X_OK):
            started = time.monotonic()
            final.mkdir(parents=True, exist_ok=True)
            staging = final / f".{spec.name}.{os.getpid()}"
            try:
                with ticking(f"go build {spec.package} in {root}", lambda: "building"):
                    _run_go([go, "build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags(kube), "-o",
                             str(staging), spec.package], root, f"go build {spec.package}", given)
                os.replace(staging, binary)
            finally:
                staging.unlink(missing_ok=True)
            log.info(f"built {given} (Kubernetes {kube}) in {time.monotonic() - started:.0f}s: {binary}")
            prune_older(cache, f"{spec.name}-", final, keep=2)
    mark_used(final)
    return binary

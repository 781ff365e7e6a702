"""kwok, the fake kubelet behind a definition's ``nodeAgent: {kind: kwok}``, built from ``go/kwok/``.

kwok lives in a Go module of its own: it follows its own k8s.io minor, and nothing
of its dependency graph may move the one Kubernetes pin in ``go/go.mod``. The
binary goes into the same cache as the others, under a key of that module's
``go.mod``/``go.sum`` and the Go version, and is built the first time a cluster
that has the agent starts (``make e2e`` on a definition without one builds none).

    schedgate tools kwok       # build it now and print its path
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TextIO

from schedgate.errors import ToolchainError
from schedgate.runtime.pins import cache_root
from schedgate.runtime.progress import log, shown_on, ticking
from schedgate.runtime.toolchain import _go, _locked, go_module_dir

PACKAGE = "sigs.k8s.io/kwok/cmd/kwok"
_VERSION_VAR = "sigs.k8s.io/kwok/pkg/consts.Version"


def kwok_module_dir() -> Path:
    d = go_module_dir() / "kwok"
    if not (d / "go.mod").is_file():
        raise ToolchainError(f"{d / 'go.mod'}: not found; it pins the kwok the node agent runs")
    return d


def kwok_version(module_dir: Path) -> str:
    """The kwok module version ``go/kwok/go.mod`` requires (``v0.8.0``)."""
    for line in (module_dir / "go.mod").read_text().splitlines():
        words = line.split()
        if words[:1] == ["require"]:
            words = words[1:]
        if len(words) >= 2 and words[0] == "sigs.k8s.io/kwok":
            return words[1]
    raise ToolchainError(f"{module_dir / 'go.mod'}: requires no sigs.k8s.io/kwok")


def _key(module_dir: Path, go: str) -> str:
    h = hashlib.sha256()
    h.update(subprocess.run([go, "env", "GOVERSION", "GOOS", "GOARCH"], capture_output=True, text=True,
                            check=True).stdout.encode())
    for name in ("go.mod", "go.sum"):
        h.update(name.encode() + b"\0" + (module_dir / name).read_bytes() + b"\0")
    return h.hexdigest()[:12]


def ensure_kwok(out: TextIO | None = None) -> Path:
    """The kwok binary of ``go/kwok/go.mod``, built into the cache if it is not there yet."""
    module_dir = kwok_module_dir()
    go = _go()
    version = kwok_version(module_dir)
    root = cache_root() / "bin"
    final = root / f"kwok-{version}-{_key(module_dir, go)}" / "kwok"
    if os.access(final, os.X_OK):
        return final
    with _locked(root), shown_on(out):
        if not os.access(final, os.X_OK):  # another run may have built it while we waited
            _build(go, module_dir, version, final)
    return final


def _build(go: str, module_dir: Path, version: str, final: Path) -> None:
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".kwok-", dir=final.parent))
    started = time.monotonic()
    log.info(f"building kwok {version} (the node agent) from {module_dir}")
    cmd = [go, "build", "-trimpath", "-buildvcs=false",
           "-ldflags", f"-s -w -X {_VERSION_VAR}={version.lstrip('v')}", "-o", str(staging / "kwok"), PACKAGE]
    try:
        with ticking("go build kwok"):
            built = subprocess.run(cmd, cwd=module_dir, capture_output=True, text=True)
        if built.returncode != 0:
            detail = next((line for line in built.stderr.splitlines() if line and not line.startswith("#")),
                          "no output")
            raise ToolchainError(f"go build {PACKAGE} in {module_dir} failed: {detail}")
        shown = subprocess.run([str(staging / "kwok"), "--version"], capture_output=True, text=True, timeout=30)
        if version.lstrip("v") not in shown.stdout + shown.stderr:
            raise ToolchainError(f"kwok --version says {(shown.stdout + shown.stderr).strip()[:80]!r}, "
                                 f"not {version}")
        os.replace(staging / "kwok", final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    log.info(f"built kwok {version} in {time.monotonic() - started:.0f}s")

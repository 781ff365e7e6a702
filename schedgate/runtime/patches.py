"""Patch releases built on demand: ``--kubernetes-version 1.36.1`` on a checkout that pins 1.36.3.

The pin's modfile is written into the cache (``~/.cache/schedgate/pins/kubernetes-1.36.1.mod`` and its
``.sum``) as ``go/hack/pin-kubernetes.sh`` writes a pin: k8s.io/kubernetes at the release, every staging
module it points at ``./staging`` replaced by the matching ``v0.N.P``, and the etcd server that release was
tested with, all read from the release's own go.mod; then ``go mod tidy``. The binaries build with the
minor's tags, cached like a pin's. The releases the Go module proxy serves are what ``schedgate bisect``
walks.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from schedgate.errors import ToolchainError
from schedgate.runtime.pins import Pin

MODULE = "k8s.io/kubernetes"


def _modfile(version: str, gomod: str) -> str:
    """The pin's modfile before tidying, from the release's own go.mod."""
    staging = re.findall(r"^\s*(k8s\.io/[a-z0-9-]+) => \./staging/", gomod, re.M)
    gover = re.search(r"^go (\S+)\s*$", gomod, re.M)
    etcd = re.search(r"^\s*go\.etcd\.io/etcd/server/v3 (v[0-9.]+)", gomod, re.M)
    if not staging or gover is None:
        raise ToolchainError(f"{MODULE}@v{version}: its go.mod names no staging modules or no go version")
    minor_patch = version.split(".", 1)[1]
    return "\n".join([
        f"// Made on demand by schedgate (runtime/patches.py) for Kubernetes {version}, as hack/pin-kubernetes.sh",
        "module schedgate", "", f"go {gover.group(1)}", "", "require (", f"\t{MODULE} v{version}",
        *([f"\tgo.etcd.io/etcd/server/v3 {etcd.group(1)}"] if etcd else []), ")", "", "replace (",
        *(f"\t{m} => {m} v0.{minor_patch}" for m in staging), ")", ""])


def ensure_modfile(go: str, module_dir: Path, pin: Pin) -> None:
    """Write an on-demand pin's modfile and sum into the cache unless they are there (the caller holds the
    build lock); a version the module proxy does not serve is one line."""
    if not pin.on_demand or (pin.modfile.is_file() and pin.sumfile.is_file()):
        return
    version = pin.version.lstrip("v")
    got = subprocess.run([go, "mod", "download", "-json", f"{MODULE}@v{version}"], cwd=module_dir,
                         capture_output=True, text=True)
    try:
        info = json.loads(got.stdout or "{}")
    except json.JSONDecodeError:
        info = {}
    if got.returncode != 0 or not info.get("GoMod"):
        raise ToolchainError(f"--kubernetes-version {version}: the Go module proxy does not serve {MODULE} "
                             f"v{version}")
    pin.modfile.parent.mkdir(parents=True, exist_ok=True)
    staging = pin.modfile.with_name(f".{pin.modfile.stem}.{os.getpid()}.mod")
    try:
        staging.write_text(_modfile(version, Path(info["GoMod"]).read_text()))
        tidy = subprocess.run([go, "mod", "tidy", f"-modfile={staging}"], cwd=module_dir, capture_output=True,
                              text=True)
        if tidy.returncode != 0:
            raise ToolchainError(f"--kubernetes-version {version}: go mod tidy failed: "
                                 f"{tidy.stderr.strip().splitlines()[-1:] or ['no output']}")
        os.replace(staging.with_suffix(".sum"), pin.sumfile)
        os.replace(staging, pin.modfile)
    finally:
        staging.unlink(missing_ok=True)
        staging.with_suffix(".sum").unlink(missing_ok=True)


def key(version: str) -> tuple[int, ...]:
    """``1.36.2`` as numbers, to sort and compare versions."""
    return tuple(int(x) for x in version.split("."))


def served(go: str, module_dir: Path, version: str) -> bool:
    """Whether the Go module proxy serves k8s.io/kubernetes at ``version`` (its .info: no download)."""
    return subprocess.run([go, "list", "-m", "-json", f"{MODULE}@v{version}"], cwd=module_dir,
                          capture_output=True, text=True).returncode == 0


def released(go: str, module_dir: Path, low: str, high: str) -> list[str]:
    """The released versions from ``low`` to ``high`` (``1.36.0`` .. ``1.37.2``) the Go module proxy serves, oldest
    first: each minor's patches from .0 up to the first one it does not serve (a proxy's version list may
    leave out versions it serves, so each is asked for)."""
    out: list[str] = []
    for minor in range(key(low)[1], key(high)[1] + 1):
        for patch in range(100):
            v = f"1.{minor}.{patch}"
            if key(v) > key(high) or not served(go, module_dir, v):
                break
            if key(v) >= key(low):
                out.append(v)
    return out

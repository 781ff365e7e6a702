"""Which binaries a run uses, where each came from, and that each is the pinned version.

Three sources, the ecosystem's way: built from schedgate's Go modules at the pin
(the default), a folder of prebuilt ones (``--bin-dir``), or envtest's asset
folder (``KUBEBUILDER_ASSETS``: etcd and kube-apiserver; the rest is built).
Whatever the source, a binary that reports another version than the pin
(Kubernetes for the kube-* ones, the etcd server module for etcd) is refused
in one line before anything starts.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import replace
from pathlib import Path

from schedgate.errors import ToolchainError
from schedgate.runtime.toolchain import COMMANDS, Binaries, ensure_binaries, pinned_kubernetes_version, selected_pin

ASSETS = "KUBEBUILDER_ASSETS"
FROM_ASSETS = ("etcd", "kube-apiserver")  # what an envtest asset folder holds that a cluster runs
BUILT = "built from Go modules at the pin"


def pinned_etcd_version() -> str:
    """The etcd server module version the selected pin names (what the etcd binary reports without its ``v``)."""
    return selected_pin().etcd_version


def reported_version(binary: Path) -> str:
    """What ``binary --version`` says it is (``v1.37.2``, ``3.7.0``), or why it cannot say."""
    try:
        out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=30)
    except OSError as e:
        raise ToolchainError(f"{binary}: cannot run it: {e.strerror}") from None
    text = out.stdout + out.stderr
    m = re.search(r"Kubernetes (v\d+\.\d+\.\d+)|etcd Version: (\d+\.\d+\.\d+)", text)
    if not m:
        raise ToolchainError(f"{binary} --version says {text.strip().splitlines()[:1]}, no version")
    return m.group(1) or m.group(2)


def check_versions(bins: Binaries, commands: tuple[str, ...] = COMMANDS) -> None:
    """Refuse, in one line, a binary that is not the pinned version."""
    kube, etcd = bins.kubernetes_version, pinned_etcd_version()
    for c in commands:
        if c == "schedgate-pki":
            continue
        want = etcd if c == "etcd" else kube
        have = reported_version(bins.path(c))
        if have != want:
            raise ToolchainError(f"{bins.path(c)} ({bins.origins.get(c, BUILT)}) is {c} {have}; this checkout "
                                 f"pins {want} (go/{selected_pin().file}): use binaries of the pin, or pin {have}")


def from_assets() -> dict[str, Path]:
    """etcd and kube-apiserver of ``$KUBEBUILDER_ASSETS`` (empty when it is not set)."""
    folder = os.environ.get(ASSETS)
    if not folder:
        return {}
    paths = {c: Path(folder) / c for c in FROM_ASSETS}
    missing = [c for c, p in paths.items() if not os.access(p, os.X_OK)]
    if missing:
        raise ToolchainError(f"{ASSETS}={folder}: no executable {', '.join(missing)} there")
    return paths


def check_given(bin_dir: Path | None) -> None:
    """Before anything starts: the binaries the user gave (``--bin-dir``, ``KUBEBUILDER_ASSETS``) are there
    and of the pin. (Built ones are checked as they are built.)"""
    assets = from_assets()
    if bin_dir is None and not assets:
        return
    bins = Binaries(Path(bin_dir or "/nonexistent"), pinned_kubernetes_version(), overrides=assets,
                    origins={**{c: f"--bin-dir {bin_dir}" for c in COMMANDS},
                             **{c: f"{ASSETS}={os.environ[ASSETS]}" for c in assets}})
    given = tuple(c for c in COMMANDS if c in assets or bin_dir is not None)
    missing = [c for c in given if not os.access(bins.path(c), os.X_OK)]
    if missing:
        raise ToolchainError(f"--bin-dir {bin_dir}: missing executable {', '.join(missing)}")
    check_versions(bins, given)


def resolve(bin_dir: Path | None) -> Binaries:
    """The run's binaries (built if needed), each checked against the pin."""
    if bin_dir is not None:
        bins = Binaries(Path(bin_dir), pinned_kubernetes_version(),
                        origins={c: f"--bin-dir {bin_dir}" for c in COMMANDS})
        missing = bins.missing(mutants=False)
        if missing:
            raise ToolchainError(f"--bin-dir {bin_dir}: missing executable {', '.join(missing)}")
    else:
        bins = ensure_binaries()
    assets = from_assets()
    if assets:
        bins = replace(bins, overrides={**bins.overrides, **assets},
                       origins={**bins.origins, **{c: f"{ASSETS}={os.environ[ASSETS]}" for c in assets}})
    check_versions(bins)
    return bins


def describe(bin_dir: Path | None) -> str:
    """Where each binary comes from and the version it reports, for the report header (nothing is built)."""
    assets = os.environ.get(ASSETS)
    parts = []
    for c in COMMANDS:
        if assets and c in FROM_ASSETS:
            where, path = f"{ASSETS}={assets}", Path(assets) / c
        elif bin_dir is not None:
            where, path = f"--bin-dir {bin_dir}", Path(bin_dir) / c
        else:
            continue
        try:
            version = reported_version(path) if c != "schedgate-pki" else ""
        except ToolchainError:
            version = "(no version)"
        parts.append(f"{c} {version} from {where}".replace("  ", " "))
    built = [c for c in COMMANDS if not (assets and c in FROM_ASSETS) and bin_dir is None]
    if built:
        parts.append(f"{', '.join(built)} {BUILT} ({pinned_kubernetes_version()}, etcd {pinned_etcd_version()})")
    return "; ".join(parts)

"""Import paths of the flat layout that came before the layer subpackages, kept working.

``from schedgate.waits import wait_for`` still works: each old module name is
made on first import from the public names of the modules its contents moved
to (:data:`MOVED`). New code imports from the subpackages.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Sequence

MOVED: dict[str, tuple[str, ...]] = {
    "schedgate.api": ("schedgate.kube.api",),
    "schedgate.apiproxy": ("schedgate.faults.apiproxy",),
    "schedgate.artifacts": ("schedgate.report.artifacts",),
    "schedgate.builders": ("schedgate.objects.builders", "schedgate.objects.pods"),
    "schedgate.collect": ("schedgate.pytest_plugin.items",),
    "schedgate.definitions": ("schedgate.spec.cluster", "schedgate.spec.node_fields", "schedgate.spec.validate"),
    "schedgate.events": ("schedgate.objects.events",),
    "schedgate.extender": ("schedgate.faults.extender",),
    "schedgate.fixtures": ("schedgate.pytest_plugin.fixtures",),
    "schedgate.gpu": ("schedgate.workloads.gpu",),
    "schedgate.health": ("schedgate.runtime.health",),
    "schedgate.kind": ("schedgate.providers.kind.config", "schedgate.providers.kind.host",
                       "schedgate.providers.kind.scheduler", "schedgate.providers.kind.provider",
                       "schedgate.providers.base"),
    "schedgate.local": ("schedgate.providers.local.controlplane", "schedgate.providers.local.provider"),
    "schedgate.metrics": ("schedgate.objects.metrics",),
    "schedgate.mutants": ("schedgate.cli.mutants", "schedgate.pytest_plugin.mutant_report"),
    "schedgate.options": ("schedgate.pytest_plugin.options",),
    "schedgate.picture": ("schedgate.report.picture",),
    "schedgate.plugin": ("schedgate.pytest_plugin.hooks",),
    "schedgate.procs": ("schedgate.runtime.procs",),
    "schedgate.quantity": ("schedgate.spec.quantity",),
    "schedgate.rbac": ("schedgate.providers.rbac",),
    "schedgate.repro": ("schedgate.scenarios.run", "schedgate.objects.matchers"),
    "schedgate.scenario": ("schedgate.scenarios.load", "schedgate.scenarios.parse"),
    "schedgate.schedconfig": ("schedgate.spec.schedconfig",),
    "schedgate.scheduler": ("schedgate.runtime.scheduler",),
    "schedgate.timing": ("schedgate.report.timing",),
    "schedgate.toolchain": ("schedgate.runtime.toolchain",),
    "schedgate.waits": ("schedgate.kube.watch", "schedgate.objects.matchers"),
    "schedgate.yamlfile": ("schedgate.spec.yamlfile",),
}


def public_names(module: types.ModuleType) -> list[str]:
    """``__all__``, else every public name the module defines itself (not what it imports)."""
    names = getattr(module, "__all__", None)
    if names is not None:
        return list(names)
    out = []
    for n, obj in vars(module).items():
        if n.startswith("_") or isinstance(obj, types.ModuleType) or n == "annotations":
            continue
        if getattr(obj, "__module__", module.__name__) not in (module.__name__, "typing"):
            continue
        out.append(n)
    return out


class _Loader(importlib.abc.Loader):
    def __init__(self, targets: Sequence[str]) -> None:
        self.targets = targets

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None  # the default: a plain module

    def exec_module(self, module: types.ModuleType) -> None:
        names: list[str] = []
        for target in self.targets:
            m = importlib.import_module(target)
            for n in public_names(m):
                if n not in names:
                    setattr(module, n, getattr(m, n))
                    names.append(n)
        setattr(module, "__all__", names)  # noqa: B010 — a module attribute mypy does not model
        module.__doc__ = f"Moved to {', '.join(self.targets)} (this old path keeps working)."


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: types.ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        targets = MOVED.get(fullname)
        if targets is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Loader(targets))


def install() -> None:
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.append(_Finder())

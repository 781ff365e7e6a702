"""The outcome ``object``: a field of an object an ``apply`` step made reaches a value — what a plugin or a
controller writes in a custom resource's status (a PodGroup's ``status.phase``, a quota's used count), waited for
on a watch of that one object."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes import client as k8s

from schedgate.kube.watch import MATCH, Check, pending, wait_for_items
from schedgate.scenarios.declare import DeclaredOutcome, arg, read_string
from schedgate.scenarios.outcomes import outcome
from schedgate.scenarios.parse import Parser
from schedgate.scenarios.run import Run
from schedgate.spec.jsontypes import SCALAR, STR

_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*(\.([A-Za-z_][A-Za-z0-9_-]*|[0-9]+))*$")


def _path(p: Parser, raw: Any, w: str) -> str:
    path = p.v.string(raw, w)
    if not _PATH.match(path):
        p.v.fail(w, f"must be a dotted path to a field (status.phase, status.conditions.0.type), got {path!r}")
    return path


def field_of(obj: dict[str, Any], path: str) -> tuple[bool, Any]:
    """Whether the object has the field at the dotted ``path`` (a number indexes a list), and its value."""
    here: Any = obj
    for part in path.split("."):
        if isinstance(here, dict) and part in here:
            here = here[part]
        elif isinstance(here, list) and part.isdigit() and int(part) < len(here):
            here = here[int(part)]
        else:
            return False, None
    return True, here


@dataclass(frozen=True)
class _OneObject:
    """The object ``name`` of a resource of an API group, as a collection of at most one ``wait_for_items``
    lists and watches."""

    api: Any
    group: str
    version: str
    plural: str
    namespace: str | None
    name: str
    shown: str

    def describe(self) -> str:
        return self.shown

    def list_call(self) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
        co = k8s.CustomObjectsApi(self.api)
        only = {"field_selector": f"metadata.name={self.name}"}
        if self.namespace:
            return co.list_namespaced_custom_object, (self.group, self.version, self.namespace, self.plural), only
        return co.list_cluster_custom_object, (self.group, self.version, self.plural), only

    def check_health(self) -> None:
        return None


@outcome("object", about_pods=False)
@dataclass(frozen=True)
class ObjectField(DeclaredOutcome):
    """The field ``field`` of the object ``kind``/``name`` (an earlier ``apply`` step made it) ``equals`` a value,
    or its text ``matches`` a regular expression. For what the scheduler's plugins or a controller write into
    an object (a custom resource's status); the object's API group is the one it was applied with."""

    kind: str = arg("kind", "the object's kind", STR, read_string)
    name: str = arg("name", "the object's name (an earlier apply step made it)", STR, read_string)
    field: str = arg("field", "a dotted path to the field: status.phase, status.conditions.0.type", STR, _path)
    equals: Any = arg("equals", "the value it must have (a string, number, boolean or null)", SCALAR,
                      lambda p, x, w: x, default=None)
    matches: str | None = arg("matches", "a regular expression its value's text must match", STR,
                              lambda p, x, w: p.v.regex(x, w), default=None)
    api_version: str = ""
    has_equals: bool = False

    @classmethod
    def rule(cls, p: Parser, m: dict[str, Any], w: str) -> dict[str, Any]:
        """kind and name name an object an earlier apply step made, of an API group; one of equals and matches."""
        kind, name = p.v.string(m["kind"], f"{w}.kind"), p.v.string(m["name"], f"{w}.name")
        if (kind, name) not in p.applied:
            p.v.fail(f"{w}.name", f"no earlier apply step made {kind}/{name}")
        api_version = p.applied[(kind, name)]
        if "/" not in api_version:
            p.v.fail(f"{w}.kind", f"{kind} is of the core API ({api_version}): object reads objects of an API group")
        if ("equals" in m) == ("matches" in m):
            p.v.fail(w, "needs exactly one of equals and matches")
        return {"kind": kind, "name": name, "api_version": api_version, "has_equals": "equals" in m}

    def _holds(self, value: Any) -> bool:
        if self.has_equals:  # true is not 1, "2" is not 2
            return value is self.equals if isinstance(value, bool) or isinstance(self.equals, bool) \
                else bool(value == self.equals)
        text = value if isinstance(value, str) else json.dumps(value)
        return re.search(str(self.matches), text) is not None

    def check(self, r: Run, pods: list[str], timeout: float, index: int) -> None:
        plural, namespaced = r.objects.resource_of(self.api_version, self.kind)
        group, version = self.api_version.split("/", 1)
        target = _OneObject(r.cluster.api, group, version, plural, r.ns.name if namespaced else None, self.name,
                            f"{self.kind}/{self.name}")

        def holds(items: list[dict[str, Any]]) -> Check:
            if not items:
                return pending("no such object")
            found, value = field_of(items[0], self.field)
            if found and self._holds(value):
                return MATCH
            return pending(f"{self.field} is {json.dumps(value)}" if found else f"it has no {self.field}")

        want = f"equals {json.dumps(self.equals)}" if self.has_equals else f"matches {self.matches!r}"
        wait_for_items(target, holds, f"{self.field} {want}", timeout)
        r.figure(f"step {index}: {self.kind}/{self.name} {self.field}", str(self.equals if self.has_equals else
                                                                             self.matches))

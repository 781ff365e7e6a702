"""Feature gates and served API versions of a cluster definition, and their check against the pinned version.

A definition may switch Kubernetes features and API versions on (or off) for every component::

    featureGates: {GenericWorkload: true, TopologyAwareWorkloadScheduling: true}
    runtimeConfig: {scheduling.k8s.io/v1beta1: true}

``featureGates`` goes to the API server, the controller manager and every kube-scheduler as
``--feature-gates`` (and to the kubelets on kind); ``runtimeConfig`` to the API server as
``--runtime-config``. Each gate is checked, before anything starts, against the gates the pinned
kube-apiserver itself says it lets you set (its ``--help`` lists every one with its stage and default):
a gate it does not list is refused in one line naming the file, the field, its line and the version —
whether it never existed there, does not exist yet, or is GA and locked to its default. An API version
to turn on must be one the version's published schemas have a kind of.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn

from schedgate.errors import DefinitionError
from schedgate.spec.manifest import served_api_versions
from schedgate.spec.validate import Validator

_GATE_NAME = re.compile(r"^[A-Z][A-Za-z0-9]*$")
# group/version, or a bare core version (v1), or api/all|api/ga|api/beta|api/alpha
_API_VERSION = re.compile(r"^(?:(?:[a-z0-9]([-a-z0-9]*[a-z0-9])?\.)*[a-z0-9]([-a-z0-9]*[a-z0-9])?/)?v\d+"
                          r"(?:(?:alpha|beta)\d+)?$|^api/(?:all|ga|beta|alpha)$")
# One gate of `--feature-gates` in a component's --help: "kube:Name=true|false (STAGE - default=VALUE)"
_HELP_GATE = re.compile(r"(?:^|\s)(?:kube:)?([A-Z][A-Za-z0-9]*)=true\|false \((\w+) - default=(true|false)\)")


@dataclass(frozen=True)
class Gates:
    """A definition's feature gates and API versions, with the line of each (for a one-line refusal)."""

    feature_gates: tuple[tuple[str, bool], ...] = ()
    runtime_config: tuple[tuple[str, bool], ...] = ()
    source: str = field(default="<memory>", compare=False)
    lines: Mapping[str, int] = field(default_factory=dict, compare=False)
    given: tuple[str, ...] = field(default=(), compare=False)  # gates --feature-gates set (over the file's)
    needed: Mapping[str, str] = field(default_factory=dict, compare=False)  # field turned on -> the scenario's need

    def with_option(self, pairs: tuple[tuple[str, bool], ...]) -> Gates:
        """These gates with ``--feature-gates``'s over them (a gate set in both: the option's value)."""
        merged = {**dict(self.feature_gates), **dict(pairs)}
        return Gates(tuple(merged.items()), self.runtime_config, self.source, self.lines,
                     tuple(name for name, _ in pairs), self.needed)

    def with_needs(self, gates: tuple[tuple[str, str], ...], apis: tuple[str, ...]) -> Gates:
        """These gates with ``gates`` (name, the file and field that need it) turned on and ``apis`` served, each
        where the definition leaves it unset (a scenario's ``requires:``, spec.features)."""
        have, served = dict(self.feature_gates), dict(self.runtime_config)
        why = min((where for _, where in gates), default=self.source)
        needed = {**{f"featureGates.{n}": where for n, where in gates if n not in have},
                  **{f"runtimeConfig.{a}": why for a in apis if a not in served}}
        return Gates(tuple({**have, **{n: True for n, _ in gates if n not in have}}.items()),
                     tuple({**served, **{a: True for a in apis if a not in served}}.items()),
                     self.source, self.lines, self.given, {**self.needed, **needed})

    def __bool__(self) -> bool:
        return bool(self.feature_gates or self.runtime_config)

    def on(self, gate: str) -> bool | None:
        """What the definition sets ``gate`` to, or None when it does not set it."""
        return dict(self.feature_gates).get(gate)

    def feature_gates_flag(self) -> list[str]:
        """``--feature-gates=A=true,B=false``, or nothing."""
        if not self.feature_gates:
            return []
        return ["--feature-gates=" + ",".join(f"{k}={'true' if v else 'false'}" for k, v in self.feature_gates)]

    def runtime_config_flag(self) -> list[str]:
        if not self.runtime_config:
            return []
        return ["--runtime-config=" + ",".join(f"{k}={'true' if v else 'false'}" for k, v in self.runtime_config)]

    def check(self, settable: Mapping[str, Gate], version: str) -> None:
        """Fail in one line on the first gate ``settable`` (the pinned version's) does not have, or API
        version Kubernetes ``version`` does not serve."""
        for name, _ in self.feature_gates:
            if name not in settable:
                near = sorted(g for g in settable if g.lower().startswith(name.lower()[:4]))[:3]
                self._fail(f"featureGates.{name}", f"Kubernetes {version} has no feature gate {name!r} one may "
                           "set (never there, not yet there, or GA and locked)"
                           + (f"; it has {', '.join(near)}" if near else ""))
        served = served_api_versions(version)
        for api, on in self.runtime_config:
            if on and served is not None and not api.startswith("api/") and api not in served:
                group = api.rsplit("/", 1)[0] if "/" in api else ""
                same = sorted(x for x in served if x.rsplit("/", 1)[0] == group and "/" in x) if group else []
                self._fail(f"runtimeConfig.{api}", f"Kubernetes {version} does not serve {api}"
                           + (f" (it serves {', '.join(same)})" if same else ""))

    def _fail(self, where: str, problem: str) -> NoReturn:
        gate = where.split(".", 1)[1] if where.startswith("featureGates.") else ""
        if gate in self.given:
            raise DefinitionError("--feature-gates", gate, problem)
        if where in self.needed:  # turned on for a scenario's requires: (spec.features)
            file, _, need = self.needed[where].partition(": ")
            raise DefinitionError(file, need, f"turns on {where} for it: {problem}")
        line = self.lines.get(where)
        raise DefinitionError(self.source, where, problem + (f" (line {line})" if line else ""))


@dataclass(frozen=True)
class Gate:
    stage: str    # ALPHA, BETA, DEPRECATED, ...
    default: bool


def parse_gates(v: Validator, top: Mapping[str, Any]) -> Gates:
    """The ``featureGates`` and ``runtimeConfig`` fields of a definition's top level (both optional)."""
    gates: list[tuple[str, bool]] = []
    for name, value in v.mapping(top.get("featureGates") or {}, "featureGates").items():
        where = f"featureGates.{name}"
        if not isinstance(name, str) or not _GATE_NAME.match(name):
            v.fail(where, "must be a feature gate's name, such as GenericWorkload")
        if not isinstance(value, bool):
            v.fail(where, f"must be true or false, got {value!r}")
        gates.append((name, value))
    apis: list[tuple[str, bool]] = []
    for name, value in v.mapping(top.get("runtimeConfig") or {}, "runtimeConfig").items():
        where = f"runtimeConfig.{name}"
        if not isinstance(name, str) or not _API_VERSION.match(name):
            v.fail(where, "must be an API group/version such as scheduling.k8s.io/v1beta1 (or api/all, "
                          "api/ga, api/beta, api/alpha)")
        if not isinstance(value, bool):
            v.fail(where, f"must be true or false, got {value!r}")
        apis.append((name, value))
    lines = {k: n for k, n in (v.lines or {}).items() if k.startswith(("featureGates.", "runtimeConfig."))}
    return Gates(tuple(gates), tuple(apis), source=v.source, lines=lines)


def parse_gate_option(text: str) -> tuple[tuple[str, bool], ...]:
    """``--feature-gates A=true,B=false``, as a component takes it; a bad one is one line."""
    out: dict[str, bool] = {}
    for item in (x.strip() for x in text.split(",")):
        name, eq, value = item.partition("=")
        if not eq or not _GATE_NAME.match(name) or value.lower() not in ("true", "false"):
            raise DefinitionError("--feature-gates", item or text, "must be NAME=true or NAME=false, comma-separated "
                                                                   "(GenericWorkload=true,DRAConsumableCapacity=false)")
        out[name] = value.lower() == "true"
    return tuple(out.items())


def settable_gates(help_text: str) -> dict[str, Gate]:
    """The feature gates a component's ``--help`` lists (name -> stage and default)."""
    return {m.group(1): Gate(m.group(2), m.group(3) == "true") for m in _HELP_GATE.finditer(help_text)}

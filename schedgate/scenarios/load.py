"""Scenario files: a scheduling situation written down as data (``*.scenario.yaml``).

A scenario names a cluster definition, optionally the scheduler profile, pod
templates, and ordered steps — actions and expectations::

    apiVersion: schedgate.io/v1alpha1
    kind: Scenario
    name: gpu-pod-needs-the-network
    cluster: clusters/inference.yaml
    scheduler: clusters/profiles/gpu-packing-scheduler.yaml
    templates:
      infer: {gpus: 1, cpu: 4, memory: 32Gi, scheduler: gpu-packing-scheduler,
              requireLabels: {infra.example.com/high-speed-network: "true"}}
    steps:
      - createPods: {template: infer, name: infer, count: 2}
      - expect: {pods: infer-*, scheduledOn: [gpu-net]}

Loading checks every field against the cluster definition (node and pool
names, pods created by earlier steps, templates) and reports the first
problem as ``FILE: FIELD: PROBLEM (line N)``. Each step kind parses itself
(:mod:`.steps`, :mod:`.outcomes`); :class:`~schedgate.scenarios.run.Run` runs them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import schedgate.scenarios.api_fault_steps
import schedgate.scenarios.control_steps
import schedgate.scenarios.device_steps
import schedgate.scenarios.differential
import schedgate.scenarios.group_claims
import schedgate.scenarios.group_steps
import schedgate.scenarios.invariants
import schedgate.scenarios.live_outcomes
import schedgate.scenarios.log_outcomes
import schedgate.scenarios.metric_outcomes
import schedgate.scenarios.node_steps
import schedgate.scenarios.object_outcomes
import schedgate.scenarios.object_steps
import schedgate.scenarios.outcomes
import schedgate.scenarios.perf_steps
import schedgate.scenarios.race_outcomes
import schedgate.scenarios.shared_capacity
import schedgate.scenarios.spread_outcomes  # noqa: F401  (these register their steps)
from schedgate.errors import DefinitionError, SchedgateError
from schedgate.runtime.pins import pins
from schedgate.runtime.toolchain import go_module_dir
from schedgate.scenarios.api_fault_steps import ApiFaults
from schedgate.scenarios.control_steps import StartScheduler
from schedgate.scenarios.needs import REQUIRES, found, node_objects, requires
from schedgate.scenarios.parse import Parser
from schedgate.scenarios.run import Action
from schedgate.scenarios.steps import STEPS
from schedgate.scenarios.template import TEMPLATE_FIELDS
from schedgate.spec.cluster import API_VERSION, ClusterDefinition, load_definition, parse_definition
from schedgate.spec.features import turn_on
from schedgate.spec.jsontypes import CONFIG, DNS, STR, listing, ref
from schedgate.spec.roles import SCENARIO_ROLES, role
from schedgate.spec.schedconfig import (
    DEFAULT_SCHEDULER,
    SchedulerConfig,
    load_scheduler_config,
    parse_scheduler_config,
)
from schedgate.spec.shape import Key, Shape
from schedgate.spec.shipped import resolve_user_path, shipped
from schedgate.spec.validate import Validator, kind_of
from schedgate.spec.versions import KNOWN_BUG, KnownBug, read_known_bug
from schedgate.spec.yamlfile import read_yaml

T = TypeVar("T")
KIND = "Scenario"
SUFFIX = ".scenario.yaml"
SCENARIO = Shape("scenario", "Scenario files: a scheduling situation written down as data (`*.scenario.yaml`).", (
    Key("apiVersion", "", {"const": API_VERSION}, required=True),
    Key("kind", "", {"const": KIND}, required=True),
    Key("name", "the scenario's name (its test's)", DNS, required=True),
    Key("description", "what it shows, in a sentence or two", {"type": "string"}),
    Key("cluster", "the cluster it runs on", {"anyOf": [
        {**STR, "description": "a cluster definition file"}, ref("cluster")]}, required=True),
    Key("scheduler", "the scheduler its pods name, unless the run gives one", {"anyOf": [
        CONFIG, {"type": "object", "description": "an inline configuration"}]}),
    Key("requires", "what it needs of the scheduler under test that its steps do not show, Kubernetes features "
                    "older minors have off by default, and Kubernetes versions (elsewhere the file skips)", REQUIRES),
    Key("templates", "name -> pod fields createPods steps start from", {
        "type": "object", "propertyNames": DNS, "additionalProperties": ref("template")}),
    Key("steps", "actions and expectations, in order", listing(ref("step"), 1), required=True),
    Key("knownBug", "", KNOWN_BUG.schema()),
))


@dataclass(frozen=True)
class Step:
    """One validated step: its kind (``createPods``, ``expect``, ...), its typed action, where it is."""

    kind: str
    action: Action
    index: int
    line: int

    def title(self) -> str:
        return f"steps[{self.index}] {self.kind} (line {self.line})"


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    source: str
    definition: ClusterDefinition
    scheduler: SchedulerConfig | None
    steps: tuple[Step, ...]
    pods: tuple[str, ...] = field(default=())  # every pod name a step creates, in order
    has_devices: bool = False  # its nodes (defined or added) have devices schedgate publishes, or classes
    # What it needs of the scheduler under test beyond the common ground (capability -> the field that says
    # so; scenarios.needs): a black box lacking one skips the file.
    needs: Mapping[str, str] = field(default_factory=dict)
    # What it needs of nodes that are API objects only ("adds", "overcommits": scenarios.needs.NODE_OBJECTS) ->
    # the first step field that needs it: a provider that cannot give it skips the file before it starts.
    node_objects: Mapping[str, str] = field(default_factory=dict)
    known_bug: KnownBug | None = None  # an upstream bug it shows on some versions (spec.versions)
    # Profiles the file's own configuration serves that the one replacing it (``--scheduler-config``) does
    # not: its steps name them, so the file skips, saying so, before anything starts.
    unserved: tuple[str, ...] = ()



def _pinned_minors() -> list[str]:
    """The minors schedgate pins (``1.35``...), or none where its Go module is not at hand (``--bin-dir``)."""
    try:
        return list(pins(go_module_dir()))
    except SchedgateError:
        return []


def load_scenario(path: str | Path, scheduler_override: SchedulerConfig | None = None,
                  role_config: Callable[[str], SchedulerConfig] | None = None) -> Scenario:
    """Read and validate a scenario file; a problem raises DefinitionError naming file, field and line.

    ``scheduler:`` is a file, an inline configuration, or a role's name (``conformance``): a role's file
    is ``role_config(name)`` (default: the shipped one), and ``scheduler_override`` (``--scheduler-config``,
    the profile under test) replaces files and inline configurations, never a role's."""
    p = Path(path)
    doc, lines = read_yaml(p, "scenario", kinds=(KIND,))
    v = Validator(str(p), lines)
    m = SCENARIO.read(v, doc, "")
    if m["apiVersion"] != API_VERSION:
        v.fail("apiVersion", f"must be {API_VERSION}, got {m['apiVersion']!r}")
    if m["kind"] != KIND:
        v.fail("kind", f"must be {KIND}, got {m['kind']!r}")
    name = v.dns_label(m["name"], "name")
    description = m.get("description") or ""
    if not isinstance(description, str):
        v.fail("description", f"must be text, got {kind_of(description)}")
    definition = _file_or_inline(v, p, m["cluster"], "cluster", "an inline cluster definition", load_definition,
                                 lambda d, src: parse_definition(d, source=src))
    scheduler = scheduler_override
    unserved: tuple[str, ...] = ()
    if m.get("scheduler") in SCENARIO_ROLES:
        scheduler = (role_config or _shipped_role)(m["scheduler"])
    elif m.get("scheduler") is not None:
        own = _file_or_inline(v, p, m["scheduler"], "scheduler", "an inline configuration",
                              load_scheduler_config, lambda d, src: parse_scheduler_config(d, source=src))
        if own.black_box is not None and not own.black_box.named:
            v.fail("scheduler", f"{own.source}: a BlackBoxScheduler named by a scenario file needs its "
                                "own schedulerName (only one standing in for a profile or role may leave it out)")
        if scheduler is None:
            scheduler = own
        else:  # the configuration under test replaces the file's: the profiles the file's steps name must stay
            unserved = tuple(n for n in own.profile_names if n not in scheduler.profile_names)
    known_bug = read_known_bug(v, m["knownBug"]) if "knownBug" in m else None
    if known_bug is not None:
        minors = _pinned_minors()
        if minors and not known_bug.affects.holds_in(minors):
            v.fail("knownBug.affects", f"{known_bug.affects.text!r} holds for no release of a minor schedgate "
                                       f"builds ({', '.join(minors)})")
    needs = requires(v, m.get("requires"))
    for cap, where in found(m).items():
        needs.setdefault(cap, where)
    if any(ds.counters for n in definition.nodes() for ds in n.devices):
        needs.setdefault("DRAPartitionableDevices", "cluster: devices' counters")
    if any(d.shared for n in definition.nodes() for ds in n.devices for d in ds.devices):
        needs.setdefault("DRAConsumableCapacity", "cluster: devices' allowMultipleAllocations")
    definition = turn_on(definition, needs, str(p))  # a gated feature it requires: on, unless the file says
    parser = Parser(path=p, v=v, definition=definition, load_config=load_scheduler_config)
    for t, body in v.mapping(m.get("templates") or {}, "templates").items():
        v.dns_label(t, f"templates.{t}")
        v.mapping(body, f"templates.{t}", allowed=TEMPLATE_FIELDS)
        parser.templates[t] = parser.template(body, f"templates.{t}")
        parser.check_pod(parser.templates[t], f"templates.{t}")
    raw_steps = m["steps"]
    if not isinstance(raw_steps, list) or not raw_steps:
        v.fail("steps", f"must be a non-empty list of steps, got {kind_of(raw_steps)}")
    steps = tuple(_step(parser, s, i) for i, s in enumerate(raw_steps))
    if scheduler is not None and not unserved:
        _served(v, scheduler, steps, role_config or _shipped_role)
    return Scenario(name=name, description=description.strip(), source=str(p), definition=definition,
                    scheduler=scheduler, steps=steps, pods=tuple(parser.created), needs=needs,
                    node_objects=node_objects(m), known_bug=known_bug, unserved=unserved,
                    has_devices=bool(definition.device_classes)
                    or any(n.devices for n in [*definition.nodes(), *parser.added.values()]))


def _served(v: Validator, scheduler: SchedulerConfig, steps: tuple[Step, ...],
            role_config: Callable[[str], SchedulerConfig]) -> None:
    """An ``apiFaults`` step's profile is one a scheduler of this run serves: the configuration under test, the
    cluster's default scheduler, or one a ``startScheduler`` step starts. (Before anything starts: at run time
    it would be found missing only once the cluster is up.)"""
    served = {DEFAULT_SCHEDULER, *scheduler.profile_names}
    for s in steps:
        if isinstance(s.action, StartScheduler) and s.action.config is not None:
            config = s.action.config
            served.update((role_config(config) if isinstance(config, str) else config).profile_names)
    for s in steps:
        if isinstance(s.action, ApiFaults) and s.action.profile not in served:
            v.fail(f"steps[{s.index}].apiFaults.profile", f"no scheduler of this run serves profile "
                                                          f"{s.action.profile!r} (served: {', '.join(sorted(served))})")


def _shipped_role(name: str) -> SchedulerConfig:
    return load_scheduler_config(shipped(role(name).default))


def _step(p: Parser, raw: Any, i: int) -> Step:
    v = p.v
    where = f"steps[{i}]"
    if not isinstance(raw, dict) or len(raw) != 1:
        v.fail(where, f"must be a mapping with exactly one step name (one of: {', '.join(STEPS)})")
    (kind, body), = raw.items()
    if kind not in STEPS:
        hint = " (fixed sleeps are not steps: wait for a signal with 'wait' or 'expect')" \
            if kind in ("sleep", "pause") else ""
        v.fail(f"{where}.{kind}", f"unknown step (known: {', '.join(STEPS)}){hint}")
    action = STEPS[kind](p, {} if body is None else body, f"{where}.{kind}")
    return Step(kind=kind, action=action, index=i, line=(v.lines or {}).get(where, 0))


def _file_or_inline(v: Validator, path: Path, raw: Any, key: str, inline: str, load: Callable[[Path], T],
                    parse: Callable[[Any, str], T]) -> T:
    """A file named relative to the scenario, or the document written inline under ``key``."""
    if isinstance(raw, str):
        return load(resolve_user_path(raw, path.parent))
    if not isinstance(raw, dict):
        v.fail(key, f"must be a file name or {inline}, got {kind_of(raw)}")
    try:
        return parse(raw, str(path))
    except DefinitionError as e:  # a field of this file: named from the top, with its line
        v.fail(f"{key}.{e.field}" if e.field else key, e.problem)


def is_scenario_file(path: Path) -> bool:
    return path.name.endswith(SUFFIX)

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
problem as ``FILE: FIELD: PROBLEM (line N)``. :mod:`schedgate.repro` runs it.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from schedgate.definitions import (
    API_VERSION,
    TAINT_EFFECTS,
    ClusterDefinition,
    Validator,
    kind_of,
    load_definition,
    parse_definition,
)
from schedgate.errors import DefinitionError
from schedgate.schedconfig import SchedulerConfig, load_scheduler_config, parse_scheduler_config
from schedgate.yamlfile import read_yaml

T = TypeVar("T")
KIND = "Scenario"
SUFFIX = ".scenario.yaml"
PROJECT = Path(__file__).resolve().parent.parent
# Scheduler configurations a step may start by role; the run's options may replace each file.
ROLES = {"network-slots": "clusters/profiles/network-slots.yaml",
         "tenant-filter": "clusters/profiles/tenant-filter.yaml",
         "extender-hard": "clusters/profiles/extender-hard.yaml",
         "extender-soft": "clusters/profiles/extender-soft.yaml"}
OUTCOMES = ("scheduledOn", "unschedulable", "schedulingError", "untouched", "gone", "event", "metric", "wholeFreeNodes")
WAIT_UNTIL = ("scheduled", "unschedulable", "schedulingError", "decided", "gone")
EXTENDER_KINDS = ("hard", "soft")
TEMPLATE_FIELDS = ("gpus", "cpu", "memory", "requests", "scheduler", "requireLabels", "forbidLabels",
                   "tolerations", "labels", "annotations", "node", "priorityClass")
DEFAULT_TIMEOUT = 30.0
MAX_SECONDS = 3600.0     # any timeout or latency
MAX_WHOLE = 1_000_000    # any other count (GPUs, slots)
MAX_PODS = 10_000        # pods one scenario creates


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:37]}..."


@dataclass(frozen=True)
class Step:
    """One validated step: its kind (``createPods``, ``expect``, ...) and normalised arguments."""

    kind: str
    args: Mapping[str, Any]
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


class _ScenarioValidator(Validator):
    def __init__(self, source: str, lines: dict[str, int]) -> None:
        super().__init__(source)
        self.lines = lines

    def fail(self, where: str, problem: str) -> None:
        line = self._line(where)
        raise DefinitionError(self.source, where, problem + (f" (line {line})" if line else ""))

    def _line(self, where: str) -> int | None:
        # Drop the last ".field" or "[i]" until a known path is left; a path with neither
        # ("document", "steps") is looked up once and then given up on.
        while where:
            if where in self.lines:
                return self.lines[where]
            parent = re.sub(r"(\.[^.\[\]]*|\[\d+\])$", "", where)
            if parent == where:
                return self.lines.get("")
            where = parent
        return None

    # -- small types -----------------------------------------------------------
    def string(self, value: Any, where: str) -> str:
        if not isinstance(value, str) or not value:
            self.fail(where, f"must be a non-empty string, got {kind_of(value) if value != '' else 'an empty one'}")
        return str(value)

    def whole(self, value: Any, where: str, minimum: int = 0, maximum: int = MAX_WHOLE) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
            self.fail(where, f"must be a whole number from {minimum} to {maximum}, got {_short(value)}")
        return int(value)

    def number(self, value: Any, where: str, minimum: float = 0.0, maximum: float = MAX_SECONDS) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not minimum <= value <= maximum:
            self.fail(where, f"must be a number from {minimum:g} to {maximum:g}, got {_short(value)}")
        return float(value)

    def flag(self, value: Any, where: str) -> bool:
        if not isinstance(value, bool):
            self.fail(where, f"must be true or false, got {value!r}")
        return bool(value)

    def regex(self, value: Any, where: str) -> str:
        text = self.string(value, where)
        try:
            re.compile(text)
        except re.error as e:
            self.fail(where, f"not a valid regular expression: {e}")
        return text

    def strings(self, value: Any, where: str) -> list[str]:
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not items:
            self.fail(where, f"must be a name or a non-empty list of names, got {kind_of(value)}")
        return [self.string(v, f"{where}[{i}]") for i, v in enumerate(items)]


class _Loader:
    def __init__(self, path: Path, doc: Any, lines: dict[str, int]) -> None:
        self.path = path
        self.v = _ScenarioValidator(str(path), lines)
        self.doc = doc
        self.created: list[str] = []
        self.templates: dict[str, dict[str, Any]] = {}
        self.definition: ClusterDefinition | None = None

    @property
    def nodes(self) -> ClusterDefinition:
        assert self.definition is not None
        return self.definition

    # -- whole file ----------------------------------------------------------
    def load(self, scheduler_override: SchedulerConfig | None = None) -> Scenario:
        v = self.v
        m = v.mapping(self.doc, "", required=("apiVersion", "kind", "name", "cluster", "steps"),
                      allowed=("apiVersion", "kind", "name", "description", "cluster", "scheduler",
                               "templates", "steps"))
        if m["apiVersion"] != API_VERSION:
            v.fail("apiVersion", f"must be {API_VERSION}, got {m['apiVersion']!r}")
        if m["kind"] != KIND:
            v.fail("kind", f"must be {KIND}, got {m['kind']!r}")
        name = v.dns_label(m["name"], "name")
        description = m.get("description") or ""
        if not isinstance(description, str):
            v.fail("description", f"must be text, got {kind_of(description)}")
        self.definition = self.cluster(m["cluster"])
        scheduler = scheduler_override or (self.scheduler(m["scheduler"]) if m.get("scheduler") is not None
                                           else None)
        raw_templates = v.mapping(m.get("templates") or {}, "templates")
        for t, body in raw_templates.items():
            v.dns_label(t, f"templates.{t}")
            self.templates[t] = self.template(body, f"templates.{t}", TEMPLATE_FIELDS)
        raw_steps = m["steps"]
        if not isinstance(raw_steps, list) or not raw_steps:
            v.fail("steps", f"must be a non-empty list of steps, got {kind_of(raw_steps)}")
        steps = tuple(self.step(s, i) for i, s in enumerate(raw_steps))
        return Scenario(name=name, description=description.strip(), source=str(self.path),
                        definition=self.definition, scheduler=scheduler, steps=steps, pods=tuple(self.created))

    def referenced(self, value: str) -> Path:
        """A file named relative to the scenario's folder, else to schedgate's project folder."""
        p = Path(value)
        if p.is_absolute():
            return p
        beside = self.path.parent / p
        return beside if beside.exists() or not (PROJECT / p).exists() else PROJECT / p

    def cluster(self, raw: Any) -> ClusterDefinition:
        return self._file_or_inline(raw, "cluster", "an inline cluster definition", load_definition,
                                    lambda doc, src: parse_definition(doc, source=src))

    def scheduler(self, raw: Any) -> SchedulerConfig:
        return self._file_or_inline(raw, "scheduler", "an inline configuration", load_scheduler_config,
                                    lambda doc, src: parse_scheduler_config(doc, source=src))

    def _file_or_inline(self, raw: Any, key: str, inline: str, load: Callable[[Path], T],
                        parse: Callable[[Any, str], T]) -> T:
        """A file named relative to the scenario, or the document written inline under ``key``."""
        if isinstance(raw, str):
            return load(self.referenced(raw))
        if not isinstance(raw, dict):
            self.v.fail(key, f"must be a file name or {inline}, got {kind_of(raw)}")
        return parse(raw, f"{self.path}: {key}")

    # -- pieces --------------------------------------------------------------
    def node_set(self, raw: Any, where: str) -> list[str]:
        """Node and pool names, expanded to node names in definition order."""
        names = self.v.strings(raw, where)
        pools = {p.name: p.node_names() for p in self.nodes.pools}
        known = {n.name for n in self.nodes.nodes()}
        out: list[str] = []
        for i, n in enumerate(names):
            if n in pools:
                out += [x for x in pools[n] if x not in out]
            elif n in known:
                if n not in out:
                    out.append(n)
            else:
                self.v.fail(f"{where}[{i}]" if isinstance(raw, list) else where,
                            f"unknown node or pool {n!r} in cluster {self.nodes.name!r} "
                            f"(pools: {', '.join(pools)})")
        return out

    def pod_set(self, raw: Any, where: str) -> list[str]:
        """Pod names or globs (``infer-*``), each matching a pod an earlier step created."""
        out: list[str] = []
        for i, pattern in enumerate(self.v.strings(raw, where)):
            hits = [p for p in self.created if fnmatch.fnmatchcase(p, pattern)]
            if not hits:
                self.v.fail(f"{where}[{i}]" if isinstance(raw, list) else where,
                            f"no pod created by an earlier step matches {pattern!r}")
            out += [h for h in hits if h not in out]
        return out

    def template(self, raw: Any, where: str, allowed: tuple[str, ...]) -> dict[str, Any]:
        v = self.v
        m = v.mapping(raw, where, allowed=allowed)
        out: dict[str, Any] = {}
        for k, val in m.items():
            w = f"{where}.{k}"
            if k == "gpus":
                out[k] = v.whole(val, w)
            elif k in ("cpu", "memory"):
                out[k] = v.resources({k: val}, where)[k]
            elif k == "requests":
                out[k] = v.resources(val, w)
            elif k in ("scheduler", "priorityClass"):
                out[k] = v.dns_label(val, w) if k == "priorityClass" else v.string(val, w)
            elif k == "requireLabels":
                req = v.mapping(val, w)
                for key, vals in req.items():
                    v.label_key(key, f"{w}.{key}")
                    values = vals if isinstance(vals, list) else [v.labels({key: vals}, w)[key]]
                    out.setdefault(k, {})[key] = v.strings(values, f"{w}.{key}")
            elif k == "forbidLabels":
                out[k] = v.strings(val, w)
                for i, key in enumerate(out[k]):
                    v.label_key(key, f"{w}[{i}]")
            elif k == "tolerations":
                if not isinstance(val, list):
                    v.fail(w, f"must be a list, got {kind_of(val)}")
                tols = []
                for i, t in enumerate(val):
                    tm = v.mapping(t, f"{w}[{i}]", required=("key",), allowed=("key", "value", "effect"))
                    v.label_key(str(tm["key"]), f"{w}[{i}].key")
                    tols.append((str(tm["key"]), str(tm.get("value") or ""), str(tm.get("effect") or "NoSchedule")))
                out[k] = tols
            elif k == "labels":
                out[k] = v.labels(val, w)
            elif k == "annotations":
                ann = v.mapping(val, w)
                out[k] = {a: str(x) for a, x in ann.items()}
            elif k == "node":
                if not isinstance(val, str) or val not in {n.name for n in self.nodes.nodes()}:
                    v.fail(w, f"must be the name of one node in cluster {self.nodes.name!r}, got {val!r}")
                out[k] = val
        return out

    # -- steps ---------------------------------------------------------------
    def step(self, raw: Any, i: int) -> Step:
        v = self.v
        where = f"steps[{i}]"
        if not isinstance(raw, dict) or len(raw) != 1:
            v.fail(where, f"must be a mapping with exactly one step name (one of: {', '.join(STEP_KINDS)})")
        (kind, body), = raw.items()
        if kind not in STEP_KINDS:
            hint = " (fixed sleeps are not steps: wait for a signal with 'wait' or 'expect')" \
                if kind in ("sleep", "pause") else ""
            v.fail(f"{where}.{kind}", f"unknown step (known: {', '.join(STEP_KINDS)}){hint}")
        args = STEP_KINDS[kind](self, {} if body is None else body, f"{where}.{kind}")
        return Step(kind=kind, args=args, index=i, line=v.lines.get(where, 0))

    def create_pods(self, raw: Any, w: str) -> dict[str, Any]:
        v = self.v
        m = v.mapping(raw, w, required=("name",),
                      allowed=("name", "count", "template", "oneAtATime", "timeout", *TEMPLATE_FIELDS))
        base: dict[str, Any] = {}
        if "template" in m:
            t = v.string(m["template"], f"{w}.template")
            if t not in self.templates:
                v.fail(f"{w}.template", f"unknown template {t!r} (templates: {', '.join(self.templates) or 'none'})")
            base = dict(self.templates[t])
        base.update(self.template({k: x for k, x in m.items() if k in TEMPLATE_FIELDS}, w, TEMPLATE_FIELDS))
        name = v.dns_label(m["name"], f"{w}.name")
        count = v.whole(m.get("count", 1), f"{w}.count", minimum=1, maximum=MAX_PODS)
        if len(self.created) + count > MAX_PODS:
            v.fail(f"{w}.count", f"a scenario creates at most {MAX_PODS} pods; this step would make it "
                                 f"{len(self.created) + count}")
        names = [name] if count == 1 else [f"{name}-{n}" for n in range(1, count + 1)]
        for n in names:
            if n in self.created:
                v.fail(f"{w}.name", f"pod {n!r} is already created by an earlier step")
            if len(n) > 63:
                v.fail(f"{w}.name", f"pod name {n!r} is longer than 63 characters")
        self.created += names
        return {"names": names, "pod": base, "oneAtATime": v.flag(m.get("oneAtATime", False), f"{w}.oneAtATime"),
                "timeout": self.timeout(m, w)}

    def timeout(self, m: dict[str, Any], w: str) -> float:
        return self.v.number(m.get("timeout", DEFAULT_TIMEOUT), f"{w}.timeout", minimum=0.1)

    def delete_pods(self, raw: Any, w: str) -> dict[str, Any]:
        m = self.v.mapping(raw, w, required=("pods",), allowed=("pods",))
        return {"pods": self.pod_set(m["pods"], f"{w}.pods")}

    def annotate_pods(self, raw: Any, w: str) -> dict[str, Any]:
        m = self.v.mapping(raw, w, required=("pods", "annotations"), allowed=("pods", "annotations"))
        ann = self.v.mapping(m["annotations"], f"{w}.annotations")
        return {"pods": self.pod_set(m["pods"], f"{w}.pods"),
                "annotations": {k: None if x is None else str(x) for k, x in ann.items()}}

    def scheduler_step(self, raw: Any, w: str) -> dict[str, Any]:
        v = self.v
        m = v.mapping(raw, w, allowed=("profile", "config"))
        if ("profile" in m) == ("config" in m):
            v.fail(w, "needs exactly one of: profile (a running scheduler's profile), config (a file or role)")
        if "profile" in m:
            return {"profile": v.string(m["profile"], f"{w}.profile")}
        cfg = v.string(m["config"], f"{w}.config")
        if cfg in ROLES:
            return {"role": cfg}
        return {"config": self.scheduler(str(self.referenced(cfg)))}

    def extender(self, raw: Any, w: str) -> dict[str, Any]:
        v = self.v
        m = v.mapping(raw, w, allowed=("kind", "slots", "faults"))
        out: dict[str, Any] = {}
        if "kind" in m:
            if m["kind"] not in EXTENDER_KINDS:
                v.fail(f"{w}.kind", f"must be one of {', '.join(EXTENDER_KINDS)}, got {m['kind']!r}")
            out["kind"] = m["kind"]
        if "slots" in m:
            slots = v.mapping(m["slots"], f"{w}.slots")
            out["slots"] = {}
            for n, c in slots.items():
                for node in self.node_set(n, f"{w}.slots.{n}"):
                    out["slots"][node] = v.whole(c, f"{w}.slots.{n}")
        if "faults" in m:
            f = v.mapping(m["faults"] or {}, f"{w}.faults", allowed=("latency", "status", "malformed", "drop", "down"))
            faults: dict[str, Any] = {}
            if "latency" in f:
                faults["latency"] = v.number(f["latency"], f"{w}.faults.latency")
            if "status" in f:
                faults["status"] = v.whole(f["status"], f"{w}.faults.status", minimum=100, maximum=599)
            if "malformed" in f:
                faults["malformed"] = v.flag(f["malformed"], f"{w}.faults.malformed")
            if "drop" in f:
                faults["drop"] = self.node_set(f["drop"], f"{w}.faults.drop")
            if "down" in f:
                faults["down"] = v.flag(f["down"], f"{w}.faults.down")
            out["faults"] = faults
        return out

    def sync(self, raw: Any, w: str) -> dict[str, Any]:
        self.v.mapping(raw, w, allowed=())
        return {}

    def wait(self, raw: Any, w: str) -> dict[str, Any]:
        v = self.v
        m = v.mapping(raw, w, allowed=("pods", "until", "timeout", "seconds"))
        if "seconds" in m:
            v.fail(f"{w}.seconds", "fixed sleeps are not supported: wait for a signal ('until') or 'expect'")
        m = v.mapping(raw, w, required=("pods", "until"))
        if m["until"] not in WAIT_UNTIL:
            v.fail(f"{w}.until", f"must be one of {', '.join(WAIT_UNTIL)}, got {m['until']!r}")
        return {"pods": self.pod_set(m["pods"], f"{w}.pods"), "until": m["until"], "timeout": self.timeout(m, w)}

    def expect(self, raw: Any, w: str) -> dict[str, Any]:
        v = self.v
        m = v.mapping(raw, w, allowed=("pods", "timeout", "never", "distinctNodes", *OUTCOMES))
        outcomes = [k for k in OUTCOMES if k in m]
        if len(outcomes) != 1:
            v.fail(w, f"needs exactly one outcome of: {', '.join(OUTCOMES)}"
                      + (f" (got {', '.join(outcomes)})" if outcomes else ""))
        what = outcomes[0]
        out: dict[str, Any] = {"outcome": what, "timeout": self.timeout(m, w)}
        needs_pods = what not in ("metric", "wholeFreeNodes")
        if needs_pods and "pods" not in m:
            v.fail(f"{w}.pods", f"required field is missing (expect {what} is about pods)")
        if not needs_pods and "pods" in m:
            v.fail(f"{w}.pods", f"expect {what} is not about pods; remove 'pods'")
        if "pods" in m:
            out["pods"] = self.pod_set(m["pods"], f"{w}.pods")
        for extra in ("never", "distinctNodes"):
            if extra in m and what != "scheduledOn":
                v.fail(f"{w}.{extra}", "goes only with scheduledOn")
        body = m[what]
        ww = f"{w}.{what}"
        if what == "scheduledOn":
            allowed = self.node_set(body, ww)
            never = self.node_set(m["never"], f"{w}.never") if "never" in m else \
                [n.name for n in self.nodes.nodes() if n.name not in allowed]
            both = sorted(set(allowed) & set(never))
            if both:
                v.fail(f"{w}.never", f"nodes both allowed and forbidden: {', '.join(both)}")
            out.update(nodes=allowed, never=never)
            if "distinctNodes" in m:
                out["distinctNodes"] = v.whole(m["distinctNodes"], f"{w}.distinctNodes", minimum=1)
        elif what in ("unschedulable", "schedulingError"):
            if body is True or body is None:
                out["message"] = None
            else:
                mm = v.mapping(body, ww, allowed=("message",))
                out["message"] = v.regex(mm["message"], f"{ww}.message") if "message" in mm else None
        elif what in ("gone", "untouched"):
            if body is not True:
                v.fail(ww, f"must be true, got {body!r}")
        elif what == "event":
            mm = v.mapping(body, ww, required=("reason",), allowed=("reason", "by", "message", "type"))
            out.update(reason=v.string(mm["reason"], f"{ww}.reason"),
                       by=v.string(mm["by"], f"{ww}.by") if "by" in mm else None,
                       message=v.regex(mm["message"], f"{ww}.message") if "message" in mm else None,
                       type=mm.get("type"))
            if out["type"] not in (None, "Normal", "Warning"):
                v.fail(f"{ww}.type", f"must be Normal or Warning, got {out['type']!r}")
        elif what == "metric":
            mm = v.mapping(body, ww, required=("scheduler", "name"),
                           allowed=("scheduler", "name", "labels", "equals", "atLeast", "atMost"))
            bounds = {k: v.number(mm[k], f"{ww}.{k}", minimum=float("-inf"), maximum=float("inf")) for k in ("equals", "atLeast", "atMost")
                      if k in mm}
            if not bounds:
                v.fail(ww, "needs equals, atLeast or atMost")
            labels = v.mapping(mm.get("labels") or {}, f"{ww}.labels")
            out.update(scheduler=v.string(mm["scheduler"], f"{ww}.scheduler"),
                       name=v.string(mm["name"], f"{ww}.name"),
                       labels={k: str(x) for k, x in labels.items()}, **bounds)
        elif what == "wholeFreeNodes":
            mm = v.mapping(body, ww, required=("nodes", "count"), allowed=("nodes", "count", "size"))
            out.update(nodes=self.node_set(mm["nodes"], f"{ww}.nodes"),
                       count=v.whole(mm["count"], f"{ww}.count"),
                       size=v.whole(mm.get("size", 8), f"{ww}.size", minimum=1))
        return out


def _node_step(required: tuple[str, ...], optional: tuple[str, ...] = ()) -> Callable[[_Loader, Any, str],
                                                                                    dict[str, Any]]:
    """A step on a node set (``nodes``: node and pool names) with these other fields."""

    def parse(self: _Loader, raw: Any, w: str) -> dict[str, Any]:
        v = self.v
        m = v.mapping(raw, w, required=("nodes", *required), allowed=("nodes", *required, *optional))
        out: dict[str, Any] = {"nodes": self.node_set(m["nodes"], f"{w}.nodes")}
        for k in (*required, *optional):
            if k not in m:
                continue
            if k == "key":
                v.label_key(v.string(m[k], f"{w}.key"), f"{w}.key")
                out[k] = m[k]
            elif k == "value":
                out[k] = v.labels({"value": m[k]}, w)["value"] if m[k] is not None else ""
            elif k == "effect":
                if m[k] not in TAINT_EFFECTS:
                    v.fail(f"{w}.effect", f"must be one of {', '.join(TAINT_EFFECTS)}, got {m[k]!r}")
                out[k] = m[k]
            elif k == "count":
                out[k] = v.whole(m[k], f"{w}.count")
            elif k == "annotations":
                ann = v.mapping(m[k], f"{w}.annotations")
                out[k] = {a: None if x is None else str(x) for a, x in ann.items()}
        return out

    return parse


STEP_KINDS: dict[str, Callable[[_Loader, Any, str], dict[str, Any]]] = {
    "createPods": _Loader.create_pods,
    "deletePods": _Loader.delete_pods,
    "annotatePods": _Loader.annotate_pods,
    "label": _node_step(("key", "value")),
    "unlabel": _node_step(("key",)),
    "annotateNodes": _node_step(("annotations",)),
    "taint": _node_step(("key",), ("value", "effect")),
    "untaint": _node_step(("key",)),
    "setGPUs": _node_step(("count",)),
    "deleteNodes": _node_step(()),
    "stopScheduler": _Loader.scheduler_step,
    "startScheduler": _Loader.scheduler_step,
    "extender": _Loader.extender,
    "sync": _Loader.sync,
    "wait": _Loader.wait,
    "expect": _Loader.expect,
}


def load_scenario(path: str | Path, scheduler_override: SchedulerConfig | None = None) -> Scenario:
    """Read and validate a scenario file; a problem raises DefinitionError naming file, field and line."""
    doc, lines = read_yaml(path, "scenario")
    return _Loader(Path(path), doc, lines).load(scheduler_override)


def is_scenario_file(path: Path) -> bool:
    return path.name.endswith(SUFFIX)


def referenced_files(path: str | Path) -> tuple[Path | None, Path | None]:
    """The cluster definition and scheduler configuration files a scenario names (None when inline or absent)."""
    doc, lines = read_yaml(path, "scenario")
    loader = _Loader(Path(path), doc, lines)
    refs: list[Path | None] = []
    for key in ("cluster", "scheduler"):
        value = doc.get(key) if isinstance(doc, dict) else None
        refs.append(loader.referenced(value).resolve() if isinstance(value, str) else None)
    return refs[0], refs[1]

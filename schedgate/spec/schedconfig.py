"""The scheduler configuration under test.

Users bring a whole ``KubeSchedulerConfiguration`` or just its ``profiles``
(the design shows a fragment "to be merged into the cluster's configuration").
schedgate fills in only what it owns — where the scheduler finds the API server
and which leader-election lease it holds — and keeps every other setting as
written. Where a configuration says nothing of leader election, schedgate turns it
off: no two schedgate schedulers ever serve one profile, so a lease only delays a
restart, and a machine loaded past ``renewDeadline`` made a correct scheduler exit
("Leaderelection lost"). One that turns it on (``leaderElect: true``) or sets any
of its timing keeps it on, with shorter timing (:data:`LEASE_TIMING`) where it
sets none. The run's header says which.
A user's value for an owned field is replaced and reported, never dropped in
silence. Everything schedgate does not own is left for the real
scheduler to validate: a configuration it refuses is reported with its own
words (see :class:`schedgate.errors.ComponentError`).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from schedgate.errors import DefinitionError
from schedgate.spec.blackbox import KIND as BLACK_BOX
from schedgate.spec.blackbox import BlackBox, is_black_box, parse_black_box
from schedgate.spec.yamlfile import read_yaml

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
DEFAULT_SCHEDULER = "default-scheduler"
UNNAMED = "black-box-scheduler"  # a black box's name until it stands in for a profile
LEASE_NAMESPACE = "kube-system"
# An extender urlPrefix that schedgate replaces with the URL of the extender it runs.
EXTENDER_PLACEHOLDER = "schedgate:extender"
# Leader-election timing for a configuration that sets none of the three. A killed scheduler's successor
# waits leaseDuration (+ up to retryPeriod) for the lease; kube-scheduler's defaults (15s, 10s, 2s) made
# that most of several tests' time. renewDeadline stays well above an API server restart here (about
# 4 s), so a restart does not cost the schedulers their lease. A configuration that sets any of them
# keeps all of its own (the slow-lease mutant does).
LEASE_TIMING = {"leaseDuration": "8s", "renewDeadline": "6s", "retryPeriod": "1s"}
# kube-scheduler's own plugins at the pin (pkg/scheduler/framework/plugins/names; tests/unit/perf/test_perf.py
# checks the list against the Go module): what a baseline keeps of a profile.
IN_TREE_PLUGINS = frozenset({
    "PrioritySort", "DefaultBinder", "DefaultPreemption", "DynamicResources", "GangScheduling", "ImageLocality",
    "InterPodAffinity", "NodeAffinity", "NodeDeclaredFeatures", "NodeName", "NodePorts",
    "NodeResourcesBalancedAllocation", "NodeResourcesFit", "NodeUnschedulable", "NodeVolumeLimits",
    "PodTopologySpread", "DeferredPodScheduling", "SchedulingGates", "TaintToleration", "VolumeBinding",
    "VolumeRestrictions", "VolumeZone", "TopologyPlacementGenerator", "PodGroupPodsCount"})


@dataclass(frozen=True)
class SchedulerConfig:
    """A validated scheduler configuration, as the user wrote it."""

    source: str
    doc: dict[str, Any]
    fragment: bool
    black_box: BlackBox | None = None  # not kube-scheduler: a program run as it says (spec.blackbox)

    def standing_in_for(self, name: str) -> SchedulerConfig:
        """A black box whose file names no schedulerName serves ``name``, the profile it replaces; any other
        configuration is returned as it is."""
        if self.black_box is None or self.black_box.named:
            return self
        return replace(self, doc={**self.doc, "profiles": [{"schedulerName": name}]})

    @property
    def profile_names(self) -> list[str]:
        return [p["schedulerName"] for p in self.doc["profiles"]]

    @property
    def lease_name(self) -> str:
        """The lease this scheduler holds: named after its first profile."""
        return self.profile_names[0]

    def per_profile(self) -> list[SchedulerConfig]:
        """One configuration per profile, everything else kept: to run each profile in its own process."""
        out = []
        for prof in self.doc["profiles"]:
            doc = copy.deepcopy(self.doc)
            doc["profiles"] = [copy.deepcopy(prof)]
            out.append(replace(self, doc=doc))
        return out

    @property
    def shared_pools(self) -> list[tuple[str, str]]:
        """The ConfigMaps (namespace, name) NetworkSlots claims slots in (``args.sharedPool``), sorted."""
        pools = set()
        for prof in self.doc["profiles"]:
            for pc in prof.get("pluginConfig") or []:
                if (pc or {}).get("name") != "NetworkSlots":
                    continue
                pool = ((pc or {}).get("args") or {}).get("sharedPool")
                if isinstance(pool, dict) and pool.get("namespace") and pool.get("name"):
                    pools.add((str(pool["namespace"]), str(pool["name"])))
        return sorted(pools)

    def enabled_args(self, profile: str, plugin: str) -> dict[str, Any] | None:
        """The args (``pluginConfig``; ``{}`` when none) of ``plugin`` where profile ``profile`` enables it at some
        extension point; ``None`` where it does not (or the file is a black box's, whose plugins are unknown)."""
        if self.black_box is not None:
            return None
        prof: dict[str, Any] = next((p for p in self.doc["profiles"] if p.get("schedulerName") == profile), {})
        points = [pt for pt in (prof.get("plugins") or {}).values() if isinstance(pt, dict)]
        if not any((e or {}).get("name") == plugin for pt in points for e in pt.get("enabled") or []):
            return None
        config: dict[str, Any] = next(
            (pc for pc in prof.get("pluginConfig") or [] if (pc or {}).get("name") == plugin), {})
        args = (config or {}).get("args")
        return dict(args) if isinstance(args, dict) else {}

    def with_extender(self, url: str) -> SchedulerConfig:
        """This configuration with every ``urlPrefix: schedgate:extender`` pointed at ``url``."""
        doc = copy.deepcopy(self.doc)
        for ext in doc.get("extenders") or []:
            if ext.get("urlPrefix") == EXTENDER_PLACEHOLDER:
                ext["urlPrefix"] = url
        return replace(self, doc=doc)

    def renamed(self, suffix: str) -> SchedulerConfig:
        """This configuration with every profile's ``schedulerName`` ending in ``suffix`` (so its own lease)."""
        doc = copy.deepcopy(self.doc)
        for prof in doc["profiles"]:
            prof["schedulerName"] = f"{prof['schedulerName']}{suffix}"
        return replace(self, source=f"{self.source} (profiles renamed *{suffix})", doc=doc)

    def profile(self, name: str) -> SchedulerConfig:
        """This configuration with only profile ``name`` (everything outside the profiles kept)."""
        if name not in self.profile_names:
            raise DefinitionError(self.source, "profiles", f"no profile {name!r} (profiles: "
                                  f"{', '.join(self.profile_names)})")
        doc = copy.deepcopy(self.doc)
        doc["profiles"] = [p for p in doc["profiles"] if p["schedulerName"] == name]
        return replace(self, doc=doc)

    def unthrottled(self, qps: int = 5000) -> SchedulerConfig:
        """This configuration with its API client's rate limit (``clientConnection.qps``/``burst``, 50/100
        when unset) at ``qps``, where it sets none: a measurement of the scheduler, not of its limiter."""
        if self.black_box is not None:  # its client is its own
            return self
        doc = copy.deepcopy(self.doc)
        conn = doc.setdefault("clientConnection", {})
        if "qps" in conn or "burst" in conn:
            return self
        conn.update(qps=qps, burst=qps)
        return replace(self, doc=doc)

    def in_tree_only(self) -> tuple[SchedulerConfig, list[str]]:
        """This configuration without out-of-tree plugins (enabled anywhere, or configured), and their names:
        what the pinned upstream kube-scheduler runs of it.

        An in-tree plugin the profile disables where it enables an out-of-tree one (at that extension point,
        or either at ``multiPoint``) is taken to be replaced by it, and is enabled again: a profile that
        swaps NodeAffinity for a wrapper of its own still filters by node affinity in its baseline. (A
        ``*`` disabled stays: that profile names each in-tree plugin it wants, and the baseline keeps them.)"""
        doc = copy.deepcopy(self.doc)
        keep = IN_TREE_PLUGINS | {"*"}
        dropped: set[str] = set()
        for prof in doc["profiles"]:
            plugins = prof.get("plugins") or {}
            gone_at = {name: {p.get("name") for p in (point.get("enabled") or [])} - keep
                       for name, point in plugins.items() if isinstance(point, dict)}
            for name, point in plugins.items():
                if not isinstance(point, dict):
                    continue
                replaced = gone_at.get(name) or gone_at.get("multiPoint") or (
                    set().union(*gone_at.values()) if name == "multiPoint" else set())
                enabled = {p.get("name") for p in point.get("enabled") or []}
                for key in ("enabled", "disabled"):
                    if point.get(key):
                        dropped |= {p["name"] for p in point[key] if p.get("name") not in keep}
                        point[key] = [p for p in point[key] if p.get("name") in keep
                                      and not (key == "disabled" and replaced and p.get("name") not in enabled | {"*"})]
            if prof.get("pluginConfig"):
                dropped |= {pc["name"] for pc in prof["pluginConfig"] if pc.get("name") not in IN_TREE_PLUGINS}
                prof["pluginConfig"] = [pc for pc in prof["pluginConfig"] if pc.get("name") in IN_TREE_PLUGINS]
        return (replace(self, source=f"{self.source} (in-tree plugins only)", doc=doc),
                sorted(dropped))

    def effective(self, kubeconfig: str, lease: str | None = None, elect: bool = False) -> EffectiveConfig:
        """The configuration the scheduler is started with, and what was replaced. ``elect``: leader election
        where the configuration says nothing of it (a cluster others may run a scheduler for this profile in)."""
        doc = copy.deepcopy(self.doc)
        doc["apiVersion"], doc["kind"] = API_VERSION, KIND
        replaced: list[str] = []
        asked = dict(doc.get("leaderElection") or {})
        elect = asked.get("leaderElect", elect or any(k in asked for k in LEASE_TIMING))
        owned = {
            ("clientConnection", "kubeconfig"): kubeconfig,
            ("leaderElection", "leaderElect"): bool(elect),
            ("leaderElection", "resourceLock"): "leases",
            ("leaderElection", "resourceName"): lease or self.lease_name,
            ("leaderElection", "resourceNamespace"): LEASE_NAMESPACE,
        }
        for (section, key), value in owned.items():
            sect = doc.setdefault(section, {})
            if key in sect and sect[key] != value:
                replaced.append(f"{section}.{key}: {sect[key]!r} replaced by {value!r} (schedgate owns it)")
            sect[key] = value
        election = doc["leaderElection"]
        defaulted = []
        if "leaderElect" not in asked:
            defaulted.append(f"leaderElection.leaderElect: {str(bool(elect)).lower()}")
        if elect and not any(k in election for k in LEASE_TIMING):
            election.update(LEASE_TIMING)
            defaulted += [f"leaderElection.{k}: {v}" for k, v in LEASE_TIMING.items()]
        return EffectiveConfig(doc=doc, replaced=replaced, defaulted=defaulted)


@dataclass(frozen=True)
class EffectiveConfig:
    doc: dict[str, Any]
    replaced: list[str] = field(default_factory=list)
    defaulted: list[str] = field(default_factory=list)  # what schedgate set where the configuration set nothing

    @property
    def elects(self) -> bool:
        """Whether the scheduler takes part in leader election (holds a lease)."""
        return bool(self.doc["leaderElection"]["leaderElect"])

    def write(self, path: Path) -> Path:
        path.write_text(yaml.safe_dump(self.doc, sort_keys=False))
        return path


def default_scheduler_config() -> SchedulerConfig:
    """The cluster's own default scheduler: upstream defaults, its usual lease."""
    doc = {"apiVersion": API_VERSION, "kind": KIND, "profiles": [{"schedulerName": DEFAULT_SCHEDULER}]}
    return SchedulerConfig(source="<default-scheduler>", doc=doc, fragment=False)


def load_scheduler_config(path: str | Path, *, allow_default_profile: bool = False) -> SchedulerConfig:
    """Read a KubeSchedulerConfiguration (or a ``profiles:`` fragment) and check its shape."""
    doc, _ = read_yaml(path, "scheduler configuration", kinds=(KIND, BLACK_BOX), fragment="profiles")
    return parse_scheduler_config(doc, source=str(path), allow_default_profile=allow_default_profile)


def parse_scheduler_config(doc: Any, source: str = "<memory>", *,
                           allow_default_profile: bool = False) -> SchedulerConfig:
    if is_black_box(doc):
        name, box = parse_black_box(doc, source)
        return SchedulerConfig(source=source, doc={"profiles": [{"schedulerName": name or UNNAMED}], "blackBox": doc},
                               fragment=False, black_box=box)
    if not isinstance(doc, dict):
        raise DefinitionError(source, "document", f"must be a KubeSchedulerConfiguration or a 'profiles:' mapping, "
                                                  f"got {type(doc).__name__ if doc is not None else 'an empty file'}")
    fragment = "kind" not in doc and "apiVersion" not in doc
    if fragment:
        extra = sorted(set(doc) - {"profiles"}, key=str)  # keys of any type: null, 1, a
        if extra:
            raise DefinitionError(source, str(extra[0]) or '""', "a fragment holds only 'profiles'; "
                                                    f"write a whole {KIND} to set other fields")
    else:
        if doc.get("kind") != KIND:
            raise DefinitionError(source, "kind", f"must be {KIND}, got {doc.get('kind')!r}")
        if doc.get("apiVersion") != API_VERSION:
            raise DefinitionError(source, "apiVersion", f"must be {API_VERSION}, got {doc.get('apiVersion')!r}")
    profiles = doc.get("profiles")
    if not isinstance(profiles, list) or not profiles:
        raise DefinitionError(source, "profiles", "must be a non-empty list of profiles")
    seen: set[str] = set()
    for i, prof in enumerate(profiles):
        if not isinstance(prof, dict):
            raise DefinitionError(source, f"profiles[{i}]", "must be a mapping")
        name = prof.get("schedulerName")
        if not isinstance(name, str) or not name:
            raise DefinitionError(source, f"profiles[{i}].schedulerName",
                                  "required: the name pods use in spec.schedulerName")
        if name in seen:
            raise DefinitionError(source, f"profiles[{i}].schedulerName", f"{name!r} is used by two profiles")
        if name == DEFAULT_SCHEDULER and not allow_default_profile:
            raise DefinitionError(source, f"profiles[{i}].schedulerName",
                                  f"{DEFAULT_SCHEDULER!r} is served by the cluster's own default scheduler; "
                                  "give the profile under test its own name")
        seen.add(name)
    for section in ("clientConnection", "leaderElection"):
        if section in doc and not isinstance(doc[section], dict):
            raise DefinitionError(source, section, "must be a mapping")
    return SchedulerConfig(source=source, doc=copy.deepcopy(doc), fragment=fragment)

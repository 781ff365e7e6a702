"""Kubernetes features a scenario file may need that older supported minors have off by default.

A file names them in ``requires:`` beside the scheduler's capabilities (spec.blackbox)::

    requires: [DRAExtendedResource]

On a cluster whose Kubernetes is older than the minor a feature is on by default from, the file skips,
naming the feature, what it does and the cluster's version: the version matrix (``make matrix``) shows
such a cell as ``skip`` with that reason, never as a failure the scheduler did not earn. A *gated*
feature (``GenericWorkload``) is off by default everywhere. A file that needs one has it turned on
(``turn_on``): its cluster definition gets the gate and the API versions the feature serves unless the
definition sets the gate itself, so on a provider that starts its clusters (local, kind) the file runs on
a cluster of its definition with them on. It still skips when the cluster's API server has the gate off
(its /metrics, ``kubernetes_feature_enabled``): a definition that turns it off, ``--feature-gates``
turning it off, an existing cluster that does not have it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from schedgate.spec.gates import Gates
from schedgate.spec.versions import version_need

if TYPE_CHECKING:
    from schedgate.spec.cluster import ClusterDefinition


@dataclass(frozen=True)
class Feature:
    since: tuple[int, int]  # the first minor that has it on by default (a gate: that has it at all)
    what: str
    gate: bool = False  # off by default: the cluster must have turned it on (a definition's featureGates)
    serves: tuple[str, ...] = ()  # API versions a gated feature is served in, turned on with it (runtimeConfig)

    @property
    def since_text(self) -> str:
        return f"{self.since[0]}.{self.since[1]}"


FEATURES: Mapping[str, Feature] = {
    "DRAExtendedResource": Feature((1, 36), "lets DRA devices serve an extended resource such as nvidia.com/gpu "
                                            "(a DeviceClass's extendedResourceName)"),
    "DRAPartitionableDevices": Feature((1, 36), "lets devices share a pool's counters (partitions of one GPU: "
                                                "its memory), which no two allocations may overdraw"),
    "DRAConsumableCapacity": Feature((1, 36), "lets several claims share a device (allowMultipleAllocations), "
                                              "each taking part of its capacity, which together they may not "
                                              "overdraw"),
    "GenericWorkload": Feature((1, 37), "serves Workload and PodGroup in scheduling.k8s.io/v1beta1 and "
                                        "schedules a PodGroup's pods as a group", gate=True,
                                 serves=("scheduling.k8s.io/v1beta1",)),
    "TopologyAwareWorkloadScheduling": Feature((1, 36), "places a PodGroup's members inside one domain of a "
                                                        "topology key (needs GenericWorkload)", gate=True),
    "DRAWorkloadResourceClaims": Feature((1, 36), "lets a PodGroup hold ResourceClaims its members share, "
                                                  "reserved for the group (needs GenericWorkload)", gate=True),
}


def minor_of(version: str) -> tuple[int, int] | None:
    """``v1.35.4`` or ``1.36`` -> (1, 35); None for what is not a Kubernetes version."""
    m = re.match(r"v?(\d+)\.(\d+)", version.strip())
    return (int(m.group(1)), int(m.group(2))) if m else None


def off_by_default(needs: Mapping[str, str], version: str, on: Collection[str] = ()) -> list[tuple[str, str]]:
    """The features among ``needs`` (name -> where the file says so) that ``version`` has off by default, but
    those whose gate the cluster turns ``on`` itself (an alpha feature a definition's featureGates enable; not
    a gated feature, whose ``since`` is the first minor that has it at all)."""
    have = minor_of(version)
    if have is None:
        return []
    return sorted((n, where) for n, where in needs.items()
                  if n in FEATURES and have < FEATURES[n].since and not (n in on and not FEATURES[n].gate))


def turn_on(definition: ClusterDefinition, needs: Mapping[str, str], source: str) -> ClusterDefinition:
    """``definition`` with each gated feature among ``needs`` turned on (the gate and the API versions it
    serves) unless the definition sets that gate itself; a refusal of one names ``source``'s field."""
    wanted = {n: where for n, where in needs.items() if n in FEATURES and FEATURES[n].gate
              and definition.gates.on(n) is None}
    if not wanted:
        return definition
    gates = definition.gates.with_needs(
        tuple((n, f"{source}: {where}") for n, where in sorted(wanted.items())),
        tuple(api for n in sorted(wanted) for api in FEATURES[n].serves))
    return replace(definition, gates=gates)


def as_written(definition: ClusterDefinition) -> ClusterDefinition:
    """``definition`` without what :func:`turn_on` added: the cluster a provider that does not start its
    clusters must already be (there a file whose need it lacks skips)."""
    g = definition.gates
    if not g.needed:
        return definition
    keep = Gates(tuple((n, on) for n, on in g.feature_gates if f"featureGates.{n}" not in g.needed),
                 tuple((a, on) for a, on in g.runtime_config if f"runtimeConfig.{a}" not in g.needed),
                 g.source, g.lines, g.given)
    return replace(definition, gates=keep)


def skip_reason(needs: Mapping[str, str], version: str, what: str,
                gates: Callable[[], Mapping[str, bool]] | None = None, on: Collection[str] = ()) -> str | None:
    """One line saying why ``what`` cannot run on Kubernetes ``version``, or None when it can. ``gates``
    reads the cluster's feature gates (name -> on), asked only when a gated feature is needed; ``on``: the
    gates the cluster's definition turns on (a feature there before it is on by default)."""
    for entry, where in needs.items():
        versions = version_need(entry)
        if versions is not None and not versions.holds(version):
            return f"schedgate: {what} needs Kubernetes {versions.text} ({where}); this cluster's is {version}"
    off = off_by_default(needs, version, on)
    if off:
        name, where = off[0]
        more = f" (and {', '.join(n for n, _ in off[1:])})" if len(off) > 1 else ""
        f = FEATURES[name]
        if f.gate:
            return (f"schedgate: {what} needs {name}{more} ({where}): it {f.what}; Kubernetes {version}, this "
                    f"cluster's, is older than {f.since_text}, the first to have it")
        return (f"schedgate: {what} needs {name}{more} ({where}): it {f.what}; Kubernetes {version}, this "
                f"cluster's, has it off by default (on from {f.since_text})")
    gated = sorted((n, w) for n, w in needs.items() if n in FEATURES and FEATURES[n].gate)
    if not gated or gates is None:
        return None
    have = gates()
    for name, where in gated:
        if not have.get(name):
            return (f"schedgate: {what} needs {name} ({where}): it {FEATURES[name].what}; this cluster's API "
                    f"server has the gate {'off' if name in have else 'not at all'} (on a provider that starts "
                    f"its clusters the file's own turns it on, unless its definition or --feature-gates sets "
                    f"featureGates: {{{name}: false}})")
    return None

"""Devices a PodGroup shares (feature ``DRAWorkloadResourceClaims``), asserted from every claim's
``status``: the outcome ``groupClaims``.

A ``createPodGroup`` step with ``devices`` makes the group's ResourceClaimTemplate and names it in the
PodGroup's ``spec.resourceClaims``; its members name the same template. The resourceclaim controller then
makes one claim for the group (``status.resourceClaimStatuses``), and the scheduler allocates it once and
reserves it for the PodGroup, not for each pod. What is checked is what the API says: the claim, its
``status.allocation`` and ``status.reservedFor``, and each member's ``spec.nodeName``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubernetes import client as k8s

from schedgate.kube.api import ignore_not_found, read_json
from schedgate.kube.poll import PollTimeout, poll_until
from schedgate.scenarios.declare import DeclaredOutcome, arg
from schedgate.scenarios.group_steps import _known_groups
from schedgate.scenarios.outcomes import outcome
from schedgate.scenarios.parse import Parser
from schedgate.scenarios.run import Run
from schedgate.spec.jsontypes import DNS, listing, whole
from schedgate.workloads.podgroup import GROUP, GROUP_CLAIM, VERSION


def _claim_nodes(allocation: dict[str, Any]) -> set[str]:
    """The nodes a node-local allocation is for (``metadata.name In [...]`` in its node selector)."""
    out: set[str] = set()
    for term in ((allocation.get("nodeSelector") or {}).get("nodeSelectorTerms") or []):
        for f in term.get("matchFields") or []:
            if f.get("key") == "metadata.name" and f.get("operator") == "In":
                out.update(f.get("values") or [])
    return out


@outcome("groupClaims", about_pods=False)
@dataclass(frozen=True)
class GroupClaims(DeclaredOutcome):
    """Each group's one claim is allocated with exactly ``devices`` devices, reserved for the PodGroup alone
    (not its pods), and every member is bound to the node the claim's devices are on; no device is held by
    two of the groups' claims. A wrong count, a reservation for anything else, a member elsewhere or a
    device held twice fails at once; a claim not yet made, allocated or reserved waits until the deadline."""

    groups: tuple[str, ...] = arg("groups", "PodGroups made with devices, earlier steps made members of",
                                  listing(DNS, 1), _known_groups)
    devices: int = arg("devices", "devices each group's claim holds", whole(1, 128),
                       lambda p, x, w: p.v.whole(x, w, minimum=1, maximum=128))
    members: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @classmethod
    def read(cls, p: Parser, raw: Any, w: str) -> dict[str, Any]:
        values = super().read(p, raw, w)
        for i, g in enumerate(values["groups"]):
            if g not in p.group_devices:
                p.v.fail(f"{w}.groups" + (f"[{i}]" if isinstance(raw.get("groups"), list) else ""),
                         f"PodGroup {g!r} has no devices (createPodGroup's devices)")
        values["members"] = tuple((g, tuple(p.group_members[g])) for g in values["groups"])
        return values

    def check(self, r: Run, pods: list[str], timeout: float, index: int) -> None:
        custom, res = k8s.CustomObjectsApi(r.cluster.api), k8s.ResourceV1Api(r.cluster.api)
        ns = r.ns.name
        state: dict[str, str] = {}
        held: dict[str, list[str]] = {}

        def group_state(group: str, names: tuple[str, ...], holder: dict[tuple[str, str], str]) -> bool:
            # The members first: a scheduler allocates and reserves a claim before it binds a pod that uses it,
            # so a member bound before the claim is read unallocated was bound without it.
            where = {n: (r.pod(n).read_raw() or {}).get("spec", {}).get("nodeName") for n in names}
            bound = ", ".join(f"{n} is bound to {node}" for n, node in where.items() if node)
            pg = ignore_not_found(read_json, custom.get_namespaced_custom_object, GROUP, VERSION, ns, "podgroups",
                                  group) or {}
            made = [s.get("resourceClaimName") for s in (pg.get("status") or {}).get("resourceClaimStatuses") or []
                    if s.get("name") == GROUP_CLAIM]
            claim = ignore_not_found(read_json, res.read_namespaced_resource_claim, made[0], ns) or {} \
                if made and made[0] else None
            status = (claim or {}).get("status") or {}
            allocation = status.get("allocation")
            if not allocation:
                state[group] = f"claim {made[0]} not allocated yet" if claim else "no claim made for the group yet"
                if bound:
                    raise AssertionError(f"group {group}: {bound}, but {state[group].replace(' yet', '')}")
                return False
            results = [(d.get("pool", ""), d.get("device", "")) for d in (allocation.get("devices") or {}).get(
                "results") or []]
            held[group] = [f"{pool}/{dev}" for pool, dev in results]
            shown = f"claim {made[0]} holds {', '.join(held[group])}"
            if len(results) != self.devices:
                raise AssertionError(f"group {group}: {shown}: {len(results)} devices, expected {self.devices}")
            for key in results:
                if key in holder:
                    raise AssertionError(f"device {'/'.join(key)} is held by the claims of groups {holder[key]} "
                                         f"and {group}")
                holder[key] = group
            reserved = [(x.get("resource"), x.get("name")) for x in status.get("reservedFor") or []]
            if any(x != ("podgroups", group) for x in reserved):
                raise AssertionError(f"group {group}: {shown}, reserved for {reserved}, expected the PodGroup alone")
            nodes = _claim_nodes(allocation)
            if away := {n: node for n, node in where.items() if node and node not in nodes}:
                raise AssertionError(f"group {group}: {shown} on {sorted(nodes)}, but "
                                     + ", ".join(f"{n} is bound to {node}" for n, node in away.items()))
            state[group] = f"{shown} on {sorted(nodes)}, reserved for {reserved or 'nothing yet'}; " + ", ".join(
                f"{n} on {node or 'no node yet'}" for n, node in where.items())
            return bool(reserved) and all(where.values())

        def done() -> bool:
            holder: dict[tuple[str, str], str] = {}
            return all([group_state(g, names, holder) for g, names in self.members])

        try:
            poll_until(done, "every group's claim allocated, reserved for it, under its members", timeout,
                       interval=0.2)
        except PollTimeout:
            raise AssertionError("group claims not settled after "
                                 f"{timeout:.0f}s: " + "; ".join(f"{g}: {s}" for g, s in state.items())) from None
        for g, devices in held.items():
            r.figure(f"step {index}: devices of group {g}", ", ".join(devices))

"""What a run changed in a cluster it does not own, written down before each change.

The ``existing`` provider runs in somebody's cluster. Before schedgate first
writes a node it records the node as it was; before it creates an object
outside a test's namespace it records the object. :meth:`Journal.undo` puts
the cluster back — at the run's end, or, after a crash or a SIGKILL, when the
next run's reaper finds the journal in the dead run's folder
(:func:`replay`). The file is rewritten whole (write, then rename) after
each entry, so a crash leaves the last complete journal.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client as k8s

from schedgate.kube.api import ignore_not_found, new_client, read_json
from schedgate.kube.poll import PollTimeout, poll_until
from schedgate.spec.files import read_text

log = logging.getLogger("schedgate")
JOURNAL = "cluster-journal.json"
MERGE = "application/merge-patch+json"
MANAGED_BY = "app.kubernetes.io/managed-by"
MAX_BYTES = 64 * 1024 * 1024  # 10,000 nodes' states, each a few KiB

# The kinds schedgate creates outside test namespaces, and how each is deleted.
_DELETE = {
    "Node": lambda api, ns, name: k8s.CoreV1Api(api).delete_node(name),
    "Namespace": lambda api, ns, name: k8s.CoreV1Api(api).delete_namespace(name),
    "ServiceAccount": lambda api, ns, name: k8s.CoreV1Api(api).delete_namespaced_service_account(name, ns),
    "ClusterRole": lambda api, ns, name: k8s.RbacAuthorizationV1Api(api).delete_cluster_role(name),
    "ClusterRoleBinding": lambda api, ns, name: k8s.RbacAuthorizationV1Api(api).delete_cluster_role_binding(name),
    "Role": lambda api, ns, name: k8s.RbacAuthorizationV1Api(api).delete_namespaced_role(name, ns),
    "RoleBinding": lambda api, ns, name: k8s.RbacAuthorizationV1Api(api).delete_namespaced_role_binding(name, ns),
    "Lease": lambda api, ns, name: k8s.CoordinationV1Api(api).delete_namespaced_lease(name, ns),
}
KINDS = tuple(_DELETE)


def node_state(node: Mapping[str, Any]) -> dict[str, Any]:
    """What schedgate may change of a node: labels, annotations, taints, cordon, capacity, allocatable."""
    meta, spec, status = node.get("metadata") or {}, node.get("spec") or {}, node.get("status") or {}
    return {"labels": dict(meta.get("labels") or {}), "annotations": dict(meta.get("annotations") or {}),
            "taints": list(spec.get("taints") or []), "unschedulable": bool(spec.get("unschedulable")),
            "capacity": dict(status.get("capacity") or {}), "allocatable": dict(status.get("allocatable") or {})}


def _restore(current: Mapping[str, Any], was: Mapping[str, Any],
             status_owned: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """The node patch and status patch that turn ``current`` (a :func:`node_state`) back into ``was``: every
    resource where schedgate owns the status, else only extended ones (``vendor/name``: the kubelet owns
    cpu, memory, pods and allocatable)."""
    def back(section: str, only_extended: bool = False) -> dict[str, Any]:
        now, then = current[section], was[section]
        return {k: then.get(k) for k in set(now) | set(then)
                if now.get(k) != then.get(k) and ("/" in k or not only_extended)}

    meta = {s: d for s in ("labels", "annotations") if (d := back(s))}
    patch: dict[str, Any] = {"metadata": meta} if meta else {}
    if current["taints"] != was["taints"]:
        patch.setdefault("spec", {})["taints"] = was["taints"] or None
    if current["unschedulable"] != was["unschedulable"]:
        patch.setdefault("spec", {})["unschedulable"] = was["unschedulable"] or None
    sections = ("capacity", "allocatable") if status_owned else ("capacity",)
    status = {s: d for s in sections if (d := back(s, only_extended=not status_owned))}
    return patch, status


_FIELDS = ("kubeconfig", "context", "nodes", "created", "status_owned", "sweep_namespaces", "namespaces_before",
           "leases_before")


@dataclass
class Journal:
    path: Path
    kubeconfig: str
    context: str | None = None
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    created: list[dict[str, str]] = field(default_factory=list)
    # Resources of nodes whose status schedgate owns (API-only): restored whole; of kubelet nodes only the
    # extended resources schedgate advertised (the kubelet owns the rest).
    status_owned: list[str] = field(default_factory=list)
    # Also delete every namespace labelled as schedgate's that was not there when the run began: the test
    # namespaces (the run holds the cluster alone, see the existing provider's lock).
    sweep_namespaces: bool = False
    namespaces_before: list[str] = field(default_factory=list)
    # Leases that existed before the run's schedulers took them: (namespace, name) -> who held them and for
    # how long, given back at the end (a SIGKILLed scheduler cannot release its lease; its holder would look
    # alive to the next run for a lease duration).
    leases_before: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> Journal:
        """The journal a run wrote in its own folder: a regular file (no link) of at most ``MAX_BYTES``."""
        doc = json.loads(read_text(path, "cluster journal", MAX_BYTES, follow=False))
        if not isinstance(doc, dict) or not isinstance(doc.get("kubeconfig"), str):
            raise ValueError(f"{path}: not a journal schedgate wrote")
        return cls(path=path, **{k: doc[k] for k in _FIELDS})

    def save(self) -> None:
        doc = {k: getattr(self, k) for k in _FIELDS}
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc, indent=1) + "\n")
        os.replace(tmp, self.path)

    def node_before_edit(self, core: Any, name: str) -> None:
        """Record ``name`` as it is now, unless it already was (the first state is the one to restore)."""
        if name in self.nodes:
            return
        node = ignore_not_found(read_json, core.read_node, name)
        if node is not None:
            self.nodes[name] = node_state(node)
            self.save()

    def will_create(self, kind: str, name: str, namespace: str = "") -> None:
        """Record an object before creating it (a crash between the two leaves a harmless 404 to undo)."""
        assert kind in _DELETE, kind
        ref = {"kind": kind, "namespace": namespace, "name": name}
        if ref not in self.created:
            self.created.append(ref)
            self.save()

    def lease_before_taken(self, namespace: str, name: str, spec: Mapping[str, Any]) -> None:
        """Record an existing lease's holder before a scheduler of this run takes it."""
        key = f"{namespace}/{name}"
        if key not in self.leases_before:
            self.leases_before[key] = {"holderIdentity": spec.get("holderIdentity") or "",
                                       "leaseDurationSeconds": spec.get("leaseDurationSeconds")}
            self.save()

    def _give_back_leases(self, api: k8s.ApiClient) -> list[str]:
        coord: Any = k8s.CoordinationV1Api(api)
        done = []
        for key, was in self.leases_before.items():
            ns, name = key.split("/", 1)
            lease = ignore_not_found(read_json, coord.read_namespaced_lease, name, ns)
            if lease is None or ((lease.get("spec") or {}).get("holderIdentity") or "") == was["holderIdentity"]:
                continue
            coord.patch_namespaced_lease(name, ns, {"spec": dict(was)})
            done.append(f"Lease {key} given back to {was['holderIdentity'] or 'nobody'}")
        return done

    def undo(self, api: k8s.ApiClient, timeout: float = 60.0) -> list[str]:
        """Delete what was created (newest first), put every edited node back, wait until namespaces are
        gone; returns what was undone. Each part is tried even if another fails."""
        done: list[str] = []
        core = k8s.CoreV1Api(api)
        gone: list[str] = []
        refs = list(self.created)
        if self.sweep_namespaces:
            listed = read_json(core.list_namespace, label_selector=f"{MANAGED_BY}=schedgate").get("items") or []
            for n in listed:
                ref = {"kind": "Namespace", "namespace": "", "name": n["metadata"]["name"]}
                if ref not in refs and ref["name"] not in self.namespaces_before:
                    refs.append(ref)
        for ref in reversed(refs):
            if ref["kind"] == "Namespace":
                # Its pods at once: on a node without a kubelet nothing would ever finish a graceful deletion.
                ignore_not_found(core.delete_collection_namespaced_pod, ref["name"], grace_period_seconds=0)
            try:
                if ignore_not_found(_DELETE[ref["kind"]], api, ref["namespace"], ref["name"]) is not None:
                    done.append(f"{ref['kind']} {ref['namespace'] + '/' if ref['namespace'] else ''}{ref['name']}")
            except Exception as e:  # noqa: BLE001 — undo the rest, report this one
                log.warning("could not delete %s %s: %s", ref["kind"], ref["name"], str(e).splitlines()[0])
            if ref["kind"] == "Namespace":
                gone.append(ref["name"])
        done += self._give_back_leases(api)
        for name, was in self.nodes.items():
            node = ignore_not_found(read_json, core.read_node, name)
            if node is None:
                log.warning("node %s is gone; it cannot be put back", name)
                continue
            patch, status = _restore(node_state(node), was, name in self.status_owned)
            if patch:
                core.patch_node(name, patch, _content_type=MERGE)
            if status:
                core.patch_node_status(name, {"status": status}, _content_type=MERGE)
            if patch or status:
                done.append(f"node {name} put back")
        def deleted() -> bool | None:
            return all(ignore_not_found(read_json, core.read_namespace, ns) is None for ns in gone) or None

        try:
            poll_until(deleted, f"namespaces {', '.join(gone)} deleted", timeout)
        except PollTimeout:
            left = [ns for ns in gone if ignore_not_found(read_json, core.read_namespace, ns) is not None]
            log.warning("namespaces %s are still terminating after %.0fs", ", ".join(left), timeout)
        return done


def replay(run: Path, kubeconfig: Path | None) -> tuple[list[str], str]:
    """Undo what the dead run in ``run`` recorded in its journal, if it kept one: (what was undone, what is
    still to undo).

    The journal names the kubeconfig the run used; it is undone only against ``kubeconfig``, this process's
    own (``--kubeconfig``), when that is the same file: a run folder's contents never choose which cluster is
    written to. A journal of another cluster is left as it is, and the second part says how to undo it."""
    path = run / JOURNAL
    if not path.exists():
        return [], ""
    try:
        journal = Journal.load(path)
    except Exception as e:  # noqa: BLE001 — a reaper reports and goes on
        log.warning("could not read the journal %s: %s", path, str(e).splitlines()[0])
        return [], ""
    if kubeconfig is None or not _same_file(Path(journal.kubeconfig), kubeconfig):
        return [], (f"it recorded edits to the cluster of {journal.kubeconfig}; `schedgate reap --kubeconfig "
                    f"{journal.kubeconfig}` puts that cluster back")
    try:
        done = journal.undo(new_client(kubeconfig, journal.context))
    except Exception as e:  # noqa: BLE001 — a reaper reports and goes on
        log.warning("could not undo the changes recorded in %s: %s", path, str(e).splitlines()[0])
        return [], ""
    path.unlink(missing_ok=True)
    return [f"in the cluster of {kubeconfig}: {d}" for d in done], ""


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False

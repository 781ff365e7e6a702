"""``schedgate snapshot``: a live cluster written down as a scenario file that replays its verdicts.

    schedgate snapshot --kubeconfig FILE [--context C] [--namespace NS ...] [--pod NAME_OR_GLOB ...]
                       [--scheduler-config FILE] [--name NAME] -o my-cluster.scenario.yaml

What it writes: every node (labels, taints, capacity, allocatable, cordoned) as a named node of an inline
cluster; every bound, not finished pod as a pre-bound filler with its real requests, ports, labels and
affinity (what later pods' fit, ports, spread and anti-affinity see); the chosen pending pods as
manifests; the priority classes they use; and for each pending pod its verdict as an ``expect``.
``schedgate repro`` on the file, on a fresh local cluster, checks each verdict again.

What a replay cannot carry is left out and said in the file's header: volumes (a claim would need its
storage), service accounts, runtime classes (a pod's overhead is folded into its first container), DRA
claims. Lists are paged; one progress line says how far it got.
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import logging
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as k8s

from schedgate.cluster.sync import MARK_KEY, SYNC_KEY
from schedgate.errors import SchedgateError
from schedgate.kube.api import new_client, pages, read_json
from schedgate.spec.cluster import API_VERSION, HOSTNAME, MAX_NODES
from schedgate.spec.quantity import quantity_value
from schedgate.spec.validate import DNS_LABEL, is_resource_name

log = logging.getLogger("schedgate")
PAGE = 500
LEFT_OUT = ("volumes and volume mounts", "service accounts", "runtime classes (overhead folded into the first "
            "container)", "resource claims", "container images, commands and environment")
_KEEP_SPEC = ("nodeSelector", "affinity", "tolerations", "topologySpreadConstraints", "schedulerName",
              "priorityClassName", "schedulingGates", "hostNetwork", "initContainers", "containers")
_KEEP_CONTAINER = ("name", "resources", "ports", "restartPolicy")
# The replay's own cordoned sync node adds to this reason's count: its count is not part of the verdict.
_UNCOUNTED = "node(s) were unschedulable"


def add_parser(sub: Any) -> None:
    p = sub.add_parser("snapshot", help="write a live cluster's nodes and pods as a scenario file that replays "
                                        "its pending pods' verdicts",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("--kubeconfig", type=Path, required=True, help="the cluster to read")
    p.add_argument("--context", help="a context of the kubeconfig (default: its current one)")
    p.add_argument("--namespace", "-n", action="append", default=[],
                   help="where the pending pods to replay are (repeatable; default: every namespace)")
    p.add_argument("--pod", action="append", default=[], help="only pending pods of this name or glob (repeatable)")
    p.add_argument("--scheduler-config", type=Path, help="the scheduler configuration the replay runs")
    p.add_argument("--name", default="snapshot", help="the scenario's name (a DNS label)")
    p.add_argument("-o", "--output", type=Path, required=True, help="the scenario file to write")


def run(args: argparse.Namespace) -> int:
    if not DNS_LABEL.match(args.name):
        raise SchedgateError(f"--name: must be a DNS label, got {args.name!r}")
    if not args.kubeconfig.is_file():
        raise SchedgateError(f"{args.kubeconfig}: --kubeconfig: no such file")
    api = new_client(args.kubeconfig, args.context)
    doc = snapshot(api, args.namespace, args.pod, args.scheduler_config, args.name, args.kubeconfig)
    header = "".join(f"# {line}\n" for line in [
        f"schedgate snapshot of {api.configuration.host} at {datetime.now(UTC):%Y-%m-%d %H:%M:%SZ}.",
        "Left out (a replay cannot carry them): " + "; ".join(LEFT_OUT) + "."])
    args.output.write_text(header + yaml.safe_dump(doc, sort_keys=False, width=120))
    log.info("snapshot: wrote %s", args.output)
    return 0


def _pages(fn: Any, what: str, **kwargs: Any) -> Iterator[dict[str, Any]]:
    seen = 0
    for items in pages(fn, limit=PAGE, **kwargs):
        seen += len(items)
        log.info("snapshot: %d %s listed", seen, what)
        yield from items


def snapshot(api: k8s.ApiClient, namespaces: list[str], pods: list[str], scheduler: Path | None, name: str,
             source: Path) -> dict[str, Any]:
    core = k8s.CoreV1Api(api)
    nodes = [n for n in _pages(core.list_node, "nodes") if not _is_harness_node(n)]
    if len(nodes) > MAX_NODES:
        raise SchedgateError(f"{source}: the cluster has {len(nodes)} nodes; a scenario holds at most {MAX_NODES}")
    names = {n["metadata"]["name"] for n in nodes}
    every = list(_pages(core.list_pod_for_all_namespaces, "pods"))
    bound = [p for p in every if (p.get("spec") or {}).get("nodeName") in names and _running(p)]
    pending = [p for p in every if not (p.get("spec") or {}).get("nodeName") and _chosen(p, namespaces, pods)]
    if not pending:
        raise SchedgateError(f"{source}: no pending pod matches --namespace/--pod; nothing to replay")
    pod_names = _Names()
    steps: list[dict[str, Any]] = []
    classes = sorted({c for p in bound + pending if (c := (p.get("spec") or {}).get("priorityClassName"))
                      and not c.startswith("system-")})
    sched = k8s.SchedulingV1Api(api)
    for c in classes:
        pc = read_json(sched.read_priority_class, c)
        steps.append({"apply": {"manifest": {k: v for k, v in {
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": c},
            "value": pc.get("value"), "globalDefault": pc.get("globalDefault"),
            "preemptionPolicy": pc.get("preemptionPolicy")}.items() if v is not None}}})
    for p in bound:
        steps.append({"createPods": {"name": pod_names.of(p), "node": p["spec"]["nodeName"], "pod": _fragment(p)}})
    expects = []
    for p in pending:
        n = pod_names.of(p)
        steps.append({"createPods": {"name": n, "pod": _fragment(p)}})
        verdict = _verdict(p)
        if verdict is not None:
            expects.append({"expect": {"pods": n, **verdict}})
    if not expects:
        raise SchedgateError(f"{source}: none of the {len(pending)} pending pods has a verdict yet "
                             "(no PodScheduled=False condition); nothing to check in a replay")
    doc: dict[str, Any] = {"apiVersion": API_VERSION, "kind": "Scenario", "name": name,
                           "description": f"{len(nodes)} nodes, {len(bound)} bound pods and {len(pending)} pending "
                                          f"pods of {source}; each pending pod's verdict again."}
    if scheduler is not None:
        doc["scheduler"] = str(scheduler.resolve())
    doc["cluster"] = {"apiVersion": API_VERSION, "kind": "Cluster", "name": name, "nodes": [_node(n) for n in nodes]}
    doc["steps"] = steps + expects
    return doc


def _is_harness_node(node: dict[str, Any]) -> bool:
    return SYNC_KEY in ((node.get("metadata") or {}).get("labels") or {})


def _running(p: dict[str, Any]) -> bool:
    return (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


def _chosen(p: dict[str, Any], namespaces: list[str], pods: list[str]) -> bool:
    meta = p.get("metadata") or {}
    if namespaces and meta.get("namespace") not in namespaces:
        return False
    return not pods or any(fnmatch.fnmatchcase(meta.get("name", ""), g) for g in pods)


def _node(n: dict[str, Any]) -> dict[str, Any]:
    meta, spec, status = n.get("metadata") or {}, n.get("spec") or {}, n.get("status") or {}
    name = meta["name"]
    labels = {k: v for k, v in (meta.get("labels") or {}).items()
              if not (k == HOSTNAME and v == name) and k != MARK_KEY}  # a cache barrier's token is schedgate's
    out: dict[str, Any] = {"name": name}
    if labels:
        out["labels"] = labels
    taints = [{k: t[k] for k in ("key", "value", "effect") if t.get(k)} for t in spec.get("taints") or []]
    if taints:
        out["taints"] = taints
    out["capacity"] = {r: q for r, q in (status.get("capacity") or {}).items() if is_resource_name(r)}
    allocatable = {r: q for r, q in (status.get("allocatable") or {}).items() if r in out["capacity"]}
    if allocatable != out["capacity"]:
        out["allocatable"] = allocatable
    if spec.get("unschedulable"):
        out["unschedulable"] = True
    return out


def _fragment(p: dict[str, Any]) -> dict[str, Any]:
    """The pod as a manifest fragment: what scheduling reads, nothing a replay cannot create."""
    meta, spec = p.get("metadata") or {}, p.get("spec") or {}
    out: dict[str, Any] = {k: spec[k] for k in _KEEP_SPEC if spec.get(k) is not None}
    for key in ("containers", "initContainers"):
        if key in out:
            out[key] = [{k: c[k] for k in _KEEP_CONTAINER if c.get(k) is not None} for c in out[key]]
    overhead = spec.get("overhead") or {}
    if overhead and out.get("containers"):
        req = out["containers"][0].setdefault("resources", {}).setdefault("requests", {})
        for r, q in overhead.items():
            req[r] = _quantity(quantity_value(req.get(r, "0")) + quantity_value(q))
    labels = meta.get("labels") or {}
    return {"metadata": {"labels": labels}, "spec": out} if labels else {"spec": out}


def _quantity(value: Any) -> str:
    return str(int(value)) if value == value.to_integral_value() else f"{int((value * 1000).to_integral_value())}m"


def _verdict(p: dict[str, Any]) -> dict[str, Any] | None:
    conditions = (p.get("status") or {}).get("conditions") or []
    cond: dict[str, Any] = next((c for c in conditions if c.get("type") == "PodScheduled"), {})
    if cond.get("status") != "False":
        return None
    reason = cond.get("reason")
    if reason == "SchedulingGated":
        return {"schedulingGated": True}
    if reason == "SchedulerError":
        return {"schedulingError": True}
    if reason != "Unschedulable":
        return None
    return {"unschedulable": {"message": reasons_regex(cond.get("message") or "")}}


def reasons_regex(message: str) -> str:
    """A regex (RE2's syntax: no lookahead) that a FitError message with the same reasons matches, each with
    its node count: ``0/9 nodes are available: 2 Insufficient cpu, 7 node(s) didn't match ...`` -> the
    reasons in the order the scheduler writes them (sorted as "COUNT REASON" text), any text between.
    The replay's own cordoned sync node changes the count of one reason, and with it where that reason
    sorts: it is left out (the sync node makes it appear in every replay)."""
    m = re.match(r"0/\d+ nodes are available: (.*?)\.( preemption: .*)?$", message, re.S)
    if not m:
        return re.escape(message.split(". preemption:")[0])
    reasons = [r.strip() for r in m.group(1).split(", ")]
    kept = [re.escape(r) for r in reasons if r.partition(" ")[2] != _UNCOUNTED]
    # each reason whole: after ": " or ", " (or after other reasons), before "," or "."
    return "[:,] " + "(?:.*[:,])? ".join(f"{r}[,.]" for r in kept) if kept else re.escape(_UNCOUNTED)


class _Names:
    """Pod names as a scenario needs them: DNS labels, unique across namespaces."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    def of(self, p: dict[str, Any]) -> str:
        meta = p.get("metadata") or {}
        raw = f"{meta.get('namespace')}-{meta.get('name')}".lower()
        name = re.sub(r"[^a-z0-9-]+", "-", raw).strip("-")
        if len(name) > 63 or name in self.used or not DNS_LABEL.match(name):
            digest = hashlib.sha256(raw.encode()).hexdigest()[:6]
            name = f"{name[:56].strip('-')}-{digest}"
        self.used.add(name)
        return name

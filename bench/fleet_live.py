"""The live fleet of ``make bench-fleet``: nodes that heartbeat and pods that run, through the node agent.

    .venv/bin/python bench/fleet.py --live 10000,50000 --sizes ''

A local cluster of N 8-GPU network nodes with ``nodeAgent: {kind: kwok}`` (kwok renews every node's
Lease, 40 s long, every 10 s, as a kubelet does; the node lifecycle controller watches them with
upstream's 40 s grace period), then P plain pods (100m cpu) through a scheduler of upstream's default
profile with its client unthrottled, created 8 at a time by one client; kwok makes each Running.
Printed: start to ready per phase; how long until every node's Lease has been renewed by kwok once
and the renewals per second it then keeps up; control-plane memory (kwok included) idle and with the
pods; create, bound and Running rates (from the first create), the moment the 10,000th pod was
Running, p50/p99 create->bound and create->Running as one namespace watch saw them; and how many
nodes the lifecycle controller tainted unreachable or not-ready meanwhile (a heartbeat that fell
behind). kwok's own published figures are printed beside, labelled: measured on other machines.
"""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

import urllib3
from cpu import _stat
from kubernetes import client as k8s
from memory import print_memory

from schedgate.objects.builders import make_pod
from schedgate.providers import ClusterRequest, start_cluster
from schedgate.spec.cluster import parse_definition
from schedgate.spec.schedconfig import load_scheduler_config, parse_scheduler_config

KWOK_PUBLISHED = ("kwok's published benchmark (its own docs, other machines): 5,000 nodes Ready in < 60 s; "
                  "10,000 pods Running in < 60 s")
PROFILE = "fleet-scheduler"
NODE_LEASES = "kube-node-lease"
TAINTS = ("node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready")


def definition(n: int) -> Any:
    return parse_definition({
        "apiVersion": "schedgate.io/v1alpha1", "kind": "Cluster", "name": f"fleet-live-{n}",
        "nodeAgent": {"kind": "kwok"},
        "pools": [{"name": "gpu", "count": n, "labels": {"infra.example.com/high-speed-network": "true"},
                   "capacity": {"cpu": "64", "memory": "512Gi", "pods": 110, "nvidia.com/gpu": 8}}]},
        source=f"fleet-live-{n}")


def _time(s: str | None) -> float:
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp() if s else 0.0


def renewals(api: k8s.ApiClient) -> dict[str, float]:
    """Each node Lease's last renewal (epoch seconds)."""
    resp = k8s.CoordinationV1Api(api).list_namespaced_lease(NODE_LEASES, _preload_content=False)
    return {i["metadata"]["name"]: _time((i.get("spec") or {}).get("renewTime"))
            for i in json.loads(resp.data)["items"]}


def heartbeats(api: k8s.ApiClient, nodes: int, timeout: float) -> tuple[float, float]:
    """(seconds until every node's Lease was renewed after now, the oldest renewal's age over the 20 s
    after that: with kwok keeping up, about its renew interval)."""
    t0, first = time.monotonic(), renewals(api)
    while True:
        now = renewals(api)
        fresh = sum(1 for name, at in now.items() if at > first.get(name, 0.0))
        if fresh >= nodes:
            break
        if time.monotonic() - t0 > timeout:
            raise SystemExit(f"bench-fleet: only {fresh} of {nodes} node Leases renewed in {timeout:.0f}s")
        time.sleep(1.0)
    took, oldest = time.monotonic() - t0, 0.0
    for _ in range(10):
        time.sleep(2.0)
        now, at = renewals(api), time.time()
        oldest = max(oldest, at - min(now.values()))
    return took, oldest


class PodWatch:
    """One namespace watch, from before the first create: when each pod was first seen bound and Running."""

    def __init__(self, api: k8s.ApiClient, namespace: str) -> None:
        self.core, self.namespace = k8s.CoreV1Api(api), namespace
        self.bound: dict[str, float] = {}
        self.running: dict[str, float] = {}
        self.stop = threading.Event()
        rv = json.loads(self.core.list_namespaced_pod(namespace, _preload_content=False).data)["metadata"]
        self.rv = rv["resourceVersion"]
        self.thread = threading.Thread(target=self._run, daemon=True, name="bench-fleet-watch")
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            resp = self.core.list_namespaced_pod(self.namespace, watch=True, resource_version=self.rv,
                                                 allow_watch_bookmarks=True, timeout_seconds=60,
                                                 _preload_content=False)
            buf = b""
            try:
                for chunk in resp.stream(65536):
                    buf += chunk
                    *lines, buf = buf.split(b"\n")
                    for line in lines:
                        if line.strip():
                            self._seen(json.loads(line), time.time())
                    if self.stop.is_set():
                        break
            except urllib3.exceptions.ProtocolError:
                continue  # the stream was cut (its 60 s are up, or the cluster is stopping): watch on from rv
            finally:
                resp.release_conn()

    def _seen(self, event: dict[str, Any], at: float) -> None:
        obj = event.get("object") or {}
        self.rv = (obj.get("metadata") or {}).get("resourceVersion", self.rv)
        if event.get("type") not in ("ADDED", "MODIFIED"):
            return
        name = obj["metadata"]["name"]
        if (obj.get("spec") or {}).get("nodeName"):
            self.bound.setdefault(name, at)
        if (obj.get("status") or {}).get("phase") == "Running":
            self.running.setdefault(name, at)


def print_start(c: Any, n: int, wall: float, title: str) -> None:
    """A cluster's start to ready, each phase, and its node creation rate."""
    print(f"== {title}: start to ready, seconds (wall {wall:.1f}, incl. the binary checks)")
    for phase, secs in c.timings.items():
        print(f"   {phase:<34} {secs:7.1f}")
    made = next((v for p, v in c.timings.items() if p.endswith(" nodes")), 0.0)
    if made:
        print(f"   {'node creation rate':<34} {n / made:7.0f} nodes/s")


def cpu_of(c: Any) -> dict[str, float]:
    """CPU seconds so far of each control-plane process (kwok and every scheduler included), from /proc."""
    out = {}
    for p in c.backend.components():
        stat = _stat(p.pid)
        out[p.name] = stat[1] if stat else 0.0
    return out


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))] if xs else float("nan")


def live(n: int, count: int, root: Any, timeout: float = 3600.0) -> None:
    print(f"== live fleet: {n} nodes with kwok's heartbeats, {count} pods that run ({KWOK_PUBLISHED})", flush=True)
    config = load_scheduler_config(root / "clusters/profiles/gpu-packing-scheduler.yaml")
    t0 = time.monotonic()
    started = start_cluster(ClusterRequest("local", definition(n), config), out=None)
    wall = time.monotonic() - t0
    c = started.cluster
    try:
        print_start(c, n, wall, f"{n} nodes, live")
        took, oldest = heartbeats(c.api, n, timeout=600.0)
        print(f"   {'every Lease renewed by kwok':<34} {took:7.1f} s after ready; the oldest renewal over the "
              f"next 20 s: {oldest:.1f} s old (renewed every 10 s, as a kubelet; grace period 40 s)", flush=True)
        print(f"== {n} nodes, live: control-plane resident memory, MiB (idle, after start)")
        print_memory(c, 34)
        c.start_scheduler(parse_scheduler_config(
            {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
             "profiles": [{"schedulerName": PROFILE}]}, source="<bench-fleet>").unthrottled())
        ns = c.new_namespace("bench-fleet-live")
        watch = PodWatch(c.api, ns.name)
        created: dict[str, float] = {}

        def create(i: int) -> None:
            body = c.pod_manifest(make_pod(f"p-{i}").scheduler(PROFILE).request("cpu", "100m")
                                  .request("memory", "64Mi"))
            created[body["metadata"]["name"]] = time.time()
            c.core.create_namespaced_pod(ns.name, body, _preload_content=False)  # no model decoding: 2-3x

        cpu_before = cpu_of(c)
        with ThreadPoolExecutor(max_workers=8, thread_name_prefix="bench-fleet") as pool:
            list(pool.map(create, range(count)))
        created_by = time.time()
        deadline = time.monotonic() + timeout
        last = (-1, time.monotonic())
        while len(watch.running) < count:
            if time.monotonic() > deadline:
                raise SystemExit(f"bench-fleet: {len(watch.running)} of {count} pods Running after {timeout:.0f}s")
            if len(watch.running) != last[0]:
                last = (len(watch.running), time.monotonic())
                print(f"   ... {len(watch.bound)} bound, {len(watch.running)} Running", flush=True)
            time.sleep(5.0)
        watch.stop.set()
        first = min(created.values())
        bound, running = sorted(watch.bound.values()), sorted(watch.running.values())
        tainted = sum(1 for node in json.loads(c.core.list_node(_preload_content=False).data)["items"]
                      if any(t.get("key") in TAINTS for t in (node.get("spec") or {}).get("taints") or []))
        print(f"== {n} nodes, live: {count} pods (rates from the first create; times as one watch saw them)")
        print(f"   {'created':<34} {count / (created_by - first):7.1f} pods/s (8 at a time, one client)")
        print(f"   {'bound':<34} {count / (bound[-1] - first):7.1f} pods/s")
        print(f"   {'Running':<34} {count / (running[-1] - first):7.1f} pods/s")
        if count >= 10000:
            print(f"   {'10,000th pod Running':<34} {running[9999] - first:7.1f} s after the first create")
        to_bound = [watch.bound[p] - created[p] for p in created]
        to_running = [watch.running[p] - created[p] for p in created]
        print(f"   {'create->bound p50 / p99':<34} {pct(to_bound, 0.5):7.2f} / {pct(to_bound, 0.99):.2f} s")
        print(f"   {'create->Running p50 / p99':<34} {pct(to_running, 0.5):7.2f} / {pct(to_running, 0.99):.2f} s")
        print(f"   {'nodes tainted unreachable/not-ready':<34} {tainted:7d}")
        spent = {name: cpu - cpu_before.get(name, 0.0) for name, cpu in cpu_of(c).items()}
        print(f"   {'CPU seconds, creates to all Running':<34} "
              + ", ".join(f"{name} {v:.1f}" for name, v in sorted(spent.items(), key=lambda kv: -kv[1])))
        print(f"== {n} nodes, live: control-plane resident memory, MiB ({count} pods Running)")
        print_memory(c, 34)
        print(f"   {KWOK_PUBLISHED}")
    finally:
        started.stop()

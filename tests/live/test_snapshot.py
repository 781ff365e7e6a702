"""``schedgate snapshot``: a cluster in a known state, written down and replayed on a fresh cluster, gives
every pending pod the verdict it had (reason and message); bad input is one line."""

from __future__ import annotations

import re
import subprocess
import sys

import yaml

from schedgate import GPU, HIGH_SPEED_NET, make_pod, scheduled_on, unschedulable, wait_for
from schedgate.cli.snapshot import reasons_regex
from schedgate.objects.matchers import scheduling_gated
from schedgate.scenarios.load import load_scenario


def schedgate(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "schedgate", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_a_fit_message_becomes_a_regex_of_every_reason_with_its_count():
    msg = ("0/10 nodes are available: 1 node(s) were unschedulable, 2 Insufficient nvidia.com/gpu, "
           "7 node(s) didn't match Pod's node affinity/selector. preemption: 0/10 nodes are available: "
           "10 Preemption is not helpful for scheduling.")
    pattern = re.compile(reasons_regex(msg))
    assert pattern.search(msg)
    # The replay's cordoned sync node adds one to the unschedulable count; the other counts are the verdict.
    assert pattern.search(msg.replace("1 node(s) were unschedulable", "2 node(s) were unschedulable"))
    assert not pattern.search(msg.replace("2 Insufficient", "3 Insufficient"))
    assert not pattern.search(msg.replace("7 node(s) didn't", "6 node(s) didn't"))


def test_a_snapshot_replayed_on_a_fresh_cluster_gives_every_pending_pod_its_verdict(cluster, ns, tmp_path):
    net, plain = cluster.pool("gpu-net"), cluster.pool("gpu-plain")
    # Known state: every network node holds 7 of its 8 GPUs, so a 2-GPU network pod fits nowhere, a 1-GPU one
    # does; a pod gated; a pod asking for a label no node has.
    for i, node in enumerate(net):
        make_pod(f"filler-{i}").gpus(7).label("app", "filler").on_node(node).create(ns)
    cluster.sync_schedulers()
    two = (make_pod("two-gpus").gpus(2).scheduler("gpu-packing-scheduler").require_label(HIGH_SPEED_NET, "true")
           .create(ns))
    one = make_pod("one-gpu").gpus(1).scheduler("gpu-packing-scheduler").require_label(HIGH_SPEED_NET, "true") \
        .create(ns)
    nowhere = make_pod("nowhere").require_label("example.com/rack", "r9").create(ns)
    gated = make_pod("gated").manifest({"spec": {"schedulingGates": [{"name": "example.com/wait"}]}}).create(ns)
    wait_for(two, unschedulable(r"4 Insufficient nvidia\.com/gpu"))
    wait_for(one, scheduled_on(net, never=plain))
    wait_for(nowhere, unschedulable(r"didn't match Pod's node affinity/selector"))
    wait_for(gated, scheduling_gated())

    out = tmp_path / "snap.scenario.yaml"
    profile = "clusters/profiles/gpu-packing-scheduler.yaml"
    r = schedgate("snapshot", "--kubeconfig", str(cluster.kubeconfig), "-n", ns.name, "--scheduler-config", profile,
                  "--name", "snap", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "nodes listed" in r.stderr and "pods listed" in r.stderr, r.stderr  # the progress line
    sc = load_scenario(out)
    assert {n.name for n in sc.definition.nodes()} == set(cluster.node_names)  # the sync node left out
    doc = yaml.safe_load(out.read_text())
    expects = {s["expect"]["pods"]: s["expect"] for s in doc["steps"] if "expect" in s}
    assert set(expects) == {f"{ns.name}-two-gpus", f"{ns.name}-nowhere", f"{ns.name}-gated"}, expects
    assert expects[f"{ns.name}-gated"] == {"pods": f"{ns.name}-gated", "schedulingGated": True}
    fillers = [s["createPods"] for s in doc["steps"] if "createPods" in s and "node" in s["createPods"]]
    assert sorted(f["node"] for f in fillers) == sorted([*net, one.refresh().node_name]), fillers
    # A train node's taint and every node's GPUs travel with it.
    assert sc.definition.node("train-1").taints == cluster.definition.node("train-1").taints
    assert sc.definition.node(net[0]).allocatable[GPU] == "8"

    replay = schedgate("repro", str(out), "--artifacts-on", "never", "-p", "no:cacheprovider", timeout=600)
    assert replay.returncode == 0, replay.stdout[-3000:] + replay.stderr[-2000:]
    assert "1 passed" in replay.stdout, replay.stdout[-2000:]


def test_snapshot_refuses_bad_input_in_one_line(tmp_path):
    r = schedgate("snapshot", "--kubeconfig", str(tmp_path / "none"), "-o", str(tmp_path / "x.scenario.yaml"))
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0, r.stderr
    assert "--kubeconfig: no such file" in r.stderr
    assert not (tmp_path / "x.scenario.yaml").exists()

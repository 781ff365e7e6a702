"""The node agent: a definition's ``nodeAgent`` (parsing, refusals, the flags it gives), the kwok build's
version, the outcomes of pods that live, and what a cluster without an agent refuses."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from support import ROOT

from schedgate.errors import DefinitionError, NotHere
from schedgate.runtime.kwok import kwok_version
from schedgate.spec.agent import UPSTREAM_GRACE, NodeAgent
from schedgate.spec.cluster import load_definition

BASE = """\
apiVersion: schedgate.io/v1alpha1
kind: Cluster
name: c
nodeAgent:
  kind: kwok
  nodeMonitorGracePeriod: 8
pools:
  - {name: p, count: 1, capacity: {cpu: "4", memory: 8Gi, pods: 110}}
"""


def definition(tmp_path: Path, text: str = BASE) -> Path:
    p = tmp_path / "c.yaml"
    p.write_text(text)
    return p


def test_an_agent_shortens_the_grace_period_and_renews_its_leases_three_times_within_it(tmp_path):
    agent = load_definition(definition(tmp_path)).agent
    assert agent is not None and agent.node_monitor_grace_period == 8
    assert agent.controller_flags() == ["--node-monitor-grace-period=8s", "--node-monitor-period=2s"]
    assert agent.lease_seconds() == 10  # renewed every 2.5 s: three renewals in 8 s
    upstream = load_definition(definition(tmp_path, BASE.replace("  nodeMonitorGracePeriod: 8\n", ""))).agent
    assert upstream is not None and upstream.node_monitor_grace_period == UPSTREAM_GRACE
    assert upstream.lease_seconds() == 40  # a kubelet's
    assert load_definition(definition(tmp_path, BASE.split("nodeAgent")[0] + BASE.split("8\n", 1)[1])).agent is None


@pytest.mark.parametrize("old, new, problem", [
    ("kind: kwok", "kind: kubelets", "nodeAgent.kind: must be one of kwok, kubelet, got 'kubelets' (line 5)"),
    ("nodeMonitorGracePeriod: 8", "nodeMonitorGracePeriod: 1", "nodeAgent.nodeMonitorGracePeriod: must be a number "
                                                                 "from 4 to 3600, got 1 (line 6)"),
    ("nodeMonitorGracePeriod: 8", "heartbeat: 8", "nodeAgent.heartbeat: unknown field"),
    ("  kind: kwok\n", "", "nodeAgent.kind: required field is missing"),
])
def test_a_bad_agent_is_one_line_naming_the_file_and_field(tmp_path, old, new, problem):
    path = definition(tmp_path, BASE.replace(old, new))
    with pytest.raises(DefinitionError) as e:
        load_definition(path)
    assert str(e.value).startswith(f"{path}: ") and problem in str(e.value), str(e.value)
    assert "\n" not in str(e.value)


def test_the_kwok_version_is_read_from_its_own_module(tmp_path):
    (tmp_path / "go.mod").write_text("module x\n\ngo 1.26.0\n\nrequire (\n\tsigs.k8s.io/kwok v0.8.0 // indirect\n)\n")
    assert kwok_version(tmp_path) == "v0.8.0"
    (tmp_path / "go.mod").write_text("module x\n\nrequire sigs.k8s.io/kwok v0.7.0\n")
    assert kwok_version(tmp_path) == "v0.7.0"
    shipped = ROOT / "go" / "kwok"
    assert kwok_version(shipped).startswith("v0.")


def test_stopping_a_heartbeat_without_an_agent_is_refused_in_one_line():
    from schedgate.cluster.node_kinds import ApiOnlyNodes
    from schedgate.cluster.nodes import Nodes

    nodes = Nodes(core=None, definition=load_definition(ROOT / "clusters" / "inference.yaml"),
                  backend=ApiOnlyNodes(core=None))
    with pytest.raises(NotHere, match=r"node gpu-net-1: stopping a heartbeat needs the local provider's node agent"):
        nodes.stop_heartbeat("gpu-net-1")
    assert not nodes.stopped


LIVE = f"""\
apiVersion: schedgate.io/v1alpha1
kind: Scenario
name: sample
cluster: {ROOT / "clusters" / "live.yaml"}
steps:
  - apply:
      manifest:
        apiVersion: apps/v1
        kind: Deployment
        metadata: {{name: web}}
        spec:
          selector: {{matchLabels: {{app: web}}}}
          template:
            metadata: {{labels: {{app: web}}}}
            spec: {{containers: [{{name: c, image: schedgate.invalid/placeholder:0}}]}}
  - createPods: {{name: p, node: gpu-net-1}}
  - stopHeartbeats: {{nodes: gpu-net-1}}
  - expect: {{nodeTainted: {{nodes: gpu-net-1, key: node.kubernetes.io/unreachable, effect: NoExecute}}}}
  - expect: {{pods: p, evicted: {{reason: DeletionByTaintManager}}}}
  - expect: {{workloadReady: {{kind: Deployment, name: web, pods: 1, nodes: gpu-net}}}}
"""


def test_a_file_of_pods_that_live_parses_its_steps_and_outcomes(tmp_path):
    from schedgate.scenarios.load import load_scenario

    sc = load_scenario(definition(tmp_path, LIVE))
    assert sc.definition.agent is not None
    tainted, evicted, ready = (s.action.outcome for s in sc.steps[3:])
    assert (tainted.nodes, tainted.key, tainted.effect) == (("gpu-net-1",), "node.kubernetes.io/unreachable",
                                                            "NoExecute")
    assert evicted.reason == "DeletionByTaintManager"
    assert (ready.kind, ready.name, ready.count, ready.on) == ("Deployment", "web", 1,
                                                               ("gpu-net-1", "gpu-net-2", "gpu-net-3"))


@pytest.mark.parametrize("old, new, problem", [
    ("kind: Deployment, name: web", "kind: Pod, name: web", "workloadReady.kind: must be one of Deployment"),
    ("kind: Deployment, name: web", "kind: Deployment, name: api", "workloadReady.name: no earlier apply step "
                                                                    "made Deployment/api"),
    ("pods: 1, nodes: gpu-net}", "pods: 0, nodes: gpu-net}", "workloadReady.pods: must be a whole number from 1"),
    ("effect: NoExecute", "effect: NoEvict", "nodeTainted.effect: must be one of NoSchedule, PreferNoSchedule"),
    ("evicted: {reason: DeletionByTaintManager}", "evicted: false", "evicted: must be a mapping"),
    ("stopHeartbeats: {nodes: gpu-net-1}", "stopHeartbeats: {nodes: gpu-net-9}", "stopHeartbeats.nodes: "
                                                                                  "unknown node or pool"),
])
def test_a_bad_live_outcome_is_one_line(tmp_path, old, new, problem):
    from schedgate.scenarios.load import load_scenario

    assert old in LIVE
    path = definition(tmp_path, LIVE.replace(old, new))
    with pytest.raises(DefinitionError) as e:
        load_scenario(path)
    assert problem in str(e.value) and "\n" not in str(e.value), str(e.value)


@pytest.mark.live
def test_without_the_agent_a_preemption_victim_never_terminates_and_the_preemptor_never_binds(tmp_path):
    """The failing variant of live-graceful-preemption: the same file on the same nodes without a node
    agent. Nothing completes the victim's graceful deletion, so it is evicted and then never gone."""
    import os
    import subprocess
    import sys

    root = ROOT
    cluster = tmp_path / "dead.yaml"
    cluster.write_text((root / "clusters" / "live.yaml").read_text().replace(
        "nodeAgent:\n  kind: kwok\n  nodeMonitorGracePeriod: 8\n", "").replace("name: live", "name: dead"))
    scenario = tmp_path / "dead.scenario.yaml"
    scenario.write_text((root / "e2e" / "scenarios" / "live-graceful-preemption.scenario.yaml").read_text()
                        .replace("../../clusters/live.yaml", str(cluster))
                        .replace("../../clusters/profiles/", f"{root}/clusters/profiles/")
                        .replace("running: true}", "scheduledOn: gpu-net}"))
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", str(scenario)], cwd=root,
                       env=dict(os.environ, TMPDIR=str(tmp_path)), capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stdout[-3000:]
    assert "steps[9] expect" in r.stdout and "victim: not deleted after 15s" in r.stdout, r.stdout[-3000:]


def test_each_provider_runs_the_agents_it_can_and_refuses_the_others_in_one_line():
    """kwok: local and kind (kind's kwok nodes); kubelet: kind's workers only; an existing cluster's nodes are
    its own: no agent."""
    from schedgate.providers import provider

    live = load_definition(ROOT / "clusters" / "live.yaml")
    why = provider("existing").cannot_run(live)
    assert why and why.startswith(f"{live.source}: nodeAgent (kwok) is a cluster schedgate makes; the existing "
                                  "provider's nodes are its own"), why
    assert provider("local").cannot_run(live) is None and provider("kind").cannot_run(live) is None
    kubelets = replace(live, agent=NodeAgent(kind="kubelet"))
    for name in ("local", "existing"):
        why = provider(name).cannot_run(kubelets)
        assert why == (f"{live.source}: nodeAgent kubelet asks for real kubelets, kind's workers; the {name} "
                       "provider's nodes are not (run it with --provider kind)"), why
    assert provider("kind").cannot_run(kubelets) is None


def test_ready_is_read_from_the_agents_stamp_in_nanoseconds_else_the_whole_second():
    from schedgate.report.timing import ready_time

    whole = "2026-12-04T18:50:01Z"
    stamped = {"type": "Ready", "status": "True", "lastTransitionTime": whole,
               "message": "schedgate node agent: ready at 2026-12-04T18:50:01.123456789Z"}
    assert ready_time(stamped) == pytest.approx(1796410201.123456)
    assert ready_time({**stamped, "message": ""}) == 1796410201.0  # a kubelet's: no message
    assert ready_time({**stamped, "message": "schedgate node agent: ready at soon"}) == 1796410201.0
    assert ready_time({**stamped, "status": "False"}) is None


@pytest.mark.live
def test_a_deployments_pods_report_scheduled_to_ready_below_a_second_from_the_agents_stamp(tmp_path):
    """On the local provider the node agent's Ready condition carries its moment in nanoseconds, and the
    timings read it: scheduled->Ready of each pod is that stamp minus the Scheduled event's µs time."""
    import csv
    import os
    import subprocess
    import sys

    import yaml

    from schedgate.report.timing import AGENT_READY, parse_time

    root = ROOT
    arts = tmp_path / "arts"
    r = subprocess.run([sys.executable, "-m", "schedgate", "repro", "e2e/scenarios/live-deployment-ready.scenario.yaml",
                        "--artifacts", str(arts)], cwd=root, env=dict(os.environ, TMPDIR=str(tmp_path)),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    [folder] = arts.iterdir()
    pods = [p for p in yaml.safe_load_all((folder / "pods.yaml").read_text()) if p]
    pods = [p for doc in pods for p in (doc.get("items") if isinstance(doc, dict) and "items" in doc else [doc])]
    ready = {p["metadata"]["name"]: next(c for c in p["status"]["conditions"] if c["type"] == "Ready")
             for p in pods if p["metadata"]["name"].startswith("infer-")}
    assert len(ready) == 3, sorted(ready)
    for name, cond in ready.items():
        stamp = AGENT_READY.match(cond.get("message") or "")
        assert stamp, f"{name}: Ready without the agent's stamp: {cond}"
        at, whole = parse_time(stamp.group(1)), parse_time(cond["lastTransitionTime"])
        assert at is not None and whole is not None and whole <= at < whole + 1, cond
    rows = {row["pod"]: row for row in csv.DictReader((folder / "timings.csv").open())}
    for name in ready:
        value = rows[name]["scheduled->ready (s)"]
        assert value != "-" and 0.0 <= float(value) < 1.0, rows[name]


"""The kind provider's pure parts, and what it relies on in pytest-kubernetes (no Docker needed)."""

from __future__ import annotations

import io
import os
import re
import tarfile
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from schedgate.providers.base import resource_scale
from schedgate.providers.kind.config import (
    AUDIT_LOG_PATH,
    AUDIT_POLICY,
    audit_patches,
    cluster_name,
    control_plane_patches,
    definition_digest,
    kind_config,
    kind_error,
    kubelet_may_set,
    too_large,
)
from schedgate.providers.kind.dra import driver_objects
from schedgate.providers.kind.kwok import KWOK_CONTROLLERS, controller_patches, grace_patches
from schedgate.spec.agent import NodeAgent
from schedgate.spec.cluster import load_definition, parse_definition
from schedgate.spec.quantity import parse_quantity, scaled

ROOT = Path(__file__).resolve().parents[3]
INFERENCE = load_definition(ROOT / "clusters" / "inference.yaml")
KUBELETS = replace(INFERENCE, agent=NodeAgent(kind="kubelet"))


def test_kwok_nodes_are_no_containers_the_control_plane_is_the_one():
    """Without nodeAgent kubelet the definition's nodes are kwok nodes, made in the running cluster: kind
    is told of its control plane only, and the node lifecycle's grace goes to kubeadm's controller manager."""
    cfg = kind_config(INFERENCE, "n", "i", cgroup_v1=False)
    assert [n["role"] for n in cfg["nodes"]] == ["control-plane"]
    live = load_definition(ROOT / "clusters" / "live.yaml")
    cfg = kind_config(live, "n", "i", cgroup_v1=False, kubeadm_json_patches=grace_patches(live.agent))
    [patch] = cfg["kubeadmConfigPatchesJSON6902"]
    assert (patch["group"], patch["version"], patch["kind"]) == ("kubeadm.k8s.io", "v1beta4", "ClusterConfiguration")
    assert yaml.safe_load(patch["patch"]) == [
        {"op": "add", "path": "/controllerManager/extraArgs/-", "value": {"name": f, "value": v}}
        for f, v in (("node-monitor-grace-period", "8s"), ("node-monitor-period", "2s"))]
    # Without a node agent (the local provider runs no node lifecycle then): a grace no test outlives.
    [quiet] = grace_patches(None)
    assert yaml.safe_load(quiet["patch"]) == [
        {"op": "add", "path": "/controllerManager/extraArgs/-", "value": {"name": f, "value": v}}
        for f, v in (("node-monitor-grace-period", "3600s"), ("node-monitor-period", "5s"))]


def test_a_cluster_of_kwok_nodes_runs_no_node_ipam_and_no_ttl_controller_one_of_kubelets_runs_kubeadms_set():
    """On kwok nodes node IPAM ran out of pod CIDRs at the 257th node (an event per node after that, and retries)
    and the TTL controller annotated every node again at each step of the cluster's size: writes the local
    provider, which runs neither, does not make."""
    [patch] = controller_patches(INFERENCE)
    assert yaml.safe_load(patch["patch"]) == [{"op": "add", "path": "/controllerManager/extraArgs/-",
                                              "value": {"name": "controllers", "value": KWOK_CONTROLLERS}}]
    assert KWOK_CONTROLLERS.split(",") == ["*", "bootstrapsigner", "tokencleaner", "-node-ipam-controller",
                                           "-ttl-controller"]
    assert controller_patches(KUBELETS) == []


def test_kinds_control_plane_registers_no_node_and_its_scheduler_answers_on_the_nodes_address():
    """kubeadm init with the control plane's kubelet standalone (no kubeconfig: its static pods run, no Node is
    registered) and mark-control-plane skipped after kind's own preflight skip; kubeadm's scheduler on every
    address, health and metrics open. kind lists the scheduler's extra arguments only with feature gates: then
    they are added to. etcd runs as the local provider's does, without fsync (kind's template has no etcd)."""
    init, cluster = control_plane_patches(INFERENCE)
    assert init["kind"] == "InitConfiguration" and cluster["kind"] == "ClusterConfiguration"
    assert yaml.safe_load(init["patch"]) == [
        *({"op": "add", "path": "/nodeRegistration/kubeletExtraArgs/-", "value": {"name": k, "value": v}}
          for k, v in (("kubeconfig", ""), ("bootstrap-kubeconfig", ""), ("authentication-token-webhook", "false"),
                       ("authorization-mode", "AlwaysAllow"))),
        {"op": "add", "path": "/skipPhases/-", "value": "mark-control-plane"}]
    args = [{"name": "bind-address", "value": "0.0.0.0"},
            {"name": "authorization-always-allow-paths", "value": "/healthz,/readyz,/livez,/metrics"}]
    etcd = {"op": "add", "path": "/etcd", "value": {"local": {"extraArgs": [
        {"name": "unsafe-no-fsync", "value": "true"}]}}}
    workers = {"op": "add", "path": "/apiServer/extraArgs/-",
               "value": {"name": "delete-collection-workers", "value": "4"}}
    assert yaml.safe_load(cluster["patch"]) == [{"op": "add", "path": "/scheduler/extraArgs", "value": args}, etcd,
                                                workers]
    gated = parse_definition({**yaml.safe_load((ROOT / "clusters" / "inference.yaml").read_text()),
                              "featureGates": {"GenericWorkload": True}})
    assert yaml.safe_load(control_plane_patches(gated)[1]["patch"]) == [
        *({"op": "add", "path": "/scheduler/extraArgs/-", "value": a} for a in args), etcd, workers]


def test_kinds_api_server_writes_the_audit_log_by_the_policy_mounted_from_this_machine(tmp_path):
    """The policy file on this machine is mounted read-only into the control-plane container; kubeadm's API server
    gets the audit flags (added to kind's own extraArgs, which always hold runtime-config) and the volumes (kind
    sets none) for the policy and the log's folder, which the kind backend reads with docker exec."""
    policy = tmp_path / "audit-policy.yaml"
    cfg = kind_config(INFERENCE, "n", "i", cgroup_v1=False, audit_policy=policy)
    assert cfg["nodes"][0]["extraMounts"] == [{"hostPath": str(policy), "containerPath": AUDIT_POLICY,
                                               "readOnly": True}]
    assert "extraMounts" not in kind_config(INFERENCE, "n", "i", cgroup_v1=False)["nodes"][0]
    [patch] = audit_patches()
    assert patch["kind"] == "ClusterConfiguration"
    ops = yaml.safe_load(patch["patch"])
    flags = {o["value"]["name"]: o["value"]["value"] for o in ops if o["path"] == "/apiServer/extraArgs/-"}
    assert flags["audit-policy-file"] == AUDIT_POLICY and flags["audit-log-path"] == AUDIT_LOG_PATH
    assert flags["audit-log-mode"] == "blocking" and flags["audit-log-format"] == "json"
    [volumes] = [o["value"] for o in ops if o["path"] == "/apiServer/extraVolumes"]
    assert {v["mountPath"] for v in volumes} == {AUDIT_POLICY, AUDIT_LOG_PATH.rsplit("/", 1)[0]}


def test_too_many_kubelet_workers_is_one_line_naming_the_field_kwok_nodes_are_not_counted(monkeypatch):
    monkeypatch.setenv("SCHEDGATE_KIND_MAX_NODES", "4")
    assert too_large(INFERENCE) is None
    why = too_large(KUBELETS)
    assert why and why.startswith(f"{INFERENCE.source}: nodeAgent: kubelet: 9 nodes are a kind cluster of 10 node "
                                  "containers, more than this machine runs (at most 4: SCHEDGATE_KIND_MAX_NODES=4)")


def test_one_worker_per_defined_node_registered_under_its_name_with_labels_and_taints():
    cfg = kind_config(KUBELETS, "schedgate-inference", "schedgate/kind-node:x", cgroup_v1=True)
    assert cfg["name"] == "schedgate-inference"
    cp, *workers = cfg["nodes"]
    assert cp["role"] == "control-plane"
    assert len(workers) == len(KUBELETS.nodes()) == 9
    by_name = {}
    for w in workers:
        [patch] = w["kubeadmConfigPatches"]
        join = yaml.safe_load(patch)
        assert join["kind"] == "JoinConfiguration"
        by_name[join["nodeRegistration"]["name"]] = (w, join["nodeRegistration"])
    train, reg = by_name["train-1"]
    assert train["labels"]["infra.example.com/high-speed-network"] == "true"
    assert reg["taints"] == [{"key": "schedgate.io/dedicated", "effect": "NoSchedule", "value": "training"}]
    plain, reg = by_name["gpu-plain-1"]
    assert "infra.example.com/high-speed-network" not in plain["labels"] and "taints" not in reg
    assert all("kubernetes.io/hostname" not in w["labels"] for w in workers)
    # cgroup v1 hosts: Kubernetes 1.35+ refuses v1 unless told otherwise.
    assert yaml.safe_load(cfg["kubeadmConfigPatches"][0]) == {"kind": "KubeletConfiguration", "failCgroupV1": False}
    assert "kubeadmConfigPatches" not in kind_config(KUBELETS, "n", "i", cgroup_v1=False)


@pytest.mark.parametrize("key, allowed", [
    ("infra.example.com/high-speed-network", True),
    ("topology.kubernetes.io/zone", True),
    ("node.kubernetes.io/instance-type", True),
    ("kubelet.kubernetes.io/anything", True),
    ("team.node.kubernetes.io/x", True),
    ("node-role.kubernetes.io/gpu", False),
    ("kubernetes.io/role", False),
    ("example.k8s.io/x", False),
])
def test_labels_a_kubelet_may_set_on_itself_follow_the_kubelets_own_rule(key, allowed):
    assert kubelet_may_set(key) is allowed


def test_labels_a_kubelet_would_refuse_stay_out_of_the_kind_config_and_are_set_through_the_api():
    doc = yaml.safe_load((ROOT / "clusters" / "inference.yaml").read_text())
    doc["pools"][0]["labels"]["node-role.kubernetes.io/gpu"] = ""
    cfg = kind_config(replace(parse_definition(doc), agent=NodeAgent(kind="kubelet")), "n", "i", cgroup_v1=False)
    labels = [w["labels"] for w in cfg["nodes"][1:]]
    # A kubelet given node-role.kubernetes.io/... in --node-labels refuses to start.
    assert all("node-role.kubernetes.io/gpu" not in lab for lab in labels)
    assert sum("infra.example.com/high-speed-network" in lab for lab in labels) == 5


def test_the_reuse_digest_changes_with_the_definition_and_the_image():
    doc = yaml.safe_load((ROOT / "clusters" / "inference.yaml").read_text())
    doc["pools"][0]["labels"]["extra"] = "x"
    other = parse_definition(doc)
    a = definition_digest(INFERENCE, "sha256:1")
    assert a == definition_digest(INFERENCE, "sha256:1")
    assert a != definition_digest(INFERENCE, "sha256:2")
    assert a != definition_digest(other, "sha256:1")
    assert cluster_name(INFERENCE) == "schedgate-inference"


def test_requests_scale_by_real_over_defined_size():
    real = {"cpu": 2.0, "memory": 24 * 2.0**30}
    scale = resource_scale(INFERENCE, real)
    assert scale["cpu"] == pytest.approx(2 / 64)
    assert scale["memory"] == pytest.approx(24 / 512)
    # A 32-core, 256Gi training pod takes half a real node, as it takes half a defined one.
    assert parse_quantity(scaled("32", scale["cpu"], "cpu")) == pytest.approx(1.0)
    assert parse_quantity(scaled("256Gi", scale["memory"], "memory")) == pytest.approx(12 * 2.0**30, rel=1e-6)
    assert scaled("0", scale["cpu"], "cpu") == "1m"
    # Nodes as large as defined: nothing is scaled.
    assert resource_scale(INFERENCE, {"cpu": 64.0, "memory": 512 * 2.0**30}) == {}


@pytest.mark.parametrize("text, value", [("500m", 0.5), ("64", 64), ("512Gi", 512 * 2**30), ("1k", 1000),
                                         ("0.25", 0.25)])
def test_quantities(text, value):
    assert parse_quantity(text) == pytest.approx(value)


def test_pytest_kubernetes_create_with_a_config_passes_config_and_kubeconfig_but_no_name_or_image(tmp_path):
    """Pins what schedgate relies on in pytest-kubernetes 0.9, through its public create and delete: the
    cluster name comes from our config (which therefore names the cluster and every node's image), the
    kubeconfig goes where we say, and kind and kubectl are the host's (its PATH, not os.environ's)."""
    from pytest_kubernetes.options import ClusterOptions

    from schedgate.providers.kind.host import Host, KindManager

    log, made = tmp_path / "kind.args", tmp_path / "made"
    for name, body in {"kind": f'echo "$@" >> {log}\n[ "$1" = create ] && touch {made}\nexit 0\n',
                       # the readiness kubectl asks: /readyz, then the default ServiceAccount, once kind made it
                       "kubectl": f'[ -e {made} ] || exit 1\ncase "$*" in *readyz*) echo ok;; '
                                  '*) echo \'{"kind": "ServiceAccount"}\';; esac\n'}.items():
        (tmp_path / name).write_text(f"#!/bin/sh\n{body}")
        (tmp_path / name).chmod(0o755)
    host = Host(env={"PATH": f"{tmp_path}:/usr/bin:/bin"})
    cfg = tmp_path / "cluster.yaml"
    cfg.write_text(yaml.safe_dump({"kind": "Cluster", "name": "schedgate-x", "nodes": [{"role": "control-plane"}]}))
    mgr = KindManager(host, cfg, tmp_path / "kc")
    assert mgr.cluster_name == "schedgate-x"
    (tmp_path / "kc").write_text("kubeconfig")  # kind writes it; the readiness check reads it
    mgr.create(ClusterOptions(kubeconfig_path=tmp_path / "kc", provider_config=cfg), timeout=5)
    args = log.read_text().split()
    assert args[:2] == ["create", "cluster"]
    assert args[args.index("--config") + 1] == str(cfg)
    assert args[args.index("--kubeconfig") + 1] == str(tmp_path / "kc")
    assert "--name" not in args and "--image" not in args
    assert "PATH" not in os.environ or str(tmp_path) not in os.environ["PATH"]  # this process's is untouched
    # Its delete passes --name but no --kubeconfig: schedgate deletes clusters itself (Host.delete_cluster).
    log.unlink()
    mgr.delete()
    assert log.read_text().split() == ["delete", "cluster", "--name", "schedgate-x"]


def test_kinds_error_is_its_error_line_with_the_failed_commands_own_output():
    err = """Creating cluster "x" ...
 \u2717 Preparing nodes
ERROR: failed to create cluster: command "docker run --name x-control-plane --hostname x-control-plane \
--label a=b img" failed with error: exit status 125

Command Output: docker: Error response from daemon: No command specified

Run 'docker run --help' for more information"""
    assert kind_error(err) == ('ERROR: failed to create cluster: command "docker run --name x-control-plane --host..." '
                               "failed with error: exit status 125; Command Output: docker: Error response from "
                               "daemon: No command specified")
    assert kind_error("just one line\n") == "just one line"


def test_the_kind_lifecycle_runs_argument_lists_with_the_hosts_own_path_and_leaves_the_environment_alone(tmp_path):
    """schedgate's KindManager keeps pytest-kubernetes' create (options, kubeconfig, create-then-ready) but runs
    every command as an argument list with the host's PATH: a config path with a space and a quote works (a
    shell string breaks on it), and this process's os.environ is never changed."""
    from schedgate.providers.kind.host import Host, KindManager

    bin_dir = tmp_path / "node tools"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    (bin_dir / "kind").write_text(
        f"#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done >> '{calls}'\necho PATH=$PATH >> '{calls}'\n"
        "while [ $# -gt 0 ]; do [ \"$1\" = --kubeconfig ] && echo 'apiVersion: v1' > \"$2\"; shift; done\n")
    (bin_dir / "kubectl").write_text("#!/bin/sh\ncase \"$*\" in *readyz*) echo ok;; "
                                     "*) echo '{\"kind\": \"ServiceAccount\"}';; esac\n")
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    before = dict(os.environ)
    host = Host(env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"})
    cfg = tmp_path / "my cluster's config.yaml"
    cfg.write_text(yaml.safe_dump({"kind": "Cluster", "name": "schedgate-x", "nodes": [{"role": "control-plane"}]}))
    kubeconfig = tmp_path / "kc"
    mgr = KindManager(host, cfg, kubeconfig)
    assert mgr.cluster_name == "schedgate-x"
    host.create_cluster(cfg, kubeconfig)
    args = calls.read_text().splitlines()
    assert args[:2] == ["create", "cluster"]
    assert args[args.index("--config") + 1] == str(cfg)
    assert args[args.index("--kubeconfig") + 1] == str(kubeconfig)
    assert "--name" not in args and "--image" not in args
    assert any(a.startswith(f"PATH={bin_dir}:") for a in args)
    assert dict(os.environ) == before


def test_the_dra_driver_runs_the_given_image_on_every_kubelet_but_the_control_plane_and_sync_node():
    objs = {o["kind"]: o for o in driver_objects("schedgate/schedgate-dra-plugin:abc")}
    assert set(objs) == {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "DaemonSet"}
    pod = objs["DaemonSet"]["spec"]["template"]["spec"]
    [c] = pod["containers"]
    assert (c["image"], c["imagePullPolicy"]) == ("schedgate/schedgate-dra-plugin:abc", "Never")  # nothing pulled
    assert {m["mountPath"] for m in c["volumeMounts"]} == {
        "/var/lib/kubelet/plugins_registry", "/var/lib/kubelet/plugins", "/var/run/cdi"}
    assert pod["tolerations"] == [{"operator": "Exists"}]
    [term] = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert {(e["key"], e["operator"]) for e in term["matchExpressions"]} == {
        ("node-role.kubernetes.io/control-plane", "DoesNotExist"), ("schedgate.io/sync", "DoesNotExist")}
    rules = {(r["apiGroups"][0], r["resources"][0]): set(r["verbs"]) for r in objs["ClusterRole"]["rules"]}
    assert {"create", "update", "delete"} <= rules[("resource.k8s.io", "resourceslices")]
    assert rules[("resource.k8s.io", "resourceclaims")] == {"get", "list", "watch"}  # reads claims only
    assert rules[("", "configmaps")] == {"get", "list", "watch"}


def test_the_scheduler_under_test_is_a_static_pod_of_files_written_into_the_control_plane(tmp_path):
    """No API object runs it (the control plane registers no Node, so the kubelet watches no pods): a
    manifest in the kubelet's static pod folder, its configuration and kubeconfig in a folder of its own,
    each written whole (a hidden file moved into place), on the node's network at its own port."""
    from schedgate.providers.kind.controlplane import ControlPlane
    from schedgate.providers.kind.scheduler import PodScheduler
    from schedgate.spec.schedconfig import default_scheduler_config

    written: list[tuple[str, bytes | None]] = []

    class Recorder:
        def run(self, *argv, stdin=None, **kw):
            written.append((" ".join(argv), stdin))

    config = default_scheduler_config()
    effective = config.effective(kubeconfig="/etc/schedgate/kubeconfig")
    s = PodScheduler(name="under-test", config=config, effective=effective,
                     config_path=tmp_path / "c.yaml", image="schedgate/kube-scheduler:x",
                     node=ControlPlane(Recorder(), "k-control-plane", "172.18.0.2"), run_dir=tmp_path, port=10300,
                     kubeconfig="apiVersion: v1\nkind: Config\n")
    s.launch()
    [(cmd, body)] = written  # one docker exec: a tar of hidden files, moved into place manifest last
    with tarfile.open(fileobj=io.BytesIO(body)) as tar:
        files = {m.name: tar.extractfile(m).read().decode() for m in tar.getmembers()}
    assert list(files) == ["etc/schedgate/under-test/.config.yaml", "etc/schedgate/under-test/.kubeconfig",
                           "etc/kubernetes/manifests/.schedgate-scheduler-under-test.yaml"]
    moved = re.findall(r'mv "[^"]*" "([^"]*)"', cmd)
    assert moved == ["/etc/schedgate/under-test/config.yaml", "/etc/schedgate/under-test/kubeconfig",
                     "/etc/kubernetes/manifests/schedgate-scheduler-under-test.yaml"]
    assert files["etc/schedgate/under-test/.kubeconfig"] == "apiVersion: v1\nkind: Config\n"
    manifest = yaml.safe_load(files["etc/kubernetes/manifests/.schedgate-scheduler-under-test.yaml"])
    spec = manifest["spec"]
    assert spec["hostNetwork"] is True and "serviceAccountName" not in spec and "nodeName" not in spec
    [c] = spec["containers"]
    assert "--secure-port=10300" in c["command"] and "--config=/etc/schedgate/config.yaml" in c["command"]
    first = manifest["metadata"]["name"]
    # It writes its log to a file of this launch, as a local scheduler process does, through schedgate-logto
    # mounted from the node: any image's kube-scheduler does, and the container runtime's log pipe carries nothing.
    log = f"/var/log/schedgate-schedulers/{first}.log"
    assert c["command"][:3] == ["/usr/local/bin/schedgate-logto", log, "/usr/local/bin/kube-scheduler"]
    assert s.log_file == log
    assert {v["name"]: v["hostPath"]["path"] for v in spec["volumes"]} == {
        "config": "/etc/schedgate/under-test", "ca": "/etc/kubernetes/pki/ca.crt",
        "logto": "/usr/local/bin/schedgate-logto", "logs": "/var/log/schedgate-schedulers"}
    assert {m["name"]: m["mountPath"] for m in c["volumeMounts"]}["logto"] == "/usr/local/bin/schedgate-logto"
    assert first == f"schedgate-scheduler-under-test-{s.launch_number}"
    assert s.pod == f"{first}-k-control-plane"  # the kubelet adds its node's name
    # Each launch is a static pod of another name, also a new scheduler of the same lease: the kubelet starts one
    # of a name only once the last has finished terminating (seconds after its containers have stopped).
    s.launch()
    again = replace(s, launch_number=0)
    again.launch()
    names = []
    for _, body in written:
        with tarfile.open(fileobj=io.BytesIO(body)) as tar:
            member = tar.extractfile("etc/kubernetes/manifests/.schedgate-scheduler-under-test.yaml")
            names.append(yaml.safe_load(member.read())["metadata"]["name"])
    assert len(names) == len(set(names)) == 3, names
    assert all(n.startswith("schedgate-scheduler-under-test-") for n in names), names
    assert "--vmodule=schedule_one=10," in " ".join(c["command"])  # 0 nodes: every score line
    # A scheduler started beside 1,000 nodes logs no score lines, as on local: they cut its throughput there.
    s1000 = replace(s, nodes=1000, launch_number=0)
    s1000.launch()
    with tarfile.open(fileobj=io.BytesIO(written[-1][1])) as tar:
        member = tar.extractfile("etc/kubernetes/manifests/.schedgate-scheduler-under-test.yaml")
        command = " ".join(yaml.safe_load(member.read())["spec"]["containers"][0]["command"])
    assert "schedule_one=3," in command and "schedule_one=10" not in command, command

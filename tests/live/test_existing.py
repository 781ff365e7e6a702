"""The existing provider, proven against a cluster reached only through its kubeconfig: a local cluster
started here, whose own scheduler under test is stopped so the run brings its own.

A run passes its scenarios and leaves the cluster exactly as it found it (namespaces, RBAC, service
accounts, leases, nodes' labels, annotations, taints and resources) — after success, after Ctrl-C
before it exits, and after a SIGKILL once the next run's reaper has run. A kubeconfig that does not
answer, or lacks a right, is refused in one line naming it (and the verb and resource), exit 2,
nothing left behind; so is a definition whose node is not as the cluster has it and closed to edits.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s
from support import ROOT, our_processes, run_dirs, wait_for_exit

from schedgate.kube.journal import JOURNAL, node_state
from schedgate.kube.poll import poll_until
from schedgate.providers import start_cluster
from schedgate.providers.existing import EDITABLE_LABEL
from schedgate.pytest_plugin.options import make_request
from schedgate.spec.schedconfig import load_scheduler_config
from schedgate.spec.shipped import shipped

pytestmark = pytest.mark.slow

# Scenarios that run unchanged in an existing cluster: packing, hard constraints, cache changes, a plugin's
# rollback, policy isolation (scenario files), node edits and GPU changes (Python).
RUN = ["e2e/test_capacity.py", "e2e/test_rollback_causes.py", "e2e/scenarios/hard-constraint.scenario.yaml",
       "e2e/scenarios/cache-changes.scenario.yaml", "e2e/scenarios/rollback-no-leak.scenario.yaml",
       "e2e/scenarios/policy-isolation.scenario.yaml"]


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A local cluster as somebody else's: nodes opened to edits, its scheduler under test stopped."""
    req = make_request(shipped("clusters/inference.yaml"), shipped("clusters/profiles/gpu-packing-scheduler.yaml"))
    started = start_cluster(req)
    try:
        c = started.cluster
        c.stop_scheduler(c.scheduler("gpu-packing-scheduler"))
        for n in c.node_names:
            c.core.patch_node(n, {"metadata": {"labels": {EDITABLE_LABEL: "true"}}})
        yield c
    finally:
        started.stop()


def snapshot(api: k8s.ApiClient) -> dict[str, Any]:
    """Everything a run could leave behind, by name; nodes by what schedgate may change of them."""
    core: Any = k8s.CoreV1Api(api)
    rbac: Any = k8s.RbacAuthorizationV1Api(api)
    coord: Any = k8s.CoordinationV1Api(api)

    def names(items: Any) -> list[str]:
        return sorted(f"{i.metadata.namespace or ''}/{i.metadata.name}" for i in items.items)

    return {
        "namespaces": names(core.list_namespace()),
        "nodes": {n["metadata"]["name"]: node_state(n) for n in
                  api.sanitize_for_serialization(core.list_node())["items"]},
        # Not kube-system's: kube-controller-manager makes a ServiceAccount there for each controller as it
        # starts it, and on a fresh cluster the last (daemon-set-controller, seen 2026-12-05) may come after the
        # snapshot before the run. schedgate makes none there (its RBAC there is roles, bindings and leases).
        "serviceaccounts": [n for n in names(core.list_service_account_for_all_namespaces())
                            if not n.startswith("kube-system/")],
        "configmaps": names(core.list_config_map_for_all_namespaces()),
        "clusterrolebindings": names(rbac.list_cluster_role_binding()),
        "clusterroles": names(rbac.list_cluster_role()),
        "roles": names(rbac.list_role_for_all_namespaces()),
        "rolebindings": names(rbac.list_role_binding_for_all_namespaces()),
        "leases": {f"kube-system/{x.metadata.name}": x.spec.holder_identity or ""  # and who holds each
                   for x in coord.list_namespaced_lease("kube-system").items},
        "pods": names(core.list_pod_for_all_namespaces()),
    }


def _env(tmp: Path) -> dict[str, str]:
    return dict(os.environ, TMPDIR=str(tmp))


def test_a_run_in_an_existing_cluster_passes_its_scenarios_and_leaves_the_cluster_as_it_was(target, tmp_path):
    before = snapshot(target.api)
    out = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rs", *RUN,
                          "--provider", "existing", "--kubeconfig", str(target.kubeconfig), "--allow-fake-gpus"],
                         cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True, timeout=900)
    tail = out.stdout[-3000:] + out.stderr[-2000:]
    assert out.returncode == 0, tail
    assert " passed" in out.stdout and " failed" not in out.stdout and " error" not in out.stdout, tail
    # The one skip: deleting a node (schedgate does not delete nodes of a cluster it did not make).
    assert "1 skipped" in out.stdout and "does not delete nodes" in out.stdout, tail
    assert snapshot(target.api) == before
    assert run_dirs(tmp_path) == [] and our_processes(tmp_path) == []


def test_a_black_box_scheduler_runs_beside_an_existing_cluster_and_leaves_it_as_it_was(target, tmp_path):
    before = snapshot(target.api)
    out = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rs",
                          "e2e/scenarios/cache-changes.scenario.yaml", "e2e/scenarios/hard-constraint.scenario.yaml",
                          "--provider", "existing", "--kubeconfig", str(target.kubeconfig),
                          "--allow-fake-gpus", "--scheduler-config", "clusters/profiles/pool-scheduler.yaml"],
                         cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True, timeout=600)
    tail = out.stdout[-3000:] + out.stderr[-2000:]
    assert out.returncode == 0, tail
    # It stands in for gpu-packing-scheduler: cache-changes runs; hard-constraint reads kube-scheduler's metrics.
    assert "1 passed, 1 skipped" in out.stdout and "needs metrics" in out.stdout, tail
    assert snapshot(target.api) == before  # its ServiceAccount, ClusterRole and bindings are gone again
    assert run_dirs(tmp_path) == [] and our_processes(tmp_path) == []


def _run_until_first_node_edit(target: Any, tmp: Path) -> subprocess.Popen[bytes]:
    """A run of one scenario, returned once it has made its namespace and journaled a node edit."""
    child = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                              "e2e/scenarios/cache-changes.scenario.yaml", "--provider", "existing",
                              "--kubeconfig", str(target.kubeconfig)], cwd=ROOT, env=_env(tmp),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    core: Any = k8s.CoreV1Api(target.api)

    def ended() -> None:
        if child.poll() is not None:
            raise AssertionError(f"the run ended (exit {child.returncode}) before it could be stopped")

    def edited() -> bool:
        journals = [d / JOURNAL for d in run_dirs(tmp) if (d / JOURNAL).exists()]
        ns = [n.metadata.name for n in core.list_namespace().items if n.metadata.name.startswith("waiting-pods-follow")]
        return bool(journals and ns and '"nodes": {}' not in journals[0].read_text())

    try:
        poll_until(edited, "the run's namespace and its first journaled node edit", 180, interval=0.2, alive=ended)
    except BaseException:
        os.killpg(child.pid, signal.SIGKILL)
        raise
    return child


def test_a_run_stopped_by_ctrl_c_puts_the_cluster_back_before_it_exits(target, tmp_path):
    before = snapshot(target.api)
    child = _run_until_first_node_edit(target, tmp_path)
    child.send_signal(signal.SIGINT)
    try:
        child.wait(timeout=120)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
    assert snapshot(target.api) == before
    assert run_dirs(tmp_path) == [] and our_processes(tmp_path) == []


def test_a_killed_run_is_put_back_by_the_next_runs_reaper(target, tmp_path):
    before = snapshot(target.api)
    child = _run_until_first_node_edit(target, tmp_path)
    os.killpg(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    wait_for_exit([int(p.split(":")[0]) for p in our_processes(tmp_path)], "the killed run's schedulers", 10)
    edited = snapshot(target.api)
    assert edited != before, "the kill came too late to test the reaper"
    # Without --kubeconfig the reaper writes to no cluster: the folder is kept and named, with the command.
    blind = subprocess.run([sys.executable, "-m", "schedgate", "reap"], env=_env(tmp_path), capture_output=True,
                           text=True, timeout=300)
    assert blind.returncode == 0, blind.stderr
    assert f"schedgate reap --kubeconfig {target.kubeconfig}" in blind.stderr, blind.stderr
    assert snapshot(target.api)["namespaces"] == edited["namespaces"]
    [kept] = run_dirs(tmp_path)
    assert (kept / JOURNAL).exists()
    reap = subprocess.run([sys.executable, "-m", "schedgate", "reap", "--kubeconfig", str(target.kubeconfig)],
                          env=_env(tmp_path), capture_output=True, text=True, timeout=300)
    assert reap.returncode == 0, reap.stderr
    assert f"in the cluster of {target.kubeconfig}: Namespace schedgate-run" in reap.stdout, reap.stdout
    assert snapshot(target.api) == before
    assert run_dirs(tmp_path) == []


def _kubeconfig(tmp: Path, server: str, token: str = "x", ca: str | None = None) -> Path:
    cluster: dict[str, Any] = {"server": server}
    if ca:
        cluster["certificate-authority"] = ca
    else:
        cluster["insecure-skip-tls-verify"] = True
    p = tmp / "kubeconfig"
    p.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": cluster}], "users": [{"name": "u", "user": {"token": token}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    return p


def _up(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "schedgate", "up", "--provider", "existing", *args],
                          env=_env(tmp), capture_output=True, text=True, timeout=120)


def _refused(out: subprocess.CompletedProcess[str], tmp: Path, *words: str, progress: bool = False) -> str:
    """Exit 2 and one line saying why (after ``up``'s progress lines, with ``progress``); nothing left here."""
    lines = [x for x in out.stderr.splitlines() if x.strip()]
    assert out.returncode == 2, out.stderr
    if progress:
        lines = lines[-1:]
    assert len(lines) == 1, out.stderr
    for w in words:
        assert w in lines[0], lines[0]
    assert run_dirs(tmp) == [] and our_processes(tmp) == []
    return lines[0]


@pytest.mark.parametrize("case", ["no-flag", "no-file", "not-yaml", "no-context", "refused"])
def test_a_kubeconfig_that_cannot_be_used_is_refused_in_one_line(tmp_path, case):
    if case == "no-flag":
        _refused(_up(tmp_path), tmp_path, "--provider existing needs --kubeconfig")
        return
    if case == "no-file":
        _refused(_up(tmp_path, "--kubeconfig", str(tmp_path / "nope")), tmp_path, "nope: no such kubeconfig file")
        return
    if case == "not-yaml":
        bad = tmp_path / "bad"
        bad.write_text("a: [\n")
        _refused(_up(tmp_path, "--kubeconfig", str(bad)), tmp_path, f"--kubeconfig {bad}: not YAML")
        return
    kc = _kubeconfig(tmp_path, "https://127.0.0.1:1")
    if case == "no-context":
        _refused(_up(tmp_path, "--kubeconfig", str(kc), "--context", "staging"), tmp_path,
                 "--context staging: no context 'staging'", "(contexts: c)")
        return
    _refused(_up(tmp_path, "--kubeconfig", str(kc)), tmp_path, "https://127.0.0.1:1 does not answer")


def test_a_kubeconfig_without_the_rights_a_run_needs_is_refused_naming_the_verb_and_resource(target, tmp_path):
    core: Any = k8s.CoreV1Api(target.api)
    rbac: Any = k8s.RbacAuthorizationV1Api(target.api)
    core.create_namespaced_service_account("default", {"metadata": {"name": "viewer"}})
    binding = {"metadata": {"name": "schedgate-test-viewer"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
               "subjects": [{"kind": "ServiceAccount", "name": "viewer", "namespace": "default"}]}
    rbac.create_cluster_role_binding(binding)
    try:
        token = core.create_namespaced_service_account_token("viewer", "default", {"spec": {}}).status.token
        conf = target.api.configuration
        kc = _kubeconfig(tmp_path, conf.host, token, conf.ssl_ca_cert)
        line = _refused(_up(tmp_path, "--kubeconfig", str(kc)), tmp_path,
                        "user system:serviceaccount:default:viewer may not create namespaces",
                        "(needed for a namespace per test)", "also missing: delete namespaces")
        assert "create clusterrolebindings.rbac.authorization.k8s.io" in line
    finally:
        rbac.delete_cluster_role_binding("schedgate-test-viewer")
        core.delete_namespaced_service_account("viewer", "default")


def test_a_node_not_as_defined_and_not_open_to_edits_is_refused_at_the_start_and_nothing_is_left(target, tmp_path):
    doc = yaml.safe_load(shipped("clusters/inference.yaml").read_text())
    cpu = next(p for p in doc["pools"] if p["name"] == "cpu")
    cpu["labels"]["infra.example.com/rack"] = "r1"  # the cluster's cpu nodes have no such label
    definition = tmp_path / "staging.yaml"
    definition.write_text(yaml.safe_dump(doc))
    target.core.patch_node("cpu-1", {"metadata": {"labels": {EDITABLE_LABEL: None}}})
    try:
        before = snapshot(target.api)
        line = _refused(_up(tmp_path, "--kubeconfig", str(target.kubeconfig), "--cluster", str(definition)),
                        tmp_path, f"{definition}: node cpu-1 is not open to edits",
                        "metadata.labels.infra.example.com/rack", "or describe the node as it is", progress=True)
        assert "cpu-2" not in line
        assert snapshot(target.api) == before
    finally:
        target.core.patch_node("cpu-1", {"metadata": {"labels": {EDITABLE_LABEL: "true"}}})


def test_a_scheduler_already_running_in_the_cluster_is_tested_as_it_runs(target, tmp_path):
    kc = str(target.kubeconfig)
    _refused(_up(tmp_path, "--kubeconfig", kc, "--scheduler-running"), tmp_path,
             "--scheduler-running: no scheduler holds lease kube-system/gpu-packing-scheduler", progress=True)
    # The user's own deployment of the profile: here a scheduler process of the local cluster, electing a leader
    # as a deployed kube-scheduler does by default.
    profile = load_scheduler_config(shipped("clusters/profiles/gpu-packing-scheduler.yaml"))
    theirs = target.start_scheduler(replace(profile, doc={**profile.doc, "leaderElection": {"leaderElect": True}}))
    try:
        target.wait_lease_taken("gpu-packing-scheduler", not_by=None)  # theirs leads before "before" is taken
        before = snapshot(target.api)
        out = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rs",
                              "e2e/test_capacity.py", "e2e/scenarios/hard-constraint.scenario.yaml",
                              "--provider", "existing", "--kubeconfig", kc, "--scheduler-running"],
                             cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True, timeout=900)
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
        # The scenario file reads the scheduler's /metrics, which schedgate cannot reach in this mode: skipped.
        assert "3 passed, 1 skipped" in out.stdout and "cannot read its /metrics" in out.stdout, out.stdout[-3000:]
        assert snapshot(target.api) == before
        assert run_dirs(tmp_path) == [] and our_processes(tmp_path) == []
    finally:
        target.stop_scheduler(theirs)


def test_a_file_needing_a_gate_the_cluster_lacks_skips_there_naming_it(target, tmp_path):
    """Its requires: turns the gate on where schedgate starts the cluster; here it cannot, so it skips."""
    scenario = tmp_path / "needs-gate.scenario.yaml"
    scenario.write_text(f"""\
apiVersion: schedgate.io/v1alpha1
kind: Scenario
name: needs-gate
cluster: {ROOT}/clusters/inference.yaml
requires: [GenericWorkload]
steps:
  - apply:
      manifest: {{apiVersion: scheduling.k8s.io/v1beta1, kind: PodGroup, metadata: {{name: pair}},
                 spec: {{schedulingPolicy: {{gang: {{minCount: 2}}}}}}}}
""")
    before = snapshot(target.api)
    out = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rs", str(scenario),
                          "--provider", "existing", "--kubeconfig", str(target.kubeconfig), "--allow-fake-gpus"],
                         cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True, timeout=600)
    tail = out.stdout[-3000:] + out.stderr[-2000:]
    assert out.returncode == 0 and "1 skipped" in out.stdout, tail
    assert "needs GenericWorkload (requires[0])" in out.stdout and "has the gate off" in out.stdout, tail
    assert snapshot(target.api) == before and run_dirs(tmp_path) == []

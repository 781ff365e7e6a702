"""The step apiFaults on the session cluster: the scheduler it names runs behind the run's proxy while the
run lasts, and talks to the API server directly again once the run is closed."""

from __future__ import annotations

from pathlib import Path

import yaml
from support import ROOT, load_text

from schedgate import scheduled_on, wait_for
from schedgate.objects.builders import HIGH_SPEED_NET
from schedgate.scenarios.run import Run
from schedgate.spec.schedconfig import SchedulerConfig
from schedgate.workloads.gpu import PACKING, gpu_pod


def server(kubeconfig: str | Path) -> str:
    """The API server a kubeconfig names: a local scheduler's file, or a kind static pod's text."""
    text = kubeconfig.read_text() if isinstance(kubeconfig, Path) else kubeconfig
    return str(yaml.safe_load(text)["clusters"][0]["cluster"]["server"])


def no_roles(name: str) -> SchedulerConfig:
    raise AssertionError(f"the scenario names no role ({name})")


def test_an_api_faults_step_puts_its_scheduler_behind_a_proxy_until_the_run_closes(cluster, ns, tmp_path):
    net, elsewhere = cluster.pool("gpu-net"), cluster.nodes_except("gpu-net")
    scenario = load_text(tmp_path, f"""
apiVersion: schedgate.io/v1alpha1
kind: Scenario
name: api-faults
cluster: {ROOT}/clusters/inference.yaml
steps:
  - apiFaults: {{profile: {PACKING}, stall: true}}
  - createPods: {{name: held, scheduler: {PACKING}, gpus: 1, requireLabels: {{{HIGH_SPEED_NET}: "true"}}}}
  - apiFaults: {{profile: {PACKING}, delayAnswers: 0.05, delayRequests: 0.05}}
  - expect: {{pods: held, scheduledOn: gpu-net}}
""")
    sched = cluster.scheduler(PACKING)
    direct = server(sched.kubeconfig)
    run = Run(scenario=scenario, cluster=cluster, ns=ns, start_scheduler=cluster.start_scheduler,
              role_config=no_roles)
    try:
        run.run()
        proxy = run.api_proxies[sched.name]
        assert server(sched.kubeconfig) == proxy.address != direct
        assert proxy.accepted >= 1 and not proxy.stalled
        assert (proxy.delay_up, proxy.delay_down) == (0.05, 0.05)
    finally:
        run.close()
    assert server(sched.kubeconfig) == direct and sched.alive()
    assert cluster.scheduler(PACKING) is sched
    after = gpu_pod("after").create(ns)
    wait_for(after, scheduled_on(net, never=elsewhere))

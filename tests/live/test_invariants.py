"""The outcome invariants on the session cluster: a hard spread the oracle cannot judge from the end state
is named in the step's figure, never passed in silence."""

from __future__ import annotations

from support import ROOT, load_text

from schedgate.scenarios.run import Run
from schedgate.spec.schedconfig import SchedulerConfig
from schedgate.workloads.gpu import PACKING


class Figures:
    def __init__(self) -> None:
        self.seen: dict[str, str] = {}

    def figure(self, name: str, value: object, unit: str = "") -> None:
        self.seen[name] = str(value)


def no_roles(name: str) -> SchedulerConfig:
    raise AssertionError(f"the scenario names no role ({name})")


def spread(name: str) -> str:
    return f"""
  - createPods:
      name: {name}
      scheduler: {PACKING}
      cpu: 100m
      labels: {{app: web}}
      pod: {{spec: {{topologySpreadConstraints: [{{maxSkew: 1, topologyKey: kubernetes.io/hostname,
            whenUnsatisfiable: DoNotSchedule, labelSelector: {{matchLabels: {{app: web}}}}}}]}}}}"""


def checked(cluster, ns, tmp_path, steps: str) -> str:
    scenario = load_text(tmp_path, f"""
apiVersion: schedgate.io/v1alpha1
kind: Scenario
name: invariants-spread
cluster: {ROOT}/clusters/inference.yaml
steps:{steps}
  - expect: {{invariants: {{}}, timeout: 30}}
""")
    figures = Figures()
    run = Run(scenario=scenario, cluster=cluster, ns=ns, start_scheduler=cluster.start_scheduler,
              role_config=no_roles, report=figures)  # type: ignore[arg-type]
    try:
        run.run()
    finally:
        run.close()
    (said,) = [v for k, v in figures.seen.items() if k.endswith("invariants checked")]
    return said


def test_a_spread_counting_a_pod_placed_under_other_rules_is_named_as_not_judged(cluster, ns, tmp_path):
    said = checked(cluster, ns, tmp_path, f"""
  - createPods: {{name: plain, scheduler: {PACKING}, cpu: 100m, labels: {{app: web}}}}{spread("spread")}""")
    assert said.endswith("; topologySpread: pod spread: not judged: pod plain, which its constraint on "
                         "kubernetes.io/hostname counts, does not carry it"), said


def test_pods_that_all_carry_one_spread_are_judged(cluster, ns, tmp_path):
    said = checked(cluster, ns, tmp_path, spread("web-0") + spread("web-1"))
    assert "topologySpread" in said.split("; ") and "not judged" not in said, said


def test_a_preemption_is_judged_by_the_events_that_name_its_victim(cluster, ns, tmp_path):
    """A high-priority pod that fits node cpu-1 only without a low-priority one there evicts it: one victim,
    judged (lower priority, from the node preempted on, a node the preemptor may use), and nothing broken."""
    said = checked(cluster, ns, tmp_path, f"""
  - apply: {{manifest: {{apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {{name: low}},
              value: 100}}}}
  - apply: {{manifest: {{apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {{name: high}},
              value: 1000}}}}
  - createPods: {{name: victim, scheduler: {PACKING}, cpu: "30", priorityClass: low,
                  requireLabels: {{kubernetes.io/hostname: cpu-1}}}}
  - wait: {{pods: victim, until: scheduled}}
  - createPods: {{name: preemptor, scheduler: {PACKING}, cpu: "10", priorityClass: high,
                  requireLabels: {{kubernetes.io/hostname: cpu-1}}}}
  - wait: {{pods: preemptor, until: scheduled}}""")
    assert "preemption: 1 victim(s) judged" in said.split("; ") and "not judged" not in said, said

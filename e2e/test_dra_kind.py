"""设备准备 — where pods really run, a claim's devices reach the container, not only the claim.

On kind, schedgate's DRA driver publishes each node's devices and prepares each claim the kubelet
hands it: a CDI spec whose device sets ``SCHEDGATE_DEVICES`` to the claim's device names. This case
asks for two GPUs of one NVLink domain, waits for the pod to run, and reads the environment the
runtime gave the container (``crictl inspect`` on the node): exactly the devices the scheduler
allocated. A driver that publishes but does not prepare leaves the pod ContainerCreating; one that
prepares without the CDI device leaves the variable out — both fail here.

Run with ``--cluster clusters/dra-kubelets.yaml --provider kind``: real kubelets (``nodeAgent: {kind:
kubelet}``), as kind's kwok nodes run no container. Elsewhere the case skips, saying so.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from schedgate import make_pod, scheduled_on, wait_for
from schedgate.kube.watch import MATCH, Check, FnMatcher, Matcher, fail, pending
from schedgate.objects.claims import DeviceRequest
from schedgate.providers.kind.backend import KindBackend
from schedgate.spec.agent import kubelet_nodes
from schedgate.workloads.gpu import PACKING

GPU_CLASS = "gpu.schedgate.io"
ENV = "SCHEDGATE_DEVICES"
STUCK = {"CreateContainerError", "CreateContainerConfigError", "RunContainerError", "CrashLoopBackOff"}


def running() -> Matcher:
    """Phase Running with every container started; a container the runtime refused fails at once."""

    def check(p: dict[str, Any]) -> Check:
        status = p.get("status") or {}
        for c in status.get("containerStatuses") or []:
            reason = ((c.get("state") or {}).get("waiting") or {}).get("reason")
            if reason in STUCK:
                return fail(f"container {c.get('name')}: {reason}")
        started = all((c.get("state") or {}).get("running") for c in status.get("containerStatuses") or [{}])
        return MATCH if status.get("phase") == "Running" and started else \
            pending(f"phase {status.get('phase')}")

    return FnMatcher("Running", check)


def container_env(backend: KindBackend, node: str, namespace: str, pod: str) -> list[str]:
    """The environment the runtime gave the pod's container (its OCI spec, CDI edits included)."""
    host, container = backend.host, backend.containers[node]
    sandboxes = host.crictl(container, "pods", "-q", "--name", pod, "--namespace", namespace)
    assert len(sandboxes) == 1, f"pod {namespace}/{pod} has {len(sandboxes)} sandboxes on {node}"
    ids = host.crictl(container, "ps", "-q", "--pod", sandboxes[0])
    assert len(ids) == 1, f"pod {namespace}/{pod} has {len(ids)} containers on {node}"
    out = host.run("docker", "exec", container, "crictl", "inspect", ids[0], what=f"crictl inspect on {node}")
    env: list[str] = json.loads(out.stdout)["info"]["runtimeSpec"]["process"]["env"]
    return env


def test_two_gpus_of_one_nvlink_domain_reach_the_container_as_prepared(cluster, ns):
    if not isinstance(cluster.backend, KindBackend) or not kubelet_nodes(cluster.definition):
        pytest.skip(f"cluster {cluster.definition.name} on {cluster.provider}: no kubelet prepares claims there "
                    "(run with --cluster clusters/dra-kubelets.yaml --provider kind)")
    if GPU_CLASS not in {c.name for c in cluster.definition.device_classes}:
        pytest.skip(f"cluster {cluster.definition.name} defines no {GPU_CLASS} devices "
                    "(run with --cluster clusters/dra-kubelets.yaml --provider kind)")
    net, cpu = cluster.pool("dra-net"), cluster.pool("cpu")

    # Two GPUs sharing an NVLink domain, none on PCIe root pci0 (gpu-0, gpu-1): on an empty node the
    # allocator's first fit is the rest of domain 0.
    request = DeviceRequest(GPU_CLASS, 2, same=(f"{GPU_CLASS}/nvlinkDomain",),
                            selectors=(f'device.attributes["{GPU_CLASS}"].pcieRoot != "pci0"',))
    pod = make_pod("nvlink-pair").scheduler(PACKING).devices(request).create(ns)

    wait_for(pod, scheduled_on(net, never=cpu))
    wait_for(pod, running(), timeout=120)
    node = pod.refresh().node_name
    assert cluster.allocated_devices(pod) == ["gpu-2", "gpu-3"]  # on its own node's pool

    env = container_env(cluster.backend, node, ns.name, pod.name)
    injected = [e for e in env if e.startswith(f"{ENV}=")]
    assert injected == [f"{ENV}=gpu-2,gpu-3"], f"{ENV} in the container's environment: {injected}"


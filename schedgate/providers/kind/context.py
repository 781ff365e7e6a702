"""What one kind cluster's creation steps share (:mod:`.provider`, :mod:`.kwok`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kubernetes import client as k8s

from schedgate.cluster import Cluster
from schedgate.kube.api import new_client
from schedgate.providers.base import ClusterRequest, made
from schedgate.providers.kind.backend import KindBackend
from schedgate.providers.kind.host import Host
from schedgate.runtime.procs import Proc, RunDir
from schedgate.runtime.toolchain import Binaries
from schedgate.spec.agent import kubelet_nodes


@dataclass
class KindContext:
    """What one kind cluster's creation steps share, passed to each as kind passes its actions an
    ActionContext: the request and the Docker host, and what each step made (None until it ran)."""

    req: ClusterRequest
    reaped: list[str]
    host: Host = field(default_factory=Host)
    timings: dict[str, float] = field(default_factory=dict)
    image: str | None = None         # node image: the image's tag
    digest: str | None = None        # node image: the definition and image, as a reused cluster records it
    bins: Binaries | None = None     # pinned binaries
    kwok: Path | None = None         # pinned binaries: kwok's, for kwok nodes
    dir: RunDir | None = None        # run folder
    name: str | None = None          # run folder: the kind cluster's name
    created: bool = False            # create cluster: this run made the cluster (rolled back: deleted)
    api: k8s.ApiClient | None = None  # the cluster's API client, made on first use
    backend: KindBackend | None = None  # the scheduler under test in the cluster
    agent: Proc | None = None        # kwok on the nodes schedgate makes (none with kubelet workers)
    cluster: Cluster | None = None   # nodes as defined

    @property
    def kubelets(self) -> bool:
        """Whether the definition's nodes are kind workers (real kubelets), not kwok nodes."""
        return kubelet_nodes(self.req.definition)

    @property
    def kubeconfig(self) -> Path:
        return made(self.dir, "the run folder").path / "kubeconfig"

    @property
    def cluster_name(self) -> str:
        return made(self.name, "the cluster's name (run folder)")

    def client(self) -> k8s.ApiClient:
        if self.api is None:
            self.api = new_client(self.kubeconfig)
        return self.api

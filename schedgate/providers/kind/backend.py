"""What a running kind cluster can do, for the cluster facade."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kubernetes import client as k8s

from schedgate.cluster import KubeletNodes
from schedgate.errors import ComponentError
from schedgate.providers.kind.config import ROUTED_KUBECONFIG
from schedgate.providers.kind.dra import DriverSlices
from schedgate.providers.kind.host import Host
from schedgate.providers.kind.scheduler import FIRST_PORT, SCHEDULER_NAMESPACE, PodScheduler, StaticScheduler
from schedgate.providers.rbac import grant
from schedgate.runtime.procs import Component
from schedgate.runtime.scheduler import Scheduler, forget
from schedgate.spec.schedconfig import SchedulerConfig


@dataclass
class KindBackend:
    """What a kind cluster can do: start schedulers in it, restart its API server, be proxied, export logs,
    publish devices through its DRA driver."""

    host: Host
    cluster: str
    api: k8s.ApiClient
    run_dir: Path
    kubeconfig: Path
    scheduler_image: str
    nodes: KubeletNodes
    pod_image: str
    extender_host: str
    api_endpoint: tuple[str, int]
    containers: dict[str, str]
    resource_scale: dict[str, float] = field(default_factory=dict)
    schedulers: dict[str, PodScheduler] = field(default_factory=dict)
    # schedgate's DRA driver on the nodes (only where the definition has devices).
    device_publisher: DriverSlices | None = None
    name: str = "kind"
    _ports: list[int] = field(default_factory=list)

    @property
    def control_plane(self) -> str:
        return f"{self.cluster}-control-plane"

    @property
    def extra_nodes(self) -> tuple[str, ...]:
        return (self.control_plane,)

    def components(self) -> Sequence[Component]:
        return [s for s in {id(x): x for x in self.schedulers.values()}.values() if not isinstance(s, StaticScheduler)]

    def start_scheduler(self, config: SchedulerConfig, binary: Path | None, api_server: str | None) -> PodScheduler:
        img = self.scheduler_image
        if binary is not None:
            img = self.host.scheduler_image(Path(binary))
            self.host.load_image(self.cluster, img)
        lease = config.lease_name
        effective = config.effective(kubeconfig=ROUTED_KUBECONFIG if api_server else "", lease=lease)
        path = effective.write(self.run_dir / f"{lease}.config.yaml")
        s = PodScheduler(name=lease, config=config, effective=effective, config_path=path, image=img, api=self.api,
                         node=self.control_plane, run_dir=self.run_dir / "logs", port=FIRST_PORT + len(self._ports),
                         server=api_server)
        node = self.containers[self.control_plane]
        s.crash = lambda pod: self.host.kill_pod_containers(node, SCHEDULER_NAMESPACE, pod)
        self._ports.append(s.port)
        grant(self.api, f"sa-{lease}", s.subject(), lease, config.shared_pools)
        s.start()
        for p in config.profile_names:
            self.schedulers[p] = s
        return s

    def stop_scheduler(self, scheduler: Scheduler) -> None:
        if not isinstance(scheduler, PodScheduler) or isinstance(scheduler, StaticScheduler):
            raise ComponentError(f"scheduler {scheduler.name} was not started by schedgate on kind")
        scheduler.save_log()
        scheduler.remove()
        forget(self.schedulers, scheduler)

    def restart_apiserver(self) -> float:
        return self.host.restart_apiserver(self.containers[self.control_plane], self.api)

    def export_logs(self, dest: Path) -> None:
        self.host.export_logs(self.cluster, dest)

    def save_logs(self) -> None:
        for s in self.components():
            if isinstance(s, PodScheduler):
                s.save_log()

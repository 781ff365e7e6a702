"""The step ``apiFaults``: a running scheduler's traffic with the API server slowed, stalled or cut.

The first ``apiFaults`` step for a scheduler restarts it with its kubeconfig pointed at a proxy of the run's
(:class:`~schedgate.faults.apiproxy.ApiProxy`); the run's end restarts it pointed at the API server again.
Each step first cuts the connections if it says ``dropConnections``, then sets exactly the faults it names
(the rest off, as the extender step does)::

    - apiFaults: {profile: gpu-packing-scheduler, delayAnswers: 0.3}   # binds commit, their answers come late
    - createPods: {name: burst, count: 10, gpus: 4}
    - apiFaults: {profile: gpu-packing-scheduler, dropConnections: true}  # lost with them; then no fault
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from schedgate.cluster import ExposesApiServer, ReroutesSchedulers
from schedgate.faults.apiproxy import ApiProxy
from schedgate.scenarios.declare import Declared, arg, read_string
from schedgate.scenarios.parse import Parser
from schedgate.scenarios.run import Run
from schedgate.scenarios.steps import step
from schedgate.spec.jsontypes import BOOL, STR

MAX_DELAY = 30.0  # seconds on each chunk: past this, the scheduler's own request timeouts are what is tested
DELAY = {"type": "number", "minimum": 0, "maximum": MAX_DELAY}


def _delay(p: Parser, raw: Any, w: str) -> float:
    return p.v.number(raw, w, maximum=MAX_DELAY)


def _flag(p: Parser, raw: Any, w: str) -> bool:
    return p.v.flag(raw, w)


@step("apiFaults")
@dataclass(frozen=True)
class ApiFaults(Declared):
    """Slow, stall or cut the traffic between a running scheduler (``profile``) and the API server; {} but the
    profile: no fault. (Local provider: its schedulers are processes whose kubeconfig it writes.)"""

    profile: str = arg("profile", "the profile of the running scheduler whose API traffic is faulted (its "
                                  "first apiFaults step restarts it behind a proxy; the run's end, without)",
                       STR, read_string)
    delay_requests: float = arg("delayRequests", "seconds each chunk of the scheduler's requests (binds, "
                                                 "status updates, lease renewals) is held", DELAY, _delay, default=0.0)
    delay_answers: float = arg("delayAnswers", "seconds each chunk of the API server's answers and watch events "
                                               "is held", DELAY, _delay, default=0.0)
    stall: bool = arg("stall", "hold every byte both ways (nothing is lost) until a step without it",
                      BOOL, _flag, default=False)
    drop_connections: bool = arg("dropConnections", "close the scheduler's connections first (requests in "
                                                    "flight and watches end; it re-lists)", BOOL, _flag,
                                 default=False)

    def run(self, r: Run) -> None:
        proxy = self.proxy(r)
        if self.drop_connections:
            proxy.drop_connections()
        proxy.delay_up, proxy.delay_down = self.delay_requests, self.delay_answers
        if self.stall:
            proxy.stall()
        else:
            proxy.release()

    def proxy(self, r: Run) -> ApiProxy:
        """The proxy in front of the scheduler serving ``profile``: made, and the scheduler moved behind it,
        the first time."""
        scheduler = r.cluster.scheduler(self.profile)
        if (proxy := r.api_proxies.get(scheduler.name)) is not None:
            return proxy
        router = r.cluster.use(ReroutesSchedulers)  # type: ignore[type-abstract]
        endpoint = r.cluster.use(ExposesApiServer).api_endpoint  # type: ignore[type-abstract]
        proxy = ApiProxy(upstream=endpoint, host=r.cluster.backend.extender_host).start()
        r.api_proxies[scheduler.name] = proxy
        router.reroute_scheduler(scheduler, proxy.address)
        return proxy

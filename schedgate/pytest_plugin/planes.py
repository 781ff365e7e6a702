"""The control planes a run starts besides the session's cluster, and which scenario files share one.

A scenario file whose control plane would be started as the session's was (feature gates, API versions, node
agent: :func:`plane_key`) runs on the session's cluster (:func:`on_session`), with its own nodes in place of
the session's where those are API-only ones schedgate made, and, where the provider replaces the scheduler
under test in place (:attr:`Ability.SWAPS_SCHEDULERS`: kind, whose control plane takes half a minute and
whose scheduler is a static pod of a few seconds), its own scheduler configuration; elsewhere (local, whose
control plane starts in seconds) only a file of the session's configuration does. The next test that wants
the session's nodes and scheduler gets them back (:func:`session_as`).

Any other file whose cluster definition or scheduler configuration is not the session's runs on an extra
cluster, one per plane in the same way: its nodes replaced by the next file's, its scheduler swapped where the
provider swaps. Files that share an extra plane run one after another, on one worker under ``pytest -n``
(:mod:`schedgate.pytest_plugin.distribute`), grouped by configuration and then by definition.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

import pytest

from schedgate.cluster import Ability, Cluster
from schedgate.errors import SchedgateError
from schedgate.providers import ClusterRequest, Started, provider, start_cluster
from schedgate.providers.base import first_sync
from schedgate.pytest_plugin.options import request_from
from schedgate.runtime.scheduler import distinct
from schedgate.scenarios.load import Scenario
from schedgate.spec.agent import kubelet_nodes
from schedgate.spec.cluster import ClusterDefinition
from schedgate.spec.features import as_written
from schedgate.spec.schedconfig import SchedulerConfig

SWAP_SYNC_TIMEOUT = 60.0  # seconds a replaced scheduler has to bind its first probe pod (as at a kind start)


@dataclass
class ExtraClusters:
    """Clusters for scenario files whose cluster or scheduler differs from the session's, one at a time.

    One cluster per plane: a file with its own small cluster definition gets that cluster's nodes replaced
    by its own (the control plane and schedulers stay), and on a provider that swaps schedulers, one with
    another scheduler configuration gets the scheduler under test replaced; so one more such file costs
    its nodes or a scheduler start, not a control-plane start. A provider whose nodes are kubelets it
    started cannot replace them: there a cluster is started per definition."""

    base: ClusterRequest
    started: dict[str, Started] = field(default_factory=dict)
    # The scheduler under test of each (None: none yet, on a plane just given another gate set).
    serving: dict[str, SchedulerConfig | None] = field(default_factory=dict)

    def get(self, scenario: Scenario) -> Cluster:
        config = scenario.scheduler or self.base.scheduler_config
        by_plane = plane_key(config, scenario.definition, swaps(self.base))
        key = by_plane + repr(scenario.definition)
        if by_plane in self.started:  # nodes this provider can replace
            self.started[by_plane].cluster.redefine(scenario.definition)
        elif key in self.started:
            by_plane = key
        else:
            by_plane = self._start(scenario, config, by_plane, key)
        c = self.started[by_plane].cluster
        self._serve(by_plane, config)
        c.catch_up()
        return c

    def _start(self, scenario: Scenario, config: SchedulerConfig, by_plane: str, key: str) -> str:
        if Ability.MAKES_CLUSTERS not in provider(self.base.provider).abilities:
            pytest.skip(f"schedgate: the {self.base.provider} provider runs in one cluster as it is; "
                        f"{scenario.source} needs another cluster definition or scheduler profile")
        if self._reconfigured(scenario, by_plane):
            return by_plane
        self.close()  # at most one extra cluster at a time
        req = replace(self.base, definition=scenario.definition, scheduler_config=config, keep=False)
        failed = ""
        try:
            started = start_cluster(req)
        except SchedgateError as e:
            failed = str(e)
        if failed:  # outside the except: the one line, not chained to the exception that carried it
            pytest.fail(f"schedgate: cluster for {scenario.source}: {failed}", pytrace=False)
        stored = by_plane if started.cluster.can(Ability.ADDS_NODES) else key
        self.started[stored], self.serving[stored] = started, config
        return stored

    def reconfigurable_for(self, scenario: Scenario) -> bool:
        """Whether the one running extra cluster can be given ``scenario``'s gate set in place of a new one: its
        provider reconfigures a running control plane, and neither its nodes nor the file's are kubelets."""
        if len(self.started) != 1 or kubelet_nodes(scenario.definition):
            return False
        s = next(iter(self.started.values()))
        return s.reconfigure is not None and s.cluster.can(Ability.ADDS_NODES)

    def _reconfigured(self, scenario: Scenario, by_plane: str) -> bool:
        """The running extra cluster given the file's gates, API versions and node agent, and its nodes, where it
        can be (:meth:`reconfigurable_for`): a control plane's restart instead of a new cluster. Its scheduler
        under test is stopped (it runs with the old gates); :meth:`_serve` starts the file's."""
        if not self.reconfigurable_for(scenario):
            return False
        old, s = next(iter(self.started.items()))
        assert s.reconfigure is not None
        was = self.serving.pop(old, None)
        del self.started[old]
        failed = ""
        try:
            stop_serving(s.cluster, was.profile_names if was is not None else [])
            # A heartbeat the last file stopped given back while its agent runs: a new agent's Leases start afresh.
            s.cluster.nodes.reset()
            s.reconfigure(scenario.definition)
            s.cluster.redefine(scenario.definition)
        except SchedgateError as e:
            failed = str(e)
        if failed:
            s.stop()
            pytest.fail(f"schedgate: cluster for {scenario.source}: the running one given its gates: {failed}",
                        pytrace=False)
        self.started[by_plane], self.serving[by_plane] = s, None
        return True

    def _serve(self, key: str, config: SchedulerConfig) -> None:
        was = self.serving.pop(key)  # a failed start leaves no configuration this plane is said to serve
        failed = serve(self.started[key].cluster, was, config, self.base)
        if failed:
            self.close()
            pytest.fail(f"schedgate: scheduler {config.source} in the running cluster: {failed}", pytrace=False)
        self.serving[key] = config

    def close(self) -> None:
        for s in self.started.values():
            s.stop()
        self.started.clear()
        self.serving.clear()


@pytest.fixture(scope="session")
def schedgate_extra_clusters(pytestconfig: pytest.Config) -> Iterator[ExtraClusters]:
    extra = pytestconfig.stash[_EXTRA] = ExtraClusters(request_from(pytestconfig))
    try:
        yield extra
    finally:
        extra.close()


_EXTRA = pytest.StashKey[ExtraClusters]()


def release_unneeded(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """After the last of a run of scenario files on one extra cluster, stop that cluster: an idle control
    plane would only take CPU from the tests after it (the files that need it run one after another:
    :func:`group_by_cluster`, and under ``pytest -n`` on one worker)."""
    extra = item.config.stash.get(_EXTRA, None)
    scenario = getattr(item, "scenario", None)
    if extra is None or not extra.started or not isinstance(scenario, Scenario):
        return
    req = request_from(item.config)
    mine = cluster_group(scenario, req)
    following = getattr(nextitem, "scenario", None)
    after = cluster_group(following, req) if isinstance(following, Scenario) else None
    if mine is not None and (after is None or after[0] != mine[0]):
        if isinstance(following, Scenario) and after is not None and extra.reconfigurable_for(following):
            return  # kept for the next gate set
        extra.close()


def serve(c: Cluster, was: SchedulerConfig | None, config: SchedulerConfig, base: ClusterRequest) -> str:
    """Make ``config``'s the cluster's scheduler under test: the one serving ``was`` (``None``: unknown, every
    scheduler serving a profile of ``config``) stopped, ``config``'s started and synced (as at a cluster
    start). Returns what went wrong, in one line, or ``""``."""
    if was is not None and was.doc == config.doc:
        return ""
    stop_serving(c, was.profile_names if was is not None else config.profile_names)
    try:
        c.start_scheduler(config)
        first_sync(c, replace(base, scheduler_config=config), SWAP_SYNC_TIMEOUT)
    except SchedgateError as e:
        return str(e)
    return ""


def stop_serving(c: Cluster, profiles: list[str]) -> None:
    """Stop every scheduler serving one of ``profiles``."""
    for proc in distinct({p: c.schedulers[p] for p in profiles if p in c.schedulers}):
        c.stop_scheduler(proc)


def swaps(req: ClusterRequest) -> bool:
    """Whether the request's provider replaces the scheduler under test in a running cluster."""
    return Ability.SWAPS_SCHEDULERS in provider(req.provider).abilities


def cluster_group(scenario: Scenario, req: ClusterRequest) -> tuple[str, str, str] | None:
    """The extra cluster a scenario file runs on, as (plane, scheduler configuration, definition); ``None``
    for the session's own."""
    if on_session(scenario, req):
        return None
    config = scenario.scheduler or req.scheduler_config
    return (plane_key(config, scenario.definition, swaps(req)), json.dumps(config.doc, sort_keys=True),
            repr(scenario.definition))


def plane_key(config: SchedulerConfig, definition: ClusterDefinition, swapped: bool = False) -> str:
    """What a control plane is started with and replacing its nodes keeps: the feature gates and API
    versions, the node agent, and the scheduler configuration unless the provider swaps it (``swapped``).
    Files that share it share a cluster."""
    return json.dumps([None if swapped else config.doc, definition.gates.feature_gates,
                       definition.gates.runtime_config, repr(definition.agent)], sort_keys=True)


def group_by_cluster(items: list[pytest.Item], req: ClusterRequest) -> None:
    """Order scenario files so that those on one extra cluster run one after another, by scheduler
    configuration and then definition within it: a cluster is started, a scheduler swapped and nodes
    replaced once each, not again each time the order comes back to them. Every other test keeps its
    place. (Under ``pytest -n`` such files also share a worker: :mod:`schedgate.pytest_plugin.distribute`.)"""
    first: dict[object, int] = {}
    keys: list[tuple[int, ...]] = []
    for i, item in enumerate(items):
        scenario = getattr(item, "scenario", None)
        group = cluster_group(scenario, req) if isinstance(scenario, Scenario) else None
        if group is None:
            keys.append((i, 0, 0, i))
            continue
        keys.append((first.setdefault(group[:1], i), first.setdefault(group[:2], i), first.setdefault(group, i), i))
    order = sorted(range(len(items)), key=keys.__getitem__)
    items[:] = [items[i] for i in order]


def on_session(scenario: Scenario, req: ClusterRequest) -> bool:
    """Whether the file runs on the session's cluster: it is the session's (:func:`same_cluster`), or its
    control plane would be started as the session's was (:func:`plane_key`; the scheduler configuration is
    part of that unless the provider swaps schedulers) and the session's nodes are API-only ones, which
    schedgate replaces with the file's (a kubelet, or a cluster schedgate did not make, stays as it is)."""
    if same_cluster(scenario, req):
        return True
    abilities = provider(req.provider).abilities
    if Ability.MAKES_CLUSTERS not in abilities or Ability.ADDS_NODES not in abilities or kubelet_nodes(req.definition):
        return False
    config, swapped = scenario.scheduler or req.scheduler_config, swaps(req)
    return plane_key(config, scenario.definition, swapped) == plane_key(req.scheduler_config, req.definition, swapped)


def session_as(item: pytest.Item, req: ClusterRequest) -> tuple[ClusterDefinition, SchedulerConfig]:
    """The nodes and the scheduler under test the session's cluster has for ``item``: a scenario file's own
    where it runs there (:func:`on_session`), else the session's."""
    scenario = getattr(item, "scenario", None)
    if isinstance(scenario, Scenario) and not same_cluster(scenario, req) and on_session(scenario, req):
        return scenario.definition, scenario.scheduler or req.scheduler_config
    return req.definition, req.scheduler_config  # the session's own (on a cluster schedgate did not make: as it is)


def prepare_session(item: pytest.Item, c: Cluster) -> None:
    """The session's cluster as ``item`` wants it (:func:`session_as`): nodes replaced, scheduler under test
    swapped, when the last test left them otherwise. A scheduler that does not start fails the test in one
    line, and the session's is started again for the tests after it."""
    req = request_from(item.config)
    definition, config = session_as(item, req)
    failed = set_session(item.config.stash, req, c, definition, config)
    if failed:
        pytest.fail(f"schedgate: scheduler {config.source} in the session's cluster: {failed}", pytrace=False)


def set_session(stash: pytest.Stash, req: ClusterRequest, c: Cluster, definition: ClusterDefinition,
                config: SchedulerConfig) -> str:
    """Give the session's cluster (of ``req``) ``definition``'s nodes and ``config``'s scheduler under test,
    what it serves kept in the run's ``stash``; returns what went wrong in one line (the session's scheduler
    then started again), or ``""``."""
    if c.definition != definition:
        c.redefine(definition)
    was = stash.get(_SERVING, req.scheduler_config)
    if was is not None and was.doc == config.doc:
        return ""
    stash[_SERVING] = None  # unknown until a start succeeds
    failed = serve(c, was, config, req)
    if not failed:
        stash[_SERVING] = config
        return ""
    if not serve(c, None, req.scheduler_config, req):
        stash[_SERVING] = req.scheduler_config
    return failed


_SERVING = pytest.StashKey[SchedulerConfig | None]()  # the session cluster's scheduler under test, when swapped


def same_cluster(scenario: Scenario, req: ClusterRequest) -> bool:
    """Whether the file runs on the session's cluster. A provider that does not start clusters cannot turn
    on what the file's ``requires:`` needs: it compares the definition as written (the file skips there
    when the cluster lacks the need)."""
    mine = scenario.definition if Ability.MAKES_CLUSTERS in provider(req.provider).abilities else \
        as_written(scenario.definition)
    return mine == req.definition and (
        scenario.scheduler is None or scenario.scheduler.doc == req.scheduler_config.doc)


__all__ = ["ExtraClusters", "cluster_group", "group_by_cluster", "on_session", "plane_key", "prepare_session",
           "release_unneeded", "same_cluster", "schedgate_extra_clusters", "serve", "session_as", "set_session",
           "swaps"]

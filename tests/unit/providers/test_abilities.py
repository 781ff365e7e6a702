"""One way to ask what a provider, or a cluster it started, can do (schedgate.cluster.abilities): what a
provider declares before anything starts, what a running cluster's backend has (its nodes' abilities and
the optional interfaces it implements), and the one line a missing ability gives. No cluster is started."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from schedgate.cluster import Ability, ApiOnlyNodes, Cluster, KubeletNodes, RestartsApiServer, StartsSchedulers
from schedgate.cluster.abilities import INTERFACES, NODE_ABILITIES, running
from schedgate.errors import NotHere
from schedgate.providers import PROVIDERS, provider
from schedgate.providers.existing.backend import ExistingBackend, ExistingNodes
from schedgate.providers.kind.backend import KindBackend
from schedgate.providers.local.provider import LocalBackend

DECLARABLE = {Ability.MAKES_CLUSTERS, Ability.PUBLISHES_DEVICES, Ability.RUNS_BLACK_BOXES, Ability.ADDS_NODES,
              Ability.SWAPS_SCHEDULERS}


def _blank(cls: type, **given: Any) -> Any:
    """A backend dataclass with every field not given set to None: enough to ask what it can do."""
    fields = {f.name: None for f in dataclasses.fields(cls) if f.init and f.default is dataclasses.MISSING
              and f.default_factory is dataclasses.MISSING}
    return cls(**{**fields, **given})


def test_every_ability_is_either_declared_or_an_optional_interface_and_none_is_both():
    interfaces = set(INTERFACES.values())
    assert len(interfaces) == len(INTERFACES)
    assert interfaces.isdisjoint(DECLARABLE | NODE_ABILITIES)
    assert set(Ability) == interfaces | DECLARABLE | NODE_ABILITIES


def test_providers_declare_what_they_can_do_for_any_definition_and_nothing_a_running_cluster_decides():
    declared = {name: provider(name).abilities for name in PROVIDERS}
    assert declared == {
        "local": {Ability.MAKES_CLUSTERS, Ability.ADDS_NODES, Ability.PUBLISHES_DEVICES, Ability.RUNS_BLACK_BOXES},
        "kind": {Ability.MAKES_CLUSTERS, Ability.ADDS_NODES, Ability.PUBLISHES_DEVICES, Ability.RUNS_BLACK_BOXES,
                 Ability.SWAPS_SCHEDULERS},
        "existing": {Ability.RUNS_BLACK_BOXES},
    }
    assert all(a in DECLARABLE for abilities in declared.values() for a in abilities)


def test_a_kind_cluster_of_kubelet_workers_adds_no_node_though_its_provider_can_and_kwok_nodes_run_pods():
    kwok = _blank(KindBackend, nodes=ApiOnlyNodes(core=None, agent=True))
    kubelets = _blank(KindBackend, nodes=KubeletNodes(core=None, provider="kind"))
    assert Ability.ADDS_NODES in provider("kind").abilities
    assert {Ability.ADDS_NODES, Ability.RUNS_PODS} <= kwok.abilities and Ability.ADMITS_PODS not in kwok.abilities
    assert Ability.ADDS_NODES not in kubelets.abilities
    assert {Ability.RUNS_PODS, Ability.ADMITS_PODS} <= kubelets.abilities
    # What a kind cluster can be asked to do, whatever its nodes.
    for backend in (kwok, kubelets):
        assert {Ability.STARTS_SCHEDULERS, Ability.REROUTES_SCHEDULERS, Ability.RESTARTS_API_SERVER,
                Ability.EXPOSES_API_SERVER, Ability.EXPORTS_LOGS, Ability.AUDITS_REQUESTS} <= backend.abilities


def test_local_nodes_run_pods_only_with_the_node_agent():
    plain = _blank(LocalBackend, nodes=ApiOnlyNodes(core=None))
    agent = _blank(LocalBackend, nodes=ApiOnlyNodes(core=None, agent=True))
    assert Ability.RUNS_PODS not in plain.abilities and Ability.RUNS_PODS in agent.abilities
    assert Ability.EXPORTS_LOGS not in plain.abilities  # no node of its runs a kubelet with logs of its own


def test_an_existing_cluster_never_adds_nodes_even_where_its_nodes_are_objects_only():
    kinds = {"a": ApiOnlyNodes(core=None), "b": KubeletNodes(core=None, provider="existing")}
    nodes = ExistingNodes(core=None, journal=None, kinds=kinds, editable=frozenset(), real_gpus=frozenset())
    backend = _blank(ExistingBackend, nodes=nodes)
    assert Ability.ADDS_NODES not in backend.abilities
    assert {Ability.RUNS_PODS, Ability.ADMITS_PODS, Ability.RUNS_BLACK_BOXES} <= backend.abilities
    assert Ability.RESTARTS_API_SERVER not in backend.abilities and Ability.STARTS_SCHEDULERS in backend.abilities


def test_a_backend_has_an_interfaces_ability_exactly_when_it_implements_it():
    class Bare:
        pass

    class Restarts:
        def restart_apiserver(self) -> float:
            return 0.0

    assert running(Bare(), frozenset(DECLARABLE), frozenset()) == DECLARABLE - NODE_ABILITIES
    assert running(Restarts(), frozenset(), frozenset()) == {Ability.RESTARTS_API_SERVER}


def test_using_what_a_cluster_cannot_do_says_so_in_one_line():
    nodes = ExistingNodes(core=None, journal=None, kinds={}, editable=frozenset(), real_gpus=frozenset())
    cluster = Cluster.__new__(Cluster)  # no API client: only the backend is asked
    cluster.backend = _blank(ExistingBackend, nodes=nodes)
    assert cluster.use(StartsSchedulers) is cluster.backend  # type: ignore[type-abstract]
    with pytest.raises(NotHere, match=r"^the existing provider cannot restart its API server$"):
        cluster.use(RestartsApiServer)  # type: ignore[type-abstract]
    assert not cluster.can(Ability.RESTARTS_API_SERVER) and cluster.can(Ability.STARTS_SCHEDULERS)


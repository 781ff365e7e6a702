"""What schedgate writes into a scenario's pod beyond its fields is documented (createPods) and the file's
``pod:`` replaces each of it."""

from __future__ import annotations

from schedgate.objects.builders import MANAGED_BY, make_pod


def test_the_harness_defaults_are_what_the_docs_say():
    spec = make_pod("p").obj()["spec"]
    assert spec["terminationGracePeriodSeconds"] == 0 and spec["automountServiceAccountToken"] is False
    assert [c["name"] for c in spec["containers"]] == ["main"]
    assert make_pod("p").obj()["metadata"]["labels"][MANAGED_BY] == "schedgate"


def test_the_files_pod_replaces_each_default():
    pod = make_pod("p").manifest({"spec": {"terminationGracePeriodSeconds": 30,
                                           "automountServiceAccountToken": True}}).obj()
    assert pod["spec"]["terminationGracePeriodSeconds"] == 30
    assert pod["spec"]["automountServiceAccountToken"] is True

"""A scheduler whose informers can never sync says why in its log: the barrier fails the run with that line
(a 403, a resource not served) rather than warn and leave the test to time out on a placement."""

from __future__ import annotations

from schedgate.cluster.sync import cannot_sync

FORBIDDEN = ('E1206 10:00:00.000000    1234 reflector.go:200] "Failed to watch" err="failed to list '
             '*v1alpha1.PodGroup: podgroups.scheduling.x-k8s.io is forbidden: User \\"schedgate:scheduler:s\\" '
             'cannot list resource \\"podgroups\\" in API group \\"scheduling.x-k8s.io\\" at the cluster scope" '
             'logger="UnhandledError" reflector="pkg/mod/k8s.io/client-go/tools/cache/reflector.go:290" '
             'type="*v1alpha1.PodGroup"')
NOT_SERVED = ('E1206 10:00:00.000000    1234 reflector.go:166] "Unhandled Error" err="k8s.io/client-go/'
              'informers/factory.go:160: Failed to watch *v1alpha1.ElasticQuota: failed to list '
              '*v1alpha1.ElasticQuota: the server could not find the requested resource" logger="UnhandledError"')
RESTART = ('E1206 10:00:00.000000    1234 reflector.go:200] "Failed to watch" err="failed to list *v1.Pod: Get '
           '\\"https://127.0.0.1:6443/api/v1/pods\\": dial tcp 127.0.0.1:6443: connect: connection refused"')


def test_a_list_refused_by_rbac_is_the_reason_in_the_schedulers_words():
    why = cannot_sync(["I1206 starting", FORBIDDEN, "I1206 waiting for caches"])
    assert why is not None and why.startswith("failed to list *v1alpha1.PodGroup: podgroups.scheduling.x-k8s.io is "
                                              'forbidden: User "schedgate:scheduler:s" cannot list resource')
    assert "logger=" not in why


def test_a_resource_the_api_server_does_not_serve_is_a_reason():
    assert cannot_sync([NOT_SERVED]) == ("k8s.io/client-go/informers/factory.go:160: Failed to watch "
                                         "*v1alpha1.ElasticQuota: failed to list *v1alpha1.ElasticQuota: the server "
                                         "could not find the requested resource")


def test_a_passing_outage_or_a_quiet_log_is_no_reason():
    assert cannot_sync([RESTART]) is None
    assert cannot_sync(["I1206 nothing to see"]) is None
    assert cannot_sync([]) is None

"""A scenario that waits long enough to be interrupted (used by tests/test_harness.py)."""

from schedgate import make_pod, scheduled_on, wait_for


def test_waits_for_a_pod_that_never_binds(cluster, ns):
    pod = make_pod("never").scheduler("no-such-scheduler").create(ns)
    print("schedgate-test: waiting", flush=True)
    wait_for(pod, scheduled_on(cluster.pool("cpu")), timeout=120)

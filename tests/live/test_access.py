"""The local control plane is schedgate's alone: etcd answers only TLS with a client certificate of the
run's CA, the API server refuses unauthenticated requests, and the scheduler's identity reads no Secrets."""

from __future__ import annotations

import http.client
import ssl
from pathlib import Path

import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from schedgate.kube.api import new_client
from schedgate.providers.local import LocalBackend
from schedgate.runtime.health import get, tls_context


@pytest.fixture
def local(cluster):
    if not isinstance(cluster.backend, LocalBackend):
        pytest.skip("checks the local provider's own control plane")
    return cluster.backend.cp


def test_etcd_refuses_plain_http_and_tls_without_a_client_certificate(local):
    try:
        status, body = get("127.0.0.1", local.etcd_port, "/health", None)
    except (OSError, http.client.HTTPException):
        status, body = None, ""  # the connection refused outright
    assert status in (None, 400) and "health" not in body, f"plain HTTP answered {status}: {body[:80]}"
    with pytest.raises(ssl.SSLError):  # no certificate: the handshake itself fails
        get("127.0.0.1", local.etcd_port, "/v3/kv/range", tls_context(local.pki / "ca.crt"))
    pki = local.pki
    status, body = get("127.0.0.1", local.etcd_port, "/health",
                       tls_context(pki / "ca.crt", pki / "etcd-client.crt", pki / "etcd-client.key"))
    assert status == 200 and '"health":"true"' in body.replace(" ", ""), body


def test_the_api_server_refuses_a_request_without_credentials(local):
    status, body = get("127.0.0.1", local.api_port, "/api/v1/secrets", tls_context(local.pki / "ca.crt"))
    assert status == 401, body[:200]


def test_the_scheduler_identity_cannot_read_secrets(local, cluster):
    under_test = Path(local.run.path) / "under-test.kubeconfig"
    core = k8s.CoreV1Api(new_client(under_test))
    with pytest.raises(ApiException) as e:
        core.list_secret_for_all_namespaces()
    assert e.value.status == 403
    core.list_node(limit=1)  # what it needs, it may

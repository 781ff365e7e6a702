"""A scheduler's own identity in a cluster whose API server schedgate does not start (existing, kind):
a ServiceAccount, a bound token for it, and a kubeconfig that holds the token and trusts the cluster's CA.

A scheduler that runs as a process on this machine (a kube-scheduler beside an existing cluster, a black
box beside any cluster) reaches the API server with nothing but this: no admin credentials, no client
certificate schedgate would have to sign with the cluster's CA key.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as k8s

TOKEN_SECONDS = 24 * 3600


def identity_name(lease: str) -> str:
    """The ServiceAccount a scheduler holding ``lease`` runs as."""
    return "sched-" + re.sub(r"[^a-z0-9-]", "-", lease.lower())[:50].strip("-")


def cluster_ca(api: k8s.ApiClient, dest: Path) -> Path | None:
    """The CA the client trusts, copied to ``dest`` (the client's own copy is a temporary file)."""
    ca = api.configuration.ssl_ca_cert
    if not ca:
        return None
    dest.write_bytes(Path(ca).read_bytes())
    return dest


def token_kubeconfig(core: Any, identity: str, namespace: str, *, server: str, ca: Path | None, path: Path,
                     tls_server_name: str | None = None) -> Path:
    """Write ``path``: ServiceAccount ``namespace/identity``'s bound token for ``server`` (a proxy's
    address may stand there, the server's certificate still checked under ``tls_server_name``)."""
    path.write_text(token_kubeconfig_text(core, identity, namespace, server=server, ca=ca,
                                          tls_server_name=tls_server_name))
    path.chmod(0o600)
    return path


def token_kubeconfig_text(core: Any, identity: str, namespace: str, *, server: str, ca: Path | str | None,
                          tls_server_name: str | None = None) -> str:
    """The kubeconfig of :func:`token_kubeconfig`, as text (``ca``: a path where it is read)."""
    req: Any = core.create_namespaced_service_account_token(
        identity, namespace, {"spec": {"expirationSeconds": TOKEN_SECONDS}})
    cluster: dict[str, Any] = {"server": server}
    if ca is not None:
        cluster["certificate-authority"] = str(ca)
    if tls_server_name:
        cluster["tls-server-name"] = tls_server_name
    doc = {"apiVersion": "v1", "kind": "Config", "current-context": "schedgate",
           "clusters": [{"name": "schedgate", "cluster": cluster}],
           "users": [{"name": identity, "user": {"token": req.status.token}}],
           "contexts": [{"name": "schedgate", "context": {"cluster": "schedgate", "user": identity}}]}
    return str(yaml.safe_dump(doc))

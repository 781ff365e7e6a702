"""Before a run touches somebody's cluster: does its kubeconfig answer, and may it do what a run does?

Each problem is one line naming the kubeconfig (and context), and for a
missing right the verb and resource, checked with SelfSubjectAccessReview —
the API server's own answer, as ``kubectl auth can-i`` gives it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from schedgate.errors import DefinitionError, SchedgateError
from schedgate.kube.api import new_client
from schedgate.spec.files import read_text
from schedgate.spec.schedconfig import LEASE_NAMESPACE

# A run's own namespace and sync node, beside a schedgate-made cluster's (schedgate-system, schedgate-sync).
KUBECONFIG_BYTES = 4 * 1024 * 1024
SYSTEM_NAMESPACE = "schedgate-run"
SYNC_NODE = "schedgate-sync-run"


@dataclass(frozen=True)
class Right:
    verb: str
    resource: str
    group: str = ""
    namespace: str = ""
    why: str = ""

    def __str__(self) -> str:
        res = f"{self.resource}.{self.group}" if self.group else self.resource
        return f"{self.verb} {res}" + (f" in namespace {self.namespace}" if self.namespace else "")


RBAC = "rbac.authorization.k8s.io"
# What one run does, grouped by why (the reason goes into the refusal).
RIGHTS: tuple[Right, ...] = (
    *(Right(v, "namespaces", why="a namespace per test") for v in ("create", "delete", "get")),
    *(Right(v, "pods", why="scenario pods") for v in ("create", "delete", "list", "watch")),
    *(Right(v, "events", "events.k8s.io", why="the schedulers' events") for v in ("list", "watch")),
    *(Right(v, "nodes", why="the definition's nodes and the sync node") for v in
      ("get", "list", "watch", "patch", "create", "delete")),
    Right("patch", "nodes/status", why="node resources and the sync node"),
    Right("create", "serviceaccounts", namespace=SYSTEM_NAMESPACE, why="the scheduler under test's identity"),
    Right("create", "serviceaccounts/token", namespace=SYSTEM_NAMESPACE, why="the scheduler under test's token"),
    *(Right(v, "clusterrolebindings", RBAC, why="RBAC for the scheduler under test") for v in ("create", "delete")),
    *(Right(v, r, RBAC, LEASE_NAMESPACE, why="the scheduler under test's lease RBAC")
      for r in ("roles", "rolebindings") for v in ("create", "delete")),
    *(Right(v, "leases", "coordination.k8s.io", LEASE_NAMESPACE, why="leader election, undone at the end")
      for v in ("get", "list", "watch", "delete")),
)


def where(kubeconfig: Path, context: str | None) -> str:
    return f"--kubeconfig {kubeconfig}" + (f" --context {context}" if context else "")


def check_kubeconfig(kubeconfig: Path | None, context: str | None) -> Path:
    """The file exists, is a kubeconfig, and has the context asked for."""
    if kubeconfig is None:
        raise SchedgateError("--provider existing needs --kubeconfig FILE (the cluster to run in)")
    try:
        text = read_text(kubeconfig, "kubeconfig", KUBECONFIG_BYTES)
    except DefinitionError as e:
        raise SchedgateError(f"--kubeconfig {e.path}: {e.problem}") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise SchedgateError(f"--kubeconfig {kubeconfig}: not YAML" + (f" (line {mark.line + 1})" if mark else "")) \
            from None
    if not isinstance(doc, dict) or not isinstance(doc.get("contexts"), list):
        raise SchedgateError(f"--kubeconfig {kubeconfig}: not a kubeconfig (no 'contexts' list)")
    names = [c.get("name") for c in doc["contexts"] if isinstance(c, dict)]
    wanted = context or doc.get("current-context")
    if not wanted:
        raise SchedgateError(f"--kubeconfig {kubeconfig}: no current-context; name one with --context "
                             f"(contexts: {', '.join(map(str, names)) or 'none'})")
    if wanted not in names:
        raise SchedgateError(f"{where(kubeconfig, context)}: no context {wanted!r} in the file "
                             f"(contexts: {', '.join(map(str, names)) or 'none'})")
    return kubeconfig


def connect(kubeconfig: Path, context: str | None) -> tuple[k8s.ApiClient, str]:
    """A client, and the server's version (``v1.37.2``); one line if the API server does not answer."""
    at = where(kubeconfig, context)
    try:
        api = new_client(kubeconfig, context)
    except Exception as e:  # noqa: BLE001 — the client's loader raises many kinds, all one user problem
        raise SchedgateError(f"{at}: cannot be loaded ({_first(e)})") from None
    server = api.configuration.host
    try:
        info = k8s.VersionApi(api).get_code(_request_timeout=10)
    except ApiException as e:
        if e.status in (401, 403):
            raise SchedgateError(f"{at}: the API server at {server} refuses these credentials "
                                 f"(HTTP {e.status} on GET /version)") from None
        raise SchedgateError(f"{at}: the API server at {server} answered HTTP {e.status} on GET /version") from None
    except Exception as e:  # noqa: BLE001 — refused, unreachable, TLS, timeout: one line each
        raise SchedgateError(f"{at}: the API server at {server} does not answer ({_first(e)})") from None
    return api, str(info.git_version)


def _first(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    # urllib3 wraps the reason in a long retry message; keep its last, telling part.
    m = re.search(r"\(Caused by (\w+\(.*)\)\s*$", text, re.S)
    return (m.group(1) if m else text).splitlines()[0][:300]


def missing_rights(api: k8s.ApiClient, rights: tuple[Right, ...] = RIGHTS) -> list[Right]:
    authz: Any = k8s.AuthorizationV1Api(api)
    missing = []
    for r in rights:
        verb, _, sub = r.resource.partition("/")
        attrs = {"verb": r.verb, "resource": verb, "group": r.group}
        if sub:
            attrs["subresource"] = sub
        if r.namespace:
            attrs["namespace"] = r.namespace
        review = authz.create_self_subject_access_review(
            {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
             "spec": {"resourceAttributes": attrs}}, _request_timeout=10)
        if not review.status.allowed:
            missing.append(r)
    return missing


def user_name(api: k8s.ApiClient) -> str:
    """Who the kubeconfig is (SelfSubjectReview), or '' where the server cannot say."""
    try:
        authn: Any = k8s.AuthenticationV1Api(api)
        review = authn.create_self_subject_review(
            {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}, _request_timeout=10)
        return str(review.status.user_info.username or "")
    except Exception:  # noqa: BLE001 — only for the message
        return ""


def check_rights(api: k8s.ApiClient, kubeconfig: Path, context: str | None) -> None:
    missing = missing_rights(api)
    if not missing:
        return
    who = user_name(api)
    first = missing[0]
    more = f"; also missing: {', '.join(map(str, missing[1:]))}" if missing[1:] else ""
    raise SchedgateError(f"{where(kubeconfig, context)}: {('user ' + who) if who else 'this user'} may not "
                         f"{first} (needed for {first.why}){more}")


def check_skew(server: str, scheduler: str) -> None:
    """kube-scheduler may be as new as the API server and at most one minor version older."""
    s, c = _minor(server), _minor(scheduler)
    if s is None or c is None:
        return
    if c not in (s, (s[0], s[1] - 1)):
        raise SchedgateError(f"the cluster's API server is {server} and the scheduler under test is {scheduler}: "
                             "kube-scheduler must be the API server's minor version or one older "
                             "(pin another with go/hack/pin-kubernetes.sh, or --bin-dir)")


def _minor(version: str) -> tuple[int, int] | None:
    m = re.match(r"v?(\d+)\.(\d+)", version)
    return (int(m.group(1)), int(m.group(2))) if m else None

"""Objects of any kind by manifest: create, merge-patch and delete through API discovery.

A scenario's ``apply``, ``patch`` and ``delete`` steps use :class:`Objects`; namespaced kinds live in the
run's namespace, cluster-scoped ones beside it; :meth:`Objects.clean_up` deletes both.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from kubernetes import __version__ as client_version
from kubernetes.client import ApiClient
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.discovery import LazyDiscoverer
from kubernetes.dynamic.exceptions import ResourceNotFoundError, ResourceNotUniqueError

from schedgate.errors import ComponentError
from schedgate.kube.api import ignore_not_found
from schedgate.kube.poll import poll_until
from schedgate.spec.crds import CRD_API, CRD_KIND, is_crd

MERGE = "application/merge-patch+json"
CRD_TIMEOUT = 60.0  # a CRD established, or gone with its objects


class MemoryDiscoverer(LazyDiscoverer):
    """The client's lazy API discovery, its cache held in memory for as long as the client lives. By default it
    keeps it in ``$TMPDIR/osrcp-<hash of the server's address>.json``: a file left behind by every run, and one
    another user of a shared machine can plant for the next client of that address to read."""

    def _Discoverer__init_cache(self, refresh: bool = False) -> None:  # noqa: N802 — the base's private name
        self._cache = {"library_version": client_version}
        self._load_server_info()  # type: ignore[no-untyped-call]
        self.discover()  # type: ignore[no-untyped-call]

    def _write_cache(self) -> None:
        pass


@dataclass(frozen=True)
class Ref:
    api_version: str
    kind: str
    name: str
    namespace: str | None  # None: cluster-scoped

    def __str__(self) -> str:
        return f"{self.kind}/{self.name}" + (f" in {self.namespace}" if self.namespace else "")


@dataclass
class Objects:
    api: ApiClient
    namespace: str
    created: list[Ref] = field(default_factory=list)
    # called with the kind of each object patched or deleted (a scheduler may hear of it late)
    changed: Callable[[str], None] | None = None

    @cached_property
    def _dyn(self) -> DynamicClient:
        return DynamicClient(self.api, discoverer=MemoryDiscoverer)  # type: ignore[no-untyped-call]

    def _resource(self, api_version: str | None, kind: str) -> Any:
        try:
            if api_version:
                return self._dyn.resources.get(api_version=api_version, kind=kind)
            return self._dyn.resources.get(kind=kind)
        except ResourceNotFoundError:
            raise ComponentError(f"the API server serves no kind {kind!r}"
                                 + (f" in {api_version}" if api_version else "")) from None
        except ResourceNotUniqueError:
            raise ComponentError(f"kind {kind!r} is served by more than one API group; name its apiVersion") from None

    def resource_of(self, api_version: str, kind: str) -> tuple[str, bool]:
        """The resource that serves ``kind`` in ``api_version``: its plural name, and whether it is namespaced."""
        res = self._resource(api_version, kind)
        return str(res.name), bool(res.namespaced)

    def create(self, manifest: Mapping[str, Any]) -> Ref:
        res = self._resource(str(manifest["apiVersion"]), str(manifest["kind"]))
        ns = self.namespace if res.namespaced else None
        body = dict(manifest)
        if ns:
            body["metadata"] = {**manifest["metadata"], "namespace": ns}
        res.create(body=body, namespace=ns)
        ref = Ref(str(manifest["apiVersion"]), str(manifest["kind"]), str(manifest["metadata"]["name"]), ns)
        self.created.append(ref)
        if is_crd(manifest):
            self._established(res, ref.name)
        return ref

    def _established(self, res: Any, name: str, timeout: float = CRD_TIMEOUT) -> None:
        """Wait until the CRD ``name`` serves its kinds (condition Established), and discovery knows them: the
        next step may create one at once. A CRD the API server will not serve is one line with its reason."""
        def served() -> bool:
            conditions = {c["type"]: c for c in (res.get(name=name).to_dict().get("status") or {}).get(
                "conditions") or []}
            refused = conditions.get("NamesAccepted", {})
            if refused.get("status") == "False":
                raise ComponentError(f"CustomResourceDefinition {name}: {refused.get('message') or 'names refused'}")
            return bool(conditions.get("Established", {}).get("status") == "True")

        poll_until(served, f"CustomResourceDefinition {name} established", timeout, interval=0.05,
                   error=ComponentError)
        self._dyn.resources.invalidate_cache()

    def patch(self, api_version: str | None, kind: str, name: str, body: Mapping[str, Any]) -> None:
        res = self._resource(api_version, kind)
        res.patch(name=name, namespace=self.namespace if res.namespaced else None, body=dict(body),
                  content_type=MERGE)
        if self.changed is not None:
            self.changed(kind)

    def delete(self, api_version: str | None, kind: str, name: str) -> None:
        """Delete the object; what it owns (a Deployment's ReplicaSets, a Job's pods) goes after it, in the
        background (a Job's own default would leave its pods behind)."""
        self._delete(api_version, kind, name)
        if self.changed is not None:
            self.changed(kind)

    def _delete(self, api_version: str | None, kind: str, name: str) -> None:
        res = self._resource(api_version, kind)
        ignore_not_found(res.delete, name=name, namespace=self.namespace if res.namespaced else None,
                         body={"propagationPolicy": "Background"})

    def clean_up(self) -> None:
        """Delete what :meth:`create` made (newest first): cluster-scoped objects would outlive the run, and a
        workload controller would make pods again while the namespace's pods are deleted. A CRD is waited for
        until it is gone (its objects first): the next file on the cluster may define it again."""
        for ref in reversed(self.created):
            self._delete(ref.api_version, ref.kind, ref.name)
            if ref.kind == CRD_KIND and ref.api_version == CRD_API:
                res = self._resource(ref.api_version, ref.kind)
                poll_until(lambda: ignore_not_found(res.get, name=ref.name) is None,  # noqa: B023 — called here
                           f"CustomResourceDefinition {ref.name} deleted", CRD_TIMEOUT, interval=0.05,
                           error=ComponentError)
        self.created.clear()

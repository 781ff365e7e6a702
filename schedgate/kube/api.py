"""API calls: bounded retries for transient errors on reads, and the 404/409 idioms written once.

A list or watch that hits a dropped connection or a 429/5xx is tried again a
few times within seconds; anything else, and any write, fails at once (a
retried create could double-apply).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import urllib3
from kubernetes import client as k8s
from kubernetes import config as kube_config
from kubernetes import utils
from kubernetes.client import ApiClient, Configuration
from kubernetes.client.exceptions import ApiException
from tenacity import retry, retry_if_exception, stop_after_attempt, stop_after_delay, wait_exponential

T = TypeVar("T")
TRANSIENT_STATUS = frozenset({429, 500, 502, 503, 504})


def is_transient(e: BaseException) -> bool:
    if isinstance(e, ApiException):
        return e.status in TRANSIENT_STATUS
    return isinstance(e, (urllib3.exceptions.ProtocolError, urllib3.exceptions.MaxRetryError,
                          urllib3.exceptions.ReadTimeoutError, ConnectionError))


def _retrying(alive: Callable[[], None] | None) -> Any:
    """Bounded retries of transient errors; ``alive()`` runs before each retry and may raise to stop them
    (a component that died is why the API does not answer: no use asking again)."""
    return retry(retry=retry_if_exception(is_transient), stop=stop_after_attempt(5) | stop_after_delay(10),
                 wait=wait_exponential(multiplier=0.1, max=2), reraise=True,
                 before_sleep=(lambda _: alive()) if alive is not None else None)


def new_client(kubeconfig: Path, context: str | None = None) -> ApiClient:
    """A client of the cluster ``kubeconfig`` (its ``context``, else its current one) names. Its HTTP
    layer still re-opens a dropped connection, but never re-sends a request that got no answer:
    :func:`read` bounds those retries, and writes are not repeated at all."""
    configuration = Configuration()
    kube_config.load_kube_config(config_file=str(kubeconfig), context=context,  # type: ignore[no-untyped-call]
                                 client_configuration=configuration)
    configuration.retries = urllib3.Retry(total=3, read=0, status=0, redirect=0)
    return ApiClient(configuration=configuration)


# The API classes schedgate uses: kubernetes.client imports each on first use, CoreV1Api's module alone
# in about 0.9 s here.
API_CLASSES = ("CoreV1Api", "EventsV1Api", "CoordinationV1Api", "ResourceV1Api", "RbacAuthorizationV1Api",
               "SchedulingV1Api", "VersionApi")


def import_api_classes_meanwhile() -> threading.Thread:
    """Import :data:`API_CLASSES` in a background thread, e.g. while a control plane starts (its processes'
    work, not this one's): the first client call then does not import them inside the start's last steps."""
    t = threading.Thread(target=lambda: [getattr(k8s, name) for name in API_CLASSES],
                         name="schedgate-import-api-classes", daemon=True)
    t.start()
    return t


# A read that gets no answer in this time is given up (and tried again if time is left): an API server
# whose etcd is gone holds a request for its own 60 s timeout, longer than any wait should hang on it.
READ_TIMEOUT = 10.0


def read(fn: Callable[..., T], *args: Any, alive: Callable[[], None] | None = None, **kwargs: Any) -> T:
    """Call a read-only API function, retrying transient failures (at most 5 tries, 10 s); each try has
    ``READ_TIMEOUT`` seconds to be answered unless the call sets its own ``_request_timeout``."""
    kwargs.setdefault("_request_timeout", READ_TIMEOUT)
    result: T = _retrying(alive)(fn)(*args, **kwargs)
    return result


def read_json(fn: Callable[..., Any], *args: Any, alive: Callable[[], None] | None = None,
              **kwargs: Any) -> dict[str, Any]:
    """A read returning the object as the API server sent it (camelCase JSON), not a client model."""
    resp = read(fn, *args, alive=alive, _preload_content=False, **kwargs)
    doc: dict[str, Any] = json.loads(resp.data)
    return doc


def pages(fn: Callable[..., Any], limit: int = 500, **kwargs: Any) -> Iterator[list[dict[str, Any]]]:
    """A list call's items a page (``limit`` objects) at a time, as the API server sent them."""
    token = None
    while True:
        page = read_json(fn, limit=limit, _continue=token, **kwargs)  # the client leaves out a None
        yield page.get("items") or []
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return


def ignore_not_found(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T | None:
    """Call ``fn``; an answer of 404 (the object is not there) is ``None``, anything else is raised."""
    try:
        return fn(*args, **kwargs)
    except ApiException as e:
        if e.status == 404:
            return None
        raise


def create_or_keep(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T | None:
    """Call a create; an answer of 409 (it exists already) keeps the existing object and is ``None``."""
    try:
        return fn(*args, **kwargs)
    except ApiException as e:
        if e.status == 409:
            return None
        raise


def create_objects(api: ApiClient, objects: Iterable[dict[str, Any]]) -> None:
    """Create manifests of any kind (``kubernetes.utils``); objects that already exist are kept."""
    for obj in objects:
        try:
            utils.create_from_dict(api, obj)  # type: ignore[no-untyped-call]
        except utils.FailToCreateError as e:
            if not all(getattr(x, "status", None) == 409 for x in e.api_exceptions):
                raise

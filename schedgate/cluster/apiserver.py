"""What a cluster's API server says of itself beyond its objects: its feature gates (from its /metrics) and
whether it serves an API version (its discovery). Works on every provider, a cluster schedgate did not make
too."""

from __future__ import annotations

import re

from kubernetes import client as k8s

from schedgate.errors import ComponentError
from schedgate.objects.metrics import parse_metrics

FEATURE_METRIC = "kubernetes_feature_enabled"  # every component's /metrics: {name, stage} 1 or 0


def _get(api: k8s.ApiClient, path: str) -> tuple[int, bytes]:
    method, url, headers, body, post = api.param_serialize(method="GET", resource_path=path,
                                                           auth_settings=["BearerToken"])
    try:
        r = api.call_api(method, url, headers, body, post, _request_timeout=30)
        r.read()  # type: ignore[no-untyped-call]
    except k8s.ApiException as e:
        return int(e.status or 0), b""
    return int(r.status), r.data or b""


def read_feature_gates(api: k8s.ApiClient) -> dict[str, bool]:
    """The API server's feature gates (name -> on) from its /metrics (``kubernetes_feature_enabled``)."""
    status, data = _get(api, "/metrics")
    if status != 200:
        raise ComponentError(f"GET /metrics of the API server: HTTP {status}; cannot tell its feature gates")
    snap = parse_metrics(data.decode(errors="replace"))
    return {s.labels["name"]: s.value == 1 for s in snap.select(FEATURE_METRIC) if "name" in s.labels}


def start_and_gates(api: k8s.ApiClient) -> tuple[float, dict[str, bool]] | None:
    """When the API server answers ready: its process's start (Unix seconds) and its feature gates, read line by
    line from its /metrics (tens of thousands of lines, read again and again while it restarts); else ``None``."""
    status, data = _get(api, "/readyz")
    if (status, data.strip()) != (200, b"ok"):
        return None
    status, data = _get(api, "/metrics")
    if status != 200:
        return None
    return start_and_gates_in(data.decode(errors="replace"))


def start_and_gates_in(text: str) -> tuple[float, dict[str, bool]]:
    """A component's process start (0 if its /metrics text has none) and feature gates, line by line."""
    started, gates = 0.0, {}
    for line in text.splitlines():
        if line.startswith("process_start_time_seconds "):
            started = float(line.rsplit(" ", 1)[1])
        elif line.startswith(FEATURE_METRIC + "{") and (m := _GATE_NAME.search(line)):
            gates[m.group(1)] = float(line.rsplit(" ", 1)[1]) == 1.0
    return started, gates


_GATE_NAME = re.compile(r'[{,]name="([^"]+)"')


def serves(api: k8s.ApiClient, group_version: str) -> bool:
    """Whether the API server serves ``group_version`` (``scheduling.k8s.io/v1beta1``, core ``v1``)."""
    return _get(api, f"/apis/{group_version}" if "/" in group_version else f"/api/{group_version}")[0] == 200

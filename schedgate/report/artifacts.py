"""What a failed test leaves behind to explain itself (and any test, on request).

One folder per test under ``--artifacts`` (default ``artifacts/``)::

    summary.txt        the test, its outcome and failure, how to reach the cluster
    steps.txt          a scenario file's steps with the time each one ended
    pods.yaml          the test's pods; nodes.yaml: every node
    events.txt         the test's events as one timeline, oldest first
    timings.csv        per pod: create->scheduled, scheduled->ready, attempts
    placement.html     the placement picture (schedgate.picture), with "why, per node"
    explain.txt        per pod, per node: the score plugins' scores or the filter that rejected it,
                       read from the schedulers' own logs (schedgate.report.explain)
    cluster.yaml       the cluster definition the run used
    schedulers/NAME.log, NAME.metrics.txt, NAME.config.yaml   each scheduler's log,
                       /metrics snapshot and the configuration it really ran with
    node-logs/         kind only: ``kind export logs`` (kubelet, containerd, pods of every node)
"""

from __future__ import annotations

import csv
import re
import shutil
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from schedgate.cluster import Ability, Cluster, ExportsLogs, is_sync_node
from schedgate.kube.api import read_json
from schedgate.objects.schedlog import read_logs
from schedgate.report.explain import explain, explain_html, explain_text
from schedgate.report.picture import placement_html
from schedgate.report.timing import HEADER, PodTiming, event_time, pod_timings
from schedgate.runtime.scheduler import distinct


def folder_for(root: Path, nodeid: str) -> Path:
    """``e2e/test_x.py::test_y[a]`` -> ``ROOT/e2e.test_x.py--test_y-a``."""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", nodeid.replace("/", ".").replace("::", "--")).strip("-")
    return root / safe[:180]


def _strip(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    meta.pop("managedFields", None)
    return obj


def _timeline(events: list[dict[str, Any]]) -> list[str]:
    rows = []
    for e in events:
        t = event_time(e) or 0.0
        reg = e.get("regarding") or {}
        count = (e.get("series") or {}).get("count") or e.get("deprecatedCount") or 1
        rows.append((t, f"{_iso(t)}  {e.get('type', ''):7}  {e.get('reason', ''):18}  "
                        f"{e.get('reportingController') or '-':24}  {reg.get('kind', '')}/{reg.get('name', '')}"
                        f"{f'  (x{count})' if int(count) > 1 else ''}  {e.get('note') or ''}"))
    return [r for _, r in sorted(rows, key=lambda x: x[0])]


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%H:%M:%S.%f")[:-3] if t else "?"


def write_timings(path: Path, timings: Iterable[PodTiming]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(HEADER)
        for t in timings:
            w.writerow(t.row())


def collect(dest: Path, cluster: Cluster, namespaces: list[str], *, title: str, summary: list[str],
            transcript: list[str] | None = None, created: dict[str, float] | None = None,
            failure: str = "") -> Path:
    """Write the artifacts folder ``dest`` (replacing an older one); returns it.

    Each part is written on its own: an API or scheduler that is down costs
    that part (noted in ``errors.txt``), never the rest.
    """
    if dest.exists():
        shutil.rmtree(dest)
    (dest / "schedulers").mkdir(parents=True)
    errors: list[str] = []
    down = cluster.died(control_plane_only=True)

    def part(name: str, fn: Any, api: bool = True) -> Any:
        if api and down:
            errors.append(f"{name}: not read, the control plane is down: {down[0].split(';')[0]}")
            return None
        try:
            return fn()
        except Exception as e:  # noqa: BLE001 — best effort: a missing part is recorded, not fatal
            errors.append(f"{name}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
            return None

    (dest / "summary.txt").write_text("\n".join(summary) + "\n")
    if transcript:
        (dest / "steps.txt").write_text("\n".join(transcript) + "\n")
    core, ev = cluster.core, cluster.events_api
    nodes = part("nodes", lambda: read_json(core.list_node).get("items") or []) or []
    all_pods = part("pods", lambda: read_json(core.list_pod_for_all_namespaces).get("items") or []) or []
    mine = [p for p in all_pods if (p.get("metadata") or {}).get("namespace") in namespaces]
    (dest / "pods.yaml").write_text(yaml.safe_dump_all([_strip(p) for p in mine], sort_keys=False))
    (dest / "nodes.yaml").write_text(yaml.safe_dump_all([_strip(n) for n in nodes], sort_keys=False))
    events: list[dict[str, Any]] = []
    timings: list[PodTiming] = []
    for ns in namespaces:
        events += part(f"events in {ns}", lambda ns=ns: read_json(ev.list_namespaced_event, ns).get("items")) or []
        timings += part(f"timings in {ns}", lambda ns=ns: pod_timings(core, ev, ns, created)) or []
    (dest / "events.txt").write_text("\n".join(_timeline(events)) + "\n")
    write_timings(dest / "timings.csv", timings)
    shown = [n for n in nodes if not is_sync_node((n.get("metadata") or {}).get("name") or "")]
    why = part("explain", lambda: explain(mine, read_logs(s.log_path for s in distinct(cluster.schedulers)), shown),
               api=False) or []
    (dest / "explain.txt").write_text(explain_text(why))
    (dest / "placement.html").write_text(placement_html(
        nodes, all_pods, title=title, pending_namespaces=namespaces, failure=failure, extra=explain_html(why),
        subtitle=f"cluster {cluster.definition.name} ({cluster.definition.source}) on {cluster.provider}, "
                 f"Kubernetes {cluster.kubernetes_version}"))
    src = Path(cluster.definition.source)
    if src.is_file():
        shutil.copy(src, dest / "cluster.yaml")
    for s in distinct(cluster.schedulers):
        base = dest / "schedulers" / s.name
        if s.log_path and s.log_path.exists():
            shutil.copy(s.log_path, base.with_suffix(".log"))
        if s.config_path.exists():
            shutil.copy(s.config_path, base.with_suffix(".config.yaml"))
        text = part(f"scheduler {s.name} /metrics", s.metrics_text, api=False) if s.alive() else None
        if text is not None:
            base.with_suffix(".metrics.txt").write_text(text)
    if cluster.can(Ability.EXPORTS_LOGS):
        logs = cluster.use(ExportsLogs)  # type: ignore[type-abstract]
        part("node logs", lambda: logs.export_logs(dest / "node-logs"), api=False)
    if errors:
        (dest / "errors.txt").write_text("\n".join(errors) + "\n")
    return dest

"""The placement picture: one self-contained HTML page of who holds which GPU.

Each node is a row: its name and pool, labels and taints, one square per
allocatable GPU filled with the colour of the pod holding it (free squares
stay pale, GPUs requested beyond allocatable show as red overflow), and the
pods bound to it. Pending pods follow with the scheduler's reason and
message. No scripts, no external files: it opens anywhere and survives
being attached to a CI run.
"""

from __future__ import annotations

import colorsys
import html
import zlib
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from schedgate.cluster import is_sync_node
from schedgate.spec.cluster import GPU

FREE = "#e4e9f0"
OVERFLOW = "#d62828"
HIDDEN_NAMESPACES = ("kube-system", "schedgate-system", "schedgate-run", "local-path-storage")
# Labels every node has; they say nothing about placement.
QUIET_LABELS = ("kubernetes.io/hostname", "kubernetes.io/os", "kubernetes.io/arch", "beta.kubernetes.io/os",
                "beta.kubernetes.io/arch")


def pod_color(name: str) -> str:
    """A stable colour per pod name, never the free or overflow colour."""
    h = 40 + zlib.crc32(name.encode()) % 280  # hues 40..320: clear of the overflow red
    r, g, b = colorsys.hls_to_rgb(h / 360, 0.50, 0.60)
    return f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"


def _gpus(pod: dict[str, Any]) -> int:
    total = 0
    for c in (pod.get("spec") or {}).get("containers") or []:
        req = ((c.get("resources") or {}).get("requests") or {})
        total += int(req.get(GPU, "0"))
    return total


def _cpu(pod: dict[str, Any]) -> str:
    cs = [((c.get("resources") or {}).get("requests") or {}).get("cpu") for c in
          (pod.get("spec") or {}).get("containers") or []]
    return "+".join(str(c) for c in cs if c) or "0"


def _esc(s: object) -> str:
    return html.escape(str(s), quote=True)


def _cond(pod: dict[str, Any], t: str) -> dict[str, Any]:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == t:
            return dict(c)
    return {}


def placement_html(nodes: Iterable[dict[str, Any]], pods: Iterable[dict[str, Any]], *, title: str,
                   subtitle: str = "", pending_namespaces: Iterable[str] | None = None, failure: str = "",
                   extra: str = "") -> str:
    """The page for these nodes and pods (API JSON objects); ``extra``: more HTML at its end."""
    nodes = sorted((n for n in nodes if not is_sync_node((n.get("metadata") or {}).get("name") or "")),
                   key=lambda n: n["metadata"]["name"])
    live = [p for p in pods if (p.get("metadata") or {}).get("namespace") not in HIDDEN_NAMESPACES
            and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
    by_node: dict[str, list[dict[str, Any]]] = {}
    pending = []
    scoped = set(pending_namespaces) if pending_namespaces is not None else None
    for p in sorted(live, key=lambda p: (p["metadata"].get("namespace", ""), p["metadata"]["name"])):
        node = (p.get("spec") or {}).get("nodeName")
        if node:
            by_node.setdefault(node, []).append(p)
        elif scoped is None or p["metadata"].get("namespace") in scoped:
            pending.append(p)
    rows = [_node_row(n, by_node.pop(n["metadata"]["name"], [])) for n in nodes]
    stray = sum(len(v) for v in by_node.values())  # bound to a node that no longer exists
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    out = [
        "<!doctype html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>schedgate placement: {_esc(title)}</title>", f"<style>{_CSS}</style></head><body>",
        f"<h1>{_esc(title)}</h1>",
        *([f'<pre class="failure">{_esc(failure)}</pre>'] if failure else []),
        f'<p class="meta">{_esc(subtitle)}{" · " if subtitle else ""}taken {stamp} · '
        f"{len(nodes)} nodes · {sum(1 for p in live if (p.get('spec') or {}).get('nodeName'))} pods bound · "
        f"{len(pending)} pending</p>",
        '<p class="legend"><span class="slot" style="background:' + FREE + '"></span> free GPU &nbsp; '
        '<span class="slot" style="background:' + OVERFLOW + '"></span> requested beyond allocatable</p>',
        '<table class="nodes"><thead><tr><th>node</th><th>labels and taints</th><th>GPUs</th>'
        "<th>pods on it</th></tr></thead><tbody>", *rows, "</tbody></table>",
    ]
    if stray:
        out.append(f'<p class="warn">{stray} pod(s) bound to nodes that no longer exist: '
                   + ", ".join(_esc(p["metadata"]["name"]) for v in by_node.values() for p in v) + "</p>")
    out.append(f"<h2>pending pods ({len(pending)})</h2>")
    if pending:
        out.append('<table class="pending"><thead><tr><th>pod</th><th>scheduler</th><th>GPUs</th><th>reason</th>'
                   "<th>message</th></tr></thead><tbody>")
        for p in pending:
            c = _cond(p, "PodScheduled")
            out.append(f'<tr><td>{_esc(p["metadata"]["name"])}</td>'
                       f'<td>{_esc((p.get("spec") or {}).get("schedulerName", ""))}</td><td>{_gpus(p)}</td>'
                       f'<td class="reason">{_esc(c.get("reason") or "not tried yet")}</td>'
                       f'<td class="msg">{_esc(c.get("message") or "")}</td></tr>')
        out.append("</tbody></table>")
    else:
        out.append('<p class="meta">none</p>')
    if extra:
        out.append(extra)
    out.append("</body></html>")
    return "\n".join(out)


def _node_row(node: dict[str, Any], pods: list[dict[str, Any]]) -> str:
    meta, spec, status = node.get("metadata") or {}, node.get("spec") or {}, node.get("status") or {}
    name = meta.get("name", "")
    labels = meta.get("labels") or {}
    pool = labels.get("schedgate.io/pool", "")
    alloc = int((status.get("allocatable") or {}).get(GPU, "0"))
    tags = [f'<span class="label">{_esc(k)}={_esc(v)}</span>' for k, v in sorted(labels.items())
            if k not in QUIET_LABELS and k != "schedgate.io/pool"]
    tags += [f'<span class="taint">{_esc(t.get("key"))}{"=" + _esc(t["value"]) if t.get("value") else ""}:'
             f'{_esc(t.get("effect"))}</span>' for t in spec.get("taints") or []]
    if spec.get("unschedulable"):
        tags.append('<span class="taint">cordoned</span>')
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
    if not ready:
        tags.append('<span class="taint">NotReady</span>')
    slots: list[str] = []
    chips = []
    for p in pods:
        pname = p["metadata"]["name"]
        n = _gpus(p)
        color = pod_color(pname)
        for _ in range(n):
            over = len(slots) >= alloc
            slots.append(f'<span class="slot{" over" if over else ""}" title="{_esc(pname)}" '
                         f'style="background:{OVERFLOW if over else color}"></span>')
        chips.append(f'<span class="pod" style="border-left:4px solid {color}" title="cpu {_esc(_cpu(p))}">'
                     f'{_esc(pname)}'
                     f'{f" · {n} GPU" if n else ""}</span>')
    slots += ['<span class="slot" style="background:' + FREE + '"></span>'] * max(0, alloc - len(slots))
    gpu_cell = "".join(slots) or '<span class="meta">no GPUs</span>'
    return (f'<tr class="node" id="node-{_esc(name)}"><th>{_esc(name)}<br><small>{_esc(pool)}</small></th>'
            f'<td class="tags">{" ".join(tags)}</td><td class="gpus">{gpu_cell}</td>'
            f'<td class="pods">{" ".join(chips)}</td></tr>')


_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:16px;color:#1d2633;background:#fff}
h1{font-size:18px;margin:0 0 4px} h2{font-size:15px;margin:18px 0 6px}
.meta{color:#5b6776;margin:2px 0 10px} .warn{color:#a4161a;font-weight:600}
table{border-collapse:collapse} th,td{padding:6px 8px;border-bottom:1px solid #d8dee6;text-align:left;
vertical-align:middle} thead th{font-size:12px;color:#5b6776;font-weight:600}
tr.node th{white-space:nowrap} small{color:#5b6776;font-weight:400}
.slot{display:inline-block;width:22px;height:22px;margin:1px;border-radius:3px;vertical-align:middle}
.legend .slot{width:12px;height:12px}
.gpus{white-space:nowrap}
.label,.taint,.pod{display:inline-block;padding:1px 6px;margin:1px;border-radius:9px;font-size:12px;
border:1px solid #c3ccd8}
.taint{border-color:#e0a458;color:#7a4a00} .pod{border-color:#9aa7b8}
.failure{background:#fdecea;border:1px solid #d62828;padding:8px;white-space:pre-wrap;font-size:12px;max-width:1100px}
.pending .reason{font-weight:600} .msg{font-family:ui-monospace,monospace;font-size:12px;max-width:720px}
"""

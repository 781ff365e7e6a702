"""Why each pod went where it went, per node: ``explain.txt`` and a section of ``placement.html``, read
from the schedulers' own logs (:mod:`schedgate.objects.schedlog`) — what the binary under test logged,
no plugin of ours.

For a pod's last attempt, each node is either feasible (its total and each score plugin's weighted
score; the winner marked) or rejected: by the plugin whose own line names the node, by the only plugin
that rejected nodes in that attempt, or by one of the plugins that did (kube-scheduler keeps the
per-node filter status to itself; the page says so rather than guess).
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from schedgate.objects.schedlog import SCORED_UP_TO, Attempt, PodLog

# NodeUnschedulable rejects only nodes marked unschedulable; on any other node it cannot be the filter.
_CORDON_ONLY = frozenset({"NodeUnschedulable"})
CHOSEN = "#1b7f5a"     # the row of the node the pod was bound to
REJECTED = "#f6d5d5"   # rows of nodes a filter rejected
_CSS = (f"h3.explain-pod{{font-size:14px;margin:14px 0 4px}} .explain td{{font-size:12px}} "
        f".explain tr.chosen td{{background:{CHOSEN};color:#fff;font-weight:600}} "
        f".explain tr.rejected td{{background:{REJECTED}}}")


@dataclass(frozen=True)
class Row:
    node: str
    verdict: str
    total: int | None
    scores: Mapping[str, int]


@dataclass(frozen=True)
class Explanation:
    pod: str
    scheduler: str
    attempts: int
    outcome: str
    rows: tuple[Row, ...]
    plugins: tuple[str, ...]
    note: str = ""


def explain(pods: Iterable[Mapping[str, Any]], logs: Mapping[str, PodLog], nodes: Iterable[Mapping[str, Any]]
            ) -> list[Explanation]:
    node_list = [(n["metadata"]["name"], bool((n.get("spec") or {}).get("unschedulable"))) for n in nodes]
    out = []
    for p in pods:
        meta, spec = p.get("metadata") or {}, p.get("spec") or {}
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        log = logs.get(key)
        if log is None or not log.attempts:
            continue
        last = log.attempts[-1]
        out.append(_one(key, str(spec.get("schedulerName", "")), len(log.attempts), last, node_list))
    return out


def _one(pod: str, scheduler: str, attempts: int, a: Attempt, nodes: list[tuple[str, bool]]) -> Explanation:
    plugins = tuple(dict.fromkeys(pl for s in a.scores.values() for pl in s))
    best = max(a.totals.values(), default=None)
    tied = sorted(n for n, t in a.totals.items() if t == best)
    rows = []
    unscored = bool(a.bound_to and not a.totals and (a.feasible or 0) > 1)  # score lines were off
    for name, cordoned in nodes:
        if unscored:
            rows.append(Row(name, "chosen" if name == a.bound_to else "no verdict: scores not logged", None, {}))
        elif name in a.totals:
            verdict = "chosen" if name == a.bound_to else "feasible"
            if len(tied) > 1 and name in tied:
                verdict += f" (top score shared by {len(tied)} nodes: the scheduler took one of them)"
            rows.append(Row(name, verdict, a.totals[name], a.scores.get(name, {})))
        elif a.bound_to == name:
            rows.append(Row(name, "chosen (the only feasible node: no scores logged)", None, {}))
        else:
            rows.append(Row(name, a.rejected_by(name, frozenset() if cordoned else _CORDON_ONLY), None, {}))
    if a.bound_to:
        outcome = f"bound to {a.bound_to}"
    elif a.failure is not None:
        outcome = ("error: " if a.error else "unschedulable: ") + a.failure
    else:
        outcome = "in progress"
    note = "" if a.totals or not a.bound_to else "one feasible node: the scheduler logs no scores then"
    if unscored:
        note = (f"{a.feasible} feasible nodes; no score lines in the log (schedgate leaves them off above "
                f"{SCORED_UP_TO} nodes, where they slow the scheduler several times)")
    return Explanation(pod, scheduler, attempts, outcome, tuple(rows), plugins, note)


def explain_text(items: list[Explanation]) -> str:
    if not items:
        return "no scheduling attempt of these pods is in the schedulers' logs\n"
    out: list[str] = []
    for e in items:
        out.append(f"pod {e.pod} (scheduler {e.scheduler}): {e.attempts} attempt(s); last: {e.outcome}")
        if e.note:
            out.append(f"  ({e.note})")
        width = max((len(r.node) for r in e.rows), default=4)
        head = f"  {'node':<{width}}  {'total':>5}  " + "  ".join(e.plugins)
        out.append(head + ("  verdict" if e.plugins else "verdict"))
        for r in e.rows:
            total = "" if r.total is None else str(r.total)
            cells = "  ".join(f"{r.scores.get(pl, ''):>{len(pl)}}" for pl in e.plugins)
            out.append(f"  {r.node:<{width}}  {total:>5}  {cells}{'  ' if e.plugins else ''}{r.verdict}")
        out.append("")
    return "\n".join(out)


def explain_html(items: list[Explanation]) -> str:
    esc = html.escape
    out = [f"<style>{_CSS}</style>", '<h2 id="explain">why, per node</h2>',
           '<p class="meta">From the schedulers\' own logs: each node\'s total and per-plugin weighted score in '
           "the pod's last attempt, or the filter that rejected it where the log names one.</p>"]
    if not items:
        out.append('<p class="meta">no scheduling attempt of these pods is in the schedulers\' logs</p>')
    for e in items:
        out.append(f'<h3 class="explain-pod">{esc(e.pod)} <span class="meta">{esc(e.scheduler)} · '
                   f"{e.attempts} attempt(s) · {esc(e.outcome)}</span></h3>")
        cols = "".join(f"<th>{esc(p)}</th>" for p in e.plugins)
        out.append(f'<table class="explain"><thead><tr><th>node</th><th>verdict</th><th>total</th>{cols}</tr>'
                   "</thead><tbody>")
        for r in e.rows:
            cls = "chosen" if r.verdict.startswith("chosen") else "feasible" if r.total is not None else "rejected"
            cells = "".join(f"<td>{r.scores.get(p, '')}</td>" for p in e.plugins)
            out.append(f'<tr class="{cls}"><td>{esc(r.node)}</td><td>{esc(r.verdict)}</td>'
                       f"<td>{'' if r.total is None else r.total}</td>{cells}</tr>")
        out.append("</tbody></table>")
    return "\n".join(out)

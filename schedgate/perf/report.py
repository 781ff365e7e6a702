"""A comparison's files for the artifacts folder: ``perf.csv`` (both sides, ratios, every turn) and
``perf.html`` (the figures and the create->bound distribution of both sides, as an inline SVG)."""

from __future__ import annotations

import csv
import html
import io

from schedgate.perf.budget import Figures
from schedgate.perf.measure import BASELINE, PHASES, UNDER_TEST, Comparison

COLOURS = {UNDER_TEST: "#c0392b", BASELINE: "#2c6fbb"}
W, H, PAD = 560, 260, 44


def perf_files(c: Comparison, f: Figures) -> dict[str, str]:
    return {"perf.csv": _csv(c, f), "perf.html": _html(c, f)}


def _csv(c: Comparison, f: Figures) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["figure", UNDER_TEST, BASELINE, "ratio"])
    w.writerows(f.rows())
    w.writerow([])
    w.writerow(["turn", "side", "nodes", "backlog pods/s", "backlog first to last Scheduled (s)",
                "one-at-a-time create->bound p50 (ms)", "turn (s)",
                "CPU ready, backlog bound, end (s)", "CPU per backlog pod (ms)", *(f"{p} (s)" for p in PHASES)])
    for t in c.turns:
        lat = sorted(t.latencies)
        w.writerow([t.index + 1, t.side, t.nodes, f"{t.throughput:.2f}", f"{t.drain:.3f}",
                    f"{lat[len(lat) // 2] * 1000:.2f}" if lat else "-", f"{t.seconds:.1f}",
                    " ".join(f"{x:.2f}" for x in t.cpu), f"{t.cpu_per_pod * 1000:.2f}",
                    *(f"{t.phases[p]:.1f}" if p in t.phases else "-" for p in PHASES)])
    if c.paired:
        w.writerow([])
        w.writerow(["paired round", "pods each", f"CPU per pod {UNDER_TEST} (ms)", f"CPU per pod {BASELINE} (ms)",
                    "ratio", "round (s)"])
        for r in c.paired:
            w.writerow([r.index + 1, r.pods, f"{r.under_test / r.pods * 1000:.3f}",
                        f"{r.baseline / r.pods * 1000:.3f}", f"{r.ratio:.3f}", f"{r.seconds:.1f}"])
    return out.getvalue()


def _cdf_svg(c: Comparison) -> str:
    """Each side's create->bound, one-at-a-time pods of all its turns, as a cumulative distribution."""
    sides = {s.label: sorted(x * 1000 for t in c.of(s.label) for x in t.latencies) for s in c.sides}
    top = max((xs[-1] for xs in sides.values() if xs), default=1.0) * 1.05 or 1.0
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" '
             f'font-size="11"><rect width="{W}" height="{H}" fill="white"/>',
             f'<line x1="{PAD}" y1="{H - PAD}" x2="{W - 10}" y2="{H - PAD}" stroke="#333"/>',
             f'<line x1="{PAD}" y1="10" x2="{PAD}" y2="{H - PAD}" stroke="#333"/>',
             f'<text x="{(W + PAD) // 2}" y="{H - 8}" text-anchor="middle">'
             'create->bound (ms), one pod at a time</text>',
             f'<text x="12" y="{H // 2}" transform="rotate(-90 12 {H // 2})" text-anchor="middle">share of pods</text>']
    for i in range(5):
        x = PAD + (W - 10 - PAD) * i / 4
        parts.append(f'<text x="{x:.0f}" y="{H - PAD + 14}" text-anchor="middle">{top * i / 4:.0f}</text>')
        y = H - PAD - (H - PAD - 10) * i / 4
        parts.append(f'<text x="{PAD - 4}" y="{y + 4:.0f}" text-anchor="end">{i * 25}%</text>')
    for k, (label, xs) in enumerate(sides.items()):
        if not xs:
            continue
        pts = " ".join(f"{PAD + (W - 10 - PAD) * x / top:.1f},{H - PAD - (H - PAD - 10) * (j + 1) / len(xs):.1f}"
                       for j, x in enumerate(xs))
        parts.append(f'<polyline fill="none" stroke="{COLOURS[label]}" stroke-width="2" points="{pts}"/>')
        parts.append(f'<text x="{W - 16}" y="{H - PAD - 30 - 14 * k}" text-anchor="end" fill="{COLOURS[label]}">'
                     f'{html.escape(label)} ({len(xs)} pods)</text>')
    return "".join(parts) + "</svg>"


def _html(c: Comparison, f: Figures) -> str:
    u, b = c.sides
    rows = "".join(f"<tr><td>{html.escape(n)}</td><td>{html.escape(x)}</td><td>{html.escape(y)}</td>"
                   f"<td>{html.escape(r)}</td></tr>" for n, x, y, r in f.rows())
    turns = "".join(f"<tr><td>{t.index + 1}</td><td>{html.escape(t.side)}</td><td>{t.throughput:.1f}</td>"
                    f"<td>{t.drain:.2f}</td><td>{t.seconds:.1f}</td></tr>" for t in c.turns)
    w = c.workload
    return (f"<!doctype html><meta charset=utf-8><title>schedgate performance</title>"
            f"<style>body{{font-family:sans-serif;margin:2em}}td,th{{padding:2px 10px;text-align:right}}"
            f"td:first-child,th:first-child{{text-align:left}}</style>"
            f"<h1>Scheduler under test against its baseline</h1>"
            f"<p>{w.nodes} fresh nodes per turn; {w.backlog} backlog pods, then {w.one_at_a_time} one at a time; "
            f"{len(c.turns)} turns alternating.<br>under test: {html.escape(u.profile)} "
            f"({html.escape(u.config.source)}; {html.escape(str(u.binary or 'the scheduler under test'))})<br>"
            f"baseline: {html.escape(b.profile)} ({html.escape(b.config.source)}; "
            f"{html.escape(str(b.binary or 'the scheduler under test'))})</p>"
            f"{_cdf_svg(c)}<h2>Figures</h2><table><tr><th>figure</th><th>{UNDER_TEST}</th><th>{BASELINE}</th>"
            f"<th>ratio</th></tr>{rows}</table><h2>Turns</h2><table><tr><th>turn</th><th>side</th>"
            f"<th>backlog pods/s</th><th>first to last Scheduled (s)</th><th>turn (s)</th></tr>{turns}</table>"
            f"<p>Where the time grew: {html.escape(f.where_grew())}</p>")

"""The placement picture, as headless chromium renders it: slots coloured by the pod holding them."""

from __future__ import annotations

from pathlib import Path

from browser import pixels, screenshot

from schedgate.report.picture import FREE, OVERFLOW, placement_html, pod_color
from schedgate.spec.cluster import GPU


def node(name: str, gpus: int, labels: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None):
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "spec": {"taints": taints or []},
            "status": {"allocatable": {GPU: str(gpus)}, "conditions": [{"type": "Ready", "status": "True"}]}}


def pod(name: str, gpus: int, on: str | None = None, reason: str = "", message: str = ""):
    p = {"metadata": {"name": name, "namespace": "t"},
         "spec": {"schedulerName": "gpu-packing-scheduler", "containers": [
             {"name": "main", "resources": {"requests": {GPU: str(gpus), "cpu": "4"}}}]},
         "status": {"phase": "Pending"}}
    if on:
        p["spec"]["nodeName"] = on
    if reason:
        p["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": reason,
                                      "message": message}]
    return p


def test_each_gpu_slot_shows_the_pod_holding_it_in_the_browser(tmp_path: Path):
    nodes = [node("gpu-net-1", 8, {"infra.example.com/high-speed-network": "true"}),
             node("gpu-net-2", 8, {"infra.example.com/high-speed-network": "true"}),
             node("train-1", 8, taints=[{"key": "schedgate.io/dedicated", "value": "training",
                                         "effect": "NoSchedule"}])]
    pods = [pod("infer", 3, on="gpu-net-1"), pod("trainer", 8, on="gpu-net-2"),
            pod("waiting", 8, reason="Unschedulable", message="0/3 nodes are available: 2 Insufficient nvidia.com/gpu")]
    page = tmp_path / "placement.html"
    page.write_text(placement_html(nodes, pods, title="picture test", pending_namespaces=["t"]))
    text = page.read_text()
    assert "0/3 nodes are available: 2 Insufficient nvidia.com/gpu" in text
    assert "schedgate.io/dedicated=training:NoSchedule" in text
    assert "<script" not in text and "http" not in text.split("</title>", 1)[1], "the page must be self-contained"

    seen = pixels(screenshot(page, tmp_path / "shot.png"))
    infer, trainer, free = seen[pod_color("infer")], seen[pod_color("trainer")], seen[FREE]
    assert infer > 0 and trainer > 0 and free > 0, f"slots not rendered: {seen.most_common(8)}"
    # 3 held, 8 held and 5 + 8 free slots of one size; the legend's swatch and pod chips add a little.
    assert abs(trainer / infer - 8 / 3) < 0.35, (trainer, infer)
    assert abs(free / infer - 13 / 3) < 0.6, (free, infer)
    assert seen[OVERFLOW] < infer / 3, "nothing is requested beyond allocatable, only the legend is red"


def test_gpus_requested_beyond_allocatable_show_as_overflow(tmp_path: Path):
    nodes = [node("gpu-net-1", 2)]
    pods = [pod("a", 2, on="gpu-net-1"), pod("b", 2, on="gpu-net-1")]
    page = tmp_path / "placement.html"
    page.write_text(placement_html(nodes, pods, title="overflow"))
    seen = pixels(screenshot(page, tmp_path / "shot.png"))
    # Two slots of b overflow, none free: red shows slot-sized, the free colour only in the legend.
    assert seen[OVERFLOW] > seen[FREE] * 2, (seen[OVERFLOW], seen[FREE])
    assert seen[pod_color("b")] < seen[pod_color("a")] / 2

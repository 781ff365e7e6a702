"""The documentation: a short README over a site (docs/, mkdocs.yml) that builds strictly and renders in a
real browser, and documents every step, outcome, pod and node field a file takes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from browser import pixels, screenshot

import schedgate.scenarios.load  # noqa: F401  (registers every step and outcome)
from schedgate.scenarios.outcomes import OUTCOMES
from schedgate.scenarios.steps import STEPS
from schedgate.scenarios.template import TEMPLATE_FIELDS
from schedgate.spec.cluster import NODE

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
DOCS = "\n".join(p.read_text() for p in sorted((ROOT / "docs").rglob("*.md")))
PRIMARY = "#4051b5"  # the theme's header colour


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)], cwd=ROOT,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "WARNING" not in done.stderr, done.stderr[-3000:]
    return out


def test_the_site_builds_strictly_with_a_page_for_each_entry_of_its_nav(site):
    nav = re.findall(r":\s+([\w/.-]+\.md)$", (ROOT / "mkdocs.yml").read_text(), re.M)
    assert len(nav) >= 25
    for page in nav:
        built = site / ("index.html" if page == "index.md" else page.removesuffix(".md") + "/index.html")
        assert built.is_file(), f"{page}: not built ({built})"


def test_the_home_page_renders_in_a_real_browser(site, tmp_path):
    shot = screenshot(site / "index.html", tmp_path / "home.png")
    colours = pixels(shot)
    assert colours[PRIMARY] > 40_000, colours.most_common(5)  # the theme's header bar: the stylesheet loaded
    dark = sum(n for c, n in colours.items() if max(int(c[i:i + 2], 16) for i in (1, 3, 5)) < 0x60)
    assert dark > 5_000, colours.most_common(8)  # text, not a blank page


def test_the_readme_is_short_and_its_links_lead_to_pages_that_exist():
    assert len(README.splitlines()) <= 200
    links = re.findall(r"\]\((docs/[^)#]+)\)", README)
    assert len(links) >= 20
    for link in links:
        assert (ROOT / link).is_file(), link


@pytest.mark.parametrize("name", sorted({*STEPS, *OUTCOMES, *TEMPLATE_FIELDS, *NODE.allowed}))
def test_every_scenario_and_cluster_field_is_documented(name):
    # Named in the text (`name`) or in an example (name: ...).
    assert f"`{name}" in DOCS or f" {name}:" in DOCS, f"docs/ does not document `{name}`"


PICTURES = {"getting-started/quickstart.md": "hard-constraint", "guides/out-of-tree.md": "maintenance-avoided",
            "guides/scenario-files.md": "gpu-quota"}


@pytest.mark.parametrize("page, name", PICTURES.items())
def test_the_quickstart_and_two_guides_show_a_placement_picture_drawn_from_a_real_run(page, name):
    assert f"](../images/{name}.png)" in (ROOT / "docs" / page).read_text(), page
    script = (ROOT / "scripts" / "docs-pictures").read_text()
    drawn = re.search(rf"^picture {name} (\S+)", script, re.M)
    assert drawn and (ROOT / drawn[1]).is_file(), f"scripts/docs-pictures draws no {name} from a file that exists"
    colours = pixels(ROOT / "docs" / "images" / f"{name}.png")
    assert len(colours) > 20 and colours.most_common(1)[0][1] < 0.95 * sum(colours.values()), \
        f"{name}.png is blank: {colours.most_common(3)}"

"""The reference pages made from the command line's declarations (``docs/reference/cli.md`` from the
``schedgate`` command's parser, ``docs/reference/options.md`` from the plugin's ``pytest_addoption``): committed
as the code makes them now, showing what is added to the code, and the same whatever the environment."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from schedgate.cli import command, reference
from schedgate.pytest_plugin import options
from schedgate.pytest_plugin.options import Option

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("name", sorted(reference.PAGES))
def test_the_reference_pages_are_what_the_parsers_make_now(name):
    page = ROOT / "docs" / "reference" / name
    assert page.is_file(), f"{page} is missing: run `schedgate schema --write`"
    assert page.read_text(encoding="utf-8") == reference.render_page(name), \
        f"{page.name} has drifted from the code: run `schedgate schema --write` and commit the result"


@pytest.mark.parametrize("name", sorted(reference.PAGES))
def test_each_page_says_what_writes_it_under_its_title(name):
    title, blank, marker = reference.render_page(name).splitlines()[:3]
    assert title.startswith("# ") and blank == ""
    assert marker.startswith("<!-- Made by `schedgate schema --write` from ") and marker.endswith("do not edit. -->")


NEW = Option("--frobnicate-nodes", "made up: frobnicate every node before the run", metavar="COUNT", default="3",
             cli=True)


def test_a_new_pytest_option_shows_on_both_pages(monkeypatch):
    monkeypatch.setattr(options, "OPTIONS", (*options.OPTIONS, NEW))
    row = "| `--frobnicate-nodes COUNT` | `3` | made up: frobnicate every node before the run |"
    assert row in reference.options_page().splitlines()
    up = reference.cli_page().split("## `schedgate up`")[1].split("\n## ")[0]  # `up` shares it (cli=True)
    assert "| `--frobnicate-nodes COUNT` | `3` | made up: frobnicate every node before the run |" in up


def test_an_option_with_an_ini_setting_names_it():
    page = reference.options_page()
    assert "| `--cluster FILE` | — (ini `schedgate_cluster`) | cluster definition" in page
    assert "| `schedgate_scheduler_config` | — | default scheduler configuration file" in page


def test_a_new_command_and_its_arguments_show_on_the_command_page(monkeypatch):
    made = command.parser

    def parser() -> argparse.ArgumentParser:
        ap = made()
        sub = next(a for a in ap._actions if isinstance(a, argparse._SubParsersAction))
        p = sub.add_parser("frobnicate", help="made up: frobnicate a cluster", description="Frobnicate it, well.")
        p.add_argument("run_dir", type=Path, help="which run")
        p.add_argument("--times", type=int, default=2, metavar="N", help="how often (%(default)s unless given)")
        p.add_argument("--loudly", action="store_true", help="say so")
        return ap

    monkeypatch.setattr(reference, "command_parser", parser)
    page = reference.cli_page()
    assert "| [`frobnicate`](#schedgate-frobnicate) | made up: frobnicate a cluster |" in page
    section = page.split("## `schedgate frobnicate`")[1]
    assert "schedgate frobnicate [OPTIONS] run_dir" in section and "Frobnicate it, well." in section
    for row in ("| `run_dir` | — | which run |", "| `--times N` | `2` | how often (2 unless given) |",
                "| `--loudly` | off | say so |"):
        assert row in section


def test_every_subcommand_and_option_of_the_parser_is_on_the_page():
    page = reference.render_page("cli.md")
    for name, (_, p) in reference._commands(command.parser()).items():
        assert f"## `schedgate {name}`" in page
        for action in p._actions:
            for flag in action.option_strings:
                assert flag in page, (name, flag)


def test_the_pages_do_not_depend_on_the_environment(monkeypatch):
    monkeypatch.setenv("SCHEDGATE_PROVIDER", "kind")
    monkeypatch.setenv("SCHEDGATE_KUBERNETES_VERSION", "1.35")
    monkeypatch.setenv("COLUMNS", "40")
    for name in reference.PAGES:
        assert reference.render_page(name) == (ROOT / "docs" / "reference" / name).read_text(encoding="utf-8")
    assert os.environ["SCHEDGATE_PROVIDER"] == "kind"  # and the environment is given back whole
    assert reference.pytest_parser()._groups  # (built again, still in its own empty one)
    assert os.environ["SCHEDGATE_KUBERNETES_VERSION"] == "1.35"


def test_an_options_default_from_the_environment_is_read_when_the_option_is_added(monkeypatch):
    def provider() -> str | None:
        parser = argparse.ArgumentParser()
        options.add_cli_options(parser)
        return parser.parse_args([]).provider

    monkeypatch.setenv("SCHEDGATE_PROVIDER", "kind")
    assert provider() == "kind"
    monkeypatch.delenv("SCHEDGATE_PROVIDER")
    assert provider() is None


def test_pages_are_written_where_asked(tmp_path):
    written = reference.write_pages(tmp_path)
    assert [p.name for p in written] == list(reference.PAGES)
    for p in written:
        assert p.read_text(encoding="utf-8") == reference.render_page(p.name)

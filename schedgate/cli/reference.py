"""The reference pages made from the command line's own declarations: ``docs/reference/cli.md`` from the
``schedgate`` command's parser (:func:`schedgate.cli.command.parser`), ``docs/reference/options.md`` from the
pytest plugin's ``pytest_addoption`` called on a real pytest parser. ``schedgate schema --write`` writes them
beside the scenario file's pages (:mod:`schedgate.scenarios.reference`); ``tests/unit/cli/test_reference.py``
fails when a committed page is not what the code makes now.

A page is a short hand-written part (what no parser holds: links, examples, what happens on bad input) around
what the parser says. Both parsers are built in an empty environment, so that a default read from a variable
(``$SCHEDGATE_PROVIDER``) does not make a page depend on the shell that wrote it."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from _pytest.config.argparsing import Parser

from schedgate.cli.command import parser as command_parser
from schedgate.pytest_plugin import hooks
from schedgate.scenarios import reference as scenario_pages
from schedgate.spec.shipped import ROOT

PAGES = {"cli.md": "the schedgate command", "options.md": "pytest options"}
INI_PREFIX = "schedgate_"  # an ini setting named schedgate_<dest> is the default of the option of that dest

CLI_INTRO = """\
`schedgate` is installed with the package (in a checkout, `.venv/bin/schedgate`; also `python -m schedgate`).
`schedgate COMMAND --help` prints what this page says of COMMAND. `up` takes the same cluster options as
pytest, from one table ([pytest options](options.md))."""

OPTIONS_INTRO = """\
The options the schedgate plugin adds to `pytest` (`pytest --help` lists them too). More on some of them:
[the existing provider](../providers/existing.md) (`--provider existing`, `--kubeconfig`, `--context`,
`--allow-fake-gpus`, `--scheduler-running`), [Pinned versions, side by side](../providers/versions.md)
(`--kubernetes-version`), [Performance gates](../guides/performance-gates.md) (`--baseline-scheduler-binary`,
`--baseline-scheduler-config`) and
[the reference independent scheduler](../guides/reference-plugins.md#the-reference-independent-scheduler)
(`--pool-scheduler-config`). A default of — means the option is unset unless given: its meaning says what the run
uses then."""

OPTIONS_OUTRO = """\
With `make`, pass options as `ARGS="..."`. Environment: `SCHEDGATE_CACHE`
(binary cache, default `~/.cache/schedgate`), `SCHEDGATE_GO_DIR`.

Bad input — a malformed cluster or profile file, an unknown field, a negative
GPU count, a missing file, an unknown provider, no Go toolchain — gets one line
naming the file and field, a non-zero exit (pytest's usage error, 4), and
starts nothing:

```
ERROR: clusters/bad.yaml: pools[0].capacity.nvidia.com/gpu: must be >= 0, got -2
```

Reading any file is bounded, so a half-written or hostile one cannot hang a run
or collection: files over 4 MiB, YAML anchors and aliases (`&a`, `*a`, `<<:`),
nesting deeper than 64 levels and numbers beyond each field's range (at most
10,000 nodes, 10,000 pods a scenario, 3,600 s a timeout) are refused with the
same one line (`tests/unit/scenarios/test_bounded_input.py` runs each shape under a CPU and
memory limit), and so are files of more than 50,000 keys and values.
`tests/unit/scenarios/test_bad_input_properties.py` checks the promise with Hypothesis: every
shipped cluster, configuration and scenario, mutated (wrong types, missing and
unknown keys, huge numbers, odd unicode, deep nesting, cut short), either loads
or fails in that one line; a batch of files up to the cap runs under the same
limits, and every quantity a definition accepts is one the arithmetic reads. It
is reproducible (derandomized, no example database);
`SCHEDGATE_HYPOTHESIS_EXAMPLES=500` searches harder and
`SCHEDGATE_HYPOTHESIS_RANDOM=1` afresh."""


@contextmanager
def _empty_environment() -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.clear()
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _text(text: str | None) -> str:
    """Help text as one line of a table cell (a ``*`` or ``|`` in it taken literally)."""
    return " ".join((text or "").split()).replace("|", "\\|").replace("*", "\\*").replace("<", "&lt;")


def _help(a: Mapping[str, Any], prog: str) -> str:
    text = a.get("help") or ""
    if "%" in text:  # argparse's own expansion: %(default)s, %(prog)s, %%
        params = {**a, "prog": prog}
        params["choices"] = ", ".join(map(str, a.get("choices") or ()))
        text = text % params
    return _text(text)


def _value(a: Mapping[str, Any]) -> str:
    """What follows an option, or a positional argument's name, shaped by its ``nargs``."""
    nargs = a.get("nargs")
    if nargs == 0:
        return ""
    metavar = a.get("metavar")
    if metavar is None and a.get("choices"):
        metavar = "{" + ",".join(map(str, a["choices"])) + "}"
    name = str(metavar if metavar is not None else a["dest"].upper() if a["option_strings"] else a["dest"])
    if nargs == "?":
        return f"[{name}]"
    if nargs in ("*", argparse.REMAINDER):
        return f"[{name} ...]"
    if nargs == "+":
        return f"{name} [{name} ...]"
    return " ".join([name] * nargs) if isinstance(nargs, int) else name


def _invocation(a: Mapping[str, Any], names: Sequence[str] | None = None) -> str:
    names = list(a["option_strings"] if names is None else names)
    value = _value(a)
    return " ".join(x for x in (", ".join(names), value) if x)


def _default(a: Mapping[str, Any]) -> str:
    d = a.get("default")
    if a.get("nargs") == 0:  # a flag
        return "on" if d else "off"
    if d is None or d == [] or d == argparse.SUPPRESS:
        return "—"
    text = str(d)
    if Path(text).is_absolute() and Path(text).is_relative_to(ROOT):  # a shipped file, wherever it is installed
        return f"schedgate's `{Path(text).relative_to(ROOT)}`"
    return f"`{text}`"


def _arguments(actions: Sequence[argparse.Action], prog: str) -> list[str]:
    rows = []
    for action in actions:
        if isinstance(action, argparse._HelpAction):
            continue
        a = vars(action)
        required = " (required)" if action.option_strings and action.required else ""
        rows.append(f"| `{_invocation(a)}`{required} | {_default(a)} | {_help(a, prog)} |")
    return ["| argument | default | meaning |", "|---|---|---|", *rows] if rows else []


def _synopsis(p: argparse.ArgumentParser) -> str:
    """``schedgate down (run_dir | --all)``: the positionals in order, required options, then ``[OPTIONS]``."""
    groups = {id(a): g for g in p._mutually_exclusive_groups if g.required for a in g._group_actions}
    parts, shown, optional = [p.prog], set(), False
    for action in p._actions:
        if isinstance(action, argparse._HelpAction) or id(action) in shown:
            continue
        group = groups.get(id(action))
        if group is not None:
            shown |= {id(x) for x in group._group_actions}
            parts.append("(" + " | ".join(_invocation(vars(x), x.option_strings[-1:]) if x.option_strings
                                          else x.dest for x in group._group_actions) + ")")
        elif not action.option_strings:
            parts.append(_value(vars(action)))
        elif action.required:
            parts.append(_invocation(vars(action), action.option_strings[-1:]))
        else:
            optional = True
    return " ".join(parts[:1] + (["[OPTIONS]"] if optional else []) + parts[1:])


def _commands(p: argparse.ArgumentParser) -> dict[str, tuple[str, argparse.ArgumentParser]]:
    """Each subcommand: its one-line help and its parser."""
    sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    helps = {c.dest: c.help or "" for c in sub._choices_actions}
    return {name: (helps.get(name, ""), parser) for name, parser in sub.choices.items()}


def cli_page() -> str:
    with _empty_environment():
        top = command_parser()
    commands = _commands(top)
    out = ["# The schedgate command", "",
           "<!-- Made by `schedgate schema --write` from the command's parser, schedgate/cli/command.py; "
           "do not edit. -->", "", CLI_INTRO, "", _text(top.description), "",
           "```text", (top.epilog or "").rstrip(), "```", "",
           "| command | what it does |", "|---|---|",
           *(f"| [`{name}`](#schedgate-{name}) | {_text(what)} |" for name, (what, _) in commands.items()), ""]
    for name, (what, p) in commands.items():
        out += [f"## `schedgate {name}`", "", "```sh", _synopsis(p), "```", "",
                _text(p.description or what), ""]
        table = _arguments(p._actions, p.prog)
        out += [*table, ""] if table else []
        out += [_text(p.epilog), ""] if p.epilog else []
    return "\n".join(out)


def pytest_parser() -> Parser:
    """A real pytest parser holding only what the plugin's ``pytest_addoption`` adds."""
    parser = Parser(prog="pytest", _ispytest=True)
    with _empty_environment():
        hooks.pytest_addoption(parser)
    return parser


def options_page(parser: Parser | None = None) -> str:
    parser = parser or pytest_parser()
    inis = parser._inidict
    out = ["# pytest options", "",
           "<!-- Made by `schedgate schema --write` from the plugin's pytest_addoption "
           "(schedgate/pytest_plugin/); do not edit. -->", "", OPTIONS_INTRO, ""]
    for group in parser._groups:
        if not group.options:
            continue
        out += [f"## {_text(group._arggroup.title or group.name)}", "",
                "| option | default | meaning |", "|---|---|---|"]
        for option in group.options:
            a = option.attrs()
            ini = INI_PREFIX + option.dest
            out.append(f"| `{_invocation(a, option.names())}` | {_default(a)}"
                       f"{f' (ini `{ini}`)' if ini in inis else ''} | {_help(a, 'pytest')} |")
        out.append("")
    if inis:
        out += ["## ini settings", "",
                "In `pytest.ini`, `pyproject.toml`'s `[tool.pytest.ini_options]`, or `-o NAME=VALUE`.", "",
                "| setting | default | meaning |", "|---|---|---|",
                *(f"| `{name}` | {_default({'default': default})} | {_text(help_)} |"
                  for name, (help_, _, default) in inis.items()), ""]
    return "\n".join([*out, OPTIONS_OUTRO, ""])


def render_page(name: str) -> str:
    if name == "cli.md":
        return cli_page()
    if name == "options.md":
        return options_page()
    raise KeyError(name)


def write_pages(folder: Path | None = None) -> list[Path]:
    """Regenerate these pages (in ``folder``, default the scenario pages' folder, a checkout's
    ``docs/reference``; an installed schedgate has no docs folder to write)."""
    if folder is None and not (ROOT / "pyproject.toml").is_file():
        return []
    out = folder or scenario_pages.DOCS
    out.mkdir(parents=True, exist_ok=True)
    for name in PAGES:
        (out / name).write_text(render_page(name), encoding="utf-8")
    return [out / name for name in PAGES]

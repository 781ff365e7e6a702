"""Reading the YAML files users write, with errors that name the file and the line.

    doc, lines = read_yaml(path, "cluster definition")
    lines.get("steps[2].createPods.count")   # -> 27, the line that field is on

Reading is bounded: a file over ``MAX_BYTES`` is refused before it is parsed,
anchors and aliases are refused where they appear (an alias "bomb" of a few
lines would otherwise expand to gigabytes when walked), and so is nesting
deeper than ``MAX_DEPTH``, and a file of more than ``MAX_NODES`` keys and
values (a few MiB of "- 1" lines would otherwise take a minute and a GiB).
What is left is parsed once, in time and memory linear in the file's size.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from schedgate.errors import DefinitionError

MAX_BYTES = 4 * 1024 * 1024
MAX_DEPTH = 64
MAX_NODES = 50_000  # keys and values: 5,000 nodes written out field by field fit; ~2 s and 40 MiB to read
MAX_FIELD = 1024  # characters of a field path with a line; a longer one gets its parent's


class _Refused(yaml.YAMLError):
    def __init__(self, problem: str, mark: Any) -> None:
        super().__init__(problem)
        self.problem = problem
        self.problem_mark = mark


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that refuses anchors, aliases and deep nesting while it composes."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._nodes = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, yaml.AliasEvent):
            raise _Refused(f"aliases (*{event.anchor}) are not supported; write the value out", event.start_mark)
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            raise _Refused(f"anchors (&{anchor}) are not supported; write the value out", event.start_mark)
        self._nodes += 1
        if self._nodes > MAX_NODES:
            raise _Refused(f"more than {MAX_NODES} keys and values", event.start_mark)
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _Refused(f"nested deeper than {MAX_DEPTH} levels", event.start_mark)
            node: yaml.Node | None = super().compose_node(parent, index)
            return node
        finally:
            self._depth -= 1


def parse_yaml(text: str, source: str | Path) -> tuple[Any, dict[str, int]]:
    """One YAML document and its field-to-line map; a problem raises DefinitionError naming ``source``."""
    loader = _BoundedLoader(text)
    try:
        node = loader.get_single_node()
        doc = None if node is None else loader.construct_document(node)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else "YAML"
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise DefinitionError(source, where, f"not valid YAML: {problem}") from None
    except (ValueError, OverflowError) as e:  # e.g. an integer with more digits than Python converts
        raise DefinitionError(source, "YAML", f"not valid YAML: {str(e).splitlines()[0]}") from None
    finally:
        loader.dispose()
    lines: dict[str, int] = {}
    if node is not None:
        _walk(node, "", lines)
    return doc, lines


def read_yaml(path: str | Path, what: str) -> tuple[Any, dict[str, int]]:
    """Parse one YAML file; returns its document and a map from field path to its 1-based line."""
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > MAX_BYTES:
            raise DefinitionError(p, "", f"{size} bytes; a {what} file may have at most {MAX_BYTES}")
        raw = p.read_bytes()
    except FileNotFoundError:
        raise DefinitionError(p, "", f"no such {what} file") from None
    except IsADirectoryError:
        raise DefinitionError(p, "", f"is a folder, not a {what} file") from None
    except OSError as e:
        raise DefinitionError(p, "", f"cannot read: {e.strerror}") from None
    except ValueError:  # a name holding NUL, which a YAML string may ("\0")
        raise DefinitionError(p, "", "cannot read: a file name cannot hold a NUL character") from None
    if len(raw) > MAX_BYTES:  # it grew, or it is not a regular file
        raise DefinitionError(p, "", f"more than {MAX_BYTES} bytes; a {what} file may have at most that")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DefinitionError(p, "", f"not UTF-8 text (byte {e.start})") from None
    return parse_yaml(text, p)


def _walk(node: yaml.Node, path: str, lines: dict[str, int]) -> None:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            key = str(k.value)
            sub = f"{path}.{key}" if path else key
            if len(sub) > MAX_FIELD:  # no field is named so; each node under it would copy it
                continue
            lines[sub] = k.start_mark.line + 1
            _walk(v, sub, lines)
            lines[sub] = k.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for i, v in enumerate(node.value):
            _walk(v, f"{path}[{i}]", lines)

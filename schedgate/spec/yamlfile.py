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
from schedgate.spec.files import read_text

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
    return _parse(text, source, many=False)[0]


def parse_yaml_all(text: str, source: str | Path) -> list[tuple[Any, dict[str, int]]]:
    """Every document of a YAML stream (``---`` between them), each with its field-to-line map (lines of the
    file); empty documents are left out. The bounds are the whole stream's."""
    return [(doc, lines) for doc, lines in _parse(text, source, many=True) if doc is not None]


def _parse(text: str, source: str | Path, many: bool) -> list[tuple[Any, dict[str, int]]]:
    try:
        loader = _BoundedLoader(text)  # its reader refuses control characters (a NUL) here already
    except yaml.reader.ReaderError as e:
        what = "a NUL byte" if e.character == 0 else f"the control character #x{e.character:04x}"
        raise DefinitionError(source, f"line {text.count(chr(10), 0, e.position) + 1}",
                              f"not valid YAML: {what} (YAML allows no control characters but tab, newline)") from None
    out: list[tuple[Any, dict[str, int]]] = []
    try:
        nodes = [loader.get_single_node()] if not many else \
            [loader.get_node() for _ in iter(loader.check_node, False)]
        for node in nodes:
            doc = None if node is None else loader.construct_document(node)
            lines: dict[str, int] = {}
            if node is not None:
                _walk(node, "", lines)
            out.append((doc, lines))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else "YAML"
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise DefinitionError(source, where, f"not valid YAML: {problem}") from None
    except (ValueError, OverflowError) as e:  # e.g. an integer with more digits than Python converts
        raise DefinitionError(source, "YAML", f"not valid YAML: {str(e).splitlines()[0]}") from None
    finally:
        loader.dispose()
    return out


def read_yaml(path: str | Path, what: str, kinds: tuple[str, ...] = (),
              fragment: str | None = None) -> tuple[Any, dict[str, int]]:
    """Parse one YAML file; returns its document and a map from field path to its 1-based line. The file is
    read by :func:`schedgate.spec.files.read_text`: a regular file of at most ``MAX_BYTES``.

    With ``kinds``, a mapping must be one of ours before any of its fields is quoted in an error: its ``kind``
    one of them (or, with ``fragment``, no ``kind`` and that key). Any other mapping (``/etc/shadow`` read as
    YAML, somebody's Pod) is refused without a word of its contents; what is no mapping at all is left to the
    loader, whose message names only its type."""
    text = read_text(path, what, MAX_BYTES)
    doc, lines = parse_yaml(text, Path(path))
    if kinds and isinstance(doc, dict) and not _ours(doc, kinds, fragment):
        also = f", or a '{fragment}:' mapping" if fragment else ""
        said = "has no kind" if "kind" not in doc else "must be " + " or ".join(kinds) + also
        raise DefinitionError(path, "kind", f"{said}: this is not a {what} file (line {lines.get('kind', 1)})")
    return doc, lines


def _ours(doc: dict[Any, Any], kinds: tuple[str, ...], fragment: str | None) -> bool:
    if "kind" in doc:
        return doc["kind"] in kinds
    return fragment is not None and fragment in doc


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

"""Reading the YAML files users write, with errors that name the file and the line.

    doc, lines = read_yaml(path, "cluster definition")
    lines.get("steps[2].createPods.count")   # -> 27, the line that field is on
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from schedgate.errors import DefinitionError


def read_yaml(path: str | Path, what: str) -> tuple[Any, dict[str, int]]:
    """Parse one YAML document; returns it and a map from field path to its 1-based line."""
    p = Path(path)
    try:
        text = p.read_text()
    except FileNotFoundError:
        raise DefinitionError(p, "", f"no such {what} file") from None
    except IsADirectoryError:
        raise DefinitionError(p, "", f"is a folder, not a {what} file") from None
    except OSError as e:
        raise DefinitionError(p, "", f"cannot read: {e.strerror}") from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else "YAML"
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise DefinitionError(p, where, f"not valid YAML: {problem}") from None
    lines: dict[str, int] = {}
    if node is not None:
        _walk(node, "", lines)
    return doc, lines


def _walk(node: yaml.Node, path: str, lines: dict[str, int]) -> None:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            key = str(k.value)
            sub = f"{path}.{key}" if path else key
            lines[sub] = k.start_mark.line + 1
            _walk(v, sub, lines)
            lines[sub] = k.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for i, v in enumerate(node.value):
            _walk(v, f"{path}[{i}]", lines)

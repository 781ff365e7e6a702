"""Errors schedgate reports to its user.

Every error a user can cause (a bad file, a missing tool, a scheduler that
refuses its configuration) is a :class:`SchedgateError` whose ``str()`` is one
line naming what is wrong and where. Failures of the system under test are not
errors of this kind: they are assertion failures (see :mod:`schedgate.waits`).
"""

from __future__ import annotations

from pathlib import Path


class SchedgateError(Exception):
    """A problem with the harness's input or environment, told in one line: whatever it quotes (a file's name
    with a newline in it, a tool's message), a character that would break or garble the line is escaped."""

    def __str__(self) -> str:
        return _one_line(super().__str__())


class DefinitionError(SchedgateError):
    """A cluster definition or scheduler configuration file is invalid."""

    def __init__(self, path: str | Path, field: str, problem: str) -> None:
        self.path = _one_line(str(path))
        self.field = _one_line(str(field))
        self.problem = _one_line(problem)
        where = f"{self.path}: {self.field}: " if self.field else f"{self.path}: "
        super().__init__(f"{where}{self.problem}")


def _one_line(text: str) -> str:
    """``text`` with each character that would break or garble the line (newlines, controls, bidi marks) escaped."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class ToolchainError(SchedgateError):
    """The binaries under test cannot be found or built."""


class ComponentError(SchedgateError):
    """A control-plane component or scheduler failed to start or died."""


class NotHere(ComponentError):
    """What a test needs that this cluster cannot give: a capability its provider lacks, an edit of a node
    the user did not open to edits. The pytest plugin skips the test with this reason; elsewhere it is an
    error like any other."""

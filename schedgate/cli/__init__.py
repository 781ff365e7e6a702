"""The ``schedgate`` command: one program with subcommands (see :mod:`.main`)."""

from schedgate.cli.main import main

__all__ = ["main"]

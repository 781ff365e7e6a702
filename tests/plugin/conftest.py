"""The plugin's own tests: pytest sessions of their own, under ``pytester``."""

from __future__ import annotations

import os

import pytest


@pytest.fixture
def session(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A pytest session in a folder of its own, with none of this run's SCHEDGATE_ settings."""
    for name in [k for k in os.environ if k.startswith("SCHEDGATE_")]:
        monkeypatch.delenv(name)
    return pytester

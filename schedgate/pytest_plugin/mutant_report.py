"""Loaded into each mutant run (``-p schedgate.pytest_plugin.mutant_report``): records how every failing test
failed, so ``schedgate mutants`` counts a mutant as caught only by an assertion in a test body. With
``SCHEDGATE_MUTANT_FIRST_CATCH`` set, the run ends at the first such failure (``--first-catch``): the tests
after it would only say again that the mutant is caught."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    import pytest

# pytest.hookimpl itself, without importing pytest where `schedgate mutants` only reads the names below
hookimpl = pluggy.HookimplMarker("pytest")

REPORT_ENV = "SCHEDGATE_MUTANT_REPORT"
FIRST_CATCH_ENV = "SCHEDGATE_MUTANT_FIRST_CATCH"


@hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    outcome = yield
    path = os.environ.get(REPORT_ENV)
    rep = outcome.get_result()
    if not path or not rep.failed:
        return
    assertion = call.excinfo is not None and call.excinfo.errisinstance(AssertionError)
    first = str(rep.longrepr).strip().splitlines()[-1] if rep.longrepr else ""
    with open(path, "a") as f:
        f.write(json.dumps({"test": item.nodeid, "when": rep.when, "assertion": assertion, "line": first[:300]})
                + "\n")
    if assertion and rep.when == "call" and os.environ.get(FIRST_CATCH_ENV):
        item.session.shouldfail = f"caught by {item.nodeid}"

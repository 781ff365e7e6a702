"""The baseline a performance scenario (:mod:`schedgate.perf`) and the outcome baselineAgrees ask, from the
run's options."""

from __future__ import annotations

import pytest

from schedgate.providers.base import binaries
from schedgate.pytest_plugin.options import baseline_options, request_from
from schedgate.scenarios.perf_steps import Baseline, baseline_from


def baseline_for(config: pytest.Config) -> Baseline:
    """The baseline of the run's options (``--baseline-scheduler-config``, ``--baseline-scheduler-binary``)."""
    given, binary = baseline_options(config)
    return baseline_from(given, binary, lambda: binaries(request_from(config).bin_dir).kube_scheduler)

"""The baseline a performance scenario measures the scheduler under test against (:mod:`schedgate.perf`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from schedgate.errors import SchedgateError
from schedgate.providers.base import binaries
from schedgate.pytest_plugin.options import baseline_options, request_from
from schedgate.spec.schedconfig import SchedulerConfig

Baseline = Callable[[SchedulerConfig, str], tuple[SchedulerConfig, Path | None]]


def baseline_for(config: pytest.Config) -> Baseline:
    """(configuration, binary) of the baseline of a one-profile configuration under test: the user's
    ``--baseline-scheduler-config`` (its profile of that name, or its only one), else the configuration
    itself (``same``) or without its out-of-tree plugins (``in-tree``); run by ``--baseline-scheduler-binary``,
    else the pinned kube-scheduler."""

    def resolve(mine: SchedulerConfig, mode: str) -> tuple[SchedulerConfig, Path | None]:
        given, binary = baseline_options(config)
        binary = binary or binaries(request_from(config).bin_dir).kube_scheduler
        profile = mine.profile_names[0]
        if given is not None:
            if profile in given.profile_names:
                return given.profile(profile), binary
            if len(given.profile_names) == 1:
                return given, binary
            raise SchedgateError(f"--baseline-scheduler-config {given.source}: no profile {profile!r} and more "
                                 f"than one other ({', '.join(given.profile_names)}); name one {profile!r}")
        return (mine if mode == "same" else mine.in_tree_only()[0]), binary

    return resolve

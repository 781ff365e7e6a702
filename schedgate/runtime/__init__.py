"""Processes schedgate runs: run folders and reaping, readiness, the pinned toolchain, scheduler processes."""

"""A crashed Go component's log is shown from its crash, not from the bottom of its stack trace."""

from __future__ import annotations

from schedgate.runtime.health import crash_tail, summarize_failure

BEFORE = [f'I1206 09:00:0{i}.000000  1 schedule_one.go:117] "Attempting to schedule pod" pod="ns/p{i}"'
          for i in range(5)]
PANIC = ["panic: crash-after-unschedulable: pod ns/too-big is Unschedulable", "",
         "goroutine 812 [running]:"] + [f"frame{i}(...)\n\t/src/x.go:{i}" for i in range(60)]


def test_a_log_that_ends_in_a_panic_is_shown_from_the_panic_line():
    shown = crash_tail(BEFORE + PANIC)
    assert shown[0] == PANIC[0]
    assert len(shown) == 25


def test_a_panic_while_panicking_is_shown_from_the_first():
    again = ["panic: first", "panic: second [recovered]"]
    assert crash_tail(BEFORE + again + PANIC[1:])[0] == "panic: first"


def test_a_log_without_a_crash_is_its_last_lines():
    assert crash_tail(BEFORE, keep=2) == BEFORE[-2:]


def test_the_one_line_summary_of_a_crash_is_its_panic_line_not_an_error_in_its_stack():
    stack = [*PANIC, "E1206 09:00:09.000000  1 runtime.go:1] error: observed a panic"]
    assert summarize_failure(BEFORE + stack) == PANIC[0]
    assert summarize_failure(["E1206 x] failed to start: boom", "I1206 bye"]) == "E1206 x] failed to start: boom"

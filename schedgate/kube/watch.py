"""One wait primitive: list, then watch from that resourceVersion, under a hard deadline.

``wait_for(target, matcher)`` reads the object, asks the matcher, and if the
answer is "not yet" watches it from the resourceVersion it read, asking again
on every change, until the matcher says yes (returns), says the object went
somewhere it must never go (fails at once), or the deadline passes (fails
with the last state seen). Between watch chunks it asks the target to check
the health of whatever it depends on, so a component's crash fails the wait at
once instead of running out the clock. The matchers for pods are in
:mod:`schedgate.objects.matchers`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol, TypeVar

import urllib3
from kubernetes.client.exceptions import ApiException

from schedgate.kube.api import read, read_json

DEFAULT_TIMEOUT = 30.0
_WATCH_CHUNK = 2  # seconds a single watch request may block before liveness is re-checked


class WaitTimeout(AssertionError):
    """The awaited state did not come before the deadline."""


class WrongOutcome(AssertionError):
    """The object reached a state the wait rules out (e.g. bound to a forbidden node)."""


class Verdict(Enum):
    MATCH = "match"
    PENDING = "pending"
    FAIL = "fail"


@dataclass(frozen=True)
class Check:
    verdict: Verdict
    why: str = ""


MATCH = Check(Verdict.MATCH)


def pending(why: str = "") -> Check:
    return Check(Verdict.PENDING, why)


def fail(why: str) -> Check:
    return Check(Verdict.FAIL, why)


class Matcher(Protocol):
    @property
    def description(self) -> str: ...

    def __call__(self, obj: dict[str, Any] | None) -> Check: ...


@dataclass(frozen=True)
class FnMatcher:
    """A matcher from a function of the object; ``on_missing`` answers when it does not exist."""

    description: str
    fn: Callable[[dict[str, Any]], Check]
    on_missing: Check = Check(Verdict.PENDING, "object does not exist")

    def __call__(self, obj: dict[str, Any] | None) -> Check:
        return self.on_missing if obj is None else self.fn(obj)


class Watchable(Protocol):
    """A single object ``wait_for`` can watch: a collection of at most one, plus a place to record it."""

    def describe(self) -> str: ...

    def list_call(self) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]: ...

    def check_health(self) -> None: ...

    def observed(self, obj: dict[str, Any] | None) -> None: ...

    def describe_object(self, obj: dict[str, Any] | None) -> str: ...


W = TypeVar("W", bound=Watchable)


def wait_for(target: W, matcher: Matcher, timeout: float = DEFAULT_TIMEOUT) -> W:
    """Wait until ``matcher`` accepts ``target``'s object; returns ``target`` (refreshed)."""
    last: list[dict[str, Any] | None] = [None]

    def accept(items: list[dict[str, Any]]) -> Check:
        last[0] = items[0] if items else None
        return matcher(last[0])

    try:
        wait_for_items(target, accept, matcher.description, timeout)
    except (WaitTimeout, WrongOutcome) as e:
        target.observed(last[0])
        raise type(e)(f"{e}\n  last seen: {target.describe_object(last[0])}") from None
    target.observed(last[0])
    return target


class Collection(Protocol):
    """What ``wait_for_items`` needs: how to list and watch a set of objects."""

    def describe(self) -> str: ...

    def list_call(self) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]: ...

    def check_health(self) -> None: ...


def wait_for_items(target: Collection, accept: Callable[[list[dict[str, Any]]], Check],
                   description: str, timeout: float = DEFAULT_TIMEOUT) -> list[dict[str, Any]]:
    """Wait until ``accept(items)`` matches for the listed objects; same rules as :func:`wait_for`.

    An API call that fails is first blamed on what the target depends on: if a component died, its
    death is what is raised (``check_health``), not the API error it caused."""
    try:
        return _wait_for_items(target, accept, description, timeout)
    except (WaitTimeout, WrongOutcome):
        raise
    except Exception:
        target.check_health()
        raise


def _wait_for_items(target: Collection, accept: Callable[[list[dict[str, Any]]], Check],
                    description: str, timeout: float) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    fn, args, kwargs = target.list_call()
    kwargs = dict(kwargs, alive=target.check_health)
    items, rv = _list(fn, args, kwargs)
    why = ""
    while True:
        c = accept(list(items.values()))
        if c.verdict is Verdict.MATCH:
            target.check_health()  # a verdict a crashing component left behind is the crash's
            return list(items.values())
        if c.verdict is Verdict.FAIL:
            raise WrongOutcome(f"{target.describe()}: waiting until {description}: {c.why}")
        why = c.why or why
        target.check_health()
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise WaitTimeout(f"{target.describe()}: not {description} after {timeout:.0f}s"
                              + (f" ({why})" if why else ""))
        try:
            resp = read(fn, *args, **dict(kwargs, watch=True, _preload_content=False, resource_version=rv,
                                    timeout_seconds=max(1, int(min(remaining, _WATCH_CHUNK))),
                                    _request_timeout=min(remaining, _WATCH_CHUNK) + 5,
                                    allow_watch_bookmarks=True))
        except ApiException as e:
            if e.status != 410:
                raise
            items, rv = _list(fn, args, kwargs)
            continue
        try:
            relist = False
            for line in _lines_until_cut(resp):
                for raw in line.splitlines():
                    if not raw.strip():
                        continue
                    event = json.loads(raw)
                    etype, eobj = event.get("type"), event.get("object") or {}
                    if etype == "ERROR":
                        relist = True
                        break
                    rv = eobj.get("metadata", {}).get("resourceVersion", rv)
                    if etype == "BOOKMARK":
                        continue
                    uid = eobj.get("metadata", {}).get("uid")
                    if etype == "DELETED":
                        items.pop(uid, None)
                    else:
                        items[uid] = eobj
                    if accept(list(items.values())).verdict is not Verdict.PENDING:
                        break
                else:
                    continue
                break
        finally:
            resp.close()
            resp.release_conn()
        if relist:
            items, rv = _list(fn, args, kwargs)


def _lines_until_cut(resp: Any) -> Any:
    """The watch stream's chunks; a stream cut mid-way (its API server restarting or gone) just ends,
    and the loop lists again: that call says whether the server is back, or what died."""
    try:
        yield from resp
    except (urllib3.exceptions.ProtocolError, urllib3.exceptions.ReadTimeoutError):
        return


def _list(fn: Callable[..., Any], args: tuple[Any, ...],
          kwargs: dict[str, Any]) -> tuple[dict[str, dict[str, Any]], str]:
    doc = read_json(fn, *args, **kwargs)
    items = {i["metadata"]["uid"]: i for i in doc.get("items") or []}
    return items, doc["metadata"]["resourceVersion"]

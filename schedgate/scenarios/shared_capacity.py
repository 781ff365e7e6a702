"""Devices several claims share (``DRAConsumableCapacity``), asserted from every claim's ``status``: the
outcome ``consumedCapacity``.

A device set with ``allowMultipleAllocations`` (:mod:`schedgate.spec.capacity_policy`) may be allocated to
many claims; each allocation result says what it took (``consumedCapacity``) under a ``shareID`` of its own.
What is checked is what the API says: the pods' results, and the ledger of every claim of the test against
the capacities the ResourceSlices publish.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from schedgate.kube.poll import PollTimeout, poll_until
from schedgate.objects.matchers import bound
from schedgate.scenarios.declare import DeclaredOutcome, body
from schedgate.scenarios.outcomes import outcome
from schedgate.scenarios.parse import Parser
from schedgate.scenarios.run import Run
from schedgate.spec.device_names import capacity_requests
from schedgate.spec.jsontypes import ref
from schedgate.spec.quantity import quantity_value

Key = tuple[str, str, str]  # (driver, pool, device)


def _took(result: dict[str, Any]) -> dict[str, Decimal]:
    return {k: quantity_value(str(q)) for k, q in (result.get("consumedCapacity") or {}).items()}


def _q(q: Decimal | str) -> str:
    """A quantity as written (``30Gi``), or a sum of them in Gi when it is whole Gi."""
    if isinstance(q, str):
        return q
    gi = q / 2**30
    return f"{gi.normalize():f}Gi" if q and gi == gi.to_integral_value() else f"{q.normalize():f}"


def _shown(took: Mapping[str, Decimal | str]) -> str:
    return ", ".join(f"{k} {_q(took[k])}" for k in sorted(took)) or "nothing"


def _read(p: Parser, raw: Any, w: str) -> tuple[tuple[str, str], ...]:
    return capacity_requests(p.v, raw, w)


@outcome("consumedCapacity")
@dataclass(frozen=True)
class ConsumedCapacity(DeclaredOutcome):
    """Each pod is bound and every device result of its claims took exactly this of the device's capacity
    (``consumedCapacity``, under a ``shareID``); over every claim of the test, no device gives out more of a
    capacity than its ResourceSlice publishes, and no two results share a ``shareID``. A result that took
    something else, a device overdrawn or a share given twice fails at once; a claim not yet allocated waits
    until the deadline."""

    capacity: tuple[tuple[str, str], ...] = body(
        "capacity -> what each pod's device took: memory: 30Gi",
        {"type": "object", "minProperties": 1, "additionalProperties": ref("quantity")}, _read)

    def check(self, r: Run, pods: list[str], timeout: float, index: int) -> None:
        r.each(pods, bound(), timeout)
        devices = r.cluster.nodes.devices
        if devices is None:
            raise AssertionError("this cluster publishes no devices")
        want = {k: quantity_value(q) for k, q in self.capacity}
        state: dict[str, str] = {}

        def took_all() -> bool:
            for name in pods:
                pod = r.pod(name)
                results = devices.results(pod.ns.name, pod.read_raw() or {})
                if not results:
                    state[name] = "no device allocated yet"
                    return False
                for res in results:
                    got, where = _took(res), f"{res.get('pool')}/{res.get('device')}"
                    state[name] = f"{where} took {_shown(got)} (share {res.get('shareID') or 'none'})"
                    if got != want:
                        raise AssertionError(f"pod {name}: {state[name]}; expected {_shown(dict(self.capacity))}")
                    if not res.get("shareID"):
                        raise AssertionError(f"pod {name}: {where} allocated without a shareID")
            return True

        try:
            poll_until(took_all, "every pod's device results took the capacity given", timeout, interval=0.2)
        except PollTimeout:
            raise AssertionError("claims not allocated after " f"{timeout:.0f}s: "
                                 + "; ".join(f"{n}: {s}" for n, s in state.items())) from None
        self._ledger(r, index)
        for name in pods:
            r.figure(f"step {index}: {name}", state[name])

    @staticmethod
    def _ledger(r: Run, index: int) -> None:
        """Every claim of the test against the published capacities: nothing overdrawn, no share given twice."""
        devices = r.cluster.nodes.devices
        assert devices is not None
        published = devices.capacities()
        taken: dict[Key, dict[str, Decimal]] = defaultdict(lambda: defaultdict(Decimal))
        holders: dict[Key, list[str]] = defaultdict(list)
        shares: dict[str, str] = {}
        for claim, res in devices.all_results(r.ns.name):
            key: Key = (res.get("driver", ""), res.get("pool", ""), res.get("device", ""))
            holders[key].append(claim)
            if (share := res.get("shareID")) and shares.setdefault(share, claim) != claim:
                raise AssertionError(f"claims {shares[share]} and {claim} hold the same share {share} of "
                                     f"{key[1]}/{key[2]}")
            for k, q in _took(res).items():
                taken[key][k] += q
        for key, took in taken.items():
            have = published.get(key)
            if have is None:
                raise AssertionError(f"claims {holders[key]} hold {key[1]}/{key[2]}, which no ResourceSlice "
                                     "publishes")
            for k, q in took.items():
                if k not in have or q > quantity_value(have[k]):
                    raise AssertionError(f"{key[1]}/{key[2]} gives out {k} {_q(q)} to claims {holders[key]}; it "
                                         f"publishes {have.get(k, 'none')}")
            r.figure(f"step {index}: {key[1]}/{key[2]} taken", f"{_shown(dict(took))} of {_shown(have)} "
                                                               f"by {len(holders[key])} claims")

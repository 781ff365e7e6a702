"""One quantity grammar: what a definition accepts is what the arithmetic (request scaling on kind) reads."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
import yaml

from schedgate.errors import DefinitionError
from schedgate.providers.base import resource_scale
from schedgate.spec.cluster import parse_definition
from schedgate.spec.quantity import is_whole, parse_quantity, quantity_value, scaled

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("text, value", [
    ("1e3", Decimal(1000)), ("1.5Gi", Decimal(3 * 2**29)), ("100m", Decimal("0.1")), ("64", Decimal(64)),
    ("512Gi", Decimal(512 * 2**30)), ("2k", Decimal(2000)), ("1E2", Decimal(100)), (".5", Decimal("0.5")),
    ("1.", Decimal(1)), ("8Ei", None), ("3e-3", Decimal("0.003")), ("7M", Decimal(7_000_000)),
])
def test_a_quantity_reads_as_the_api_reads_it(text, value):
    if value is None:
        with pytest.raises(ValueError, match="too large"):
            quantity_value(text)
    else:
        assert quantity_value(text) == value


@pytest.mark.parametrize("text", ["-1", "1e", "1Gi2", "Gi", "1 Gi", "1.2.3", "0x10", "", "1ki", "nan", "inf"])
def test_what_is_not_a_quantity_is_refused(text):
    with pytest.raises(ValueError, match="not a quantity"):
        quantity_value(text)


def _definition(**capacity: object) -> dict[str, object]:
    doc = yaml.safe_load((ROOT / "clusters" / "inference.yaml").read_text())
    doc["pools"] = [dict(doc["pools"][0], capacity={"cpu": "64", "memory": "512Gi", "pods": 110, **capacity})]
    doc["pools"][0].pop("allocatable", None)
    return doc


def test_a_definition_in_any_form_of_the_grammar_scales_on_kind_by_the_same_numbers():
    d = parse_definition(_definition(cpu="1e3", memory="1.5Gi"))
    [node, *_] = d.nodes()
    assert node.capacity["cpu"] == "1e3"
    scale = resource_scale(d, {"cpu": 2.0, "memory": 0.75 * 2**30})
    assert scale == {"cpu": pytest.approx(2 / 1000), "memory": pytest.approx(0.5)}
    assert scaled("100m", scale["cpu"], "cpu") == "1m" and scaled("1Gi", scale["memory"], "memory") == "524288Ki"
    assert parse_quantity(scaled("500", scale["cpu"], "cpu")) == pytest.approx(1.0)


@pytest.mark.parametrize("capacity, problem", [
    ({"cpu": "1e"}, "must be a non-negative quantity"),
    ({"nvidia.com/gpu": "1.5"}, "must be a whole number >= 0"),
    ({"nvidia.com/gpu": "100m"}, "must be a whole number >= 0"),
    ({"memory": "8Ei"}, "too large"),
])
def test_a_definition_refuses_what_the_grammar_refuses_in_one_line(capacity, problem):
    with pytest.raises(DefinitionError) as e:
        parse_definition(_definition(**capacity), source="c.yaml")
    assert problem in str(e.value) and "\n" not in str(e.value)


def test_whole_numbers_in_any_form():
    assert is_whole("1e3") and is_whole("2k") and is_whole("8") and not is_whole("1.5") and not is_whole("100m")

"""A step's fields, declared on its dataclass: each field's key in the file, meaning, JSON type and reader.

::

    @step("setGPUs")
    @dataclass(frozen=True)
    class SetGPUs(Declared):
        nodes: tuple[str, ...] = arg("nodes", "node and pool names", ref("nodeSet"), read_nodes)
        count: int = arg("count", "GPUs each node reports", whole(), lambda p, x, w: p.v.whole(x, w))

A :class:`Declared` step's (or :class:`DeclaredOutcome`'s) ``parse`` reads exactly its declared keys
(unknown ones and missing required ones are the one line ``FILE: FIELD: PROBLEM (line N)`` as everywhere);
the JSON Schema (:mod:`schedgate.scenarios.schema`) and the reference (``docs/reference/steps.md``) take
each field's type and meaning from the declaration. A new step of this kind is its class, and its test.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

from schedgate.scenarios.parse import Parser
from schedgate.spec.jsontypes import Schema, described
from schedgate.spec.validate import MAX_SECONDS, short

ARG = "schedgate.arg"
Read = Callable[[Parser, Any, str], Any]  # (the file's parse, the value, where) -> the field's value


FIELD, BODY, EXTRA = "field", "body", "extra"  # where a declared value is: see Arg.at


@dataclass(frozen=True)
class Arg:
    key: str
    doc: str
    schema: Schema
    read: Read
    required: bool = True
    place: str = FIELD

    def at(self, w: str) -> str:
        """Where the value is named, ``w`` being the body's: a field of it, the body itself, or (an outcome's
        extra) a key of its ``expect`` step beside it."""
        if self.place == BODY:
            return w
        return f"{w.rsplit('.', 1)[0] if self.place == EXTRA else w}.{self.key}"


def arg(key: str, doc: str, schema: Schema, read: Read, *, default: Any = dataclasses.MISSING) -> Any:
    """A dataclass field that is step field ``key``: required unless it has a ``default``."""
    declared = {ARG: Arg(key, doc, schema, read, required=default is dataclasses.MISSING)}
    if default is dataclasses.MISSING:
        return field(metadata=declared)
    return field(default=default, metadata=declared)


def body(doc: str, schema: Schema, read: Read) -> Any:
    """An outcome's field that is its whole body, one value (a node set, ``true``), not a mapping of fields."""
    return field(metadata={ARG: Arg("", doc, schema, read, place=BODY)})


def extra(key: str, doc: str, schema: Schema, read: Read, *, default: Any) -> Any:
    """An outcome's field that is key ``key`` of its ``expect`` step, beside it (scheduledOn's ``never``): it
    registers as one of the outcome's extras (:func:`~schedgate.scenarios.outcomes.outcome`)."""
    return field(default=default, metadata={ARG: Arg(key, doc, schema, read, required=False, place=EXTRA)})


def args_of(cls: type, *places: str) -> list[tuple[str, Arg]]:
    """The declared fields of ``cls`` (those in ``places``: default, each), in order, as (attribute,
    declaration)."""
    if not dataclasses.is_dataclass(cls):
        return []
    return [(f.name, a) for f in dataclasses.fields(cls) if (a := f.metadata.get(ARG)) and a.place in (
        places or (FIELD, BODY, EXTRA))]


def read_first(cls: type, p: Parser, m: dict[str, Any], w: str, names: tuple[str, ...]) -> dict[str, Any]:
    """The fields ``names`` (attributes) that ``m`` has, read in that order by their own readers: for a rule
    that keeps the order an outcome's fields were read in before it was declared (of several wrong fields,
    the one named stays the same)."""
    args = dict(args_of(cls))
    return {n: args[n].read(p, m[args[n].key], args[n].at(w)) for n in names if args[n].key in m}


def declared_schema(cls: type, place: str = FIELD) -> dict[str, Schema]:
    """Each declared key's JSON type with its meaning (of the body's fields, or the outcome's extras)."""
    return {a.key: described(a.schema, a.doc) for _, a in args_of(cls, place)}


def declared_body(cls: type) -> Schema | None:
    """The JSON type of the body an outcome declares whole (:func:`body`), with its meaning."""
    return next((described(a.schema, a.doc) for _, a in args_of(cls, BODY)), None)


class Declared:
    """A step whose fields are all declared with :func:`arg`; ``REFUSED`` names keys it takes only to refuse
    them, each with the reason (``wait: {seconds: 5}``: no fixed sleeps). A refused key the class does not
    declare is refused at once; one it declares (or inherits: ``stopScheduler``'s ``config``) is read first,
    after the rule, so a wrong value or a file that is no configuration says so as before."""

    REFUSED: ClassVar[Mapping[str, str]] = {}
    RULE: ClassVar[Schema] = {}  # what :meth:`rule` asks of the fields together, as JSON Schema ("one of these")
    MORE: ClassVar[tuple[str, ...]] = ()  # keys allowed after the declared ones, read by the rule (the pod fields)

    @classmethod
    def parse(cls, p: Parser, raw: Any, w: str) -> Self:
        return cls(**cls.read(p, raw, w))

    @classmethod
    def read(cls, p: Parser, raw: Any, w: str) -> dict[str, Any]:
        """Each declared field's value, by attribute, from the mapping at ``w``."""
        args = args_of(cls, FIELD)
        keys = tuple(a.key for _, a in args)
        if early := {k: why for k, why in cls.REFUSED.items() if k not in keys}:
            given = p.v.mapping(raw, w, allowed=(*keys, *early))  # before a missing field: the refused one
            for key, why in early.items():                         # is what the author got wrong
                if key in given:
                    p.v.fail(f"{w}.{key}", why)
        m = p.v.mapping(raw, w, required=tuple(a.key for _, a in args if a.required), allowed=(*keys, *cls.MORE))
        out = dict(cls.rule(p, m, w) or {})
        for name, a in args:
            if a.key in m and name not in out:
                out[name] = a.read(p, m[a.key], f"{w}.{a.key}")
                if a.key in cls.REFUSED:
                    p.v.fail(f"{w}.{a.key}", cls.REFUSED[a.key])
        return out

    @classmethod
    def rule(cls, p: Parser, m: dict[str, Any], w: str) -> dict[str, Any] | None:
        """A rule over several fields (one of two needed, ...), checked before each field's own reader. A rule
        that reads fields together (delete's kind, name and apiVersion) returns their values, by attribute;
        those are not read again."""
        return None


class DeclaredOutcome(Declared):
    """An ``expect`` outcome whose body is a mapping of declared fields, or one declared value (:func:`body`);
    and the keys of the ``expect`` mapping (``m``) it takes beside it (:func:`extra`), read after the body.
    An outcome with a whole body has its :meth:`rule` called with ``{"": body, extra: value, ...}``.
    ``SHORTHANDS`` are bodies (``true``, null) that leave every field of the mapping unset (None)."""

    SHORTHANDS: ClassVar[tuple[Any, ...]] = ()

    @classmethod
    def parse(cls, p: Parser, raw: Any, m: dict[str, Any], w: str) -> Self:  # type: ignore[override]
        if any(raw is s for s in cls.SHORTHANDS):
            return cls(**dict.fromkeys((n for n, _ in args_of(cls, FIELD)), None))
        return cls(**cls.read_outcome(p, raw, m, w))

    @classmethod
    def read_outcome(cls, p: Parser, raw: Any, m: dict[str, Any], w: str) -> dict[str, Any]:
        whole = args_of(cls, BODY)
        extras = {a.key: m[a.key] for _, a in args_of(cls, EXTRA) if a.key in m}
        out = dict(cls.rule(p, {"": raw, **extras}, w) or {}) if whole else cls.read(p, raw, w)
        for name, a in args_of(cls, BODY, EXTRA):
            if name not in out and (a.place == BODY or a.key in extras):
                out[name] = a.read(p, raw if a.place == BODY else extras[a.key], a.at(w))
        return out


def one_of(choices: Collection[str]) -> Read:
    """A reader of one of ``choices`` (anything else: ``must be one of a, b, got x``)."""
    def read(p: Parser, raw: Any, w: str) -> str:
        if raw not in choices:
            p.v.fail(w, f"must be one of {', '.join(choices)}, got {short(raw)}")
        return str(raw)
    return read


TRUE: Schema = {"const": True}


def read_true(p: Parser, raw: Any, w: str) -> bool:
    if raw is not True:
        p.v.fail(w, f"must be true, got {raw!r}")
    return True


def true_body(doc: str) -> Any:
    """An outcome's body that is only ``true`` (``gone: true``), with what it means."""
    return body(doc, TRUE, read_true)


def read_timeout(p: Parser, raw: Any, w: str) -> float:
    return p.v.number(raw, w, minimum=0.1, maximum=MAX_SECONDS)


TIMEOUT: Schema = {"type": "number", "minimum": 0.1, "maximum": MAX_SECONDS}


def read_nodes(p: Parser, raw: Any, w: str) -> tuple[str, ...]:
    return tuple(p.node_set(raw, w))


def read_pods(p: Parser, raw: Any, w: str) -> tuple[str, ...]:
    return tuple(p.pod_set(raw, w))


def read_string(p: Parser, raw: Any, w: str) -> str:
    return p.v.string(raw, w)


def read_label_key(p: Parser, raw: Any, w: str) -> str:
    key = p.v.string(raw, w)
    p.v.label_key(key, w)
    return key


def read_label_value(p: Parser, raw: Any, w: str) -> str:
    """A label value (null: empty), named as ``w``."""
    parent, _, key = w.rpartition(".")
    return p.v.labels({key: raw}, parent)[key] if raw is not None else ""


def read_annotations(p: Parser, raw: Any, w: str) -> tuple[tuple[str, str | None], ...]:
    """key -> value; null removes the annotation."""
    return tuple((k, None if x is None else str(x)) for k, x in p.v.mapping(raw, w).items())

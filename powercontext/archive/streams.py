"""What an archive carries: the record streams the kernel and the families register,
and how each column's values are written and read (docs/portability.md).

A stream is one model's authoritative rows, per scope, in a fixed order. Its columns
are the model's concrete fields, by name, minus the ones the stream leaves out (each
with its reason): a column added to a model flows into the archive with no code here,
and the format's version says which columns a version carries. A field of a type this
module cannot carry exactly stops the export rather than being guessed at.

Families register their streams and the models they leave out from their
``AppConfig.ready()``, in dependency order (a row's foreign keys name rows of an earlier
stream), so the kernel names no family. A stream may name a verifier
(``verifier(scope_id, shared) -> StreamVerifier``), which checks what a single record
cannot: hash chains, version chains, gapless positions. ``shared`` is one dict per scope
for what one stream's verifier tells the next.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from django.apps import apps
from django.db import connection, models
from django.utils.module_loading import import_string

# A field every auto-numbered table has: the database numbers rows anew on import, and
# no exported row refers to it.
SURROGATE = "a surrogate key: the importing database numbers its rows anew"

_INTEGER_TYPES = {
    "IntegerField",
    "BigIntegerField",
    "SmallIntegerField",
    "PositiveIntegerField",
    "PositiveBigIntegerField",
    "PositiveSmallIntegerField",
}
_STRING_TYPES = {"CharField", "TextField"}
_AUTO_TYPES = {"AutoField", "BigAutoField", "SmallAutoField"}
_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z")


class ArchiveSchemaError(Exception):
    """A registered stream cannot be carried (a field type the format has no encoding
    for, a left-out field with no default): a programming error, found at export."""


class StreamVerifier(Protocol):
    def row(self, values: Mapping[str, Any]) -> str | None:
        """What is wrong with this row given the rows before it, or None."""

    def end(self) -> str | None:
        """What is wrong with the stream as a whole once all its rows are read."""


@dataclass(frozen=True)
class Stream:
    """``name``: the stream's name in archives (``family.thing``); ``model``: an
    ``app_label.ModelName``; ``order``: column names whose values strictly increase
    through a scope's rows (identity or integer columns: they compare alike in Python
    and on every engine, byte for byte); ``scope``: the lookup from the model to its scope id;
    ``left_out``: {field name: why it is not carried}; ``verifier``: dotted path;
    ``since``: the first format version that carries the stream (an archive of an
    earlier version has no section for it)."""

    name: str
    model: str
    order: tuple[str, ...]
    scope: str = "scope_id"
    left_out: Mapping[str, str] = field(default_factory=dict)
    verifier: str | None = None
    since: int = 1

    def model_class(self) -> type[models.Model]:
        return apps.get_model(self.model)

    def columns(self) -> list[Column]:
        return columns_of(self)

    def new_verifier(self, scope_id: str, shared: dict[str, Any]) -> StreamVerifier | None:
        if self.verifier is None:
            return None
        factory = import_string(self.verifier)
        verifier: StreamVerifier = factory(scope_id, shared)
        return verifier


@dataclass(frozen=True)
class LeftOut:
    """A model no archive carries, and why (derived, or meaningful on one server only)."""

    model: str
    why: str


STREAMS: list[Stream] = []
LEFT_OUT: list[LeftOut] = []


def register_stream(stream: Stream) -> None:
    """Add ``stream`` after those registered before it (idempotent: ready() may run
    twice). Streams are written and imported in registration order."""
    if all(known.name != stream.name for known in STREAMS):
        STREAMS.append(stream)


def register_left_out(model: str, why: str) -> None:
    if all(known.model != model for known in LEFT_OUT):
        LEFT_OUT.append(LeftOut(model, why))


def streams(version: int | None = None) -> list[Stream]:
    """The streams an archive of format ``version`` carries (default: every stream, as
    this release writes them)."""
    return [stream for stream in STREAMS if version is None or stream.since <= version]


def left_out() -> list[LeftOut]:
    return list(LEFT_OUT)


# -- columns and their values ----------------------------------------------------------


@dataclass(frozen=True)
class Column:
    """One carried field: ``name`` is its attribute name (``entry_version_id`` for a
    foreign key), ``kind`` one of string, integer, boolean, datetime."""

    name: str
    kind: str
    null: bool
    max_length: int | None
    field: models.Field[Any, Any]

    def describe(self) -> dict[str, Any]:
        described: dict[str, Any] = {"name": self.name, "type": self.kind, "null": self.null}
        if self.max_length is not None:
            described["max_length"] = self.max_length
        return described

    def to_database(self) -> Callable[[Any], Any]:
        """How a decoded value becomes a query parameter: as it is, but a time, which
        the connection adapts (UTC, as the model field would). One function per column
        rather than the field's ``get_db_prep_save`` per value: a fifth of an import's
        writing time went there."""
        if self.kind != "datetime":
            return _unchanged
        adapt = connection.ops.adapt_datetimefield_value
        return lambda value: None if value is None else adapt(value)

    def encode(self, value: Any) -> Any:
        """The value as the archive writes it (JSON)."""
        if value is None:
            if not self.null:
                raise ArchiveSchemaError(f"{self.name} is NULL in a NOT NULL column")
            return None
        if self.kind == "datetime":
            if value.tzinfo is None:
                raise ArchiveSchemaError(f"{self.name} holds a naive datetime")
            return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        return value

    def decode(self, value: Any) -> tuple[Any, str | None]:
        """(the Python value, None), or (None, what is wrong with ``value``)."""
        if value is None:
            return None, None if self.null else f"{self.name} may not be null"
        if self.kind == "string":
            if not isinstance(value, str):
                return None, f"{self.name} must be a string"
            if self.max_length is not None and len(value) > self.max_length:
                return None, f"{self.name} is longer than {self.max_length} characters"
            return value, None
        if self.kind == "integer":
            if not isinstance(value, int) or isinstance(value, bool):
                return None, f"{self.name} must be an integer"
            if value < 0 and _target(self.field).get_internal_type().startswith("Positive"):
                return None, f"{self.name} must not be negative"
            return value, None
        if self.kind == "boolean":
            if not isinstance(value, bool):
                return None, f"{self.name} must be true or false"
            return value, None
        if not isinstance(value, str) or not _DATETIME.fullmatch(value):
            return None, f"{self.name} must be a UTC time as YYYY-MM-DDTHH:MM:SS.ffffffZ"
        try:
            parsed = datetime.fromisoformat(value[:-1]).replace(tzinfo=UTC)
        except ValueError:
            return None, f"{self.name} is not a valid time"
        return parsed, None


def _unchanged(value: Any) -> Any:
    return value


def _target(model_field: models.Field[Any, Any]) -> models.Field[Any, Any]:
    """The field whose values a column holds: a foreign key's target, else itself."""
    target: models.Field[Any, Any] = getattr(model_field, "target_field", None) or model_field
    return target


def _kind(model_field: models.Field[Any, Any]) -> str | None:
    if model_field.is_relation:
        target = _target(model_field)
        return None if target is model_field else _kind(target)
    internal = model_field.get_internal_type()
    if internal in _STRING_TYPES:
        return "string"
    if internal in _INTEGER_TYPES:
        return "integer"
    if internal == "BooleanField":
        return "boolean"
    if internal == "DateTimeField":
        return "datetime"
    return None


def reasons_left_out(stream: Stream) -> dict[str, str]:
    """{field name: why} for every field of the model the stream does not carry."""
    reasons = dict(stream.left_out)
    for model_field in stream.model_class()._meta.concrete_fields:
        if model_field.primary_key and model_field.get_internal_type() in _AUTO_TYPES:
            reasons.setdefault(model_field.name, SURROGATE)
    return reasons


def columns_of(stream: Stream) -> list[Column]:
    """The stream's columns: every concrete field of its model, in the model's order,
    but those left out. Raises ArchiveSchemaError for a field it cannot carry exactly
    and for a left-out field the importer could not fill in."""
    model = stream.model_class()
    reasons = reasons_left_out(stream)
    known = {model_field.name for model_field in model._meta.concrete_fields}
    unknown = set(reasons) - known
    if unknown:
        raise ArchiveSchemaError(f"{stream.name} leaves out unknown fields {sorted(unknown)}")
    columns = []
    for model_field in model._meta.concrete_fields:
        if model_field.name in reasons:
            auto = model_field.get_internal_type() in _AUTO_TYPES
            if not (auto or model_field.null or model_field.has_default()):
                raise ArchiveSchemaError(
                    f"{stream.name} leaves out {model_field.name}, which has no default"
                )
            continue
        kind = _kind(model_field)
        if kind is None:
            raise ArchiveSchemaError(
                f"{stream.name}.{model_field.name} is a {model_field.get_internal_type()}, "
                "which archive format version 1 does not carry"
            )
        max_length = _target(model_field).max_length if kind == "string" else None
        columns.append(
            Column(model_field.attname, kind, bool(model_field.null), max_length, model_field)
        )
    names = {column.name for column in columns}
    if not set(stream.order) <= names:
        raise ArchiveSchemaError(f"{stream.name} orders by columns it does not carry")
    return columns

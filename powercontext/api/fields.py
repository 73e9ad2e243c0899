"""Strict serializer fields and shared shapes (DESIGN.md §4, "Contract details").

DRF's stock fields coerce (``"10"`` becomes 10, ``1`` becomes True, ``123`` becomes
``"123"``); the contract forbids that, so these fields check the JSON type first.
Lengths are in characters (code points) unless a name says bytes.
"""

import unicodedata

from django.core.validators import ProhibitNullCharactersValidator
from rest_framework import serializers


class StrictCharField(serializers.CharField):
    """A JSON string, never trimmed. ``non_blank`` requires a non-space character."""

    def __init__(self, *, non_blank: bool = False, **kwargs):
        kwargs.setdefault("trim_whitespace", False)
        self.non_blank = non_blank
        super().__init__(**kwargs)
        # NUL is data here (DESIGN.md §4): stored exactly, rendered safely in packs.
        self.validators = [
            validator
            for validator in self.validators
            if not isinstance(validator, ProhibitNullCharactersValidator)
        ]

    def to_internal_value(self, data):
        if not isinstance(data, str):
            raise serializers.ValidationError("Must be a string.")
        if self.non_blank and not data.strip():
            raise serializers.ValidationError("Must contain a non-space character.")
        return super().to_internal_value(data)


class StrictIntegerField(serializers.IntegerField):
    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
            raise serializers.ValidationError("Must be an integer.")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    def to_internal_value(self, data):
        if not isinstance(data, bool):
            raise serializers.ValidationError("Must be a boolean.")
        return data


class Utf8TextField(StrictCharField):
    """Memory text: NFC-normalised and stripped, then 1..``max_bytes`` UTF-8 bytes."""

    def __init__(self, *, max_bytes: int, **kwargs):
        self.max_bytes = max_bytes
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        value = unicodedata.normalize("NFC", value).strip()
        size = len(value.encode("utf-8"))
        if size == 0:
            raise serializers.ValidationError("Must not be empty after trimming whitespace.")
        if size > self.max_bytes:
            raise serializers.ValidationError(
                f"Must be at most {self.max_bytes} UTF-8 bytes (got {size})."
            )
        return value


class StrictSerializer(serializers.Serializer):
    """Rejects unknown fields and non-object bodies."""

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            raise serializers.ValidationError({"non_field_errors": ["Must be a JSON object."]})
        unknown = sorted(set(data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError({name: ["Unknown field."] for name in unknown})
        return super().to_internal_value(data)


class ScopeIdField(StrictCharField):
    """A scope id: 1..256 characters with a non-space one, and no NUL. A scope id is an
    identity, not text: NUL in one is never a real scope (hooks name scopes ``git:...`` or
    ``local:...``), it is cut short by C tools, logs and shells that show or pass it,
    and a request holding one answered an empty pack as if the scope were merely new."""

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if "\x00" in value:
            raise serializers.ValidationError("Must not contain NUL (U+0000).")
        return value


def scope_id_field() -> StrictCharField:
    return ScopeIdField(non_blank=True, min_length=1, max_length=256)


class ArtifactRefSchema(StrictSerializer):
    """One revision of an artifact: its family (``memory``, ``experience``), id and
    revision number."""

    family = StrictCharField(non_blank=True, max_length=32)
    artifact_id = StrictCharField(non_blank=True, max_length=64)
    revision = StrictIntegerField(min_value=1)


class SourceReferenceSchema(StrictSerializer):
    """A captured source: its type (``content``) and the ``source_id`` it was captured
    under."""

    name = StrictCharField(non_blank=True, max_length=64)
    source_id = StrictCharField(non_blank=True, max_length=256)

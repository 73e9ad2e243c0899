"""Input and output shapes of the Memory HTTP operations (named for clean OpenAPI)."""

from rest_framework import serializers

from memory.values import CHANGE_OP_WIRE
from powercontext.api.fields import (
    ArtifactRefSchema,
    SourceReferenceSchema,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
    Utf8TextField,
    scope_id_field,
)

MEMORY_TEXT_MAX_BYTES = 8192


class MemoryCitationSchema(StrictSerializer):
    """The exact entry version in one Memory revision: what a Context Pack cites and
    what get, revise, retire and reactivate take."""

    memory_ref = ArtifactRefSchema()
    entry_id = StrictCharField(non_blank=True, max_length=64)
    entry_version_id = StrictCharField(non_blank=True, max_length=64)


class MemoryEntrySchema(serializers.Serializer):
    """One entry version and its state in the cited Memory revision."""

    citation = MemoryCitationSchema()
    version = serializers.IntegerField(min_value=1)
    kind = serializers.CharField()
    text = serializers.CharField()
    state = serializers.ChoiceField(choices=["active", "inactive"])
    source_refs = SourceReferenceSchema(many=True)
    artifact_refs = ArtifactRefSchema(many=True)


def kind_field() -> StrictCharField:
    return StrictCharField(min_length=1, max_length=128)


def reason_field() -> StrictCharField:
    return StrictCharField(max_length=512, required=False, allow_null=True, allow_blank=True)


class MemoryRememberInput(StrictSerializer):
    """A new entry for the scope's Memory; ``expected_revision`` makes the write
    conditional on the head. Rejects unknown fields."""

    scope_id = scope_id_field()
    kind = kind_field()
    text = Utf8TextField(max_bytes=MEMORY_TEXT_MAX_BYTES)
    reason = reason_field()
    expected_revision = StrictIntegerField(min_value=0, required=False, allow_null=True)


class MemoryWriteOutput(serializers.Serializer):
    """The scope's Memory head after the write, and the entry written (``null`` for a
    no-op)."""

    memory = ArtifactRefSchema()
    entry = MemoryEntrySchema(allow_null=True)


class MemorySearchInput(StrictSerializer):
    """A full-text query over the active entries at the head. Rejects unknown fields."""

    scope_id = scope_id_field()
    query = StrictCharField(non_blank=True, min_length=1, max_length=8192)
    limit = StrictIntegerField(min_value=1, max_value=50, default=10)
    mode = serializers.ChoiceField(choices=["auto", "fts", "vector", "hybrid"], default="auto")


class MemorySearchHitSchema(serializers.Serializer):
    """One matching entry version with its relative score (the best hit is 1)."""

    citation = MemoryCitationSchema()
    text = serializers.CharField()
    score = serializers.FloatField(min_value=0, max_value=1)
    matched_by = serializers.ListField(child=serializers.ChoiceField(choices=["fts", "vector"]))


class MemorySearchOutput(serializers.Serializer):
    """The head searched (``null`` for an empty scope) and the hits, best first."""

    memory = ArtifactRefSchema(allow_null=True)
    mode = serializers.ChoiceField(choices=["fts", "vector", "hybrid"], allow_null=True)
    hits = MemorySearchHitSchema(many=True)


class MemoryEntriesListInput(StrictSerializer):
    """Which entries to list and the page to start from (``cursor`` from the previous
    page). Rejects unknown fields."""

    scope_id = scope_id_field()
    include_inactive = StrictBooleanField(default=False)
    limit = StrictIntegerField(min_value=1, max_value=1000, default=1000)
    cursor = StrictCharField(min_length=1, max_length=512, required=False, allow_null=True)


class MemoryEntriesListOutput(serializers.Serializer):
    """One page of entries at one Memory revision; ``next_cursor`` is ``null`` on the
    last page."""

    memory = ArtifactRefSchema(allow_null=True)
    entries = MemoryEntrySchema(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class MemoryEntryGetInput(StrictSerializer):
    """The citation to resolve. Rejects unknown fields."""

    scope_id = scope_id_field()
    citation = MemoryCitationSchema()


class MemoryEntryReviseInput(StrictSerializer):
    """The entry's current citation and its new kind and text. Rejects unknown fields."""

    scope_id = scope_id_field()
    citation = MemoryCitationSchema()
    kind = kind_field()
    text = Utf8TextField(max_bytes=MEMORY_TEXT_MAX_BYTES)
    reason = reason_field()


class MemoryEntryStateInput(StrictSerializer):
    """Retire and reactivate: the entry's current citation and why. Rejects unknown
    fields."""

    scope_id = scope_id_field()
    citation = MemoryCitationSchema()
    reason = reason_field()


class MemoryChangesInput(StrictSerializer):
    """Where to start (the last ``next_since``, or 0) and how many revisions at most.
    Rejects unknown fields."""

    scope_id = scope_id_field()
    since_revision = StrictIntegerField(min_value=0)
    limit = StrictIntegerField(min_value=1, max_value=1000, default=1000)


class MemoryChangeSchema(serializers.Serializer):
    """One change of a revision: ``add``, ``revise``, ``deactivate`` (retire) or
    ``reactivate``, with the versions before and after and the reason given."""

    op = serializers.ChoiceField(choices=list(CHANGE_OP_WIRE.values()))
    entry_id = serializers.CharField()
    from_entry_version_id = serializers.CharField(allow_null=True)
    to_entry_version_id = serializers.CharField(allow_null=True)
    reason = serializers.CharField(allow_null=True)


class MemoryRevisionSchema(serializers.Serializer):
    """One Memory revision and its changes."""

    memory_ref = ArtifactRefSchema()
    changes = MemoryChangeSchema(many=True)


class MemoryChangesOutput(serializers.Serializer):
    """The head, the revisions after ``since_revision`` (oldest first) and
    ``next_since`` to continue from (``null`` once caught up)."""

    memory = ArtifactRefSchema(allow_null=True)
    revisions = MemoryRevisionSchema(many=True)
    next_since = serializers.IntegerField(allow_null=True)
